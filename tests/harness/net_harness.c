/* net_harness: producer and consumer tasks of a TaskManager in a process of
 * their own, with a network environment, connected by partition id and data
 * address on the command line (modes and options: usage() below); prints
 * "data_port=N", then one JSON result line; exit 0 when every task succeeded.
 * The end-to-end tests and network_bench drive it. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/util.h"
#include "network/input_gate.h"
#include "network/record_reader.h"
#include "network/record_writer.h"
#include "network/result_partition.h"
#include "tests/harness/net_task.h"

#define MAX_TASKS 16

struct opts {
    const char *mode;
    struct result_partition_id partitions[MAX_TASKS];
    int num_partitions;
    struct result_partition_id peer_partition;
    char *gates[MAX_TASKS];
    int num_gates;
    uint32_t subpartitions;
    uint64_t records;
    uint32_t size;
    enum partitioner_kind partitioner;
    int64_t timeout_ms;
    uint64_t events;
    uint64_t delay_every;
    uint32_t delay_us;
    uint64_t rounds;
    int peer_port;
    long long network_mb;
    bool spin_set;
    struct net_env_config cfg;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "net_harness: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(2);
}

/* Usage:
 *   net_harness produce --partition ID [--partition ID...] [--subpartitions N]
 *               [--records N] [--size B] [--partitioner forward|rebalance|hash]
 *               [--timeout-ms T] [--events N]
 *   net_harness consume --gate CH[,CH...] [--gate ...] [--delay-every N --delay-us U]
 *               (CH = PARTITION_ID:SUBPARTITION@HOST:PORT)
 *   net_harness local --records N [--size B]   (producer and consumer in one process)
 *   net_harness ping --partition ID --peer-partition ID [--rounds N]  (peer port on stdin)
 *   net_harness pong --partition ID --peer-partition ID --peer-port P
 * Common: --network-memory-mb M, --segment-kb K, --lz4, --port P, --busy-poll-us U
 * (how long the I/O loop and the tasks poll before they sleep). */
/* --tls DIR: security.ssl.internal with DIR/node.pem, node.key and ca.pem
 * (scripts/make-test-certs.sh). Lives as long as the process. */
static struct tls_context *
harness_tls(const char *dir)
{
    struct config *conf = config_new();
    struct tls_context *tls = NULL;
    spate_error err;
    char *cert = xasprintf("%s/node.pem", dir), *key = xasprintf("%s/node.key", dir);
    char *ca = xasprintf("%s/ca.pem", dir);

    config_set(conf, "security.ssl.internal.enabled", "true", "--tls");
    config_set(conf, "security.ssl.internal.cert", cert, "--tls");
    config_set(conf, "security.ssl.internal.key", key, "--tls");
    config_set(conf, "security.ssl.internal.truststore", ca, "--tls");
    if (tls_context_from_config(conf, TLS_INTERNAL, &tls, &err) != 0)
        die("--tls %s: %s", dir, err.message);
    config_free(conf);
    free(cert);
    free(key);
    free(ca);
    return tls;
}

static void
parse(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        { "partition", 1, 0, 'p' },
        { "gate", 1, 0, 'g' },
        { "subpartitions", 1, 0, 's' },
        { "records", 1, 0, 'n' },
        { "size", 1, 0, 'b' },
        { "partitioner", 1, 0, 'k' },
        { "timeout-ms", 1, 0, 't' },
        { "events", 1, 0, 'e' },
        { "delay-every", 1, 0, 'd' },
        { "delay-us", 1, 0, 'u' },
        { "rounds", 1, 0, 'r' },
        { "peer-partition", 1, 0, 'P' },
        { "network-memory-mb", 1, 0, 'm' },
        { "segment-kb", 1, 0, 'S' },
        { "lz4", 0, 0, 'z' },
        { "port", 1, 0, 'o' },
        { "peer-port", 1, 0, 'Q' },
        { "busy-poll-us", 1, 0, 'B' },
        { "tls", 1, 0, 'T' },
        { 0, 0, 0, 0 },
    };
    spate_error err;
    int c;

    if (argc < 2)
        die("usage: net_harness produce|consume|local|ping|pong [options]");
    o->mode = argv[1];
    o->subpartitions = 1;
    o->records = 1000000;
    o->size = NET_TASK_HEADER;
    o->partitioner = PARTITIONER_FORWARD;
    o->timeout_ms = 5;
    o->rounds = 10000;
    if (net_env_config_load(NULL, &o->cfg, &err) != 0)
        die("%s", err.message);
    optind = 2;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (o->num_partitions == MAX_TASKS ||
                result_partition_id_parse(optarg, &o->partitions[o->num_partitions++], &err))
                die("bad --partition '%s'", optarg);
            break;
        case 'P':
            if (result_partition_id_parse(optarg, &o->peer_partition, &err))
                die("bad --peer-partition '%s'", optarg);
            break;
        case 'g':
            if (o->num_gates == MAX_TASKS)
                die("too many gates");
            o->gates[o->num_gates++] = optarg;
            break;
        case 's':
            o->subpartitions = (uint32_t)atoi(optarg);
            break;
        case 'n':
            o->records = strtoull(optarg, NULL, 10);
            break;
        case 'b':
            o->size = (uint32_t)atoi(optarg);
            break;
        case 'k':
            o->partitioner = strcmp(optarg, "hash") == 0        ? PARTITIONER_HASH
                             : strcmp(optarg, "rebalance") == 0 ? PARTITIONER_REBALANCE
                                                                : PARTITIONER_FORWARD;
            break;
        case 't':
            o->timeout_ms = atoll(optarg);
            break;
        case 'e':
            o->events = strtoull(optarg, NULL, 10);
            break;
        case 'd':
            o->delay_every = strtoull(optarg, NULL, 10);
            break;
        case 'u':
            o->delay_us = (uint32_t)atoi(optarg);
            break;
        case 'r':
            o->rounds = strtoull(optarg, NULL, 10);
            break;
        case 'm':
            o->network_mb = atoll(optarg);
            break;
        case 'Q':
            o->peer_port = atoi(optarg);
            break;
        case 'B':
            o->cfg.busy_poll_ns = strtoull(optarg, NULL, 10) * 1000;
            o->spin_set = true;
            break;
        case 'T':
            o->cfg.tls = harness_tls(optarg);
            break;
        case 'S':
            o->cfg.segment_size = (size_t)atoi(optarg) * 1024;
            break;
        case 'z':
            o->cfg.lz4 = true;
            break;
        case 'o':
            o->cfg.port = atoi(optarg);
            break;
        default:
            die("unknown option");
        }
    }
    if (o->network_mb > 0) /* once the segment size is known */
        o->cfg.num_buffers = (size_t)o->network_mb * 1024 * 1024 / o->cfg.segment_size;
    o->cfg.backoff_initial_ms = 10;
    o->cfg.backoff_max_ms = 10000;
}

/* PARTITION:SUB@HOST:PORT */
static void
parse_channel(char *text, struct consumer_channel_spec *s)
{
    char *at = strrchr(text, '@'), *colon, *pcolon;
    spate_error err;

    if (at == NULL)
        die("bad channel '%s'", text);
    *at = '\0';
    pcolon = strrchr(text, ':');
    colon = strrchr(at + 1, ':');
    if (pcolon == NULL || colon == NULL)
        die("bad channel '%s'", text);
    *pcolon = '\0';
    *colon = '\0';
    if (result_partition_id_parse(text, &s->partition, &err) != 0)
        die("bad partition in channel: %s", err.message);
    s->subpartition = (uint32_t)atoi(pcolon + 1);
    s->host = at + 1;
    s->port = atoi(colon + 1);
}

static struct net_env *
start_env(struct opts *o)
{
    struct net_env *env;
    spate_error err;

    if (net_env_new(&o->cfg, &env, &err) != 0)
        die("%s", err.message);
    printf("data_port=%d\n", net_env_data_port(env));
    fflush(stdout);
    return env;
}

static int
run_produce(struct opts *o)
{
    struct net_env *env = start_env(o);
    struct producer_task p[MAX_TASKS];
    long rss_start = net_task_rss_kb();
    uint64_t emitted = 0, elapsed = 0, bp_ns = 0;
    struct net_env_stats st;
    int rc = 0;

    for (int i = 0; i < o->num_partitions; i++) {
        p[i] = (struct producer_task){ .env = env,
                                       .id = o->partitions[i],
                                       .index = (uint32_t)i,
                                       .num_subpartitions = o->subpartitions,
                                       .records = o->records,
                                       .record_size = o->size,
                                       .partitioner = o->partitioner,
                                       .buffer_timeout_ms = o->timeout_ms,
                                       .event_every = o->events,
                                       .spin_set = o->spin_set,
                                       .spin_ns = o->cfg.busy_poll_ns };
        producer_task_start(&p[i]);
    }
    for (int i = 0; i < o->num_partitions; i++) {
        if (producer_task_join(&p[i]) != 0) {
            fprintf(stderr, "net_harness: producer %d failed: %s\n", i, p[i].error);
            rc = 1;
        }
        emitted += p[i].emitted;
        elapsed = MAX(elapsed, p[i].elapsed_ns);
        bp_ns += metric_timer_read(&p[i].metrics.back_pressured, clock_mono_ns());
    }
    /* Finished partitions stay until their consumers took everything; the
     * connections stay until the consumers hang up: closing a socket with
     * their credit messages unread would reset it, and the consumer could
     * lose the last buffers still on their way. */
    for (;;) {
        net_env_stats(env, &st);
        if (st.partitions == 0 && st.server_connections == 0)
            break;
        usleep(2000);
    }
    printf("{\"role\":\"produce\",\"rc\":%d,\"emitted\":%llu,\"elapsed_ns\":%llu,"
           "\"back_pressured_ms\":%llu,\"rss_start_kb\":%ld,\"rss_peak_kb\":%ld,"
           "\"pool_bytes\":%zu}\n",
           rc, (unsigned long long)emitted, (unsigned long long)elapsed,
           (unsigned long long)(bp_ns / 1000000), rss_start, net_task_peak_rss_kb(),
           o->cfg.num_buffers * o->cfg.segment_size);
    fflush(stdout);
    net_env_free(env);
    return rc;
}

static int
run_consume(struct opts *o)
{
    struct net_env *env = start_env(o);
    struct consumer_task c[MAX_TASKS];
    uint64_t received = 0, bytes = 0, order = 0, events = 0, elapsed = 0, event_order = 0;
    int rc = 0;

    for (int i = 0; i < o->num_gates; i++) {
        uint32_t n = 1;
        char *save, *tok;
        struct consumer_channel_spec *spec;

        for (char *q = o->gates[i]; *q; q++)
            n += *q == ',';
        spec = xcalloc(n, sizeof *spec);
        n = 0;
        for (tok = strtok_r(o->gates[i], ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            parse_channel(tok, &spec[n++]);
        c[i] = (struct consumer_task){ .env = env,
                                       .num_channels = n,
                                       .channels = spec,
                                       .check_order = true,
                                       .delay_every = o->delay_every,
                                       .delay_us = o->delay_us,
                                       .spin_set = o->spin_set,
                                       .spin_ns = o->cfg.busy_poll_ns };
        consumer_task_start(&c[i]);
    }
    for (int i = 0; i < o->num_gates; i++) {
        if (consumer_task_join(&c[i]) != 0) {
            fprintf(stderr, "net_harness: consumer %d failed: %s\n", i, c[i].error);
            rc = 1;
        }
        received += c[i].received;
        bytes += c[i].bytes;
        order += c[i].order_errors;
        event_order += c[i].event_order_errors;
        events += c[i].events;
        elapsed = MAX(elapsed, c[i].elapsed_ns);
        consumer_task_release(&c[i]);
        free(c[i].channels);
    }
    printf("{\"role\":\"consume\",\"rc\":%d,\"received\":%llu,\"bytes\":%llu,\"events\":%llu,"
           "\"order_errors\":%llu,\"event_order_errors\":%llu,\"elapsed_ns\":%llu}\n",
           rc, (unsigned long long)received, (unsigned long long)bytes, (unsigned long long)events,
           (unsigned long long)order, (unsigned long long)event_order, (unsigned long long)elapsed);
    fflush(stdout);
    net_env_free(env);
    return rc;
}

static int
run_local(struct opts *o)
{
    struct net_env *env = start_env(o);
    struct producer_task p = { .env = env,
                               .num_subpartitions = 1,
                               .records = o->records,
                               .record_size = o->size,
                               .buffer_timeout_ms = o->timeout_ms };
    struct consumer_channel_spec spec;
    struct consumer_task c = {
        .env = env, .num_channels = 1, .channels = &spec, .check_order = true
    };
    int rc;

    result_partition_id_random(&p.id);
    spec = (struct consumer_channel_spec){ .partition = p.id };
    consumer_task_start(&c);
    producer_task_start(&p);
    rc = producer_task_join(&p) | consumer_task_join(&c);
    printf("{\"role\":\"local\",\"rc\":%d,\"received\":%llu,\"order_errors\":%llu,"
           "\"elapsed_ns\":%llu}\n",
           rc, (unsigned long long)c.received, (unsigned long long)c.order_errors,
           (unsigned long long)c.elapsed_ns);
    if (rc != 0)
        fprintf(stderr, "net_harness: %s %s\n", p.error, c.error);
    consumer_task_release(&c);
    net_env_free(env);
    return rc != 0;
}

/* One task with a writer (to the peer) and a reader (from the peer): ping
 * sends a time-stamped record and waits for it to come back; pong returns
 * every record it gets. buffer timeout 0: every record is flushed. */
static int
run_pingpong(struct opts *o, bool ping)
{
    struct net_env *env = start_env(o);
    struct notifier n;
    struct result_partition *rp = NULL;
    struct record_writer *w = NULL;
    struct input_gate *g = NULL;
    struct record_reader *r = NULL;
    uint64_t *rtt = xcalloc(o->rounds, sizeof *rtt), done = 0, sent = 0;
    uint8_t rec[24] = { 0 };
    spate_error err = { 0 };
    int rc;

    notifier_init(&n, &err);
    if (o->spin_set)
        notifier_set_spin(&n, o->cfg.busy_poll_ns);
    if (o->peer_port == 0 && scanf("%d", &o->peer_port) != 1)
        die("no peer port on stdin");
    rc = result_partition_new(env, &o->partitions[0], 1, &n, NULL, &rp, &err);
    if (rc == 0)
        rc = record_writer_new(rp, 0, NULL, &w, &err);
    if (rc == 0)
        rc = input_gate_new(env, 1, &n, NULL, &g, &err);
    if (rc == 0)
        rc = input_gate_set_remote_channel(g, 0, &o->peer_partition, 0, "127.0.0.1", o->peer_port,
                                           &err);
    if (rc == 0)
        rc = input_gate_start(g, &err);
    r = rc == 0 ? record_reader_new(g, NULL) : NULL;
    while (rc == 0) {
        struct record_view v;

        if (ping && sent == done) {
            uint64_t now;

            if (done == o->rounds)
                break;
            now = clock_mono_ns();
            memcpy(rec, &sent, 8);
            memcpy(rec + NET_TASK_HEADER, &now, 8);
            rc = record_writer_emit(w, 0, rec, sizeof rec, &err);
            sent++;
            continue;
        }
        rc = record_reader_next(r, &v, &err);
        if (rc == RECORD_READER_RECORD) {
            rc = 0;
            if (ping) {
                uint64_t ts;

                memcpy(&ts, v.data + NET_TASK_HEADER, 8);
                rtt[done++] = clock_mono_ns() - ts;
                /* low load: one record in flight, a short pause between */
                usleep(100);
            } else {
                rc = record_writer_emit(w, 0, v.data, v.len, &err);
            }
        } else if (rc == RECORD_READER_NONE) {
            rc = notifier_wait_until(&n, NOTIFIER_FOREVER) < 0;
        } else if (rc == RECORD_READER_END) {
            rc = 0;
            break;
        }
    }
    if (rc == 0)
        rc = record_writer_finish(w, &err);
    if (ping) {
        /* the pong side finishes when this side does; drain its end */
        struct record_view v;
        int k;

        while (rc == 0 && (k = record_reader_next(r, &v, &err)) != RECORD_READER_END) {
            if (k < 0) {
                rc = k;
                break;
            }
            if (k == RECORD_READER_NONE)
                notifier_wait_until(&n, NOTIFIER_FOREVER);
        }
    }
    record_reader_free(r);
    input_gate_free(g);
    record_writer_free(w);
    if (rp != NULL)
        result_partition_release(rp, rc == 0 ? NULL : &err);
    if (rc != 0)
        fprintf(stderr, "net_harness: %s failed: %s\n", ping ? "ping" : "pong", err.message);
    if (ping) {
        printf("{\"role\":\"ping\",\"rc\":%d,\"rounds\":%llu,\"rtt_ns\":[", rc,
               (unsigned long long)done);
        for (uint64_t i = 0; i < done; i++)
            printf("%s%llu", i ? "," : "", (unsigned long long)rtt[i]);
        printf("]}\n");
    } else {
        printf("{\"role\":\"pong\",\"rc\":%d}\n", rc);
    }
    fflush(stdout);
    /* The peer may still read our end-of-partition. */
    for (;;) {
        struct net_env_stats st;

        net_env_stats(env, &st);
        if (st.partitions == 0 || rc != 0)
            break;
        usleep(1000);
    }
    free(rtt);
    net_env_free(env);
    notifier_release(&n);
    return rc != 0;
}

int
main(int argc, char **argv)
{
    struct opts o = { 0 };
    const char *level = getenv("SPATE_LOG_LEVEL");
    enum log_level lv;

    if (level != NULL && log_parse_level(level, &lv, NULL) == 0)
        log_set_level(lv);
    parse(argc, argv, &o);
    if (strcmp(o.mode, "produce") == 0)
        return run_produce(&o);
    if (strcmp(o.mode, "consume") == 0)
        return run_consume(&o);
    if (strcmp(o.mode, "local") == 0)
        return run_local(&o);
    if (strcmp(o.mode, "ping") == 0)
        return run_pingpong(&o, true);
    if (strcmp(o.mode, "pong") == 0)
        return run_pingpong(&o, false);
    die("unknown mode '%s'", o.mode);
}
