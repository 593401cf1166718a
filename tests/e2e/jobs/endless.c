/* A job that runs until it is cancelled: an unbounded generator (1,000
 * records a second over all subtasks) into a sink that drops them. The
 * submission tests cancel it; job_bench times its way to RUNNING. */
#include "common.h"

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    spate_stream *s;

    (void)argc;
    (void)argv;
    s = spate_name(spate_source_generator(env, gen, spate_type_int64(), 0, 1000.0), "Endless");
    spate_name(spate_sink(s, drop), "Drop");
    return spate_execute(env, "Endless");
}
