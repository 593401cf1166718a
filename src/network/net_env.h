/* The network environment of a TaskManager (Flink's NettyShuffleEnvironment):
 * buffer pool, partition manager, connection manager with one multiplexed
 * TCP connection per remote TaskManager, the data port and the network I/O
 * thread (a libuv loop). Created and freed by the TaskManager's control
 * thread; tasks create partitions and gates on it from their own threads. */
#ifndef SPATE_NETWORK_NET_ENV_H
#define SPATE_NETWORK_NET_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/tls.h"

struct config;
struct net_env;

struct net_env_config {
    size_t segment_size;          /* taskmanager.memory.segment-size */
    size_t num_buffers;           /* taskmanager.memory.network.max / segment size */
    uint32_t buffers_per_channel; /* exclusive buffers of a remote channel */
    uint32_t floating_per_gate;
    uint64_t backoff_initial_ms; /* partition request retries */
    uint64_t backoff_max_ms;
    bool lz4;                /* taskmanager.network.compression.codec: lz4 */
    uint64_t busy_poll_ns;   /* taskmanager.network.busy-poll */
    const char *bind_host;   /* taskmanager.bind-host */
    int port;                /* taskmanager.data.port; 0: ephemeral */
    const char *cluster_id;  /* handshake: must match the peers' */
    const char *secret;      /* security.rpc.secret, NULL for none */
    struct tls_context *tls; /* security.ssl.internal (borrowed), NULL for none */
    const char *name;        /* for log lines, e.g. the TaskManager's id */
    /* Bounds on accepted connections (cluster.connections.*; 0: default). */
    int max_connections;          /* open at once; 1024 */
    int max_connections_per_peer; /* from one IP address; 256 */
    int max_handshaking;          /* hello still due, the oldest goes first; 128 */
    int64_t handshake_timeout_ms; /* the hello's deadline; 10 s */
};

/* Fills cfg from a configuration (NULL: the defaults). cfg's strings point
 * into conf and stay valid as long as it does. */
int net_env_config_load(const struct config *conf, struct net_env_config *cfg, spate_error *err);

/* Allocates the buffer pool, binds the data port and starts the network I/O
 * thread. */
int net_env_new(const struct net_env_config *cfg, struct net_env **out, spate_error *err);
/* Stops the I/O thread and closes every connection. Every input gate must
 * have been freed and every result partition released by its producer. */
void net_env_free(struct net_env *env);
/* The bound data port (taskmanager.data.port 0 → the ephemeral port). */
int net_env_data_port(const struct net_env *env);
/* taskmanager.network.busy-poll: how long the I/O loop, and a task waiting
 * for input or a buffer (notifier_set_spin), polls before it sleeps. */
uint64_t net_env_busy_poll_ns(const struct net_env *env);

struct net_env_stats {
    size_t buffers_total, buffers_available;
    size_t segment_size;       /* bytes of each buffer */
    size_t client_connections; /* to remote producers */
    size_t server_connections; /* from remote consumers */
    size_t partitions;         /* registered result partitions */
    uint64_t connections_dropped;
};
/* Any thread; a consistent-enough snapshot for tests and metrics. */
void net_env_stats(struct net_env *env, struct net_env_stats *st);

#endif
