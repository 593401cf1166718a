/* A job library and its arguments (Flink's PackagedProgram): loads the
 * library in the client, runs its spate_job_main(argc, argv) on an
 * environment whose executor the caller installs (plan only, the mini
 * cluster, a cluster over REST), and tells why it could not. */
#ifndef SPATE_STREAMING_PACKAGED_PROGRAM_H
#define SPATE_STREAMING_PACKAGED_PROGRAM_H

#include "core/config.h"
#include "streaming/stream_graph.h"

/* parallelism > 0 overrides parallelism.default (-p). Errors: a file that is
 * not a job library, no spate_job_main, main failing (with the job's own
 * error when it failed running), main never calling spate_execute. The
 * executor reaches the loaded library through env->library. */
int packaged_program_run(const char *path, const struct config *conf, int parallelism, int argc,
                         char **argv, const struct executor *ex, spate_error *err);

#endif
