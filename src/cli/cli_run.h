/* `spate run [--local] [-p N] [--json FILE] JOB.so [ARGS]`: runs the job
 * library's main with an executor that runs its dataflow on the embedded
 * mini cluster (or, with a cluster configured, submits it there), prints the
 * job's id, a live status line, the final status, runtime and accumulators.
 * --json writes the result (and the plan) to FILE. Exit status 0 only when
 * the job finished. */
#ifndef SPATE_CLI_CLI_RUN_H
#define SPATE_CLI_CLI_RUN_H

#include "core/config.h"

int cli_run(const struct config *conf, int argc, char **argv);

#endif
