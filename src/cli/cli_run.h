/* `spate run [--local | -m HOST:PORT] [-d] [-p N] [--json FILE] JOB.so
 * [ARGS]`: runs the job library's main with an executor that runs its
 * dataflow on the embedded mini cluster, or (-m, or a cluster configured)
 * submits it to a cluster over REST; prints the job's id, a live status
 * line, the final status, runtime and accumulators (-d: only the id). --json
 * writes the result (and the plan) to FILE. Exit status 0 only when the job
 * finished (or, detached, was submitted). */
#ifndef SPATE_CLI_CLI_RUN_H
#define SPATE_CLI_CLI_RUN_H

#include "core/config.h"

int cli_run(const struct config *conf, int argc, char **argv);

#endif
