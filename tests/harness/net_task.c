/* Producer and consumer tasks of net_task.h. Each runs the loop a real task
 * will: emit or read until blocked, then wait on its notifier until the next
 * deadline (the writer's flush deadline, the gate's retry). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "network/input_gate.h"
#include "network/record_reader.h"
#include "network/record_writer.h"
#include "network/result_partition.h"
#include "tests/harness/net_task.h"

#define EVENT_TYPE (NET_EVENT_USER_MIN + 1)

static void *
producer_main(void *arg)
{
    struct producer_task *p = arg;
    struct result_partition *rp = NULL;
    struct record_writer *w = NULL;
    struct partitioner part;
    uint64_t *seq = xcalloc(p->num_subpartitions, sizeof *seq);
    uint32_t size = p->record_size < NET_TASK_HEADER ? NET_TASK_HEADER : p->record_size;
    uint8_t *rec = xmalloc(size + 4096);
    spate_error err = { 0 };
    uint64_t start;
    int rc;

    if (getrandom(rec, size + 4096, 0) < 0)
        memset(rec, 0x5a, size + 4096);
    partitioner_init(&part, p->partitioner, p->num_subpartitions, 128);
    rc = result_partition_new(p->env, &p->id, p->num_subpartitions, &p->notifier, &p->metrics, &rp,
                              &err);
    if (rc == 0)
        rc = record_writer_new(rp, p->buffer_timeout_ms, &p->metrics, &w, &err);
    start = clock_mono_ns();
    for (uint64_t i = 0; rc == 0 && i < p->records; i++) {
        uint32_t ch;
        uint8_t *r = rec + (i & 1023) * 4; /* vary the payload, cheaply */

        if (p->partitioner == PARTITIONER_HASH)
            ch = partitioner_hash(&part, (uint32_t)(i * 2654435761u >> 7) % 128);
        else
            ch = partitioner_select(&part, 0);
        memcpy(r, &seq[ch], 8); /* the rest stays random: incompressible */
        if (p->timestamps) {
            uint64_t now = clock_mono_ns();

            memcpy(r + NET_TASK_HEADER, &now, 8);
        }
        seq[ch]++;
        if (p->use_reserve) {
            uint8_t *dst;

            rc = record_writer_reserve(w, ch, size, &dst, &err);
            if (rc == 0) {
                memcpy(dst, r, size);
                rc = record_writer_commit(w, size, &err);
            }
        } else {
            rc = record_writer_emit(w, ch, r, size, &err);
        }
        p->emitted++;
        if (rc == 0 && p->event_every && (i + 1) % p->event_every == 0)
            rc = record_writer_broadcast_event(w, EVENT_TYPE, seq, p->num_subpartitions * 8, &err);
        if (rc == 0 && p->pause_every && (i + 1) % p->pause_every == 0) {
            /* Idle like a task waiting for input: the flush deadline is served
             * by this wait. */
            while (rc == 0 && record_writer_next_deadline(w) != NOTIFIER_FOREVER) {
                rc = notifier_wait_until(&p->notifier, record_writer_next_deadline(w));
                if (rc >= 0)
                    rc = record_writer_flush_due(w, clock_mono_ns(), &err);
                else
                    spate_error_set(&err, rc, "cancelled");
            }
        }
    }
    if (rc == 0)
        rc = record_writer_finish(w, &err);
    p->elapsed_ns = clock_mono_ns() - start;
    record_writer_free(w);
    if (rp != NULL)
        result_partition_release(rp, rc == 0 ? NULL : &err);
    p->rc = rc;
    if (rc != 0)
        snprintf(p->error, sizeof p->error, "%s", err.message);
    free(seq);
    free(rec);
    return NULL;
}

int
producer_task_start(struct producer_task *p)
{
    spate_error err;

    task_io_metrics_init(&p->metrics);
    if (notifier_init(&p->notifier, &err) != 0)
        return -1;
    if (p->spin_set)
        notifier_set_spin(&p->notifier, p->spin_ns);
    return pthread_create(&p->thread, NULL, producer_main, p);
}

int
producer_task_join(struct producer_task *p)
{
    pthread_join(p->thread, NULL);
    notifier_release(&p->notifier);
    return p->rc;
}

void
producer_task_cancel(struct producer_task *p)
{
    notifier_cancel(&p->notifier);
}

static void *
consumer_main(void *arg)
{
    struct consumer_task *c = arg;
    struct input_gate *g = NULL;
    struct record_reader *r = NULL;
    uint64_t *expected = xcalloc(c->num_channels, sizeof *expected);
    spate_error err = { 0 };
    uint64_t start = clock_mono_ns(), since_delay = 0;
    int rc;

    rc = input_gate_new(c->env, c->num_channels, &c->notifier, &c->metrics, &g, &err);
    for (uint32_t i = 0; rc == 0 && i < c->num_channels; i++) {
        struct consumer_channel_spec *s = &c->channels[i];

        rc = s->host ? input_gate_set_remote_channel(g, i, &s->partition, s->subpartition, s->host,
                                                     s->port, &err)
                     : input_gate_set_local_channel(g, i, &s->partition, s->subpartition, &err);
    }
    if (rc == 0)
        rc = input_gate_start(g, &err);
    if (rc == 0)
        r = record_reader_new(g, &c->metrics);
    while (rc == 0) {
        struct record_view v;

        if (c->stall) {
            rc = notifier_wait_until(&c->notifier, NOTIFIER_FOREVER);
            if (atomic_load(&c->stop) || rc < 0)
                break;
            rc = 0;
            continue;
        }
        rc = record_reader_next(r, &v, &err);
        if (rc == RECORD_READER_RECORD) {
            uint64_t seq;

            rc = 0;
            /* read by tests while it runs */
            __atomic_store_n(&c->received, c->received + 1, __ATOMIC_RELAXED);
            c->bytes += v.len;
            c->per_channel[v.channel]++;
            if (c->check_order && v.len >= NET_TASK_HEADER) {
                memcpy(&seq, v.data, 8);
                if (seq != expected[v.channel])
                    c->order_errors++;
                expected[v.channel] = seq + 1;
            }
            if (c->collect_latency && v.len >= NET_TASK_HEADER + 8 &&
                c->latency_count < c->latency_cap) {
                uint64_t ts;

                memcpy(&ts, v.data + NET_TASK_HEADER, 8);
                c->latencies_ns[c->latency_count++] = clock_mono_ns() - ts;
            }
            if (c->delay_every && ++since_delay == c->delay_every) {
                since_delay = 0;
                usleep(c->delay_us);
            }
            if (c->stop_after && c->received >= c->stop_after)
                break;
        } else if (rc == RECORD_READER_EVENT) {
            uint32_t sub = c->channels[v.channel].subpartition;
            uint64_t before;

            rc = 0;
            c->events++;
            /* The event carries how many records its producer had sent to each
             * subpartition: exactly those must have arrived before it. */
            if (v.len < (sub + 1) * 8) {
                c->event_order_errors++;
                continue;
            }
            memcpy(&before, v.data + sub * 8, 8);
            if (c->check_order && before != expected[v.channel])
                c->event_order_errors++;
        } else if (rc == RECORD_READER_NONE) {
            metric_timer_start(&c->metrics.idle, clock_mono_ns());
            rc = notifier_wait_until(&c->notifier, input_gate_next_deadline(g));
            metric_timer_stop(&c->metrics.idle, clock_mono_ns());
            if (rc < 0)
                spate_error_set(&err, rc, "consumer cancelled");
            else
                rc = 0;
        } else if (rc == RECORD_READER_END) {
            rc = 0;
            break;
        }
    }
    c->elapsed_ns = clock_mono_ns() - start;
    record_reader_free(r);
    input_gate_free(g);
    c->rc = rc;
    if (rc != 0)
        snprintf(c->error, sizeof c->error, "%s", err.message);
    free(expected);
    return NULL;
}

int
consumer_task_start(struct consumer_task *c)
{
    spate_error err;

    task_io_metrics_init(&c->metrics);
    c->per_channel = xcalloc(c->num_channels, sizeof *c->per_channel);
    atomic_init(&c->stop, false);
    if (notifier_init(&c->notifier, &err) != 0)
        return -1;
    if (c->spin_set)
        notifier_set_spin(&c->notifier, c->spin_ns);
    return pthread_create(&c->thread, NULL, consumer_main, c);
}

int
consumer_task_join(struct consumer_task *c)
{
    pthread_join(c->thread, NULL);
    notifier_release(&c->notifier);
    return c->rc;
}

void
consumer_task_cancel(struct consumer_task *c)
{
    atomic_store(&c->stop, true);
    notifier_cancel(&c->notifier);
}

void
consumer_task_release(struct consumer_task *c)
{
    free(c->per_channel);
    c->per_channel = NULL;
}

static long
status_kb(const char *key)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, key, strlen(key)) == 0)
            kb = strtol(line + strlen(key), NULL, 10);
    fclose(f);
    return kb;
}

long
net_task_rss_kb(void)
{
    return status_kb("VmRSS:");
}

long
net_task_peak_rss_kb(void)
{
    return status_kb("VmHWM:");
}
