/* The data generator source (Flink's DataGeneratorSource): a user function
 * of the record index, rate-limited, deterministic and replayable; its
 * checkpointed state is each split's next index. The per-record loop of a
 * fresh start (generator_run_aligned) is on the benchmarks' hot path. Task
 * thread only. */
#include <stdlib.h>
#include <string.h>

#include "connectors/connectors_int.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/util.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"
#include "streaming/types.h"
#include "streaming/watermark_generator.h"

/* The generator's index space is cut into max-parallelism splits by residue
 * (split s has the indexes s, s + G, s + 2G, ...), so that its position can
 * move between subtasks on rescaling, as key groups do. A subtask emits its
 * splits' indexes in increasing order, round by round (round r holds the
 * indexes rG .. rG + G - 1): event time that follows the index stays
 * monotonous per subtask. */
struct gen_split {
    uint32_t split;
    uint64_t next; /* its next index */
};

struct generator_impl {
    struct gen_split *splits; /* owned, by split id */
    uint32_t nsplits, at;     /* at: the split whose turn it is */
    uint64_t round;           /* current round: indexes round * G + split */
    uint64_t g;               /* G: the number of splits */
    uint64_t emitted;         /* by this subtask */
    uint64_t start_ns;
    double rate; /* per second, this subtask's share; 0: unlimited */
    void *rec;
    /* OPERATOR_RUN records of a plain type, stride bytes apart, for an output
     * that takes runs (output.collect_run); NULL: the type is not plain. */
    uint8_t *runs;
    size_t stride;
    bool restored; /* splits came from a checkpoint: start over from them */
    /* A fresh start's splits, in ascending order, all in the same round:
     * a round is the splits in order, with no search, and their next
     * indexes follow from round and at (generator_aligned_next). A
     * restore, and the last round of a bounded source, leave them to the
     * general path. */
    bool aligned;
};

static int
generator_open(struct stream_operator *op, spate_error *err)
{
    const struct generator_source_config *conf = op->conf;
    struct generator_impl *g = xcalloc(1, sizeof *g);
    uint32_t lo, hi;

    UNUSED(err);
    g->g = (uint64_t)op->ctx.max_parallelism;
    /* The splits of a fresh start: a contiguous range, as key groups. */
    lo = (uint32_t)(((uint64_t)op->ctx.subtask * g->g + (uint64_t)op->ctx.parallelism - 1) /
                    (uint64_t)op->ctx.parallelism);
    hi = (uint32_t)((((uint64_t)op->ctx.subtask + 1) * g->g - 1) / (uint64_t)op->ctx.parallelism);
    g->splits = xcalloc(hi >= lo ? hi - lo + 1 : 1, sizeof *g->splits);
    for (uint32_t s = lo; s <= hi && lo <= hi; s++)
        g->splits[g->nsplits++] = (struct gen_split){ s, s };
    g->rate = conf->rate * (double)g->nsplits / (double)g->g;
    g->start_ns = clock_mono_ns();
    g->rec = operator_out_storage(conf->type);
    if (conf->type->plain && conf->type->size != 0) {
        g->stride = (conf->type->size + 15) & ~(size_t)15; /* aligned for any field */
        g->runs = xcalloc(OPERATOR_RUN, g->stride);
    }
    g->aligned = true;
    op->impl = g;
    return 0;
}

/* The next index to emit (advancing the round as needed); false when every
 * split is past count. */
static bool
generator_next(struct generator_impl *g, uint64_t count, struct gen_split **out)
{
    for (;;) {
        uint64_t lowest = UINT64_MAX;

        for (; g->at < g->nsplits; g->at++) {
            struct gen_split *s = &g->splits[g->at];

            if (count != 0 && s->next >= count)
                continue;
            if (s->next == g->round * g->g + s->split) {
                *out = s;
                return true;
            }
        }
        /* The round is done: on to the lowest round a split still has
         * (a split's next index is round * G + split, split < G: the
         * lowest index is in the lowest round). */
        for (uint32_t i = 0; i < g->nsplits; i++)
            if (count == 0 || g->splits[i].next < count)
                lowest = MIN(lowest, g->splits[i].next);
        if (lowest == UINT64_MAX)
            return false;
        lowest /= g->g;
        g->round = lowest > g->round ? lowest : g->round + 1;
        g->at = 0;
    }
}

/* Aligned splits keep no next index of their own: split i is at
 * (round + 1) * G + split once the round passed it (i < at), else at
 * round * G + split. */
static uint64_t
generator_aligned_next(const struct generator_impl *g, uint32_t i)
{
    return (g->round + (i < g->at)) * g->g + g->splits[i].split;
}

/* Aligned no more: every split's next index written down. */
static void
generator_unalign(struct generator_impl *g)
{
    for (uint32_t i = 0; i < g->nsplits; i++)
        g->splits[i].next = generator_aligned_next(g, i);
    g->aligned = false;
}

/* The aligned loop of a source with a timestamp function and periodic
 * watermarks (source_run_emit's common case), with what it reads in
 * locals: no per-record look at the generator's settings, the record's
 * meta written once but for its timestamp. Returns end. */
static const struct gen_split *
generator_emit_timed(struct stream_operator *op, struct source_run *r, spate_generator_fn gen,
                     uint64_t base, const struct gen_split *s, const struct gen_split *end,
                     void *rec)
{
    void (*collect)(struct output * self, const void *rec, const struct record_meta *meta) =
        r->collect;
    spate_timestamp_fn timestamp_fn = r->timestamp_fn;
    struct output *out = r->out;
    spate_ctx *ctx = &op->ctx;
    struct record_meta m = { RECORD_NO_TIMESTAMP, 0, false };
    int64_t max = r->max_timestamp;

    r->n += (uint64_t)(end - s);
    for (; s < end; s++) {
        operator_before_call(op);
        gen(ctx, base + s->split, rec);
        m.timestamp = timestamp_fn(ctx, rec);
        if (m.timestamp > max)
            max = m.timestamp;
        collect(out, rec, &m);
    }
    r->max_timestamp = max;
    return end;
}

/* Makes n records, of the indexes from index on, stride bytes apart from
 * rec, each stamped as it is made (ts[i]; timestamp_fn NULL: none); the
 * largest timestamp, max if none is larger. Its own function, so that its
 * loop keeps what it reads in registers across the calls. */
static SPATE_NOINLINE int64_t
generator_make_run(spate_ctx *ctx, spate_generator_fn gen, spate_timestamp_fn timestamp_fn,
                   uint64_t index, int n, uint8_t *rec, size_t stride, int64_t *ts, int64_t max)
{
    uint64_t end = index + (uint64_t)n;

    if (timestamp_fn == NULL) {
        for (; index < end; index++, rec += stride) {
            ctx_before_call(ctx);
            gen(ctx, index, rec);
        }
        return max;
    }
    for (; index < end; index++, rec += stride, ts++) {
        ctx_before_call(ctx);
        gen(ctx, index, rec);
        *ts = timestamp_fn(ctx, rec);
        if (*ts > max)
            max = *ts;
    }
    return max;
}

/* The aligned loop into an output that takes runs (output.collect_run),
 * with periodic watermarks or none: runs of up to OPERATOR_RUN records made
 * and stamped, each handed over in one call. A fresh start's splits are
 * consecutive, so a round's indexes are too. The records are plain (no
 * pointer into the scratch memory that each call frees), so a run
 * outlives the calls that made it. Returns end. */
static const struct gen_split *
generator_emit_runs(struct stream_operator *op, struct source_run *r, spate_generator_fn gen,
                    uint64_t base, const struct gen_split *s, const struct gen_split *end,
                    uint8_t *runs, size_t stride)
{
    struct output *out = r->out;
    int64_t ts[OPERATOR_RUN];

    r->n += (uint64_t)(end - s);
    while (s < end) {
        int n = (int)MIN(end - s, OPERATOR_RUN);

        r->max_timestamp = generator_make_run(&op->ctx, gen, r->timestamp_fn, base + s->split, n,
                                              runs, stride, ts, r->max_timestamp);
        out->collect_run(out, runs, stride, r->timestamp_fn != NULL ? ts : NULL, n);
        s += n;
    }
    return end;
}

/* Aligned splits: up to budget records of the round, the splits from at on
 * in order; the number emitted. The last round of a bounded source (a
 * split past limit) goes to the general path. */
static int
generator_run_aligned(struct stream_operator *op, struct generator_impl *g, spate_generator_fn gen,
                      uint64_t limit, int budget)
{
    /* In locals: the calls may change any memory, not these. */
    const struct gen_split *splits = g->splits, *s = splits + g->at;
    const struct gen_split *end = splits + MIN(g->nsplits, g->at + (uint32_t)budget);
    uint64_t base = g->round * g->g;
    void *rec = g->rec;
    struct source_run run;
    int n;

    /* Fresh splits ascend: the round's indexes below limit are a prefix. */
    while (end > s && base + end[-1].split >= limit)
        end--;
    if (end == s) {
        generator_unalign(g);
        return 0;
    }
    source_run_begin(&run, op);
    if (likely(!run.per_record && run.out->collect_run != NULL && g->runs != NULL))
        s = generator_emit_runs(op, &run, gen, base, s, end, g->runs, g->stride);
    else if (likely(!run.per_record && run.timestamp_fn != NULL))
        s = generator_emit_timed(op, &run, gen, base, s, end, rec);
    for (; s < end; s++) {
        operator_before_call(op);
        gen(&op->ctx, base + s->split, rec);
        source_run_emit(&run, rec);
    }
    source_run_end(&run);
    n = (int)(s - splits) - (int)g->at;
    g->at = (uint32_t)(s - splits);
    if (g->at == g->nsplits) {
        g->at = 0;
        g->round++;
    }
    return n;
}

/* A generator without a function (SQL's datagen and nexmark): the record
 * is its index, an int64, which the operator behind it turns into a row. */
static void
generator_index(spate_ctx *ctx, uint64_t index, void *out)
{
    UNUSED(ctx);
    *(int64_t *)out = (int64_t)index;
}

static enum source_status
generator_poll(struct stream_operator *op, int budget, spate_error *err)
{
    const struct generator_source_config *conf = op->conf;
    struct generator_impl *g = op->impl;
    uint64_t count = conf->count;
    spate_generator_fn gen = conf->fn != NULL ? conf->fn : generator_index;
    struct gen_split *s;

    UNUSED(err);
    if (unlikely(op->restored && !g->restored)) {
        /* Restored with none of the checkpoint's splits (more subtasks
         * than splits left running): it owns none. */
        g->restored = true;
        g->nsplits = 0;
    }
    if (g->nsplits == 0) {
        if (count != 0)
            return SOURCE_END;
        op->wait_until_ns = clock_mono_ns() + 1000000000u; /* owns nothing: idle */
        return SOURCE_WAITING;
    }
    if (g->rate > 0) {
        /* Emit no more than the rate allows by now. */
        double allowed = (double)(clock_mono_ns() - g->start_ns) / 1e9 * g->rate + 1;

        if ((double)g->emitted >= allowed) {
            op->wait_until_ns = g->start_ns + (uint64_t)((double)(g->emitted) / g->rate * 1e9);
            return SOURCE_WAITING;
        }
        if ((double)budget > allowed - (double)g->emitted)
            budget = (int)(allowed - (double)g->emitted) + 1;
    }
    while (budget > 0) {
        uint64_t base, limit = count != 0 ? count : UINT64_MAX;
        int n = 0;

        if (g->aligned) {
            n = generator_run_aligned(op, g, gen, limit, budget);
            g->emitted += (uint64_t)n;
            budget -= n;
            continue;
        }
        if (!generator_next(g, count, &s))
            return SOURCE_END;
        /* The run of splits from s on that are at this round: their
         * indexes follow each other (base + split), emitted without
         * looking for the next split each time. */
        base = g->round * g->g;
        {
            /* In locals: the calls may change any memory, not these. The
             * run is measured first, then emitted without a check each. */
            struct gen_split *splits = g->splits;
            uint32_t at = g->at, end = MIN(g->nsplits, at + (uint32_t)budget), run = at;
            uint64_t step = g->g;
            void *rec = g->rec;
            struct source_run out;

            while (run < end && splits[run].next == base + splits[run].split &&
                   splits[run].next < limit)
                run++;
            source_run_begin(&out, op);
            for (; at < run; at++) {
                s = &splits[at];
                operator_before_call(op);
                gen(&op->ctx, s->next, rec);
                source_run_emit(&out, rec);
                s->next += step;
            }
            source_run_end(&out);
            n = (int)(at - g->at);
            g->at = at;
        }
        g->emitted += (uint64_t)n;
        budget -= n;
    }
    return SOURCE_MORE;
}

/* Checkpoints: one element per owned split, u32 split and u64 next index,
 * so that the splits spread over another parallelism on restore. */
static void
generator_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct generator_impl *g = op->impl;

    UNUSED(checkpoint_id);
    for (uint32_t i = 0; i < g->nsplits; i++) {
        uint64_t next = g->aligned ? generator_aligned_next(g, i) : g->splits[i].next;
        uint8_t e[12];

        memcpy(e, &g->splits[i].split, 4);
        memcpy(e + 4, &next, 8);
        op_state_add(out, e, sizeof e);
    }
}

static int
generator_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct generator_impl *g = op->impl;
    struct gen_split s;

    if (len != 12)
        return spate_error_set(err, SPATE_EPROTO, "malformed generator source state");
    memcpy(&s.split, bytes, 4);
    memcpy(&s.next, bytes + 4, 8);
    if (s.split >= g->g || s.next % g->g != s.split)
        return spate_error_set(err, SPATE_EINVAL,
                               "generator source state of split %u at %llu does not fit %llu "
                               "splits (was the max parallelism changed?)",
                               s.split, (unsigned long long)s.next, (unsigned long long)g->g);
    if (!g->restored) {
        /* The checkpoint's splits replace the fresh start's. */
        g->restored = true;
        g->aligned = false; /* their next indexes are theirs */
        g->nsplits = 0;
        g->emitted = 0;
    }
    g->splits = xrealloc(g->splits, (g->nsplits + 1) * sizeof *g->splits);
    g->splits[g->nsplits++] = s;
    g->emitted += (s.next - s.split) / g->g;
    g->round = 0;
    g->at = 0;
    g->rate = ((const struct generator_source_config *)op->conf)->rate * (double)g->nsplits /
              (double)g->g;
    /* The rate continues from here, as if the emitted records took their time. */
    if (g->rate > 0)
        g->start_ns = clock_mono_ns() - (uint64_t)((double)g->emitted / g->rate * 1e9);
    return 0;
}

static void
generator_close(struct stream_operator *op)
{
    struct generator_impl *g = op->impl;

    if (g != NULL) {
        free(g->rec);
        free(g->runs);
        free(g->splits);
    }
    free(g);
    op->impl = NULL;
}

const struct operator_vtable generator_source_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = generator_open,
    .close = generator_close,
    .poll = generator_poll,
    .snapshot_state = generator_snapshot,
    .restore_state = generator_restore,
};
