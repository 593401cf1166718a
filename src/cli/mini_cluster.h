/* The mini cluster (Flink's MiniCluster): a ResourceManager, a Dispatcher
 * and TaskExecutors in the client's process, on one RPC service (the
 * in-process transport: same messages, no socket) with standalone leaders.
 * Each TaskExecutor has a network environment of its own, so data between
 * two of them crosses loopback TCP as on a cluster, and job libraries go
 * through a BlobServer to the TaskExecutors' BlobCaches. `spate run
 * --local` (cli_run.c) starts local.number-taskmanager TaskExecutors that
 * share -p N slots (default: the cores), at least what the job needs. */
#ifndef SPATE_CLI_MINI_CLUSTER_H
#define SPATE_CLI_MINI_CLUSTER_H

#include <stdio.h>

#include "blob/blob_server.h"
#include "core/config.h"
#include "rpc/service.h"

struct mini_cluster;

struct mini_cluster_options {
    int taskmanagers; /* local.number-taskmanager */
    int slots_per_tm; /* each TaskExecutor's slots */
    FILE *print_out;  /* print sinks: stdout */
};

/* Starts every component; the TaskExecutors register with the
 * ResourceManager on their own (a job's slot requests wait for them). */
int mini_cluster_start(const struct config *conf, const struct mini_cluster_options *o,
                       struct mini_cluster **out, spate_error *err);
struct rpc_service *mini_cluster_service(struct mini_cluster *mc);
/* Where a job's library is stored before its submission. */
struct blob_server *mini_cluster_blob_server(struct mini_cluster *mc);
/* "host:port/dispatcher". */
const char *mini_cluster_dispatcher_address(const struct mini_cluster *mc);
/* TaskManager i's data plane (0 <= i < taskmanagers): connections made
 * and accepted so far, which show whether data crossed TaskManagers. */
struct net_env_stats;
void mini_cluster_network_stats(struct mini_cluster *mc, int i, struct net_env_stats *st);
/* Cancels tasks still running, waits for them, stops and frees it all. */
void mini_cluster_stop(struct mini_cluster *mc);

#endif
