/* A job library whose main crashes (SIGSEGV): /jars/:jarid/run must report
 * it and the JobManager must not notice. */
#include <signal.h>

#include <spate/spate.h>

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    (void)env;
    (void)argc;
    (void)argv;
    raise(SIGSEGV);
    return 0;
}
