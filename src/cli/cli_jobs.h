/* `spate list [-a] [-m HOST:PORT]` and `spate cancel [-m HOST:PORT] JOBID`:
 * a cluster's jobs over REST, as Flink's `flink list` and `flink cancel`.
 * Exit status 0 on success; unreachable clusters and unknown jobs are clear
 * errors. Main thread. */
#ifndef SPATE_CLI_CLI_JOBS_H
#define SPATE_CLI_CLI_JOBS_H

#include "core/config.h"

int cli_list(const struct config *conf, int argc, char **argv);
int cli_cancel(const struct config *conf, int argc, char **argv);

#endif
