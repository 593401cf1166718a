/* `spate list [-a]`, `spate cancel [-s [DIR]] JOBID`, `spate stop [--drain]
 * [-p DIR] JOBID`, `spate savepoint JOBID [DIR]` and `spate savepoint -d
 * PATH` (each with [-m HOST:PORT]): a cluster's jobs and savepoints over
 * REST, as Flink's `flink list`, `cancel`, `stop` and `savepoint`. The
 * savepoint commands wait for the asynchronous operation and print the
 * savepoint's path. Exit status 0 on success; unreachable clusters,
 * unknown jobs and failed savepoints are clear errors. Main thread. */
#ifndef SPATE_CLI_CLI_JOBS_H
#define SPATE_CLI_CLI_JOBS_H

#include "core/config.h"

int cli_list(const struct config *conf, int argc, char **argv);
int cli_cancel(const struct config *conf, int argc, char **argv);
int cli_stop(const struct config *conf, int argc, char **argv);
int cli_savepoint(const struct config *conf, int argc, char **argv);

#endif
