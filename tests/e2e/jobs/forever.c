/* A job library whose main never returns: /jars/:jarid/run must kill its
 * process at web.submit.timeout. */
#include <unistd.h>

#include <spate/spate.h>

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    (void)env;
    (void)argc;
    (void)argv;
    for (;;)
        pause();
}
