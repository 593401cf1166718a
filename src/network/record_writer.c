/* The record writer (record_writer.h): the slow path of emit (new buffers,
 * spanning records, flush-every-record), flushing, events, and the wait for
 * a buffer under backpressure. Task thread only. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "network/net_int.h"
#include "network/record_writer.h"

int
record_writer_new(struct result_partition *rp, int64_t buffer_timeout_ms,
                  struct task_io_metrics *metrics, struct record_writer **out, spate_error *err)
{
    struct record_writer *w = xcalloc(1, sizeof *w);

    UNUSED(err);
    w->num_channels = rp->num_subpartitions;
    w->channels = xcalloc(w->num_channels, sizeof *w->channels);
    w->flush_always = buffer_timeout_ms == 0;
    w->timeout_ns = buffer_timeout_ms > 0 ? (uint64_t)buffer_timeout_ms * 1000000u : 0;
    w->deadline_ns = NOTIFIER_FOREVER;
    w->partition = rp;
    w->metrics = metrics;
    *out = w;
    return 0;
}

void
record_writer_free(struct record_writer *w)
{
    if (w == NULL)
        return;
    for (uint32_t i = 0; i < w->num_channels; i++)
        if (w->channels[i].buf != NULL)
            net_buffer_recycle(w->channels[i].buf);
    free(w->channels);
    free(w->scratch);
    free(w);
}

static void
rw_publish(struct record_writer *w)
{
    if (w->metrics != NULL && !w->metrics->task_counts_records)
        metric_counter_add(&w->metrics->num_records_out, w->records);
    w->records = 0;
}

/* Sends the channel's buffer if it holds anything. */
static void
rw_finish(struct record_writer *w, uint32_t ch)
{
    struct rw_channel *c = &w->channels[ch];
    struct net_buffer *buf = c->buf;

    if (buf == NULL || c->pos == buf->data)
        return;
    buf->size = (uint32_t)(c->pos - buf->data);
    if (w->metrics != NULL)
        metric_counter_add(&w->metrics->num_bytes_out, buf->size);
    c->buf = NULL;
    c->pos = c->end = NULL;
    result_subpartition_add(&w->partition->subs[ch], buf);
}

static void
rw_flush(struct record_writer *w)
{
    for (uint32_t i = 0; i < w->num_channels; i++)
        rw_finish(w, i);
    w->deadline_ns = NOTIFIER_FOREVER;
    rw_publish(w);
}

int
record_writer_flush_all(struct record_writer *w, spate_error *err)
{
    rw_flush(w);
    return result_partition_check(w->partition, err);
}

int
record_writer_flush_due(struct record_writer *w, uint64_t now_ns, spate_error *err)
{
    if (now_ns >= w->deadline_ns)
        rw_flush(w);
    return result_partition_check(w->partition, err);
}

/* No buffer is free: back-pressured. Waits on the producer's notifier, which
 * a recycled buffer, a failure or a cancel pokes, serving the flush deadline
 * meanwhile (flushing needs no new buffer). */
static int
rw_wait_buffer(struct record_writer *w, struct net_buffer **out, spate_error *err)
{
    struct result_partition *rp = w->partition;
    struct notifier *n = rp->producer;
    int rc = 0;

    if (w->metrics != NULL)
        metric_timer_start(&w->metrics->back_pressured, clock_mono_ns());
    for (;;) {
        rc = result_partition_check(rp, err);
        if (rc != 0)
            break;
        if (n != NULL && notifier_is_cancelled(n)) {
            rc = spate_error_set(err, SPATE_ECANCELED,
                                 "task cancelled while waiting for a buffer of partition %s",
                                 result_partition_id_str(&rp->id).s);
            break;
        }
        *out = local_buffer_pool_request(rp->pool);
        if (*out != NULL)
            break;
        if (w->deadline_ns != NOTIFIER_FOREVER && clock_mono_ns() >= w->deadline_ns)
            rw_flush(w);
        if (n == NULL)
            continue; /* no notifier: spin (tests of the pool only) */
        rc = notifier_wait_until(n, w->deadline_ns);
        if (rc < 0 && rc != SPATE_ECANCELED) {
            spate_error_set(err, rc, "waiting for a buffer of partition %s: %s",
                            result_partition_id_str(&rp->id).s, spate_strerror(rc));
            break;
        }
        rc = 0;
    }
    if (w->metrics != NULL)
        metric_timer_stop(&w->metrics->back_pressured, clock_mono_ns());
    return rc;
}

static int
rw_cancelled(struct record_writer *w, spate_error *err)
{
    return spate_error_set(err, SPATE_ECANCELED, "task cancelled while writing partition %s",
                           result_partition_id_str(&w->partition->id).s);
}

static int
rw_new_buffer(struct record_writer *w, struct rw_channel *c, spate_error *err)
{
    struct notifier *n = w->partition->producer;
    struct net_buffer *buf;
    int rc = result_partition_check(w->partition, err);

    /* Checked per buffer, not per record: a cancel stops the writer within
     * one buffer even when it never has to wait. */
    if (rc != 0)
        return rc;
    if (n != NULL && notifier_is_cancelled(n))
        return rw_cancelled(w, err);
    buf = local_buffer_pool_request(w->partition->pool);
    if (buf == NULL && (rc = rw_wait_buffer(w, &buf, err)) != 0)
        return rc;
    c->buf = buf;
    c->pos = buf->data;
    c->end = buf->data + buf->capacity;
    if (w->timeout_ns != 0 && w->deadline_ns == NOTIFIER_FOREVER)
        w->deadline_ns = clock_mono_ns() + w->timeout_ns;
    return 0;
}

int
record_writer_emit_slow(struct record_writer *w, uint32_t channel, const void *record, uint32_t len,
                        spate_error *err)
{
    struct rw_channel *c = &w->channels[channel];
    const uint8_t *src = record;
    uint32_t left = len;
    bool wrote_len = false;
    int rc;

    if (len > RECORD_MAX_BYTES)
        return spate_error_set(err, SPATE_EMSGSIZE, "record of %u bytes (at most %u)", len,
                               RECORD_MAX_BYTES);
    for (;;) {
        size_t space, n;

        if (c->buf == NULL && (rc = rw_new_buffer(w, c, err)) != 0)
            return rc;
        space = (size_t)(c->end - c->pos);
        if (!wrote_len) {
            /* The length never spans buffers: the reader needs it whole. */
            if (space < RECORD_LENGTH_BYTES) {
                rw_finish(w, channel);
                continue;
            }
            memcpy(c->pos, &len, RECORD_LENGTH_BYTES);
            c->pos += RECORD_LENGTH_BYTES;
            space -= RECORD_LENGTH_BYTES;
            wrote_len = true;
        }
        n = MIN(space, (size_t)left);
        memcpy(c->pos, src, n);
        c->pos += n;
        src += n;
        left -= (uint32_t)n;
        if (left == 0)
            break;
        rw_finish(w, channel);
    }
    w->records++;
    if (w->flush_always || c->pos == c->end) {
        rw_finish(w, channel);
        if (w->flush_always)
            rw_publish(w);
    }
    return 0;
}

int
record_writer_broadcast_emit(struct record_writer *w, const void *record, uint32_t len,
                             spate_error *err)
{
    for (uint32_t i = 0; i < w->num_channels; i++) {
        int rc = record_writer_emit(w, i, record, len, err);

        if (rc != 0)
            return rc;
    }
    return 0;
}

int
record_writer_reserve(struct record_writer *w, uint32_t channel, uint32_t max_len, uint8_t **out,
                      spate_error *err)
{
    struct rw_channel *c = &w->channels[channel];
    size_t need = (size_t)max_len + RECORD_LENGTH_BYTES;
    int rc;

    if (max_len > RECORD_MAX_BYTES)
        return spate_error_set(err, SPATE_EMSGSIZE, "record of %u bytes (at most %u)", max_len,
                               RECORD_MAX_BYTES);
    w->reserved_channel = channel;
    if (c->buf == NULL || (size_t)(c->end - c->pos) < need) {
        size_t segment = network_buffer_pool_segment_size(w->partition->env->pool);

        if (need <= segment) {
            /* A fresh buffer holds it: start one rather than copy twice. */
            rw_finish(w, channel);
            if (c->buf == NULL && (rc = rw_new_buffer(w, c, err)) != 0)
                return rc;
        }
    }
    if (c->buf != NULL && (size_t)(c->end - c->pos) >= need) {
        w->reserved_in_scratch = 0;
        *out = c->pos + RECORD_LENGTH_BYTES;
        return 0;
    }
    if (w->scratch_cap < max_len) {
        free(w->scratch);
        w->scratch_cap = MAX(max_len, 2 * w->scratch_cap);
        w->scratch = xmalloc(w->scratch_cap);
    }
    w->reserved_in_scratch = 1;
    *out = w->scratch;
    return 0;
}

int
record_writer_commit(struct record_writer *w, uint32_t len, spate_error *err)
{
    uint32_t ch = w->reserved_channel;
    struct rw_channel *c = &w->channels[ch];

    if (w->reserved_in_scratch)
        return record_writer_emit_slow(w, ch, w->scratch, len, err);
    memcpy(c->pos, &len, RECORD_LENGTH_BYTES);
    c->pos += RECORD_LENGTH_BYTES + len;
    w->records++;
    if (w->flush_always || c->pos == c->end) {
        rw_finish(w, ch);
        if (w->flush_always)
            rw_publish(w);
    }
    return 0;
}

int
record_writer_broadcast_event(struct record_writer *w, uint32_t type, const void *payload,
                              uint32_t len, spate_error *err)
{
    int rc;

    if (type < NET_EVENT_USER_MIN)
        return spate_error_set(err, SPATE_EINVAL, "event type %u is reserved (use %u and up)", type,
                               NET_EVENT_USER_MIN);
    if (len + 4 > NET_EVENT_MAX)
        return spate_error_set(err, SPATE_EMSGSIZE, "event of %u bytes (at most %u)", len,
                               NET_EVENT_MAX - 4);
    rw_flush(w);
    rc = result_partition_check(w->partition, err);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < w->num_channels; i++)
        result_subpartition_add(&w->partition->subs[i], net_buffer_new_event(type, payload, len));
    return 0;
}

int
record_writer_finish(struct record_writer *w, spate_error *err)
{
    struct result_partition *rp = w->partition;
    int rc;

    rw_flush(w);
    rc = result_partition_check(rp, err);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < w->num_channels; i++)
        result_subpartition_add(&rp->subs[i],
                                net_buffer_new_event(NET_EVENT_END_OF_PARTITION, NULL, 0));
    result_partition_mark_finished(rp);
    return 0;
}
