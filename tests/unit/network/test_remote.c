/* Remote channels: two network environments (two TaskManagers) in one
 * process, talking over loopback TCP with credit-based flow control. Order,
 * events, compression, a stalled channel beside a running one on the same
 * connection, late producers, consumers that go away, garbage on the data
 * port (also under ThreadSanitizer). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../wait.h"
#include "net_test.h"
#include "network/input_gate.h"

struct pair_run {
    uint32_t producers, subs;
    uint64_t records;
    uint32_t size;
    enum partitioner_kind kind;
    uint64_t event_every;
    bool lz4;
    size_t buffers;
};

static void
remote_run(const struct pair_run *run)
{
    struct net_env *a = test_env(run->buffers, 8192, run->lz4);
    struct net_env *b = test_env(run->buffers, 8192, run->lz4);
    struct producer_task p[2];
    struct consumer_task c[2];
    struct consumer_channel_spec spec[2][2];
    struct net_env_stats st;
    uint64_t total = 0;

    for (uint32_t i = 0; i < run->producers; i++) {
        p[i] = (struct producer_task){ .env = a,
                                       .index = i,
                                       .num_subpartitions = run->subs,
                                       .records = run->records,
                                       .record_size = run->size,
                                       .partitioner = run->kind,
                                       .buffer_timeout_ms = 5,
                                       .event_every = run->event_every };
        result_partition_id_random(&p[i].id);
    }
    for (uint32_t s = 0; s < run->subs; s++) {
        for (uint32_t i = 0; i < run->producers; i++)
            spec[s][i] = (struct consumer_channel_spec){ .partition = p[i].id,
                                                         .subpartition = s,
                                                         .host = "127.0.0.1",
                                                         .port = net_env_data_port(a) };
        c[s] = (struct consumer_task){
            .env = b, .num_channels = run->producers, .channels = spec[s], .check_order = true
        };
        cr_assert_eq(consumer_task_start(&c[s]), 0);
    }
    for (uint32_t i = 0; i < run->producers; i++)
        cr_assert_eq(producer_task_start(&p[i]), 0);
    for (uint32_t i = 0; i < run->producers; i++)
        cr_assert_eq(producer_task_join(&p[i]), 0, "producer %u: %s", i, p[i].error);
    for (uint32_t s = 0; s < run->subs; s++) {
        cr_assert_eq(consumer_task_join(&c[s]), 0, "consumer %u: %s", s, c[s].error);
        cr_assert_eq(c[s].order_errors, 0);
        cr_assert_eq(c[s].event_order_errors, 0);
        if (run->event_every)
            cr_assert_eq(c[s].events, run->producers * (run->records / run->event_every));
        total += c[s].received;
        consumer_task_release(&c[s]);
    }
    cr_assert_eq(total, run->producers * run->records, "records lost or duplicated");
    net_env_stats(b, &st);
    cr_assert_eq(st.client_connections, 1, "one connection per pair of TaskManagers");
    cr_assert_eq(st.buffers_available, st.buffers_total);
    net_env_free(b);
    net_env_free(a);
}

Test(remote, one_to_one_keeps_order_with_events, .timeout = 60)
{
    struct pair_run r = { 1, 1, 200000, 16, PARTITIONER_FORWARD, 4999, false, 64 };

    remote_run(&r);
}

Test(remote, two_by_two_by_hash_with_spanning_records, .timeout = 60)
{
    struct pair_run r = { 2, 2, 5000, 20000, PARTITIONER_HASH, 0, false, 64 };

    remote_run(&r);
}

Test(remote, lz4_compressed_buffers, .timeout = 60)
{
    struct pair_run r = { 2, 2, 50000, 100, PARTITIONER_REBALANCE, 977, true, 64 };

    remote_run(&r);
}

Test(remote, few_buffers_backpressure_without_loss, .timeout = 60)
{
    /* Each producer's partition has 3 buffers; each gate 2 exclusive per
     * channel and what floating buffers are left. */
    struct pair_run r = { 2, 2, 50000, 200, PARTITIONER_REBALANCE, 0, false, 24 };

    remote_run(&r);
}

Test(remote, a_stalled_channel_does_not_stall_the_connection, .timeout = 60)
{
    struct net_env *a = test_env(64, 8192, false);
    struct net_env *b = test_env(64, 8192, false);
    /* Each producer sends 100 times what the consumer side's buffers hold. */
    struct producer_task p[2];
    struct consumer_channel_spec spec[2];
    struct consumer_task c[2];
    struct net_env_stats st;

    for (int i = 0; i < 2; i++) {
        p[i] = (struct producer_task){ .env = a,
                                       .index = (uint32_t)i,
                                       .num_subpartitions = 1,
                                       .records = 400000,
                                       .record_size = 128,
                                       .buffer_timeout_ms = 5 };
        result_partition_id_random(&p[i].id);
        spec[i] = (struct consumer_channel_spec){ .partition = p[i].id,
                                                  .host = "127.0.0.1",
                                                  .port = net_env_data_port(a) };
        c[i] = (struct consumer_task){
            .env = b, .num_channels = 1, .channels = &spec[i], .check_order = true, .stall = i == 0
        };
        cr_assert_eq(consumer_task_start(&c[i]), 0);
        cr_assert_eq(producer_task_start(&p[i]), 0);
    }
    /* Channel 0 reads nothing; channel 1 on the same connection gets all. */
    cr_assert_eq(producer_task_join(&p[1]), 0, "%s", p[1].error);
    cr_assert_eq(consumer_task_join(&c[1]), 0, "%s", c[1].error);
    cr_assert_eq(c[1].received, 400000);
    cr_assert_eq(c[1].order_errors, 0);
    net_env_stats(b, &st);
    cr_assert_eq(st.client_connections, 1, "both channels share one connection");
    cr_assert_eq(c[0].received, 0);
    /* The stalled producer is back-pressured, not done. */
    cr_assert(p[0].emitted < 400000);
    consumer_task_cancel(&c[0]);
    consumer_task_join(&c[0]);
    cr_assert_neq(producer_task_join(&p[0]), 0, "the stalled consumer went away");
    cr_assert(strstr(p[0].error, "cancelled") != NULL, "%s", p[0].error);
    consumer_task_release(&c[0]);
    consumer_task_release(&c[1]);
    net_env_free(b);
    net_env_free(a);
}

Test(remote, consumer_before_producer_retries, .timeout = 60)
{
    struct net_env *a = test_env(32, 8192, false);
    struct net_env *b = test_env(32, 8192, false);
    struct producer_task p = {
        .env = a, .num_subpartitions = 1, .records = 5000, .record_size = 16, .buffer_timeout_ms = 5
    };
    struct consumer_channel_spec spec;
    struct consumer_task c = {
        .env = b, .num_channels = 1, .channels = &spec, .check_order = true
    };
    struct net_env_stats st;

    result_partition_id_random(&p.id);
    spec = (struct consumer_channel_spec){ .partition = p.id,
                                           .host = "127.0.0.1",
                                           .port = net_env_data_port(a) };
    cr_assert_eq(consumer_task_start(&c), 0);
    /* The request is answered "not found" until the producer registers. */
    do {
        net_env_stats(b, &st);
    } while (st.client_connections == 0);
    cr_assert_eq(producer_task_start(&p), 0);
    cr_assert_eq(producer_task_join(&p), 0, "%s", p.error);
    cr_assert_eq(consumer_task_join(&c), 0, "%s", c.error);
    cr_assert_eq(c.received, 5000);
    consumer_task_release(&c);
    net_env_free(b);
    net_env_free(a);
}

/* A gate takes its remote channels' exclusive buffers when it starts, and
 * its floating buffers only as the channels' backlog asks: with no data
 * yet, none (floating buffers taken at start left later gates without
 * their exclusive ones). */
Test(remote, a_gate_takes_floating_buffers_only_when_its_channels_ask, .timeout = 60)
{
    struct net_env *a = test_env(64, 8192, false);
    struct net_env *b = test_env(64, 8192, false);
    struct result_partition_id id;
    struct input_gate *g;
    struct notifier n;
    struct net_env_stats st;
    spate_error err;

    cr_assert_eq(notifier_init(&n, &err), 0);
    result_partition_id_random(&id);
    cr_assert_eq(input_gate_new(b, 2, &n, NULL, &g, &err), 0, "%s", err.message);
    for (uint32_t i = 0; i < 2; i++)
        cr_assert_eq(
            input_gate_set_remote_channel(g, i, &id, i, "127.0.0.1", net_env_data_port(a), &err), 0,
            "%s", err.message);
    cr_assert_eq(input_gate_start(g, &err), 0, "%s", err.message);
    net_env_stats(b, &st);
    cr_assert_eq(st.buffers_total - st.buffers_available, 2 * 2,
                 "the gate took %zu buffers for 2 channels of 2 exclusive each",
                 st.buffers_total - st.buffers_available);
    input_gate_free(g);
    net_env_stats(b, &st);
    cr_assert_eq(st.buffers_available, st.buffers_total);
    notifier_release(&n);
    net_env_free(b);
    net_env_free(a);
}

Test(remote, unknown_partition_fails_after_backoff, .timeout = 60)
{
    struct net_env *a = test_env(32, 8192, false);
    struct net_env *b = test_env(32, 8192, false);
    struct consumer_channel_spec spec = { .host = "127.0.0.1", .port = net_env_data_port(a) };
    struct consumer_task c = { .env = b, .num_channels = 1, .channels = &spec };

    result_partition_id_random(&spec.partition);
    cr_assert_eq(consumer_task_start(&c), 0);
    cr_assert_eq(consumer_task_join(&c), SPATE_ENOENT, "%s", c.error);
    cr_assert(strstr(c.error, result_partition_id_str(&spec.partition).s) != NULL, "%s", c.error);
    cr_assert(strstr(c.error, "not found") != NULL, "%s", c.error);
    consumer_task_release(&c);
    net_env_free(b);
    net_env_free(a);
}

Test(remote, consumer_going_away_fails_the_producer, .timeout = 60)
{
    struct net_env *a = test_env(32, 8192, false);
    struct net_env *b = test_env(32, 8192, false);
    struct producer_task p = { .env = a,
                               .num_subpartitions = 1,
                               .records = 100000000,
                               .record_size = 64,
                               .buffer_timeout_ms = 5 };
    struct consumer_channel_spec spec;
    struct consumer_task c = {
        .env = b, .num_channels = 1, .channels = &spec, .stop_after = 10000
    };

    result_partition_id_random(&p.id);
    spec = (struct consumer_channel_spec){ .partition = p.id,
                                           .host = "127.0.0.1",
                                           .port = net_env_data_port(a) };
    cr_assert_eq(consumer_task_start(&c), 0);
    cr_assert_eq(producer_task_start(&p), 0);
    cr_assert_eq(consumer_task_join(&c), 0, "%s", c.error);
    consumer_task_release(&c);
    /* Even the whole consumer TaskManager going away fails the producer. */
    net_env_free(b);
    cr_assert_neq(producer_task_join(&p), 0);
    cr_assert(strstr(p.error, result_partition_id_str(&p.id).s) != NULL, "%s", p.error);
    cr_assert(strstr(p.error, "consumer") != NULL, "%s", p.error);
    net_env_free(a);
}

Test(remote, a_failing_producer_fails_the_consumer, .timeout = 60)
{
    struct net_env *a = test_env(32, 8192, false);
    struct net_env *b = test_env(32, 8192, false);
    struct producer_task p = { .env = a,
                               .num_subpartitions = 1,
                               .records = 100000000,
                               .record_size = 64,
                               .buffer_timeout_ms = 5 };
    struct consumer_channel_spec spec;
    struct consumer_task c = { .env = b, .num_channels = 1, .channels = &spec };
    char port[16];

    result_partition_id_random(&p.id);
    spec = (struct consumer_channel_spec){ .partition = p.id,
                                           .host = "127.0.0.1",
                                           .port = net_env_data_port(a) };
    cr_assert_eq(consumer_task_start(&c), 0);
    cr_assert_eq(producer_task_start(&p), 0);
    WAIT_FOR(__atomic_load_n(&c.received, __ATOMIC_RELAXED) >= 1000, 30,
             "the consumer to receive 1000 records");
    producer_task_cancel(&p);
    producer_task_join(&p);
    cr_assert_neq(consumer_task_join(&c), 0, "the consumer must fail, not hang");
    snprintf(port, sizeof port, ":%d", net_env_data_port(a));
    cr_assert(strstr(c.error, result_partition_id_str(&p.id).s) != NULL, "%s", c.error);
    cr_assert(strstr(c.error, port) != NULL, "names the producer's address: %s", c.error);
    consumer_task_release(&c);
    net_env_free(b);
    net_env_free(a);
}

Test(remote, garbage_on_the_data_port_drops_that_connection_only, .timeout = 60)
{
    struct net_env *a = test_env(32, 8192, false);
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)net_env_data_port(a)) };
    char junk[600], got[300];
    struct net_env_stats st;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ssize_t n;

    memset(junk, 'x', sizeof junk);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    /* The environment closes the connection: reads end (EOF or reset). */
    do {
        n = read(fd, got, sizeof got);
    } while (n > 0);
    close(fd);
    do {
        net_env_stats(a, &st);
    } while (st.connections_dropped == 0);
    cr_assert_eq(st.connections_dropped, 1);
    net_env_free(a);
    /* And nothing else: the same environment still serves real consumers. */
    struct pair_run r = { 1, 1, 10000, 16, PARTITIONER_FORWARD, 0, false, 64 };
    remote_run(&r);
}

Test(remote, a_peer_with_another_secret_is_refused, .timeout = 60)
{
    struct net_env_config cfg;
    struct net_env *a, *b;
    struct consumer_channel_spec spec;
    struct consumer_task c;
    spate_error err;

    cr_assert_eq(net_env_config_load(NULL, &cfg, &err), 0);
    cfg.num_buffers = 16;
    cfg.segment_size = 8192;
    cfg.secret = "producer's secret";
    cr_assert_eq(net_env_new(&cfg, &a, &err), 0, "%s", err.message);
    cfg.secret = "consumer's secret";
    cr_assert_eq(net_env_new(&cfg, &b, &err), 0, "%s", err.message);
    spec = (struct consumer_channel_spec){ .host = "127.0.0.1", .port = net_env_data_port(a) };
    result_partition_id_random(&spec.partition);
    c = (struct consumer_task){ .env = b, .num_channels = 1, .channels = &spec };
    cr_assert_eq(consumer_task_start(&c), 0);
    cr_assert_neq(consumer_task_join(&c), 0);
    cr_assert(strstr(c.error, "handshake refused") != NULL, "%s", c.error);
    cr_assert(strstr(c.error, "secret") != NULL, "%s", c.error);
    consumer_task_release(&c);
    net_env_free(b);
    net_env_free(a);
}
