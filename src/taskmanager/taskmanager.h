/* The TaskManager process (`spate taskmanager`): its RPC service (on
 * taskmanager.bind-host and taskmanager.rpc.port), its TaskExecutor (or, for
 * scale tests, many in one process), until a signal, the cluster's
 * StopCluster, or a registration timeout ends it. Runs on the process's main
 * thread, which only waits. */
#ifndef SPATE_TASKMANAGER_TASKMANAGER_H
#define SPATE_TASKMANAGER_TASKMANAGER_H

#include "core/config.h"

/* Returns the process's exit status: 0 after SIGTERM/SIGINT or StopCluster,
 * 1 when it could not start or never got registered. count > 1 runs that
 * many TaskExecutors (own resource ids, endpoints taskexecutor_<i>). */
int taskmanager_run(const struct config *conf, int count);

#endif
