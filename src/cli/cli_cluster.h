/* The cluster commands of the spate command line: `spate jobmanager` (RPC
 * service, HA services, ResourceManager, Dispatcher, BlobServer, REST
 * server and the process's leadership; DELETE /cluster stops the cluster,
 * SIGTERM, as Flink's, only this JobManager) and `spate taskmanager
 * [--count N]`. Run on the main thread, which only waits while the RPC and
 * REST threads work. */
#ifndef SPATE_CLI_CLI_CLUSTER_H
#define SPATE_CLI_CLI_CLUSTER_H

#include "core/config.h"

/* Each returns the process's exit status. argv[0] is the command's name. */
int cli_jobmanager(const struct config *conf, int argc, char **argv);
int cli_taskmanager(const struct config *conf, int argc, char **argv);

#endif
