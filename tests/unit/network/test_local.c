/* Local channels: a producer and a consumer task in one TaskManager hand
 * buffers over without copying; order per channel, events in order with
 * records, backpressure without loss, cancellation, late producers (also
 * under ThreadSanitizer). */
#include <string.h>
#include <unistd.h>

#include "../wait.h"
#include "net_test.h"

static void
local_run(uint32_t subs, uint64_t records, uint32_t size, enum partitioner_kind kind,
          int64_t timeout_ms, uint64_t event_every, size_t buffers, bool reserve)
{
    struct net_env *env = test_env(buffers, 4096, false);
    struct producer_task p = { .env = env,
                               .num_subpartitions = subs,
                               .records = records,
                               .record_size = size,
                               .partitioner = kind,
                               .buffer_timeout_ms = timeout_ms,
                               .event_every = event_every,
                               .use_reserve = reserve };
    struct consumer_task c[4];
    struct consumer_channel_spec spec[4];
    uint64_t total = 0;

    result_partition_id_random(&p.id);
    for (uint32_t i = 0; i < subs; i++) {
        spec[i] = (struct consumer_channel_spec){ .partition = p.id, .subpartition = i };
        c[i] = (struct consumer_task){
            .env = env, .num_channels = 1, .channels = &spec[i], .check_order = true
        };
        cr_assert_eq(consumer_task_start(&c[i]), 0);
    }
    cr_assert_eq(producer_task_start(&p), 0);
    cr_assert_eq(producer_task_join(&p), 0, "producer: %s", p.error);
    for (uint32_t i = 0; i < subs; i++) {
        cr_assert_eq(consumer_task_join(&c[i]), 0, "consumer %u: %s", i, c[i].error);
        cr_assert_eq(c[i].order_errors, 0, "records out of order on channel %u", i);
        cr_assert_eq(c[i].event_order_errors, 0, "events out of order on channel %u", i);
        if (event_every)
            cr_assert_eq(c[i].events, records / event_every);
        total += c[i].received;
        consumer_task_release(&c[i]);
    }
    cr_assert_eq(total, records, "records lost or duplicated");
    cr_assert_eq(metric_counter_get(&p.metrics.num_records_out), records);
    net_env_free(env);
}

Test(local, one_to_one_keeps_order, .timeout = 30)
{
    local_run(1, 200000, 16, PARTITIONER_FORWARD, 5, 0, 64, false);
}

Test(local, round_robin_to_three_with_spanning_records, .timeout = 30)
{
    /* 10000-byte records in 4 KiB buffers: every record spans buffers. */
    local_run(3, 3000, 10000, PARTITIONER_REBALANCE, 5, 0, 64, false);
}

Test(local, hash_with_events_in_order, .timeout = 30)
{
    local_run(4, 100000, 40, PARTITIONER_HASH, 5, 997, 64, false);
}

Test(local, flush_every_record_and_reserve_commit, .timeout = 30)
{
    local_run(2, 20000, 24, PARTITIONER_REBALANCE, 0, 0, 64, true);
    local_run(2, 2000, 9000, PARTITIONER_REBALANCE, 5, 0, 64, true);
}

Test(local, tiny_pool_backpressures_without_loss, .timeout = 30)
{
    /* The partition's pool has its minimum only (3 buffers for 2 channels):
     * the producer waits for its consumers over and over. */
    local_run(2, 50000, 100, PARTITIONER_REBALANCE, 5, 0, 3, false);
}

Test(local, consumer_started_before_producer_retries, .timeout = 30)
{
    struct net_env *env = test_env(32, 4096, false);
    struct producer_task p = { .env = env,
                               .num_subpartitions = 1,
                               .records = 1000,
                               .record_size = 16,
                               .buffer_timeout_ms = 5 };
    struct consumer_channel_spec spec;
    struct consumer_task c = {
        .env = env, .num_channels = 1, .channels = &spec, .check_order = true
    };
    struct net_env_stats st;

    result_partition_id_random(&p.id);
    spec = (struct consumer_channel_spec){ .partition = p.id };
    cr_assert_eq(consumer_task_start(&c), 0);
    /* The consumer finds no partition yet and backs off; the producer comes. */
    cr_assert_eq(producer_task_start(&p), 0);
    cr_assert_eq(producer_task_join(&p), 0, "%s", p.error);
    cr_assert_eq(consumer_task_join(&c), 0, "%s", c.error);
    cr_assert_eq(c.received, 1000);
    consumer_task_release(&c);
    net_env_stats(env, &st);
    cr_assert_eq(st.partitions, 0, "a consumed partition leaves the partition manager");
    cr_assert_eq(st.buffers_available, st.buffers_total);
    net_env_free(env);
}

Test(local, missing_partition_fails_after_backoff, .timeout = 30)
{
    struct net_env *env = test_env(16, 4096, false);
    struct consumer_channel_spec spec = { 0 };
    struct consumer_task c = { .env = env, .num_channels = 1, .channels = &spec };

    result_partition_id_random(&spec.partition);
    cr_assert_eq(consumer_task_start(&c), 0);
    cr_assert_eq(consumer_task_join(&c), SPATE_ENOENT);
    cr_assert(strstr(c.error, "not found") != NULL, "%s", c.error);
    cr_assert(strstr(c.error, result_partition_id_str(&spec.partition).s) != NULL, "%s", c.error);
    consumer_task_release(&c);
    net_env_free(env);
}

Test(local, cancel_wakes_a_backpressured_producer, .timeout = 30)
{
    struct net_env *env = test_env(16, 4096, false);
    struct producer_task p = { .env = env,
                               .num_subpartitions = 1,
                               .records = 1000000,
                               .record_size = 64,
                               .buffer_timeout_ms = 5 };
    struct consumer_channel_spec spec;
    struct consumer_task c = { .env = env, .num_channels = 1, .channels = &spec, .stall = true };

    result_partition_id_random(&p.id);
    spec = (struct consumer_channel_spec){ .partition = p.id };
    cr_assert_eq(consumer_task_start(&c), 0);
    cr_assert_eq(producer_task_start(&p), 0);
    /* The stalled consumer reads nothing: the producer runs out of buffers. */
    WAIT_FOR(metric_timer_read(&p.metrics.back_pressured, 1) != 0 ||
                 atomic_load(&p.metrics.back_pressured.start_ns) != 0,
             30, "the producer to be back-pressured");
    producer_task_cancel(&p);
    cr_assert_eq(producer_task_join(&p), SPATE_ECANCELED, "%s", p.error);
    cr_assert(p.emitted < 1000000);
    consumer_task_cancel(&c);
    consumer_task_join(&c);
    consumer_task_release(&c);
    net_env_free(env);
}

Test(local, consumer_going_away_fails_the_producer, .timeout = 30)
{
    struct net_env *env = test_env(16, 4096, false);
    struct producer_task p = { .env = env,
                               .num_subpartitions = 1,
                               .records = 10000000,
                               .record_size = 64,
                               .buffer_timeout_ms = 5 };
    struct consumer_channel_spec spec;
    struct consumer_task c = {
        .env = env, .num_channels = 1, .channels = &spec, .stop_after = 1000
    };

    result_partition_id_random(&p.id);
    spec = (struct consumer_channel_spec){ .partition = p.id };
    cr_assert_eq(consumer_task_start(&c), 0);
    cr_assert_eq(producer_task_start(&p), 0);
    cr_assert_eq(consumer_task_join(&c), 0, "%s", c.error);
    /* The consumer freed its gate mid-stream: the producer must fail, not hang. */
    cr_assert_neq(producer_task_join(&p), 0);
    cr_assert(strstr(p.error, result_partition_id_str(&p.id).s) != NULL, "%s", p.error);
    cr_assert(strstr(p.error, "consumer went away") != NULL, "%s", p.error);
    consumer_task_release(&c);
    net_env_free(env);
}

#include "core/clock.h"
#include "network/input_gate.h"
#include "network/record_reader.h"
#include "network/record_writer.h"
#include "network/result_partition.h"

/* One task thread with a writer and a reader on a local channel: what the
 * reader can see after each step says when the writer sent its buffer. */
struct timeout_rig {
    struct net_env *env;
    struct notifier n;
    struct result_partition *rp;
    struct record_writer *w;
    struct input_gate *g;
    struct record_reader *r;
};

static void
rig_open(struct timeout_rig *t, int64_t timeout_ms)
{
    struct result_partition_id id;
    spate_error err;

    t->env = test_env(16, 4096, false);
    cr_assert_eq(notifier_init(&t->n, &err), 0);
    result_partition_id_random(&id);
    cr_assert_eq(result_partition_new(t->env, &id, 1, &t->n, NULL, &t->rp, &err), 0);
    cr_assert_eq(record_writer_new(t->rp, timeout_ms, NULL, &t->w, &err), 0);
    cr_assert_eq(input_gate_new(t->env, 1, &t->n, NULL, &t->g, &err), 0);
    cr_assert_eq(input_gate_set_local_channel(t->g, 0, &id, 0, &err), 0);
    cr_assert_eq(input_gate_start(t->g, &err), 0);
    t->r = record_reader_new(t->g, NULL);
}

static void
rig_close(struct timeout_rig *t)
{
    struct record_view v;
    spate_error err;

    cr_assert_eq(record_writer_finish(t->w, &err), 0);
    while (record_reader_next(t->r, &v, &err) != RECORD_READER_END)
        ;
    record_reader_free(t->r);
    input_gate_free(t->g);
    record_writer_free(t->w);
    result_partition_release(t->rp, NULL);
    net_env_free(t->env);
    notifier_release(&t->n);
}

Test(local, the_buffer_timeout_bounds_latency_without_a_flusher_thread, .timeout = 30)
{
    struct timeout_rig t;
    struct record_view v;
    spate_error err;
    uint64_t before, after, deadline;
    int rc;

    rig_open(&t, 50);
    cr_assert_eq(record_writer_next_deadline(t.w), NOTIFIER_FOREVER, "nothing to flush yet");
    before = clock_mono_ns();
    cr_assert_eq(record_writer_emit(t.w, 0, "hello", 5, &err), 0);
    after = clock_mono_ns();
    /* Batched: the record waits in the writer's buffer... */
    cr_assert_eq(record_reader_next(t.r, &v, &err), RECORD_READER_NONE);
    /* ...with a deadline of at most the buffer timeout after the emit. */
    deadline = record_writer_next_deadline(t.w);
    cr_assert_geq(deadline, before + 50 * 1000000ull);
    cr_assert_leq(deadline, after + 50 * 1000000ull);
    /* The task loop's own wait serves the deadline: no other thread sends. */
    do {
        rc = notifier_wait_until(&t.n, record_writer_next_deadline(t.w));
        cr_assert_geq(rc, 0);
        cr_assert_eq(record_writer_flush_due(t.w, clock_mono_ns(), &err), 0);
    } while (record_writer_next_deadline(t.w) != NOTIFIER_FOREVER);
    cr_assert_geq(clock_mono_ns(), deadline, "not flushed before its deadline");
    cr_assert_eq(record_reader_next(t.r, &v, &err), RECORD_READER_RECORD);
    cr_assert_eq(v.len, 5);
    cr_assert_eq(memcmp(v.data, "hello", 5), 0);
    rig_close(&t);
}

Test(local, a_zero_buffer_timeout_sends_every_record_at_once, .timeout = 30)
{
    struct timeout_rig t;
    struct record_view v;
    spate_error err;

    rig_open(&t, 0);
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(record_writer_emit(t.w, 0, &i, sizeof i, &err), 0);
        cr_assert_eq(record_writer_next_deadline(t.w), NOTIFIER_FOREVER);
        cr_assert_eq(record_reader_next(t.r, &v, &err), RECORD_READER_RECORD);
        cr_assert_eq(memcmp(v.data, &i, sizeof i), 0);
    }
    rig_close(&t);
}

Test(local, events_flush_pending_records_first, .timeout = 30)
{
    struct timeout_rig t;
    struct record_view v;
    spate_error err;
    uint32_t barrier = 7;

    rig_open(&t, 100000); /* a timeout that never fires in this test */
    cr_assert_eq(record_writer_emit(t.w, 0, "a", 1, &err), 0);
    cr_assert_eq(record_writer_emit(t.w, 0, "b", 1, &err), 0);
    cr_assert_eq(record_reader_next(t.r, &v, &err), RECORD_READER_NONE);
    cr_assert_eq(record_writer_broadcast_event(t.w, NET_EVENT_USER_MIN, &barrier, 4, &err), 0);
    cr_assert_eq(record_reader_next(t.r, &v, &err), RECORD_READER_RECORD);
    cr_assert_eq(v.data[0], 'a');
    cr_assert_eq(record_reader_next(t.r, &v, &err), RECORD_READER_RECORD);
    cr_assert_eq(v.data[0], 'b');
    cr_assert_eq(record_reader_next(t.r, &v, &err), RECORD_READER_EVENT);
    cr_assert_eq(v.event_type, NET_EVENT_USER_MIN);
    cr_assert_eq(v.len, 4);
    cr_assert_eq(record_writer_broadcast_event(t.w, NET_EVENT_END_OF_PARTITION, NULL, 0, &err),
                 SPATE_EINVAL, "the end of a partition is the writer's own");
    rig_close(&t);
}
