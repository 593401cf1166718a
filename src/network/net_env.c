/* The network environment (net_env.h): its configuration, the buffer pool
 * and partition manager it holds, the data port, the network I/O thread and
 * its mailbox. Connections live in net_conn.c, their server side in
 * net_server.c, their client side in net_client.c. net_env_new/free/post/
 * stats run on any thread; the rest on the I/O thread. */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/util.h"
#include "network/net_int.h"

/* ---- the I/O thread's mailbox ---- */

static void
env_stop(struct net_env *env)
{
    env->stopping = true;
    while (env->conns != NULL)
        net_conn_close(env->conns, SPATE_ECONNLOST, "network environment shutting down");
    uv_close((uv_handle_t *)&env->server, NULL);
    uv_timer_stop(&env->retry_timer);
    uv_close((uv_handle_t *)&env->retry_timer, NULL);
    uv_close((uv_handle_t *)&env->sweep_timer, NULL);
    mailbox_close(&env->mailbox, NULL);
}

static void
env_deliver(struct mailbox *mb, struct mpsc_node *node)
{
    struct net_env *env = mb->data;
    struct net_cmd *cmd = container_of(node, struct net_cmd, node);

    env->activity++;
    switch (cmd->kind) {
    case NET_CMD_READER_AVAILABLE:
        net_server_reader_available(cmd);
        break;
    case NET_CMD_ANNOUNCE_CREDIT:
        net_client_announce_credit(container_of(cmd, struct input_channel, credit_cmd));
        break;
    case NET_CMD_GATE_START: {
        struct net_cmd_gate *gc = container_of(cmd, struct net_cmd_gate, base);

        net_client_gate_start(env, gc->gate);
        free(gc);
        break;
    }
    case NET_CMD_GATE_DETACH: {
        struct net_cmd_gate *gc = container_of(cmd, struct net_cmd_gate, base);

        net_client_gate_detach(gc->gate);
        uv_sem_post(gc->done); /* gc lives on the waiting thread's stack */
        break;
    }
    case NET_CMD_STOP:
        env_stop(env);
        break;
    }
}

void
net_env_post(struct net_env *env, struct net_cmd *cmd)
{
    mailbox_post(&env->mailbox, &cmd->node);
}

void
net_env_gate_detach(struct net_env *env, struct input_gate *g)
{
    struct net_cmd_gate cmd = { .base.kind = NET_CMD_GATE_DETACH, .gate = g };
    uv_sem_t done;

    uv_sem_init(&done, 0);
    cmd.done = &done;
    net_env_post(env, &cmd.base);
    uv_sem_wait(&done);
    uv_sem_destroy(&done);
}

/* ---- the environment ---- */

int
net_env_config_load(const struct config *conf, struct net_env_config *cfg, spate_error *err)
{
    struct config *empty = NULL;
    uint64_t segment, network;
    int64_t i, initial, max;
    const char *port;
    int codec, lo, hi, rc;

    if (conf == NULL)
        conf = empty = config_new();
    memset(cfg, 0, sizeof *cfg);
    if ((rc = config_get_memory_bytes(conf, CFG(TASKMANAGER_MEMORY_SEGMENT_SIZE), &segment, err)) !=
            0 ||
        (rc = config_get_memory_bytes(conf, CFG(TASKMANAGER_MEMORY_NETWORK_MAX), &network, err)) !=
            0)
        goto out;
    cfg->segment_size = segment;
    cfg->num_buffers = network / segment;
    if (cfg->num_buffers == 0) {
        rc = spate_error_set(err, SPATE_ECONFIG,
                             "taskmanager.memory.network.max holds no "
                             "buffer of taskmanager.memory.segment-size");
        goto out;
    }
    if ((rc = config_get_int(conf, CFG(TASKMANAGER_NETWORK_BUFFERS_PER_CHANNEL), &i, err)) != 0)
        goto out;
    cfg->buffers_per_channel = (uint32_t)i;
    if ((rc = config_get_int(conf, CFG(TASKMANAGER_NETWORK_FLOATING_BUFFERS_PER_GATE), &i, err)) !=
        0)
        goto out;
    cfg->floating_per_gate = (uint32_t)i;
    if ((rc = config_get_duration_ms(conf, CFG(TASKMANAGER_NETWORK_REQUEST_BACKOFF_INITIAL),
                                     &initial, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(TASKMANAGER_NETWORK_REQUEST_BACKOFF_MAX), &max,
                                     err)) != 0)
        goto out;
    cfg->backoff_initial_ms = (uint64_t)initial;
    cfg->backoff_max_ms = (uint64_t)max;
    if ((rc = config_get_enum(conf, CFG(TASKMANAGER_NETWORK_COMPRESSION_CODEC), &codec, err)) != 0)
        goto out;
    cfg->lz4 = codec == 1;
    if ((rc = config_get_duration_ms(conf, CFG(TASKMANAGER_NETWORK_BUSY_POLL), &i, err)) != 0)
        goto out;
    {
        const char *value, *origin;
        int64_t ns = 0;

        /* checked above; read again for its microseconds */
        config_effective(conf, CFG(TASKMANAGER_NETWORK_BUSY_POLL), &value, &origin);
        config_parse_duration_ns(value, &ns, NULL);
        cfg->busy_poll_ns = (uint64_t)ns;
    }
    if ((rc = config_get_string(conf, CFG(TASKMANAGER_BIND_HOST), &cfg->bind_host, err)) != 0 ||
        (rc = config_get_string(conf, CFG(TASKMANAGER_DATA_PORT), &port, err)) != 0)
        goto out;
    if ((rc = config_parse_port_range(port, &lo, &hi, err)) != 0) {
        spate_error_wrap(err, "config key 'taskmanager.data.port'");
        goto out;
    }
    cfg->port = lo;
    {
        int64_t conns, per_peer, handshaking;

        if ((rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX), &conns, err)) != 0 ||
            (rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX_PER_PEER), &per_peer, err)) !=
                0 ||
            (rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX_HANDSHAKING), &handshaking,
                                 err)) != 0 ||
            (rc = config_get_duration_ms(conf, CFG(CLUSTER_CONNECTIONS_HANDSHAKE_TIMEOUT),
                                         &cfg->handshake_timeout_ms, err)) != 0)
            goto out;
        cfg->max_connections = (int)conns;
        cfg->max_connections_per_peer = (int)per_peer;
        cfg->max_handshaking = (int)handshaking;
    }
    cfg->secret = config_lookup(conf, CFG(SECURITY_RPC_SECRET)->key);
    cfg->cluster_id = "/default";
    if (empty != NULL) {
        /* Strings from the defaults table stay valid; set ones would not. */
        cfg->bind_host = config_options[CONFIG_TASKMANAGER_BIND_HOST].default_value;
        cfg->secret = NULL;
    }
out:
    config_free(empty);
    return rc;
}

/* After an event the loop keeps polling without blocking (yielding the core
 * between polls) for busy_poll_ns before it sleeps in epoll again: the next
 * buffer or credit usually comes soon, and a sleeping thread's wake-up is
 * most of a record's latency at low load. An idle loop sleeps. */
static void
env_thread(void *arg)
{
    struct net_env *env = arg;
    uint64_t no_spin_until = 0;

    log_set_thread_name("net-io");
    while (uv_run(&env->loop, UV_RUN_ONCE) != 0) {
        uint64_t now = clock_mono_ns(), seen = env->activity, before;
        uint64_t until = now < no_spin_until ? now : now + env->cfg.busy_poll_ns;

        if (now >= until || env->stopping)
            continue;
        /* While it polls, tasks' posts need no eventfd write to wake it. */
        mailbox_set_polling(&env->mailbox, true);
        while (now < until && !env->stopping) {
            if (uv_run(&env->loop, UV_RUN_NOWAIT) == 0)
                return;
            if (!env->stopping)
                mailbox_poll(&env->mailbox);
            if (env->activity != seen) {
                seen = env->activity;
                until = clock_mono_ns() + env->cfg.busy_poll_ns;
            } else {
                sched_yield();
            }
            before = now;
            now = clock_mono_ns();
            if (now - before > NOTIFIER_PREEMPTED_NS) {
                /* Lost the core to someone else: sleep in epoll for a while,
                 * where a wake-up preempts (see notifier.c). */
                no_spin_until = now + NOTIFIER_NO_SPIN_NS;
                break;
            }
        }
        if (!env->stopping)
            mailbox_set_polling(&env->mailbox, false);
    }
}

int
net_env_new(const struct net_env_config *cfg, struct net_env **out, spate_error *err)
{
    struct net_env *env = xcalloc(1, sizeof *env);
    struct sockaddr_storage ss;
    struct sigaction pipe_action;
    int len = sizeof ss, rc;

    /* A peer that goes away while a buffer is being written must be an EPIPE
     * on that connection, not a SIGPIPE that ends the TaskManager. libuv
     * writes with writev(2), so the signal itself has to go; a process that
     * installed its own handler keeps it. */
    if (sigaction(SIGPIPE, NULL, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);

    env->cfg = *cfg;
    env->cfg.bind_host = xstrdup(cfg->bind_host ? cfg->bind_host : "127.0.0.1");
    env->cfg.cluster_id = xstrdup(cfg->cluster_id ? cfg->cluster_id : "/default");
    env->cfg.secret = cfg->secret ? xstrdup(cfg->secret) : NULL;
    env->cfg.tls = cfg->tls ? tls_context_ref(cfg->tls) : NULL;
    env->cfg.name = xstrdup(cfg->name ? cfg->name : "");
    if (env->cfg.buffers_per_channel == 0)
        env->cfg.buffers_per_channel = 2;
    if (env->cfg.max_connections <= 0)
        env->cfg.max_connections = 1024;
    if (env->cfg.max_connections_per_peer <= 0)
        env->cfg.max_connections_per_peer = 256;
    if (env->cfg.max_handshaking <= 0)
        env->cfg.max_handshaking = 128;
    if (env->cfg.handshake_timeout_ms <= 0)
        env->cfg.handshake_timeout_ms = 10000;
    env->hs.magic = HANDSHAKE_MAGIC_DATA;
    env->hs.cluster_id = env->cfg.cluster_id;
    env->hs.secret = env->cfg.secret;
    result_partition_manager_init(env);
    rc = network_buffer_pool_new(cfg->segment_size, cfg->num_buffers, &env->pool, err);
    if (rc != 0)
        goto fail_pool;
    uv_loop_init(&env->loop);
    mailbox_init(&env->loop, &env->mailbox, env_deliver);
    env->mailbox.data = env;
    uv_timer_init(&env->loop, &env->retry_timer);
    env->retry_timer.data = env;
    uv_timer_init(&env->loop, &env->sweep_timer);
    env->sweep_timer.data = env;
    uv_timer_start(&env->sweep_timer, net_server_sweep, 1000, 1000);
    uv_tcp_init(&env->loop, &env->server);
    env->server.data = env;
    rc = net_conn_resolve(env->cfg.bind_host, cfg->port, &ss);
    if (rc != 0) {
        spate_error_set(err, rc, "cannot resolve the data port's bind host '%s'",
                        env->cfg.bind_host);
        goto fail_bind;
    }
    if ((rc = uv_tcp_bind(&env->server, (struct sockaddr *)&ss, 0)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&env->server, 128, net_server_on_connection)) != 0) {
        rc = spate_error_set(err, rc == UV_EADDRINUSE ? SPATE_EADDRINUSE : SPATE_EIO,
                             "cannot listen on data port %s:%d: %s", env->cfg.bind_host, cfg->port,
                             uv_strerror(rc));
        goto fail_bind;
    }
    uv_tcp_getsockname(&env->server, (struct sockaddr *)&ss, &len);
    env->port = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                        : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    rc = uv_thread_create(&env->thread, env_thread, env);
    if (rc != 0) {
        spate_error_set(err, SPATE_EIO, "cannot start the network I/O thread: %s", uv_strerror(rc));
        rc = SPATE_EIO;
        goto fail_bind;
    }
    SPATE_LOG_INFO(NET_LOG, "%s%sdata port %s:%d, %zu buffers of %zu bytes%s", env->cfg.name,
                   env->cfg.name[0] ? ": " : "", env->cfg.bind_host, env->port, cfg->num_buffers,
                   cfg->segment_size, cfg->lz4 ? ", lz4" : "");
    *out = env;
    return 0;

fail_bind:
    env->stopping = true;
    uv_close((uv_handle_t *)&env->server, NULL);
    uv_close((uv_handle_t *)&env->retry_timer, NULL);
    uv_close((uv_handle_t *)&env->sweep_timer, NULL);
    mailbox_close(&env->mailbox, NULL);
    uv_run(&env->loop, UV_RUN_DEFAULT);
    uv_loop_close(&env->loop);
    network_buffer_pool_free(env->pool);
fail_pool:
    result_partition_manager_release(env);
    free((char *)env->cfg.bind_host);
    free((char *)env->cfg.cluster_id);
    free((char *)env->cfg.secret);
    tls_context_unref(env->cfg.tls);
    free((char *)env->cfg.name);
    free(env);
    return rc;
}

void
net_env_free(struct net_env *env)
{
    struct net_cmd stop = { .kind = NET_CMD_STOP };

    if (env == NULL)
        return;
    net_env_post(env, &stop);
    uv_thread_join(&env->thread);
    if (uv_loop_close(&env->loop) != 0)
        SPATE_LOG_ERROR(NET_LOG, "network loop closed with handles open");
    result_partition_manager_clear(env);
    network_buffer_pool_free(env->pool);
    result_partition_manager_release(env);
    free((char *)env->cfg.bind_host);
    free((char *)env->cfg.cluster_id);
    free((char *)env->cfg.secret);
    tls_context_unref(env->cfg.tls);
    free((char *)env->cfg.name);
    free(env);
}

int
net_env_data_port(const struct net_env *env)
{
    return env->port;
}

uint64_t
net_env_busy_poll_ns(const struct net_env *env)
{
    return env->cfg.busy_poll_ns;
}

void
net_env_stats(struct net_env *env, struct net_env_stats *st)
{
    st->buffers_total = network_buffer_pool_total(env->pool);
    st->buffers_available = network_buffer_pool_available(env->pool);
    st->segment_size = env->cfg.segment_size;
    st->client_connections = atomic_load_explicit(&env->n_client, memory_order_relaxed);
    st->server_connections = atomic_load_explicit(&env->n_server, memory_order_relaxed);
    st->connections_dropped = atomic_load_explicit(&env->n_dropped, memory_order_relaxed);
    st->partitions = result_partition_manager_count(env);
}
