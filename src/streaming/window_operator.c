/* The window operator (Flink's WindowOperator and EvictingWindowOperator):
 * assigns each record of a keyed stream to its windows, keeps each window's
 * contents in keyed state under the window's namespace (an aggregate, a
 * reduced value, or the elements when a process function or an evictor needs
 * them all), asks the trigger when to fire, and clears a window's state when
 * the watermark passes its end plus the allowed lateness. Session windows
 * merge: a key's windows are kept in a list state and overlapping ones are
 * folded together with their contents. Task thread only. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/clock.h"
#include "core/key_group.h"
#include "core/util.h"
#include "state/heap_keyed_backend.h"
#include "state/state_backend.h"
#include "streaming/keys.h"
#include "streaming/keyed_run.h"
#include "streaming/operator_metrics.h"
#include "streaming/types.h"
#include "streaming/window_operator.h"

/* The entry key of an 8-byte key in a time window: window_acc_of's. */
#define LEAF_CKEY (8 + 8 + sizeof(spate_time_window))

/* A window with state of some of its keys, waiting for its time: the one
 * timer of all of them (window_timers). */
struct window_timer {
    spate_time_window win;
    int64_t fire, cleanup; /* its last timestamp; its clean-up time */
    uint64_t ns_part;      /* keyed_composite_hash(0, its namespace's hash) */
    bool fired;            /* fired; its state waits for the clean-up */
};

/* Internal states, after the operator's declared ones. */
enum { WS_CONTENTS, WS_COUNT, WS_SESSIONS, WS_COUNT_OF };

struct window_op {
    /* op->backend's heap backend (state_backend_heap): the timers, called
     * inline unless they are in RocksDB, and the heap's state when
     * op->backend is it. */
    struct heap_keyed_backend *heap;
    bool timers_on_heap;
    struct state_decl decls[WS_COUNT_OF];
    struct spate_type *session_type; /* (start, end) */
    /* The heap backend's contents, found inline on the per-record path
     * (NULL on another backend); and the same through the table. */
    struct heap_state *contents;
    spate_state *contents_st;
    spate_state *count, *sessions;
    void *rec;    /* a copy target for elements and results */
    void *result; /* the aggregate's result */
    /* What the per-record path reads, resolved once at open. */
    struct key_access key;
    bool event_time;           /* event-time windows (not the global one) */
    bool buffers;              /* keeps the elements (process function, evictor) */
    enum trigger_kind trigger; /* the trigger, the assigner's default resolved */
    int64_t lateness_ms;
    spate_time_window last_window;  /* tumbling: the last record's window */
    int64_t last_max, last_cleanup; /* its last timestamp and clean-up time */
    uint64_t last_ns_hash;          /* its keyed_ns_hash */
    /* The last window while the watermark has not passed its end (else
     * empty): the records window_acc_of takes, with no look at the
     * watermark. */
    spate_time_window open_window;
    /* A key of fixed size: the contents' entry key of (key, last_window),
     * its namespace part written with the window, its key per record. */
    uint8_t *ckey;
    size_t ckey_len;
    bool leaf; /* fast, event time, an 8-byte key: window_acc_of */
    /* For window_acc_of, resolved at open: its entries' lengths word
     * (state_map_inline_lens), and the aggregate's add (NULL: a reduce). */
    uint64_t leaf_lens;
    void (*leaf_add)(spate_ctx *ctx, const void *in, void *acc);
    /* window_acc_of compares an entry's key only, not its window: the
     * last window's namespace hash is no other waiting window's (every
     * entry of the contents is in a waiting window: window_timers). */
    bool key_only;
    /* The contents' key groups, for window_acc_of: by mask, from kg_start,
     * kg_count of them. */
    uint32_t kg_mask, kg_start, kg_count;
    /* The contents were small when last counted (window_contents_small);
     * they are counted again small_due keyed runs later. */
    bool small;
    int small_due;
    /* An aggregate or reduce over tumbling windows with their default
     * trigger and an accumulator kept in place: window_process_fast. */
    bool fast;
    /* The common window in event time with its default trigger: a timer
     * per window, not per key and window (Flink's), kept here, fired by
     * walking the window's entries of the contents; checkpoints hold the
     * per-key form (form, timer_service.h). */
    bool window_timers;
    struct window_timer *wt;
    size_t nwt, wt_cap;
    struct timer_owner_form form;
    void *acc;                           /* an accumulator copied out of its entry, aligned */
    struct metric_counter *late_dropped; /* numLateRecordsDropped */
    uint8_t key_scratch[256];
};

/* The window's settings (operator_config.h), resolved into fields of the
 * operator's state at open wherever a per-record path reads them. */
static const struct window_config *
wcfg(const struct stream_operator *op)
{
    return op->conf;
}

static inline int64_t
window_max_timestamp(spate_time_window w)
{
    return w.end == INT64_MAX ? INT64_MAX : w.end - 1;
}

static inline bool
is_event_time(const struct stream_operator *op)
{
    return ((const struct window_op *)op->impl)->event_time;
}

/* When a window's state is cleared: its end plus the allowed lateness in
 * event time, its end in processing time, never for the global window. */
static inline int64_t
cleanup_time(const struct stream_operator *op, spate_time_window w)
{
    const struct window_op *wo = op->impl;
    int64_t max = window_max_timestamp(w);

    if (max == INT64_MAX)
        return INT64_MAX;
    if (!wo->event_time)
        return max;
    return max > INT64_MAX - wo->lateness_ms ? INT64_MAX : max + wo->lateness_ms;
}

static inline bool
is_late(const struct stream_operator *op, spate_time_window w)
{
    return is_event_time(op) && cleanup_time(op, w) <= op->current_watermark;
}

static inline void
set_window(struct stream_operator *op, spate_time_window *w)
{
    op->ctx.window = *w;
    op->ctx.keyctx.ns = w;
    op->ctx.keyctx.ns_len = sizeof *w;
}

/* Flink's TimeWindow.getWindowStartWithOffset. */
static int64_t
window_start(int64_t ts, int64_t offset, int64_t size)
{
    int64_t r = (ts - offset + size) % size;

    if (r < 0)
        r += size;
    return ts - r;
}

/* ---- triggers ---- */

static enum trigger_kind
resolve_trigger(const struct window_config *c)
{
    if (c->trigger != TRIGGER_DEFAULT)
        return c->trigger;
    if (c->assigner.kind == SPATE_WINDOW_GLOBAL)
        return TRIGGER_NEVER;
    return c->assigner.event_time ? TRIGGER_EVENT_TIME : TRIGGER_PROCESSING_TIME;
}

static inline enum trigger_kind
trigger_of(const struct stream_operator *op)
{
    return ((const struct window_op *)op->impl)->trigger;
}

/* A timer of the current key and window: the heap's inline, else
 * through the backend's table (timers in RocksDB). */
static inline void
window_register_timer(struct stream_operator *op, struct window_op *w, bool event_time,
                      int64_t timestamp)
{
    if (likely(w->timers_on_heap))
        keyed_backend_register_timer(w->heap, event_time, timestamp);
    else
        op->backend->ops->register_timer(op->backend, event_time, timestamp);
}

static void
window_delete_timer(struct stream_operator *op, struct window_op *w, bool event_time,
                    int64_t timestamp)
{
    if (w->timers_on_heap)
        keyed_backend_delete_timer(w->heap, event_time, timestamp);
    else
        op->backend->ops->delete_timer(op->backend, event_time, timestamp);
}

/* max_ts: window_max_timestamp(win). */
static inline spate_trigger_result
trigger_on_element(struct stream_operator *op, struct window_op *w, const void *rec, int64_t ts,
                   spate_time_window win, int64_t max_ts, bool new_window)
{
    const struct window_config *c = wcfg(op);

    switch (trigger_of(op)) {
    case TRIGGER_EVENT_TIME:
        if (max_ts <= op->current_watermark)
            return SPATE_TRIGGER_FIRE; /* a late record within the lateness refires */
        /* Registered with the window's first element; deduplicated anyway. */
        if (new_window)
            window_register_timer(op, w, true, max_ts);
        return SPATE_TRIGGER_CONTINUE;
    case TRIGGER_PROCESSING_TIME:
        if (new_window)
            window_register_timer(op, w, false, max_ts);
        return SPATE_TRIGGER_CONTINUE;
    case TRIGGER_COUNT: {
        int64_t n = 0;

        spate_value_get(w->count, &n);
        if (++n >= c->trigger_count) {
            spate_state_clear(w->count);
            return c->purging ? SPATE_TRIGGER_FIRE_AND_PURGE : SPATE_TRIGGER_FIRE;
        }
        spate_value_update(w->count, &n);
        return SPATE_TRIGGER_CONTINUE;
    }
    case TRIGGER_CUSTOM:
        return c->custom.on_element(&op->ctx, rec, ts, win);
    case TRIGGER_NEVER:
    case TRIGGER_DEFAULT:
        break;
    }
    return SPATE_TRIGGER_CONTINUE;
}

static spate_trigger_result
trigger_on_time(struct stream_operator *op, bool event_time, int64_t time, spate_time_window win)
{
    const struct window_config *c = wcfg(op);

    switch (trigger_of(op)) {
    case TRIGGER_EVENT_TIME:
        return event_time && time == window_max_timestamp(win) ? SPATE_TRIGGER_FIRE
                                                               : SPATE_TRIGGER_CONTINUE;
    case TRIGGER_PROCESSING_TIME:
        return event_time ? SPATE_TRIGGER_CONTINUE : SPATE_TRIGGER_FIRE;
    case TRIGGER_CUSTOM:
        if (event_time && c->custom.on_event_time)
            return c->custom.on_event_time(&op->ctx, time, win);
        if (!event_time && c->custom.on_processing_time)
            return c->custom.on_processing_time(&op->ctx, time, win);
        return SPATE_TRIGGER_CONTINUE;
    default:
        return SPATE_TRIGGER_CONTINUE;
    }
}

/* ---- contents ---- */

static inline bool
buffers_elements(const struct stream_operator *op)
{
    return ((const struct window_op *)op->impl)->buffers;
}

/* Adds rec to the current window's contents; true when the window is new
 * for the key. */
static inline bool
contents_add(struct stream_operator *op, struct window_op *w, const void *rec, int64_t ts)
{
    if (unlikely(w->contents == NULL)) /* not the heap backend: its table */
        return op->backend->ops->add(w->contents_st, ts, rec);
    if (buffers_elements(op))
        return keyed_list_add_timestamped(w->contents, ts, rec);
    if (wcfg(op)->function == WINDOW_FN_REDUCE)
        return keyed_reducing_add(w->contents, rec);
    return keyed_aggregating_add(w->contents, rec);
}

/* Runs the evictor over the buffered elements of the current window. */
static void
evict(struct stream_operator *op, struct window_op *w, spate_time_window win, bool before)
{
    const struct window_config *c = wcfg(op);
    int64_t *ts = NULL, max = INT64_MIN;
    bool *keep = NULL;
    size_t n = 0, cap = 0;
    spate_iter it;

    if (c->evictor == EVICTOR_NONE || (before == false && c->evictor != EVICTOR_CUSTOM))
        return; /* the built-in evictors evict before, as Flink's by default */
    spate_list_iter(w->contents_st, &it);
    for (;;) {
        int64_t t;

        if (!keyed_list_next_timestamped(&it, NULL, &t))
            break;
        xgrow((void **)&ts, &cap, n + 1, sizeof *ts);
        ts[n++] = t;
        max = MAX(max, t);
    }
    if (n == 0)
        goto out;
    keep = xcalloc(n, sizeof *keep);
    for (size_t i = 0; i < n; i++)
        keep[i] = true;
    switch (c->evictor) {
    case EVICTOR_COUNT:
        for (size_t i = 0; n > (size_t)c->evictor_value && i < n - (size_t)c->evictor_value; i++)
            keep[i] = false;
        break;
    case EVICTOR_TIME:
        for (size_t i = 0; i < n; i++)
            keep[i] = ts[i] >= max - c->evictor_value;
        break;
    case EVICTOR_CUSTOM:
        c->evictor_fn(&op->ctx, win, n, ts, keep, before);
        break;
    case EVICTOR_NONE:
        break;
    }
    op->backend->ops->list_retain(w->contents_st, keep, n);
out:
    free(ts);
    free(keep);
}

/* The current key's result of window win (in w->result) goes out: to the
 * process function, else downstream. */
static void
emit_result(struct stream_operator *op, struct window_op *w, spate_time_window win)
{
    const struct window_config *c = wcfg(op);

    if (c->process != NULL) {
        const struct spate_type *t =
            c->function == WINDOW_FN_AGGREGATE ? c->agg.out_type : op->config->in_type;
        spate_iter one = { NULL, w->result, (const uint8_t *)w->result + t->size, 0, 0 };

        c->process(&op->ctx, win, &one);
    } else {
        operator_emit(op, w->result, &op->ctx.meta);
    }
}

/* Emits the current window's result. */
static void
emit_window(struct stream_operator *op, struct window_op *w, spate_time_window win)
{
    const struct window_config *c = wcfg(op);
    spate_iter it;

    op->ctx.meta.timestamp = window_max_timestamp(win);
    op->ctx.meta.has_key_hash = false;
    if (op->ctx.scratch.used != 0)
        scratch_reset(&op->ctx.scratch);
    if (buffers_elements(op)) {
        evict(op, w, win, true);
        spate_list_iter(w->contents_st, &it);
        if (c->function == WINDOW_FN_PROCESS) {
            c->process(&op->ctx, win, &it);
        } else {
            /* An evictor ahead of reduce or aggregate: fold the kept ones. */
            const struct spate_type *in = op->config->in_type;
            void *acc = xcalloc(1, MAX(in->size, c->agg.acc_type ? c->agg.acc_type->size : 0) + 16);
            void *tmp = xcalloc(1, in->size + 16);
            bool any = false;

            if (c->function == WINDOW_FN_AGGREGATE)
                c->agg.create(&op->ctx, acc);
            while (spate_list_next(&it, w->rec)) {
                if (c->function == WINDOW_FN_AGGREGATE) {
                    c->agg.add(&op->ctx, w->rec, acc);
                } else if (!any) {
                    memcpy(acc, w->rec, in->size);
                } else {
                    c->reduce(&op->ctx, acc, w->rec, tmp);
                    memcpy(acc, tmp, in->size);
                }
                any = true;
            }
            if (any) {
                const void *out = acc;

                if (c->function == WINDOW_FN_AGGREGATE) {
                    c->agg.result(&op->ctx, acc, w->result);
                    out = w->result;
                }
                if (c->process != NULL) {
                    spate_iter one = { NULL, out,
                                       (const uint8_t *)out + (c->function == WINDOW_FN_AGGREGATE
                                                                   ? c->agg.out_type->size
                                                                   : in->size),
                                       0, 0 };

                    c->process(&op->ctx, win, &one);
                } else {
                    operator_emit(op, out, &op->ctx.meta);
                }
            }
            free(acc);
            free(tmp);
        }
        evict(op, w, win, false);
        return;
    }
    if (spate_value_get(w->contents_st, w->result))
        emit_result(op, w, win);
}

static void
clear_window(struct stream_operator *op, struct window_op *w)
{
    UNUSED(op);
    spate_state_clear(w->contents_st);
    if (w->trigger == TRIGGER_COUNT) /* only the count trigger keeps a count */
        spate_state_clear(w->count);
}

static inline void
act(struct stream_operator *op, struct window_op *w, spate_trigger_result r, spate_time_window win)
{
    if (r == SPATE_TRIGGER_FIRE || r == SPATE_TRIGGER_FIRE_AND_PURGE)
        emit_window(op, w, win);
    if (r == SPATE_TRIGGER_PURGE || r == SPATE_TRIGGER_FIRE_AND_PURGE)
        spate_state_clear(w->contents_st);
}

/* ---- a timer per window (window_timers) ---- */

/* Whether window_acc_of may compare keys only: no waiting window other
 * than the last one has its namespace hash (a 48-bit collision). */
static void
check_key_only(struct window_op *w)
{
    uint64_t part = keyed_composite_hash(0, w->last_ns_hash);

    w->key_only = w->leaf && w->window_timers;
    for (size_t i = 0; i < w->nwt && w->key_only; i++)
        if (w->wt[i].ns_part == part &&
            (w->wt[i].win.start != w->last_window.start || w->wt[i].win.end != w->last_window.end))
            w->key_only = false;
}

/* Window win's timer; NULL: it has none. */
static struct window_timer *
window_timer_find(struct window_op *w, spate_time_window win)
{
    for (size_t i = 0; i < w->nwt; i++)
        if (w->wt[i].win.start == win.start && w->wt[i].win.end == win.end)
            return &w->wt[i];
    return NULL;
}

/* Window win has state of a key now: its timer, if it has none yet.
 * fired: its end is behind the watermark already (its late records fire
 * as they come). */
static void
window_timer_add(struct stream_operator *op, struct window_op *w, spate_time_window win, bool fired)
{
    struct window_timer *t = window_timer_find(w, win);

    if (t != NULL) {
        t->fired &= fired;
        return;
    }
    xgrow((void **)&w->wt, &w->wt_cap, w->nwt + 1, sizeof *w->wt);
    w->wt[w->nwt++] =
        (struct window_timer){ win, window_max_timestamp(win), cleanup_time(op, win),
                               keyed_composite_hash(0, XXH3_64bits(&win, sizeof win)), fired };
    check_key_only(w);
}

/* Whether e is an entry of the contents in window win: its key is
 * [u32 key length][key][u32 namespace length][win]. The key's bytes and
 * length go to *key. */
static inline bool
entry_in_window(const struct state_entry *e, spate_time_window win, spate_bytes *key)
{
    const uint8_t *ck = state_entry_key(e);
    uint32_t len = state_entry_key_len(e), klen, nlen;

    if (len < 8 + sizeof win)
        return false;
    memcpy(&klen, ck, 4);
    if (len - 8 - sizeof win != klen)
        return false;
    memcpy(&nlen, ck + 4 + klen, 4);
    if (nlen != sizeof win || memcmp(ck + 8 + klen, &win, sizeof win) != 0)
        return false;
    *key = (spate_bytes){ ck + 4, klen };
    return true;
}

/* A walk over the contents for one window's timer. */
struct window_walk {
    struct stream_operator *op;
    const struct window_timer *t;
    bool emit; /* fire: each key's result goes out */
};

/* Fires e's key in the window: its result, from its accumulator (or the
 * reduced value) where it is stored. */
static void
fire_entry(struct window_walk *k, const struct state_entry *e, spate_bytes key)
{
    struct stream_operator *op = k->op;
    struct window_op *w = op->impl;

    keyed_set_key(&op->ctx.keyctx, key, e->hash ^ k->t->ns_part, &k->t->win, sizeof k->t->win);
    op->ctx.meta.timestamp = k->t->fire;
    op->ctx.meta.has_key_hash = false;
    if (op->ctx.scratch.used != 0)
        scratch_reset(&op->ctx.scratch);
    if (e->value_len != w->contents->value_size) { /* not a plain value: through the state */
        emit_window(op, w, k->t->win);
        return;
    }
    if (wcfg(op)->function == WINDOW_FN_AGGREGATE) {
        memcpy(w->acc, state_entry_value(e), e->value_len);
        wcfg(op)->agg.result(&op->ctx, w->acc, w->result);
    } else {
        memcpy(w->result, state_entry_value(e), e->value_len);
    }
    emit_result(op, w, k->t->win);
}

static int
walk_fire(struct state_entry *e, void *data)
{
    struct window_walk *k = data;
    spate_bytes key;

    if (entry_in_window(e, k->t->win, &key))
        fire_entry(k, e, key);
    return 0;
}

static bool
walk_fire_and_clear(const struct state_entry *e, void *data)
{
    struct window_walk *k = data;
    spate_bytes key;

    if (!entry_in_window(e, k->t->win, &key))
        return false;
    if (k->emit)
        fire_entry(k, e, key);
    return true;
}

/* Fires and clears, in time order, the windows whose timers the watermark
 * passed: each walks its window's entries, key group by key group. */
static void
window_timers_advance(struct stream_operator *op, struct window_op *w, int64_t watermark)
{
    struct keyed_state *ks = &w->contents->maps;

    for (;;) {
        struct window_timer t;
        struct window_walk k = { op, &t, false };
        size_t due = SIZE_MAX;
        int64_t at = 0;

        for (size_t i = 0; i < w->nwt; i++) {
            int64_t ti = w->wt[i].fired ? w->wt[i].cleanup : w->wt[i].fire;

            if (ti <= watermark && (due == SIZE_MAX || ti < at)) {
                due = i;
                at = ti;
            }
        }
        if (due == SIZE_MAX)
            break;
        t = w->wt[due];
        k.emit = !t.fired;
        set_window(op, &t.win);
        if (t.cleanup <= watermark) {
            /* The window goes; its timer first (the array may grow meanwhile). */
            w->wt[due] = w->wt[--w->nwt];
            for (uint32_t g = 0; g <= ks->range.end - ks->range.start; g++)
                state_map_remove_if(&ks->maps[g], walk_fire_and_clear, &k);
        } else {
            w->wt[due].fired = true;
            for (uint32_t g = 0; g <= ks->range.end - ks->range.start; g++)
                state_map_foreach(&ks->maps[g], walk_fire, &k);
        }
    }
    keyed_set_key(&op->ctx.keyctx, (spate_bytes){ "", 0 }, 0, NULL, 0);
}

/* A checkpoint's timers in the per-key form: each key of a waiting
 * window gets the timers Flink's would have, its end's (not fired yet)
 * and its clean-up's. */
static void
window_timers_snapshot(void *data, struct timer_service *ts, struct byte_buf *out)
{
    struct stream_operator *op = data;
    struct window_op *w = op->impl;
    struct keyed_state *ks = &w->contents->maps;

    if (w->nwt == 0)
        return;
    for (uint32_t g = 0; g <= ks->range.end - ks->range.start; g++) {
        const struct state_map *m = &ks->maps[g];

        for (size_t i = 0; m->slots != NULL && i <= m->mask; i++) {
            const struct state_entry *e = &m->slots[i];
            spate_bytes key;

            if (!state_entry_used(e))
                continue;
            for (size_t j = 0; j < w->nwt; j++) {
                const struct window_timer *t = &w->wt[j];
                uint64_t key_hash = e->hash ^ t->ns_part;

                if (!entry_in_window(e, t->win, &key))
                    continue;
                if (!t->fired)
                    timer_service_snapshot_put(ts, out, true, t->fire, key_hash, key, &t->win,
                                               sizeof t->win);
                if (t->cleanup != t->fire)
                    timer_service_snapshot_put(ts, out, true, t->cleanup, key_hash, key, &t->win,
                                               sizeof t->win);
                break;
            }
        }
    }
}

/* A restored per-key timer of a window: its window's timer. */
static bool
window_timers_adopt(void *data, bool event_time, int64_t timestamp, spate_bytes key, const void *ns,
                    size_t ns_len)
{
    struct stream_operator *op = data;
    spate_time_window win;

    UNUSED(key);
    if (!event_time || ns_len != sizeof win)
        return false;
    memcpy(&win, ns, sizeof win);
    if (timestamp != window_max_timestamp(win) && timestamp != cleanup_time(op, win))
        return false;
    window_timer_add(op, op->impl, win, timestamp != window_max_timestamp(win));
    return true;
}

/* ---- session merging ---- */

/* Moves the contents of window `from` into `into` (the current key). */
static void
merge_contents(struct stream_operator *op, struct window_op *w, spate_time_window from,
               spate_time_window into)
{
    const struct window_config *c = wcfg(op);
    spate_iter it;

    set_window(op, &from);
    if (buffers_elements(op)) {
        uint8_t *copy;
        size_t n = 0;
        int64_t *ts = NULL;
        void **recs = NULL;

        /* Read all first: writing the other window may move the entry. */
        spate_list_iter(w->contents_st, &it);
        copy = it.at ? xmalloc((size_t)(it.end - it.at) + 1) : NULL;
        if (copy != NULL) {
            memcpy(copy, it.at, (size_t)(it.end - it.at));
            it.end = copy + (it.end - it.at);
            it.at = copy;
        }
        for (;;) {
            void *r = xcalloc(1, op->config->in_type->size + 16);
            int64_t t;

            if (!keyed_list_next_timestamped(&it, r, &t)) {
                free(r);
                break;
            }
            ts = xrealloc(ts, (n + 1) * sizeof *ts);
            recs = xrealloc(recs, (n + 1) * sizeof *recs);
            ts[n] = t;
            recs[n++] = r;
        }
        set_window(op, &into);
        for (size_t i = 0; i < n; i++) {
            op->backend->ops->add(w->contents_st, ts[i], recs[i]);
            free(recs[i]);
        }
        free(recs);
        free(ts);
        free(copy);
    } else if (c->function == WINDOW_FN_REDUCE) {
        if (spate_value_get(w->contents_st, w->rec)) {
            void *v = xmalloc(op->config->in_type->size + 16);
            size_t len = types_serialized_size(op->config->in_type, w->rec);
            uint8_t *bytes = xmalloc(len + 1);

            /* The value points into state that is about to change. */
            types_serialize(op->config->in_type, w->rec, bytes, len);
            types_deserialize(op->config->in_type, bytes, len, v);
            set_window(op, &into);
            spate_reducing_add(w->contents_st, v);
            free(v);
            free(bytes);
        }
    } else {
        /* Aggregates merge accumulator into accumulator. */
        const struct spate_type *at = c->agg.acc_type;
        spate_state *st = w->contents_st;
        size_t len;
        uint8_t *bytes;
        void *from_acc = xcalloc(1, at->size + 16);
        void *into_acc = xcalloc(1, at->size + 16);
        bool had_from, had_into;

        /* The accumulators themselves, not their results. The state's
         * descriptor is never changed for it: the snapshot thread reads
         * it meanwhile (a flip to a value state here once wrote window
         * contents into a checkpoint as value state, which no restore
         * could read). */
        had_from = state_value_get_internal(st, from_acc);
        if (had_from) {
            len = types_serialized_size(at, from_acc);
            bytes = xmalloc(len + 1);
            types_serialize(at, from_acc, bytes, len);
            types_deserialize(at, bytes, len, from_acc);
            set_window(op, &into);
            had_into = state_value_get_internal(st, into_acc);
            if (had_into)
                c->agg.merge(&op->ctx, from_acc, into_acc);
            spate_value_update(st, had_into ? into_acc : from_acc);
            free(bytes);
        }
        free(from_acc);
        free(into_acc);
    }
    set_window(op, &from);
    clear_window(op, w);
    window_delete_timer(op, w, is_event_time(op), window_max_timestamp(from));
    window_delete_timer(op, w, is_event_time(op), cleanup_time(op, from));
}

/* Adds [ts, ts + gap) to the key's sessions, merging what overlaps; returns
 * the session the record belongs to. */
static spate_time_window
merge_session(struct stream_operator *op, struct window_op *w, spate_time_window win,
              bool *merged_new)
{
    spate_time_window *all = NULL, cur = win, s;
    size_t n = 0, cap = 0;
    bool *absorbed;
    spate_iter it;

    op->ctx.keyctx.ns = NULL;
    op->ctx.keyctx.ns_len = 0;
    spate_list_iter(w->sessions, &it);
    while (spate_list_next(&it, &s)) {
        xgrow((void **)&all, &cap, n + 1, sizeof *all);
        all[n++] = s;
    }
    absorbed = xcalloc(n + 1, sizeof *absorbed);
    /* Flink's TimeWindow.intersects: touching windows merge too. */
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < n; i++) {
            if (absorbed[i] || all[i].start > cur.end || all[i].end < cur.start)
                continue;
            absorbed[i] = true;
            cur.start = MIN(cur.start, all[i].start);
            cur.end = MAX(cur.end, all[i].end);
            grew = true;
        }
    }
    *merged_new = true;
    for (size_t i = 0; i < n; i++) {
        if (!absorbed[i])
            continue;
        if (all[i].start == cur.start && all[i].end == cur.end) {
            *merged_new = false; /* the record fell inside an existing session */
            continue;
        }
        merge_contents(op, w, all[i], cur);
    }
    /* Rewrite the key's session list. */
    op->ctx.keyctx.ns = NULL;
    op->ctx.keyctx.ns_len = 0;
    spate_state_clear(w->sessions);
    for (size_t i = 0; i < n; i++)
        if (!absorbed[i])
            spate_list_add(w->sessions, &all[i]);
    spate_list_add(w->sessions, &cur);
    free(all);
    free(absorbed);
    return cur;
}

static void
forget_session(struct stream_operator *op, struct window_op *w, spate_time_window win)
{
    spate_time_window *keep = NULL, s;
    size_t n = 0, cap = 0;
    spate_iter it;

    op->ctx.keyctx.ns = NULL;
    op->ctx.keyctx.ns_len = 0;
    spate_list_iter(w->sessions, &it);
    while (spate_list_next(&it, &s)) {
        if (s.start == win.start && s.end == win.end)
            continue;
        xgrow((void **)&keep, &cap, n + 1, sizeof *keep);
        keep[n++] = s;
    }
    spate_state_clear(w->sessions);
    for (size_t i = 0; i < n; i++)
        spate_list_add(w->sessions, &keep[i]);
    free(keep);
}

/* ---- the operator ---- */

static void window_settle(spate_ctx *ctx);

static int
window_open(struct stream_operator *op, spate_error *err)
{
    const struct window_config *c = wcfg(op);
    struct window_op *w = xcalloc(1, sizeof *w);
    const struct spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    int rc;

    op->impl = w;
    /* Flink's WindowOperator counts what it drops in its operator group. */
    if ((w->late_dropped = operator_metrics_counter(op, "numLateRecordsDropped", err)) == NULL)
        return SPATE_EINVAL;
    keys_access_init(&w->key, &op->config->key, op->config->in_type);
    w->event_time = c->assigner.event_time && c->assigner.kind != SPATE_WINDOW_GLOBAL;
    w->buffers = c->function == WINDOW_FN_PROCESS || c->evictor != EVICTOR_NONE;
    w->trigger = resolve_trigger(c);
    w->lateness_ms = c->lateness_ms;
    w->last_window = (spate_time_window){ 0, 0 }; /* holds no time */
    w->session_type = types_new_tuple(2, fields);
    w->decls[WS_CONTENTS] = (struct state_decl){
        "__window_contents", STATE_VALUE, op->config->in_type, NULL, NULL, { 0 }, 0, false,
        SCOPE_KEYED
    };
    if (buffers_elements(op)) {
        w->decls[WS_CONTENTS].kind = STATE_LIST;
        w->decls[WS_CONTENTS].timestamped = true;
    } else if (c->function == WINDOW_FN_REDUCE) {
        w->decls[WS_CONTENTS].kind = STATE_REDUCING;
        w->decls[WS_CONTENTS].reduce = c->reduce;
    } else {
        w->decls[WS_CONTENTS].kind = STATE_AGGREGATING;
        w->decls[WS_CONTENTS].type = c->agg.acc_type;
        w->decls[WS_CONTENTS].agg = c->agg;
    }
    w->decls[WS_COUNT] = (struct state_decl){
        "__window_count", STATE_VALUE, spate_type_int64(), NULL, NULL, { 0 }, 0, false, SCOPE_KEYED
    };
    w->decls[WS_SESSIONS] = (struct state_decl){
        "__window_sessions", STATE_LIST, w->session_type, NULL, NULL, { 0 }, 0, false, SCOPE_KEYED
    };
    if ((rc = operator_backend_init(op, w->decls, WS_COUNT_OF, err)) != 0)
        return rc;
    w->heap = state_backend_heap(op->backend);
    w->timers_on_heap = state_backend_timers_on_heap(op->backend);
    w->contents_st = op->backend->ops->state(op->backend, w->decls[WS_CONTENTS].name);
    if (op->backend == &w->heap->base)
        w->contents = heap_state_of(w->contents_st);
    w->fast = c->assigner.kind == SPATE_WINDOW_TUMBLING && !w->buffers &&
              (w->trigger == TRIGGER_EVENT_TIME || w->trigger == TRIGGER_PROCESSING_TIME) &&
              w->contents != NULL && w->contents->in_place;
    if (w->fast && w->key.len != 0) {
        uint32_t klen = w->key.len;

        w->ckey_len = 8 + klen + sizeof(spate_time_window);
        w->ckey = xcalloc(1, w->ckey_len);
        memcpy(w->ckey, &klen, 4);
        w->leaf = w->event_time && klen == 8 &&
                  LEAF_CKEY + w->contents->value_size <= STATE_INLINE_BYTES &&
                  w->contents->value_align_mask < 16 && w->contents->maps.kg_mask != 0;
        w->leaf_lens = state_map_inline_lens(LEAF_CKEY, (uint32_t)w->contents->value_size);
        w->leaf_add = c->function == WINDOW_FN_REDUCE ? NULL : c->agg.add;
        w->kg_mask = w->contents->maps.kg_mask;
        w->kg_start = w->contents->maps.range.start;
        w->kg_count = w->contents->maps.range.end - w->contents->maps.range.start + 1;
    }
    w->window_timers = w->fast && w->event_time && w->trigger == TRIGGER_EVENT_TIME;
    op->ctx.settle = window_settle;
    if (w->window_timers) {
        w->form = (struct timer_owner_form){ window_timers_snapshot, window_timers_adopt, op };
        w->heap->timers.form = &w->form;
        w->acc = xcalloc(1, w->contents->value_size + 16);
    }
    w->count = op->backend->ops->state(op->backend, w->decls[WS_COUNT].name);
    w->sessions = op->backend->ops->state(op->backend, w->decls[WS_SESSIONS].name);
    w->rec = xcalloc(1, op->config->in_type->size + 16);
    w->result = xcalloc(1, MAX(op->config->in_type->size, op->config->out_type->size) +
                               (c->agg.out_type ? c->agg.out_type->size : 0) + 16);
    return 0;
}

static void
window_close(struct stream_operator *op)
{
    struct window_op *w = op->impl;

    if (w == NULL)
        return;
    operator_backend_free(op);
    types_free(w->session_type);
    free(w->rec);
    free(w->result);
    free(w->ckey);
    free(w->wt);
    free(w->acc);
    free(w);
    op->impl = NULL;
    op->backend = NULL;
}

/* Processing time as record time: the wall clock in ms. */
static inline int64_t
record_time(struct stream_operator *op, const struct record_meta *meta)
{
    return wcfg(op)->assigner.event_time ? meta->timestamp : clock_wall_ms();
}

/* Adds rec to the current window, asks the trigger, and registers the
 * clean-up timer with the window's first element (fresh). */
static SPATE_INLINE void
add_to_window(struct stream_operator *op, struct window_op *w, const void *rec, int64_t ts,
              spate_time_window win, int64_t max_ts, int64_t cleanup, int merged_fresh)
{
    bool fresh = contents_add(op, w, rec, ts);
    spate_trigger_result r;

    /* A merged session knows better whether its window is new. */
    if (merged_fresh >= 0)
        fresh = merged_fresh != 0;
    r = trigger_on_element(op, w, rec, ts, win, max_ts, fresh && !w->window_timers);
    if (r != SPATE_TRIGGER_CONTINUE)
        act(op, w, r, win);
    if (!fresh)
        return;
    if (w->window_timers)
        window_timer_add(op, w, win, max_ts <= op->current_watermark);
    else if (cleanup != max_ts && cleanup != INT64_MAX)
        window_register_timer(op, w, is_event_time(op), cleanup);
}

/* A record outside the last tumbling window: its window, and that
 * window's last timestamp and clean-up time, become the last. */
static SPATE_NOINLINE void
tumbling_window_of(struct stream_operator *op, struct window_op *w, int64_t ts)
{
    const spate_window_assigner *a = &wcfg(op)->assigner;

    w->last_window.start = window_start(ts, a->offset_ms, a->size_ms);
    w->last_window.end = w->last_window.start + a->size_ms;
    w->last_max = window_max_timestamp(w->last_window);
    w->last_cleanup = cleanup_time(op, w->last_window);
    w->last_ns_hash = keyed_ns_hash(w->heap, &w->last_window, sizeof w->last_window);
    check_key_only(w);
    w->open_window =
        w->last_max > op->current_watermark ? w->last_window : (spate_time_window){ 0, 0 };
    if (w->ckey != NULL) {
        uint32_t nlen = sizeof w->last_window;

        memcpy(w->ckey + 4 + w->key.len, &nlen, 4);
        memcpy(w->ckey + 8 + w->key.len, &w->last_window, nlen);
    }
}

/* A reduce function's result replaces the value where it is stored. */
static SPATE_NOINLINE void
window_reduce_in_place(struct stream_operator *op, struct window_op *w, void *acc, const void *rec)
{
    wcfg(op)->reduce(&op->ctx, acc, rec, w->rec);
    bytes_copy(acc, w->rec, op->config->in_type->size);
}

/* The per-record path of the common window (an aggregate or reduce
 * function over tumbling windows with their default trigger): the record
 * goes into its window's accumulator where keyed state keeps it. false:
 * the record takes the general path (its window is new for the key, it
 * is late or fires the window at once, it has no timestamp). */
static SPATE_INLINE bool
window_process_fast(struct stream_operator *op, struct window_op *w, const void *rec,
                    const struct record_meta *meta)
{
    const struct window_config *c = wcfg(op);
    int64_t ts = w->event_time ? meta->timestamp : clock_wall_ms();
    spate_bytes key;
    void *acc;

    if (unlikely(ts < w->last_window.start || ts >= w->last_window.end)) {
        if (w->event_time && ts == RECORD_NO_TIMESTAMP)
            return false;
        tumbling_window_of(op, w, ts);
    }
    if (w->event_time && w->last_max <= op->current_watermark)
        return false;
    if (op->ctx.scratch.used != 0)
        scratch_reset(&op->ctx.scratch);
    record_meta_copy(&op->ctx.meta, meta);
    key = keys_get(&w->key, &op->ctx, rec, w->key_scratch, sizeof w->key_scratch);
    keyed_set_key(&op->ctx.keyctx, key,
                  meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len),
                  &w->last_window, sizeof w->last_window);
    op->ctx.window = w->last_window;
    if (w->ckey != NULL) {
        bytes_copy(w->ckey + 4, key.data, w->key.len);
        acc =
            keyed_value_in_place_at(w->contents, w->ckey, w->ckey_len,
                                    keyed_composite_hash(op->ctx.keyctx.key_hash, w->last_ns_hash));
    } else {
        acc = keyed_value_in_place(w->contents);
    }
    if (acc == NULL)
        return false;
    if (c->function == WINDOW_FN_REDUCE)
        window_reduce_in_place(op, w, acc, rec);
    else
        c->agg.add(&op->ctx, rec, acc);
    return true;
}

/* Every other record, of every window. */
static SPATE_NOINLINE void
window_process_general(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct window_op *w = op->impl;
    const struct window_config *c = wcfg(op);
    const spate_window_assigner *a = &c->assigner;
    int64_t ts = record_time(op, meta);
    spate_bytes key;
    bool handled = false;

    if (op->ctx.scratch.used != 0)
        scratch_reset(&op->ctx.scratch);
    record_meta_copy(&op->ctx.meta, meta);
    if (is_event_time(op) && ts == RECORD_NO_TIMESTAMP) {
        spate_ctx_fail(&op->ctx,
                       "an event-time window got a record without a timestamp: assign them "
                       "with spate_assign_timestamps_and_watermarks");
        return;
    }
    key = keys_get(&w->key, &op->ctx, rec, w->key_scratch, sizeof w->key_scratch);
    keyed_set_key(&op->ctx.keyctx, key,
                  meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL, 0);

    if (a->kind == SPATE_WINDOW_TUMBLING) {
        /* Records come mostly in time order: the last one's window spares
         * a division and its times. */
        if (ts < w->last_window.start || ts >= w->last_window.end)
            tumbling_window_of(op, w, ts);
        if (!w->event_time || w->last_cleanup > op->current_watermark) {
            set_window(op, &w->last_window);
            add_to_window(op, w, rec, ts, w->last_window, w->last_max, w->last_cleanup, -1);
            handled = true;
        }
    } else if (a->kind == SPATE_WINDOW_SLIDING) {
        int64_t last = window_start(ts, a->offset_ms, a->slide_ms);

        for (int64_t start = last; start > ts - a->size_ms; start -= a->slide_ms) {
            spate_time_window win = { start, start + a->size_ms };

            if (is_late(op, win))
                continue;
            handled = true;
            set_window(op, &win);
            add_to_window(op, w, rec, ts, win, window_max_timestamp(win), cleanup_time(op, win),
                          -1);
        }
    } else {
        spate_time_window win;
        bool fresh;

        if (a->kind == SPATE_WINDOW_SESSION) {
            win.start = ts;
            win.end = ts + a->gap_ms;
        } else {
            win.start = INT64_MIN;
            win.end = INT64_MAX;
        }
        if (a->kind == SPATE_WINDOW_SESSION) {
            /* Flink merges first and drops the record if the merged
             * session is already late. */
            win = merge_session(op, w, win, &fresh);
            set_window(op, &win);
            if (is_late(op, win)) {
                clear_window(op, w);
                forget_session(op, w, win);
            } else {
                handled = true;
                add_to_window(op, w, rec, ts, win, window_max_timestamp(win), cleanup_time(op, win),
                              fresh);
            }
        } else if (!is_late(op, win)) {
            handled = true;
            set_window(op, &win);
            add_to_window(op, w, rec, ts, win, window_max_timestamp(win), cleanup_time(op, win),
                          -1);
        }
    }
    if (!handled) {
        op->ctx.keyctx.ns = NULL;
        op->ctx.keyctx.ns_len = 0;
        if (c->late_tag != NULL) {
            spate_ctx_output(&op->ctx, (spate_tag){ output_tag_id(c->late_tag) }, rec);
        } else {
            metric_counter_add(w->late_dropped, 1);
            if (op->task->accumulators != NULL) /* and in the job's result */
                spate_counter_add(spate_ctx_counter(&op->ctx, "numLateRecordsDropped"), 1);
        }
    }
}

/* A key's first record in the open window, of the shape window_acc_of
 * takes (an aggregate): the key's accumulator made in its slot and the
 * record added, with what the general path would do, as its timer is
 * there and its trigger does not fire (the window is open). Called only
 * for a record whose lookup (window_acc_of's, or window_leaf_run's, the
 * same) has missed: with the checks below passing, its entry is absent,
 * and state_map_put is the one probe. false: the general path takes it. */
static bool
window_create_leaf(struct stream_operator *op, struct window_op *w, const void *rec,
                   const struct record_meta *meta)
{
    const struct window_config *c = wcfg(op);
    struct heap_state *st = w->contents;
    struct state_map *map;
    struct window_timer *t;
    uint64_t hash;
    uint8_t *acc;
    uint32_t i;

    if (!w->leaf || !w->key_only || w->leaf_add == NULL || !meta->has_key_hash ||
        meta->timestamp < w->open_window.start || meta->timestamp >= w->open_window.end ||
        op->ctx.scratch.nold != 0)
        return false;
    i = (uint32_t)(meta->key_hash & w->kg_mask) - w->kg_start;
    if (i >= w->kg_count)
        return false;
    map = &st->maps.maps[i];
    t = window_timer_find(w, w->last_window);
    if (map->shared || t == NULL || t->fired)
        return false;
    hash = keyed_composite_hash(meta->key_hash, w->last_ns_hash);
    memcpy(w->ckey + 4, (const uint8_t *)rec + w->key.offset, 8);
    /* Not there: the lookup of window_acc_of or window_leaf_run, under the
     * checks above, has just missed it (window_process_other's callers). */
    acc = state_entry_value(state_map_put(map, hash, w->ckey, LEAF_CKEY, NULL, st->value_size));
    memset(acc, 0, st->value_size);
    op->ctx.scratch.used = 0;
    /* The key context is set if the functions read it (window_settle). */
    op->ctx.pending = rec;
    op->ctx.pending_meta = meta;
    c->agg.create(&op->ctx, acc);
    w->leaf_add(&op->ctx, rec, acc);
    op->ctx.pending = NULL;
    return true;
}

/* The common window's records the lookup below does not take. */
static SPATE_NOINLINE void
window_process_other(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct window_op *w = op->impl;

    if (likely(w->fast) &&
        (window_create_leaf(op, w, rec, meta) || window_process_fast(op, w, rec, meta)))
        return;
    window_process_general(op, rec, meta);
}

/* window_process_fast for the shape of most records, with no call before
 * the user's function: an event-time record with its key's hash and an
 * 8-byte key (an int64 field; the entry key is then LEAF_CKEY bytes), in
 * the last window, whose accumulator is there and in place. NULL:
 * window_process_other takes the record. */
static SPATE_INLINE void *
window_acc_of(struct stream_operator *op, struct window_op *w, const void *rec,
              const struct record_meta *meta, bool hashed)
{
    const uint8_t *key = (const uint8_t *)rec + w->key.offset;
    struct heap_state *st = w->contents;
    struct state_map *map;
    struct state_entry *e;
    uint64_t hash;
    uint8_t *v;
    uint32_t i;

    /* No look at the watermark: the open window is the last one while
     * the watermark has not passed it. */
    if (unlikely(meta->timestamp < w->open_window.start || meta->timestamp >= w->open_window.end ||
                 !(hashed || meta->has_key_hash) || op->ctx.scratch.nold != 0))
        return NULL;
    /* The key group by mask (w->leaf: a power-of-two max parallelism), as
     * window_ahead finds it. */
    i = (uint32_t)(meta->key_hash & w->kg_mask) - w->kg_start;
    if (unlikely(i >= w->kg_count))
        return NULL;
    map = &st->maps.maps[i];
    if (unlikely(map->shared))
        return NULL;
    hash = keyed_composite_hash(meta->key_hash, w->last_ns_hash);
    /* In the slot, past the key: 48 bytes into a 64-byte aligned slot, so
     * aligned for the value (w->leaf). A snapshot's base never holds it. */
    if (likely(w->key_only)) {
        e = state_map_get_inline_key8(map, hash, bytes_load64(key), w->leaf_lens);
    } else {
        memcpy(w->ckey + 4, key, 8);
        e = state_map_get_inline(map, hash, w->ckey, LEAF_CKEY, st->value_size);
    }
    if (unlikely(e == NULL))
        return NULL;
    v = e->u.bytes + LEAF_CKEY;
    op->ctx.scratch.used = 0;
    /* The key context is set if the function reads it (window_settle). */
    op->ctx.pending = rec;
    op->ctx.pending_meta = meta;
    return v;
}

/* The lazy key context of window_acc_of's record: its key, the last
 * window, its meta. */
static void
window_settle(spate_ctx *ctx)
{
    struct window_op *w = ctx->op->impl;
    const struct record_meta *meta = ctx->pending_meta;

    record_meta_copy(&ctx->meta, meta);
    keyed_set_key(&ctx->keyctx, (spate_bytes){ (const uint8_t *)ctx->pending + w->key.offset, 8 },
                  meta->key_hash, &w->last_window, sizeof w->last_window);
    ctx->window = w->last_window;
    ctx->pending = NULL;
}

/* hashed: the caller knows meta has the key's hash (a keyed run's). */
static SPATE_INLINE void
window_process_inline(struct stream_operator *op, const void *rec, const struct record_meta *meta,
                      bool hashed)
{
    struct window_op *w = op->impl;
    void *acc;

    if (likely(w->leaf) && (acc = window_acc_of(op, w, rec, meta, hashed)) != NULL) {
        if (likely(w->leaf_add != NULL))
            w->leaf_add(&op->ctx, rec, acc);
        else
            window_reduce_in_place(op, w, acc, rec);
        op->ctx.pending = NULL;
        return;
    }
    window_process_other(op, rec, meta);
}

static void
window_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    window_process_inline(op, rec, meta, false);
}

/* A keyed run's record: it has its key's hash. */
static SPATE_INLINE void
window_process_hashed(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    window_process_inline(op, rec, meta, true);
}

/* What a run's lookahead needs, read once per run: the window's maps by
 * key group and the namespace part of the hash of its last window. */
struct window_ahead {
    const struct state_map *maps;
    uint32_t kg_mask, kg_start, kg_count;
    uint64_t ns_part;
};

/* A record ahead in the run, of key_hash: the slot and tag its accumulator
 * would have in the last window fetched now (the state a window reads is
 * too large for the caches near the core: its load is most of the wait). */
static SPATE_INLINE void
window_ahead(const void *data, uint64_t key_hash)
{
    const struct window_ahead *a = data;
    uint32_t i = (uint32_t)(key_hash & a->kg_mask) - a->kg_start;
    const struct state_map *map;

    if (i >= a->kg_count)
        return;
    map = &a->maps[i];
    if (map->slots != NULL)
        state_map_prefetch(map, key_hash ^ a->ns_part);
}

/* What window_leaf_run reads per record, read once per run: nothing in it
 * changes while its records take the fast path (a record that does not
 * ends the run). */
struct leaf_run {
    struct stream_operator *op;
    struct window_op *w;
    struct state_map *maps;
    uint32_t kg_mask, kg_start, kg_count;
    int64_t lo;    /* the open window's start */
    uint64_t span; /* and length: one compare per record */
    uint64_t ns_part, lens;
    size_t key_at; /* the key's offset in the record's element */
    void (*add)(spate_ctx *ctx, const void *in, void *acc);
    void *in_rec;
    struct record_meta *meta;
};

/* One record of window_leaf_run at pos (plain bytes, of the run's shape
 * when it has its length and tag), with the slot of the record ahead
 * fetched (ahead: it is in the buffer); -1: not of the shape, 0: taken,
 * 1: taken by window_process_inline (the run ends). */
static SPATE_INLINE int
leaf_record(const struct leaf_run *r, const uint8_t *pos, size_t plain, bool full, bool key0,
            bool ahead)
{
    const uint32_t hdr = ELEMENT_KEYED_TS_HEADER, len = (uint32_t)(hdr + plain);
    const uint8_t *el = pos + RECORD_LENGTH_BYTES;
    spate_ctx *ctx = &r->op->ctx;
    struct state_entry *e = NULL;
    struct state_map *map;
    uint64_t key_hash;
    int64_t ts;
    uint32_t g;

    if (bytes_load32(pos) != len || el[0] != ELEMENT_KEYED_TS_TAG)
        return -1;
    if (ahead) { /* a guess: the record there may be of another shape */
        uint64_t far_hash =
            bytes_load64(el + KEYED_RUN_AHEAD * (RECORD_LENGTH_BYTES + len) + hdr - 8);

        g = (uint32_t)(far_hash & r->kg_mask) - r->kg_start;
        if (full || g < r->kg_count)
            state_map_prefetch(&r->maps[g], far_hash ^ r->ns_part);
    }
    record_reader_read_ahead(el + len);
    ts = (int64_t)bytes_load64(el + 1);
    key_hash = bytes_load64(el + hdr - 8);
    r->meta->timestamp = ts;
    r->meta->key_hash = key_hash;
    g = (uint32_t)(key_hash & r->kg_mask) - r->kg_start;
    if (likely((uint64_t)ts - (uint64_t)r->lo < r->span && (full || g < r->kg_count) &&
               !(map = &r->maps[g])->shared && ctx->scratch.nold == 0))
        e = state_map_get_inline_key8(map, key_hash ^ r->ns_part,
                                      bytes_load64(key0 ? el + hdr : pos + r->key_at), r->lens);
    bytes_copy(r->in_rec, el + hdr, plain);
    if (unlikely(e == NULL)) {
        /* What window_acc_of checks and looks up has just failed here. */
        ctx->pending = NULL;
        window_process_other(r->op, r->in_rec, r->meta);
        return 1;
    }
    ctx->scratch.used = 0;
    /* The key context is set if the function reads it (window_settle). */
    ctx->pending = r->in_rec;
    r->add(ctx, r->in_rec, e->u.bytes + LEAF_CKEY);
    return 0;
}

/* A run of the common window's records of the shape of most (w->leaf with
 * key_only and an aggregate: timed keyed records into the heap backend),
 * window_acc_of's checks with what they read held in locals for the run,
 * each record's header read where it is and its bytes copied for the
 * user's add only, the key's slot fetched KEYED_RUN_AHEAD records ahead
 * (window_ahead) while that record is in the buffer. A record the lookup
 * does not take (of another shape, outside the open window, its key's
 * first there) ends the run: one not of the shape is left, any other goes
 * through window_process_other first, as window_acc_of would not take it
 * either (*more: the caller may start another run, whose locals are read
 * again). plain, full (the subtask has every
 * key group: no range check), key0 (the key is the record's first
 * field: read beside the bytes it copies) and small (the contents are
 * small: no slot fetched ahead, window_contents_small) are constants of
 * each instance. */
static SPATE_INLINE int
window_leaf_run(struct stream_operator *op, struct window_op *w, void *in_rec, size_t plain,
                bool full, bool key0, bool small, const uint8_t **posp, const uint8_t *end, int max,
                bool *more)
{
    const size_t stride = RECORD_LENGTH_BYTES + ELEMENT_KEYED_TS_HEADER + plain;
    struct record_meta meta = { .has_key_hash = true };
    const struct leaf_run r = {
        op,
        w,
        w->contents->maps.maps,
        w->kg_mask,
        w->kg_start,
        w->kg_count,
        w->open_window.start,
        (uint64_t)w->open_window.end - (uint64_t)w->open_window.start,
        keyed_composite_hash(0, w->last_ns_hash),
        w->leaf_lens,
        RECORD_LENGTH_BYTES + ELEMENT_KEYED_TS_HEADER + w->key.offset,
        w->leaf_add,
        in_rec,
        &meta,
    };
    const uint8_t *start = *posp, *pos = start, *near, *stop;
    /* Records of this length that the buffer holds, as keyed_run counts;
     * those before near have the record KEYED_RUN_AHEAD on in it too. */
    size_t fit = (size_t)(end - pos) / stride;
    size_t n = max > 0 ? MIN(fit, (size_t)max) : 0;
    int rc = 0;

    near = start + (fit > KEYED_RUN_AHEAD && !small ? MIN(fit - KEYED_RUN_AHEAD, n) : 0) * stride;
    stop = start + n * stride;
    op->ctx.pending_meta = &meta;
    while (pos < near && (rc = leaf_record(&r, pos, plain, full, key0, true)) == 0)
        pos += stride;
    while (rc == 0 && pos < stop && (rc = leaf_record(&r, pos, plain, full, key0, false)) == 0)
        pos += stride;
    if (rc == 1) /* taken, by the general path */
        pos += stride;
    *more = rc == 1;
    op->ctx.pending = NULL;
    *posp = pos;
    return (int)((size_t)(pos - start) / stride);
}

/* At most this many entries in a window's contents (a cache line each)
 * stay in the caches near the core: a run fetches no slot ahead then,
 * which would cost instructions and save no wait (a window per campaign,
 * per region: keys by the hundred). */
#define WINDOW_SMALL_ENTRIES 256

/* How many keyed runs go by between two counts of the contents: a count
 * of small contents reads every key group's map, a few hundred
 * instructions, and contents that grow past small meanwhile go without
 * their slots fetched ahead for a few thousand records at most. */
#define WINDOW_SMALL_EVERY 16

/* Whether the window's contents hold WINDOW_SMALL_ENTRIES entries or fewer
 * (the count stops at the first map past it), as counted every
 * WINDOW_SMALL_EVERY calls. */
static bool
window_contents_small(struct window_op *w)
{
    const struct state_map *maps = w->contents->maps.maps;
    size_t n = 0;

    if (--w->small_due > 0)
        return w->small;
    for (uint32_t i = 0; i < w->kg_count && n <= WINDOW_SMALL_ENTRIES; i++)
        n += maps[i].count;
    w->small_due = WINDOW_SMALL_EVERY;
    w->small = n <= WINDOW_SMALL_ENTRIES;
    return w->small;
}

/* Whether window_leaf_run takes a run of timed records now. */
static inline bool
window_leaf_runs(const struct window_op *w)
{
    return w->leaf && w->key_only && w->leaf_add != NULL && w->contents != NULL;
}

/* window_leaf_run's instances: the common plain sizes, and the subtask with
 * every key group or some, until a run ends other than at a record the
 * lookup did not take. */
static SPATE_NOINLINE int
window_leaf_runs_all(struct stream_operator *op, struct window_op *w, void *in_rec, size_t plain,
                     const uint8_t **pos, const uint8_t *end, int max)
{
    bool more = true;
    int k = 0;

    while (more && k < max && window_leaf_runs(w)) {
        bool full = w->kg_start == 0 && w->kg_count == w->kg_mask + 1;
        bool key0 = w->key.offset == 0; /* the key is the record's first field */

        if (plain == 24 && full && key0)
            k += window_leaf_run(op, w, in_rec, 24, true, true, false, pos, end, max - k, &more);
        else if (plain == 24 && full)
            k += window_leaf_run(op, w, in_rec, 24, true, false, false, pos, end, max - k, &more);
        else if (plain == 24)
            k += window_leaf_run(op, w, in_rec, 24, false, false, false, pos, end, max - k, &more);
        else if (plain == 16 && full)
            k += window_leaf_run(op, w, in_rec, 16, true, false, false, pos, end, max - k, &more);
        else if (plain == 32 && full)
            k += window_leaf_run(op, w, in_rec, 32, true, false, false, pos, end, max - k, &more);
        else
            k += window_leaf_run(op, w, in_rec, plain, false, false, false, pos, end, max - k,
                                 &more);
    }
    return k;
}

/* window_leaf_runs_all's for small contents (window_contents_small), to
 * the end of the call: no slot fetched ahead; instances for the key as the
 * record's first field of the common size, with every key group or some.
 * A function of its own, so that its loops take nothing from the other's
 * registers (as a runtime argument of window_leaf_runs_all, small cost
 * the window p1 thread 112.9 -> 115.4 instructions per event). */
static SPATE_NOINLINE int
window_leaf_runs_small(struct stream_operator *op, struct window_op *w, void *in_rec, size_t plain,
                       const uint8_t **pos, const uint8_t *end, int max)
{
    bool more = true;
    int k = 0;

    while (more && k < max && window_leaf_runs(w)) {
        bool full = w->kg_start == 0 && w->kg_count == w->kg_mask + 1;
        bool key0 = w->key.offset == 0;

        if (plain == 24 && full && key0)
            k += window_leaf_run(op, w, in_rec, 24, true, true, true, pos, end, max - k, &more);
        else if (plain == 24 && key0)
            k += window_leaf_run(op, w, in_rec, 24, false, true, true, pos, end, max - k, &more);
        else
            k +=
                window_leaf_run(op, w, in_rec, plain, false, false, true, pos, end, max - k, &more);
    }
    return k;
}

/* A run of keyed records in place, with window_process inlined into the
 * loop: no call per record before the user's function. */
static int
window_process_keyed_run(struct stream_operator *op, void *in_rec, size_t plain,
                         const uint8_t **pos, const uint8_t *end, int max, bool timed)
{
    struct window_op *w = op->impl;
    const struct keyed_state *ks;
    struct window_ahead ahead;
    int k;

    if (w->contents == NULL) { /* not the heap backend: nothing to fetch ahead */
        k = keyed_run_either(op, window_process_hashed, NULL, NULL, in_rec, plain, pos, end, max,
                             timed);
        op->records_in += (uint64_t)k;
        return k;
    }
    if (timed && window_leaf_runs(w) &&
        (k = window_contents_small(w)
                 ? window_leaf_runs_small(op, w, in_rec, plain, pos, end, max)
                 : window_leaf_runs_all(op, w, in_rec, plain, pos, end, max)) > 0) {
        op->records_in += (uint64_t)k;
        return k;
    }
    ks = &w->contents->maps;
    /* Key groups by mask only (a power-of-two max parallelism): else none. */
    ahead = (struct window_ahead){ ks->maps, ks->kg_mask, ks->range.start,
                                   ks->kg_mask != 0 ? ks->range.end - ks->range.start + 1 : 0,
                                   keyed_composite_hash(0, w->last_ns_hash) };
    k = keyed_run_either(op, window_process_hashed, window_ahead, &ahead, in_rec, plain, pos, end,
                         max, timed);

    op->records_in += (uint64_t)k;
    return k;
}

static void
window_fire(void *owner, const struct timer *t)
{
    struct stream_operator *op = owner;
    struct window_op *w = op->impl;
    spate_time_window win;

    if (t->ns_len != sizeof win)
        return;
    memcpy(&win, t->data + t->key_len, sizeof win);
    set_window(op, &win);
    act(op, w, trigger_on_time(op, t->event_time, t->timestamp, win), win);
    if (t->event_time == is_event_time(op) && t->timestamp == cleanup_time(op, win)) {
        clear_window(op, w);
        if (wcfg(op)->assigner.kind == SPATE_WINDOW_SESSION)
            forget_session(op, w, win);
    }
}

static void
window_watermark(struct stream_operator *op, int64_t watermark)
{
    struct window_op *w = op->impl;

    /* Fire first, then let event time move on: Flink's order. */
    op->current_watermark = watermark;
    /* The last window is late now: its records take the general path,
     * which fires it again within the allowed lateness. */
    if (w->last_max <= watermark)
        w->open_window = (spate_time_window){ 0, 0 };
    if (w->window_timers)
        window_timers_advance(op, w, watermark);
    op->backend->ops->advance(op->backend, true, watermark, window_fire);
    op->out->emit_watermark(op->out, watermark);
}

static void
window_on_processing_time(struct stream_operator *op, uint64_t now)
{
    op->backend->ops->on_processing_time(op->backend, now, window_fire);
}

const struct operator_vtable window_operator_vtable = {
    .state = OPERATOR_KEYED_STATE,
    .open = window_open,
    .process = window_process,
    .process_keyed_run = window_process_keyed_run,
    .close = window_close,
    .process_watermark = window_watermark,
    .on_processing_time = window_on_processing_time,
};

spate_time_window
spate_ctx_window(const spate_ctx *ctx)
{
    ctx_settle(ctx);
    return ctx->window;
}
