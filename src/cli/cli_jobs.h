/* `spate list [-a]`, `spate cancel [-s [DIR]] JOBID`, `spate stop [--drain]
 * [-p DIR] JOBID`, `spate savepoint JOBID [DIR]` and `spate savepoint -d
 * PATH` (each with [-m HOST:PORT]): a cluster's jobs and savepoints over
 * REST, as Flink's `flink list` (running and scheduled jobs; -a adds the
 * terminated ones), `cancel` (-s: after a savepoint, the job CANCELED),
 * `stop` and `savepoint`. The savepoint commands poll the asynchronous
 * operation and print `Savepoint completed. Path: ...`; relative folders
 * are the client's, made absolute before they are sent. Exit status 0 on success; unreachable clusters,
 * unknown jobs and failed savepoints are clear errors. Main thread. */
#ifndef SPATE_CLI_CLI_JOBS_H
#define SPATE_CLI_CLI_JOBS_H

#include "core/config.h"

int cli_list(const struct config *conf, int argc, char **argv);
int cli_cancel(const struct config *conf, int argc, char **argv);
int cli_stop(const struct config *conf, int argc, char **argv);
int cli_savepoint(const struct config *conf, int argc, char **argv);
/* `spate stop-cluster [-m HOST:PORT]`: DELETE /cluster, the whole cluster
 * (JobManager and TaskManagers) shuts down. */
int cli_stop_cluster(const struct config *conf, int argc, char **argv);

#endif
