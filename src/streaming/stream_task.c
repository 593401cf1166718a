/* The StreamTask's mailbox loop (stream_task.h). */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "network/input_gate.h"
#include "network/record_reader.h"
#include "network/record_writer.h"
#include "network/result_partition.h"
#include "state/heap_keyed_backend.h"
#include "streaming/accumulators.h"
#include "streaming/exchange_output.h"
#include "streaming/keyed_run.h"
#include "streaming/operator_chain.h"
#include "streaming/stream_element.h"
#include "streaming/stream_task.h"
#include "streaming/stream_task_int.h"
#include "streaming/types.h"

/* Records (or source polls) between looks at the clock, the mailbox and the
 * flush deadlines. */
#define TASK_BATCH 256

/* ---- the record writer under an exchange ---- */

static uint8_t *
writer_reserve(void *sink, uint32_t channel, uint32_t len, spate_error *err)
{
    uint8_t *out;

    return record_writer_reserve(sink, channel, len, &out, err) == 0 ? out : NULL;
}

static int
writer_commit(void *sink, uint32_t len, spate_error *err)
{
    return record_writer_commit(sink, len, err);
}

static const struct exchange_sink_ops writer_ops = { writer_reserve, writer_commit };

/* ---- set-up and tear-down ---- */

static int
task_open_outputs(struct stream_task *t, spate_error *err)
{
    const struct stream_task_params *p = t->p;
    const struct jg_vertex *v = t->v;
    int rc;

    if (p->npartitions != v->noutputs)
        return spate_error_set(err, SPATE_EINVAL,
                               "task '%s' has %d result partitions for %d outputs", v->name,
                               p->npartitions, v->noutputs);
    t->partitions = xcalloc((size_t)v->noutputs + 1, sizeof *t->partitions);
    t->writers = xcalloc((size_t)v->noutputs + 1, sizeof *t->writers);
    t->xouts = xcalloc((size_t)v->noutputs + 1, sizeof *t->xouts);
    t->outs = xcalloc((size_t)v->noutputs + 1, sizeof *t->outs);
    for (int o = 0; o < v->noutputs; o++) {
        const struct result_partition_desc *d = &p->partitions[o];
        const struct jg_edge *e = &p->graph->edges[v->outputs[o]];
        const struct jg_vertex *target = &p->graph->vertices[e->target];
        const struct jg_operator *src = &v->ops[e->source_operator];

        if ((rc = result_partition_new(p->net, &d->partition, d->nsubpartitions, p->notifier,
                                       p->metrics, &t->partitions[o], err)) != 0)
            return rc;
        if ((rc = record_writer_new(t->partitions[o], p->buffer_timeout_ms, p->metrics,
                                    &t->writers[o], err)) != 0)
            return rc;
        exchange_output_init(&t->xouts[o], e, src->settings.out_type, (int)d->nsubpartitions,
                             target->max_parallelism, p->info.subtask, &writer_ops, t->writers[o],
                             NULL);
        exchange_output_set_room(&t->xouts[o], record_writer_room(t->writers[o]));
        if (p->metrics != NULL)
            t->xouts[o].records_out = &p->metrics->num_records_out;
        t->outs[o] = &t->xouts[o].base;
    }
    return 0;
}

static int
task_open_inputs(struct stream_task *t, spate_error *err)
{
    const struct stream_task_params *p = t->p;
    int rc;

    if (p->ngates != t->v->ninputs)
        return spate_error_set(err, SPATE_EINVAL, "task '%s' has %d input gates for %d inputs",
                               t->v->name, p->ngates, t->v->ninputs);
    t->gates = xcalloc((size_t)p->ngates + 1, sizeof *t->gates);
    t->readers = xcalloc((size_t)p->ngates + 1, sizeof *t->readers);
    t->gate_ended = xcalloc((size_t)p->ngates + 1, sizeof *t->gate_ended);
    t->valves = xcalloc((size_t)p->ngates + 1, sizeof *t->valves);
    t->watermark = INT64_MIN;
    for (int g = 0; g < p->ngates; g++) {
        const struct input_gate_desc *d = &p->gates[g];

        if ((rc = input_gate_new(p->net, d->nchannels, p->notifier, p->metrics, &t->gates[g],
                                 err)) != 0)
            return rc;
        for (uint32_t c = 0; c < d->nchannels; c++) {
            const struct input_channel_desc *ch = &d->channels[c];

            rc = ch->local
                     ? input_gate_set_local_channel(t->gates[g], c, &ch->partition,
                                                    ch->subpartition, err)
                     : input_gate_set_remote_channel(t->gates[g], c, &ch->partition,
                                                     ch->subpartition, ch->host, ch->port, err);
            if (rc != 0)
                return rc;
        }
        t->valves[g].nchannels = d->nchannels;
        t->valves[g].channel_watermark = xcalloc(d->nchannels, sizeof(int64_t));
        t->valves[g].channel_idle = xcalloc(d->nchannels, sizeof(bool));
        t->valves[g].watermark = INT64_MIN;
        for (uint32_t c = 0; c < d->nchannels; c++)
            t->valves[g].channel_watermark[c] = INT64_MIN;
        t->readers[g] = record_reader_new(t->gates[g], p->metrics);
        if ((rc = input_gate_start(t->gates[g], err)) != 0)
            return rc;
    }
    return 0;
}

static void
task_close(struct stream_task *t, const spate_error *cause)
{
    const struct stream_task_params *p = t->p;

    /* Snapshots being written still read the chain's frozen state. */
    task_checkpoints_close(t);
    operator_chain_free(t->chain);
    t->chain = NULL;
    for (int g = 0; t->gates != NULL && g < p->ngates; g++) {
        if (t->readers[g] != NULL)
            record_reader_free(t->readers[g]);
        if (t->gates[g] != NULL)
            input_gate_free(t->gates[g]);
    }
    for (int o = 0; t->partitions != NULL && o < t->v->noutputs; o++) {
        if (t->writers[o] != NULL)
            record_writer_free(t->writers[o]);
        exchange_output_release(&t->xouts[o]);
        if (t->partitions[o] != NULL)
            result_partition_release(t->partitions[o], cause);
    }
    for (int g = 0; t->valves != NULL && g < p->ngates; g++) {
        free(t->valves[g].channel_watermark);
        free(t->valves[g].channel_idle);
    }
    free(t->valves);
    free(t->gates);
    free(t->readers);
    free(t->gate_ended);
    free(t->partitions);
    free(t->writers);
    free(t->xouts);
    free(t->outs);
    free(t->in_rec);
    free(t->in_rec2);
    free(t->gate_second);
}

/* ---- the loop ---- */

/* A user function's failure or a broken exchange, as the task's error. */
static int
task_check(struct stream_task *t, spate_error *err)
{
    const char *failure = operator_chain_failure(t->chain);

    if (failure != NULL)
        return spate_error_set(err, SPATE_EUSER, "%s", failure);
    for (int o = 0; o < t->v->noutputs; o++)
        if (t->xouts[o].error.code != 0) {
            *err = t->xouts[o].error;
            return err->code;
        }
    return 0;
}

static uint64_t
task_deadline(struct stream_task *t)
{
    uint64_t deadline = NOTIFIER_FOREVER;

    for (int o = 0; o < t->v->noutputs; o++)
        deadline = MIN(deadline, record_writer_next_deadline(t->writers[o]));
    for (int g = 0; g < t->p->ngates; g++)
        if (!t->gate_ended[g])
            deadline = MIN(deadline, input_gate_next_deadline(t->gates[g]));
    for (int i = 0; i < t->chain->nops; i++) {
        const struct stream_operator *op = t->chain->ops[i];

        if (op->next_processing_ns != 0)
            deadline = MIN(deadline, op->next_processing_ns);
        if (op->native_metrics != NULL)
            deadline = MIN(deadline, op->native_metrics_ns);
    }
    if (t->next_latency_ns != 0)
        deadline = MIN(deadline, t->next_latency_ns);
    return deadline;
}

/* Runs the operators' processing-time work that is due (timers, periodic
 * watermarks): Flink's processing-time mails. */
static void
task_processing_time(struct stream_task *t, uint64_t now)
{
    /* After the savepoint of a stop the task's state is what a resumed
     * job starts from: a timer or periodic watermark firing now would
     * emit twice. */
    if (t->terminal_id != 0)
        return;
    for (int i = 0; i < t->chain->nops; i++) {
        struct stream_operator *op = t->chain->ops[i];

        if (op->next_processing_ns != 0 && op->next_processing_ns <= now)
            operator_on_processing_time(op, now);
    }
}

/* currentOutputWatermark: the least watermark the outputs have sent. */
static void
task_publish_output_watermark(struct stream_task *t)
{
    int64_t min = INT64_MAX;

    if (t->p->metrics == NULL || t->v->noutputs == 0)
        return;
    for (int o = 0; o < t->v->noutputs; o++)
        min = MIN(min, t->xouts[o].last_watermark);
    if (min != t->output_watermark) {
        t->output_watermark = min;
        metric_gauge_set(&t->p->metrics->output_watermark, min);
    }
}

static int
task_flush_due(struct stream_task *t, uint64_t now, spate_error *err)
{
    int rc;

    task_processing_time(t, now);
    task_publish_output_watermark(t);
    for (int i = 0; i < t->chain->nops; i++)
        operator_backend_metrics(t->chain->ops[i], now);
    for (int o = 0; o < t->v->noutputs; o++)
        exchange_output_publish(&t->xouts[o]);
    for (int o = 0; o < t->v->noutputs; o++)
        if ((rc = record_writer_flush_due(t->writers[o], now, err)) != 0)
            return rc;
    return 0;
}

/* Waits for the notifier (and fd, when >= 0) until deadline; the idle time
 * is measured. SPATE_ECANCELED once cancelled. */
static int
task_wait(struct stream_task *t, uint64_t deadline, int fd)
{
    struct task_io_metrics *m = t->p->metrics;
    uint64_t now = clock_mono_ns();
    int rc;

    if (m != NULL)
        metric_timer_start(&m->idle, now);
    if (fd < 0) {
        rc = notifier_wait_until(t->p->notifier, deadline);
    } else {
        struct pollfd fds[2] = { { notifier_fd(t->p->notifier), POLLIN, 0 }, { fd, POLLIN, 0 } };
        int timeout = -1;

        if (deadline != NOTIFIER_FOREVER)
            timeout = deadline <= now ? 0 : (int)((deadline - now + 999999) / 1000000);
        poll(fds, 2, timeout);
        /* Consume a pending notify without blocking; reports a cancel. */
        rc = notifier_wait_until(t->p->notifier, 0);
    }
    if (m != NULL)
        metric_timer_stop(&m->idle, clock_mono_ns());
    return rc == SPATE_ECANCELED ? rc : 0;
}

/* A source's latency marker (Flink's LatencyMarkerEmitter): stamped now,
 * past the source itself into what follows it. */
static SPATE_NOINLINE void
task_emit_latency_marker(struct stream_task *t, struct stream_operator *head, uint64_t now)
{
    struct latency_marker m = { clock_wall_ms(), head->config->operator_id, t->p->info.subtask };

    if (head->out->emit_latency_marker != NULL)
        head->out->emit_latency_marker(head->out, &m);
    t->next_latency_ns = now + (uint64_t)t->p->info.latency->interval_ms * 1000000u;
}

static int
task_run_source(struct stream_task *t, spate_error *err)
{
    struct stream_operator *head = operator_chain_head(t->chain);
    const struct latency_tracking *lt = t->p->info.latency;
    uint64_t now;
    int rc;

    if (lt != NULL && lt->interval_ms > 0)
        t->next_latency_ns = clock_mono_ns() + (uint64_t)lt->interval_ms * 1000000u;

    for (;;) {
        enum source_status st;

        if (notifier_is_cancelled(t->p->notifier))
            return SPATE_ECANCELED;
        if (task_has_mail(t) && (rc = task_run_mails(t, err)) != 0)
            return rc;
        if (t->source_stopping) {
            /* Stopped for a savepoint: nothing more until it completes. */
            if (t->terminal_done)
                return 0;
            if (!task_has_mail(t) && (rc = task_wait(t, task_deadline(t), -1)) != 0)
                return rc;
            if ((rc = task_flush_due(t, clock_mono_ns(), err)) != 0)
                return rc;
            continue;
        }
        st = head->vt->poll(head, TASK_BATCH, err);
        if (err->code != 0)
            return err->code;
        if ((rc = task_check(t, err)) != 0)
            return rc;
        now = clock_mono_ns();
        if (t->next_latency_ns != 0 && now >= t->next_latency_ns)
            task_emit_latency_marker(t, head, now);
        if ((rc = task_flush_due(t, now, err)) != 0)
            return rc;
        if (st == SOURCE_END) {
            /* A bounded source ends event time: every timer and window fires. */
            operator_process_watermark(head, RECORD_MAX_WATERMARK);
            return 0;
        }
        if (st == SOURCE_WAITING) {
            uint64_t deadline = task_deadline(t);

            if (head->wait_until_ns != 0)
                deadline = MIN(deadline, head->wait_until_ns);
            head->wait_until_ns = 0;
            if ((rc = task_wait(t, deadline, head->wait_fd)) != 0)
                return rc;
        }
    }
}

/* A two-input head's currentInput1Watermark and currentInput2Watermark:
 * the least over each input's active gates. */
static void
task_update_input_watermarks(struct stream_task *t, struct stream_operator *head)
{
    int64_t min[2] = { INT64_MAX, INT64_MAX };

    for (int i = 0; i < t->p->ngates; i++)
        if (!t->valves[i].idle)
            min[t->gate_second[i]] = MIN(min[t->gate_second[i]], t->valves[i].watermark);
    for (int k = 0; k < 2; k++)
        if (min[k] != INT64_MAX && min[k] > metric_gauge_get(&head->input_watermarks[k]))
            metric_gauge_set(&head->input_watermarks[k], min[k]);
}

/* Recomputes gate g's watermark and idleness, then the task's; advances
 * the head's event time when it moved. */
static void
task_update_watermark(struct stream_task *t, int g)
{
    struct valve *v = &t->valves[g];
    struct stream_operator *head = operator_chain_head(t->chain);
    int64_t min = INT64_MAX;
    bool all_idle = true;
    int64_t task_min = INT64_MAX;
    bool task_idle = true;

    for (uint32_t c = 0; c < v->nchannels; c++) {
        if (v->channel_idle[c])
            continue;
        all_idle = false;
        min = MIN(min, v->channel_watermark[c]);
    }
    v->idle = all_idle;
    if (!all_idle && min > v->watermark)
        v->watermark = min;
    for (int i = 0; i < t->p->ngates; i++) {
        if (t->valves[i].idle)
            continue;
        task_idle = false;
        task_min = MIN(task_min, t->valves[i].watermark);
    }
    if (head->vt->process2 != NULL)
        task_update_input_watermarks(t, head);
    if (task_idle != t->idle) {
        t->idle = task_idle;
        head->out->emit_idle(head->out, task_idle);
    }
    if (!task_idle && task_min > t->watermark) {
        t->watermark = task_min;
        if (t->p->metrics != NULL)
            metric_gauge_set(&t->p->metrics->input_watermark, task_min);
        operator_process_watermark(head, task_min);
    }
}

/* A latency marker from upstream: the head records it and passes it on. */
static SPATE_NOINLINE void
task_latency_marker(struct stream_operator *head, const struct latency_marker *m)
{
    latency_stats_report(head, m);
    if (head->out->emit_latency_marker != NULL)
        head->out->emit_latency_marker(head->out, m);
}

/* A watermark or a watermark status of gate g. */
static SPATE_NOINLINE void
task_process_event_time(struct stream_task *t, int g, const struct record_view *view,
                        const struct element *el)
{
    struct valve *v = &t->valves[g];

    if (el->kind == ELEMENT_WATERMARK) {
        if (el->watermark > v->channel_watermark[view->channel] || v->channel_idle[view->channel]) {
            v->channel_watermark[view->channel] =
                MAX(el->watermark, v->channel_watermark[view->channel]);
            v->channel_idle[view->channel] = false;
            task_update_watermark(t, g);
        }
        return;
    }
    v->channel_idle[view->channel] = el->idle;
    task_update_watermark(t, g);
}

static SPATE_NOINLINE int
task_corrupt_element(struct stream_task *t, const struct record_view *view, spate_error *err)
{
    return spate_error_set(err, SPATE_EPROTO,
                           "corrupt stream element of %u bytes on input channel %u of '%s'",
                           view->len, view->channel, t->v->name);
}

static SPATE_NOINLINE int
task_corrupt_record(struct stream_task *t, const struct record_view *view, size_t len,
                    spate_error *err)
{
    return spate_error_set(err, SPATE_EPROTO,
                           "corrupt record of %zu bytes on input channel %u of '%s'", len,
                           view->channel, t->v->name);
}

/* Hands one element of gate g to the head operator. */
static SPATE_INLINE int
task_process_element(struct stream_task *t, int g, const struct record_view *view, spate_error *err)
{
    struct stream_operator *head = operator_chain_head(t->chain);
    struct element el;

    if (unlikely(element_read(view->data, view->len, &el) != 0 ||
                 view->channel >= t->valves[g].nchannels))
        return task_corrupt_element(t, view, err);
    if (unlikely(el.kind != ELEMENT_RECORD)) {
        if (el.kind == ELEMENT_LATENCY_MARKER)
            task_latency_marker(head, &el.latency);
        else
            task_process_event_time(t, g, view, &el);
        return 0;
    }
    t->records_in++;
    if (unlikely(t->gate_second[g])) {
        if (types_deserialize(head->config->in_type2, el.body, el.body_len, t->in_rec2) != 0)
            return task_corrupt_record(t, view, el.body_len, err);
        operator_process2(head, t->in_rec2, &el.meta);
        return 0;
    }
    if (t->in_plain_size != 0) {
        /* The bytes are the record. */
        if (el.body_len != t->in_plain_size)
            return task_corrupt_record(t, view, el.body_len, err);
        bytes_copy(t->in_rec, el.body, el.body_len);
    } else if (types_deserialize(head->config->in_type, el.body, el.body_len, t->in_rec) != 0) {
        return task_corrupt_record(t, view, el.body_len, err);
    }
    operator_process(head, t->in_rec, &el.meta);
    return 0;
}

/* operator_process as a keyed run's process function. */
static void
task_process_one(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    operator_process(op, rec, meta);
}

/* keyed_run_var's ahead: the slot and tag of the key's entry in each
 * state's map (keyed_backend_prefetch's first half; its second, the heap
 * block of a large value four calls later, cost word count's keyed
 * thread more than it saved). */
static void
task_state_ahead(const void *backend, uint64_t key_hash)
{
    const struct heap_keyed_backend *b = backend;

    for (int i = 0; i < b->nstates; i++) {
        const struct state_map *map = keyed_prefetch_map(&b->states[i], key_hash);

        if (map != NULL)
            state_map_prefetch(map, key_hash);
    }
}

/* The head's heap keyed backend when it has keyed state, else NULL. */
static struct heap_keyed_backend *
task_heap_state(struct stream_operator *head)
{
    if (head->backend == NULL || head->backend->ops != &heap_keyed_backend_ops ||
        heap_keyed_backend_of(head->backend)->nstates == 0)
        return NULL;
    return heap_keyed_backend_of(head->backend);
}

/* Reads gate g until it has nothing now, has ended, or *processed reaches
 * TASK_BATCH: the per-record loop, a function of its own so that what it
 * reads stays in registers. */
static SPATE_NOINLINE int
task_run_gate(struct stream_task *t, int g, int *processed, spate_error *err)
{
    struct record_reader *r = t->readers[g];
    /* Read once: the operator's calls may change any memory. */
    struct stream_operator *head = operator_chain_head(t->chain);
    size_t plain = t->gate_second[g] ? 0 : t->in_plain_size;
    uint32_t nchannels = t->valves[g].nchannels;
    void *in_rec = t->in_rec;
    /* Records not plain into a keyed head on the heap backend with state:
     * read by keyed_run_var, their state fetched ahead. */
    const void *ahead_data = plain == 0 && !t->gate_second[g] ? task_heap_state(head) : NULL;
    types_deserialize_fn de =
        ahead_data != NULL ? types_codec_of(head->config->in_type).deserialize : NULL;
    int rc, n = *processed;

    while (n < TASK_BATCH) {
        struct record_view view;
        const uint8_t *pos, *end;
        uint32_t channel;

        if (plain != 0 && record_reader_span(r, &pos, &end, &channel) && channel < nchannels) {
            /* Keyed records (the shape of most), with their time or
             * without, read where they are in the current buffer, until
             * anything else. */
            int k = 0;

            if ((size_t)(end - pos) > RECORD_LENGTH_BYTES &&
                (pos[RECORD_LENGTH_BYTES] == ELEMENT_KEYED_TS_TAG ||
                 pos[RECORD_LENGTH_BYTES] == ELEMENT_KEYED_TAG)) {
                int max = TASK_BATCH - n;
                bool timed = pos[RECORD_LENGTH_BYTES] == ELEMENT_KEYED_TS_TAG;

                if (head->vt->process_keyed_run != NULL)
                    k = head->vt->process_keyed_run(head, in_rec, plain, &pos, end, max, timed);
                else
                    k = keyed_run_either(head, task_process_one, NULL, NULL, in_rec, plain, &pos,
                                         end, max, timed);
            }
            record_reader_consumed(r, pos, (uint64_t)k);
            t->records_in += (uint64_t)k;
            n += k;
            if (k > 0)
                continue;
        } else if (ahead_data != NULL && record_reader_span(r, &pos, &end, &channel) &&
                   channel < nchannels) {
            /* Keyed records of their own lengths (a word and its count):
             * in the current buffer, each key's state fetched ahead. */
            int k = head->vt->process_keyed_run_var != NULL
                        ? head->vt->process_keyed_run_var(head, in_rec, &pos, end, TASK_BATCH - n)
                        : keyed_run_var(head, head->config->in_type, de, task_state_ahead,
                                        ahead_data, in_rec, &pos, end, TASK_BATCH - n);

            record_reader_consumed(r, pos, (uint64_t)k);
            t->records_in += (uint64_t)k;
            n += k;
            if (k > 0)
                continue;
        }
        rc = record_reader_next(r, &view, err);
        if (likely(rc == RECORD_READER_RECORD)) {
            if ((rc = task_process_element(t, g, &view, err)) != 0)
                return rc;
            n++;
        } else if (rc == RECORD_READER_EVENT) {
            if (view.event_type == NET_EVENT_CHECKPOINT_BARRIER &&
                (rc = task_on_barrier(t, g, view.channel, view.data, view.len, err)) != 0)
                return rc;
            if (view.event_type == NET_EVENT_END_OF_DATA && view.len == 1 && view.data[0] == 0)
                t->stop_no_drain = true; /* stopped without drain upstream */
            n++;
        } else if (rc == RECORD_READER_END) {
            t->gate_ended[g] = true;
            t->gates_ended++;
            if ((rc = task_check_alignment(t, err)) != 0)
                return rc;
            break;
        } else if (rc == RECORD_READER_NONE) {
            break;
        } else {
            return rc;
        }
    }
    *processed = n;
    return 0;
}

static int
task_run_input(struct stream_task *t, spate_error *err)
{
    const struct stream_task_params *p = t->p;
    const struct spate_type *in_type = operator_chain_head(t->chain)->config->in_type;
    int rc;

    t->in_rec = xcalloc(1, in_type->size + 16);
    if (in_type->plain && in_type->kind != TYPE_CUSTOM)
        t->in_plain_size = in_type->size;
    if (operator_chain_head(t->chain)->config->in_type2 != NULL)
        t->in_rec2 = xcalloc(1, operator_chain_head(t->chain)->config->in_type2->size + 16);
    t->gate_second = xcalloc((size_t)p->ngates + 1, sizeof *t->gate_second);
    for (int g = 0; g < p->ngates; g++)
        t->gate_second[g] = p->graph->edges[p->gates[g].edge].input_index == 1;
    for (;;) {
        int processed = 0;

        if (notifier_is_cancelled(p->notifier))
            return SPATE_ECANCELED;
        if (task_has_mail(t) && (rc = task_run_mails(t, err)) != 0)
            return rc;
        for (int g = 0; g < p->ngates; g++) {
            if (t->gate_ended[g])
                continue;
            if ((rc = task_run_gate(t, g, &processed, err)) != 0)
                return rc;
        }
        /* A channel that ended during an alignment owes no barrier. */
        if ((rc = task_check_alignment(t, err)) != 0)
            return rc;
        if (p->metrics != NULL) {
            /* numRecordsIn per batch, not per record. */
            metric_counter_add(&p->metrics->num_records_in, t->records_in);
            t->records_in = 0;
        }
        if ((rc = task_check(t, err)) != 0)
            return rc;
        if (t->gates_ended == p->ngates)
            return 0;
        if ((rc = task_flush_due(t, clock_mono_ns(), err)) != 0)
            return rc;
        if (processed == 0 && (rc = task_wait(t, task_deadline(t), -1)) != 0)
            return rc;
    }
}

/* A subtask restored finished (FLIP-147): its operators had ended in the
 * checkpoint, so it emits nothing but the end of event time, reads its
 * inputs (whose producers were restored finished too) to their end, and
 * ends its partitions. */
static int
task_run_finished(struct stream_task *t, spate_error *err)
{
    const struct stream_task_params *p = t->p;
    int rc;

    for (;;) {
        bool any = false;

        if (notifier_is_cancelled(p->notifier))
            return SPATE_ECANCELED;
        for (int g = 0; g < p->ngates; g++) {
            struct record_view view;

            while (!t->gate_ended[g] &&
                   (rc = record_reader_next(t->readers[g], &view, err)) != RECORD_READER_NONE) {
                if (rc < 0)
                    return rc;
                if (rc == RECORD_READER_END) {
                    t->gate_ended[g] = true;
                    t->gates_ended++;
                }
                any = true;
            }
        }
        if (t->gates_ended == p->ngates)
            break;
        if (!any && (rc = task_wait(t, task_deadline(t), -1)) != 0)
            return rc;
    }
    operator_process_watermark(operator_chain_head(t->chain), RECORD_MAX_WATERMARK);
    return task_check(t, err);
}

/* Whether the chain has a two-phase-commit operator (a sink that commits
 * when a checkpoint completes). */
static bool
task_has_two_phase(const struct stream_task *t)
{
    for (int i = 0; i < t->chain->nops; i++)
        if (t->chain->ops[i]->vt->checkpoint_complete != NULL)
            return true;
    return false;
}

/* The end of input (not when stopped without drain: the state is in the
 * savepoint). With checkpoints, a two-phase-commit operator's end of input,
 * which commits what it holds, waits for the final checkpoint (Flink's,
 * FLIP-147): a checkpoint the task took after every other operator's end of
 * input, whose completion commits the rest; committed at once, a failure
 * before a later checkpoint completed would replay it from an older one. */
static int
task_end_input(struct stream_task *t, spate_error *err)
{
    bool final = t->cp != NULL && t->p->info.checkpointing && t->terminal_id == 0 &&
                 !t->stop_no_drain && task_has_two_phase(t);
    int rc;

    for (int i = 0; !t->stop_no_drain && i < t->chain->nops; i++) {
        struct stream_operator *op = t->chain->ops[i];

        if (op->vt->end_input != NULL && !(final && op->vt->checkpoint_complete != NULL))
            op->vt->end_input(op);
    }
    if ((rc = task_check(t, err)) != 0)
        return rc;
    /* A checkpoint whose alignment waited for the end of input is taken
     * now: for a two-phase-commit task it is the final one. */
    t->input_ended = true;
    if ((rc = task_check_alignment(t, err)) != 0 || !final)
        return rc;
    SPATE_LOG_DEBUG("checkpoint", "task %s: input ended; waiting for the final checkpoint",
                    t->p->info.task_name);
    if ((rc = task_await_final(t, err)) != 0)
        return rc;
    for (int i = 0; i < t->chain->nops; i++) {
        struct stream_operator *op = t->chain->ops[i];

        if (op->vt->end_input != NULL && op->vt->checkpoint_complete != NULL)
            op->vt->end_input(op);
    }
    return task_check(t, err);
}

/* Operator names that occur once in the graph name their counters; a
 * repeated name gets the operator's id as well. */
static bool
name_is_unique(const struct job_graph *jg, const char *name)
{
    int seen = 0;

    for (int v = 0; v < jg->nvertices; v++)
        for (int i = 0; i < jg->vertices[v].nops; i++)
            seen += strcmp(jg->vertices[v].ops[i].name, name) == 0;
    return seen <= 1;
}

/* Adds each operator's record counts to the task's accumulators, which the
 * JobMaster sums over subtasks: "<operator>.numRecordsIn" and "...Out". */
static void
task_count_records(struct stream_task *t)
{
    const struct job_graph *jg = t->p->graph;
    struct accumulators *acc = t->p->info.accumulators;

    if (acc == NULL)
        return;
    for (int i = 0; i < t->chain->nops; i++) {
        const struct jg_operator *jop = &t->v->ops[i];
        const struct stream_operator *op = t->chain->ops[i];
        char base[256], name[300];

        if (name_is_unique(jg, jop->name))
            snprintf(base, sizeof base, "%s", jop->name);
        else
            snprintf(base, sizeof base, "%s (%s)", jop->name, id_str(&jop->operator_id).s);
        snprintf(name, sizeof name, "%s.numRecordsIn", base);
        accumulators_counter(acc, name)->value += (int64_t)op->records_in;
        snprintf(name, sizeof name, "%s.numRecordsOut", base);
        accumulators_counter(acc, name)->value += (int64_t)op->records_out;
    }
}

int
stream_task_run(const struct stream_task_params *p, spate_error *err)
{
    struct stream_task t = { .p = p, .v = &p->graph->vertices[p->vertex] };
    int rc;

    t.output_watermark = INT64_MIN;
    if (p->metrics != NULL)
        p->metrics->task_counts_records = true; /* elements other than records pass too */
    if ((rc = task_open_outputs(&t, err)) != 0)
        goto out;
    if ((rc = operator_chain_new(p->graph, p->vertex, &p->info, t.outs, &t.chain, err)) != 0)
        goto out;
    for (int o = 0; o < t.v->noutputs; o++)
        t.xouts[o].ctx = &t.chain->ops[p->graph->edges[t.v->outputs[o]].source_operator]->ctx;
    if ((rc = task_open_inputs(&t, err)) != 0 || (rc = task_checkpoints_open(&t, err)) != 0)
        goto out;
    if (p->on_running != NULL)
        p->on_running(p->data);

    if (p->restore != NULL && p->restore->finished) {
        SPATE_LOG_INFO("checkpoint", "task %s restored finished", p->info.task_name);
        rc = task_run_finished(&t, err);
    } else {
        rc = t.v->ninputs == 0 ? task_run_source(&t, err) : task_run_input(&t, err);
        /* The input ended: final results, then end every partition. */
        if (rc == 0)
            rc = task_end_input(&t, err);
    }
    if (rc == 0) {
        static const uint8_t no_drain = 0;

        rc = task_await_terminal(&t, err);
        for (int o = 0; rc == 0 && t.stop_no_drain && o < t.v->noutputs; o++)
            rc = record_writer_broadcast_event(t.writers[o], NET_EVENT_END_OF_DATA, &no_drain, 1,
                                               err);
        for (int o = 0; rc == 0 && o < t.v->noutputs; o++)
            rc = record_writer_finish(t.writers[o], err);
        if (rc == 0)
            task_count_records(&t);
    }
out:
    for (int o = 0; t.xouts != NULL && o < t.v->noutputs; o++)
        exchange_output_publish(&t.xouts[o]);
    if (rc == SPATE_ECANCELED)
        spate_error_set(err, rc, "task '%s' (%d/%d) was cancelled", t.v->name, p->info.subtask + 1,
                        p->info.parallelism);
    task_close(&t, rc == 0 ? NULL : err);
    return rc;
}
