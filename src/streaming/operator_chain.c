/* Building and tearing down operator chains (operator_chain.h). An operator
 * with one successor emits straight into it, runs of records too when the
 * successor takes them; with several (chained operators and exchanges) it
 * emits into a fan-out output that calls each. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "streaming/latency_stats.h"
#include "streaming/operator_chain.h"

/* Emits into the next operator of the chain. */
struct chained_output {
    struct output base;
    struct stream_operator *next;
};

static void
chained_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct stream_operator *next = ((struct chained_output *)self)->next;

    operator_process(next, rec, meta);
}

/* A run into the next operator, which takes runs (operator_takes_runs). */
static void
chained_collect_run(struct output *self, const void *recs, size_t stride, const int64_t *ts, int n)
{
    struct stream_operator *next = ((struct chained_output *)self)->next;

    operator_process_run(next, recs, stride, ts, n);
}

static void
chained_watermark(struct output *self, int64_t watermark)
{
    metric_gauge_set(&self->watermark, watermark);
    operator_process_watermark(((struct chained_output *)self)->next, watermark);
}

static void
chained_idle(struct output *self, bool idle)
{
    struct stream_operator *next = ((struct chained_output *)self)->next;

    next->out->emit_idle(next->out, idle);
}

/* The next operator records the marker's latency and passes it on; its
 * function never sees it. */
static void
chained_latency(struct output *self, const struct latency_marker *m)
{
    struct stream_operator *next = ((struct chained_output *)self)->next;

    latency_stats_report(next, m);
    if (next->out->emit_latency_marker != NULL)
        next->out->emit_latency_marker(next->out, m);
}

struct fanout_output {
    struct output base;
    struct output **targets;
    int ntargets;
    uint64_t random; /* which target a latency marker takes */
};

static void
fanout_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct fanout_output *f = (struct fanout_output *)self;

    for (int i = 0; i < f->ntargets; i++)
        f->targets[i]->collect(f->targets[i], rec, meta);
}

static void
fanout_watermark(struct output *self, int64_t watermark)
{
    struct fanout_output *f = (struct fanout_output *)self;

    metric_gauge_set(&self->watermark, watermark);
    for (int i = 0; i < f->ntargets; i++)
        f->targets[i]->emit_watermark(f->targets[i], watermark);
}

static void
fanout_idle(struct output *self, bool idle)
{
    struct fanout_output *f = (struct fanout_output *)self;

    for (int i = 0; i < f->ntargets; i++)
        f->targets[i]->emit_idle(f->targets[i], idle);
}

/* One target, at random, as Flink's BroadcastingOutputCollector. */
static void
fanout_latency(struct output *self, const struct latency_marker *m)
{
    struct fanout_output *f = (struct fanout_output *)self;
    struct output *target;

    f->random ^= f->random << 13;
    f->random ^= f->random >> 7;
    f->random ^= f->random << 17;
    target = f->targets[f->random % (uint64_t)f->ntargets];
    if (target->emit_latency_marker != NULL)
        target->emit_latency_marker(target, m);
}

/* Drops records: the end of a chain whose last operator emits nowhere. */
static void
discard_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    UNUSED(self);
    UNUSED(rec);
    UNUSED(meta);
}

static void
discard_watermark(struct output *self, int64_t watermark)
{
    metric_gauge_set(&self->watermark, watermark);
}

static void
discard_idle(struct output *self, bool idle)
{
    UNUSED(self);
    UNUSED(idle);
}

static struct output *
chain_keep(struct operator_chain *chain, struct output *o)
{
    metric_gauge_set(&o->watermark, INT64_MIN);
    chain->outputs = xrealloc(chain->outputs, (size_t)(chain->noutputs + 1) * sizeof *o);
    chain->outputs[chain->noutputs++] = o;
    return o;
}

/* An output that drops everything: the end of a chain whose operator emits
 * nowhere, one per operator (its watermark is that operator's). */
static struct output *
chain_discard(struct operator_chain *chain)
{
    struct output *o = xcalloc(1, sizeof *o);

    o->collect = discard_collect;
    o->emit_watermark = discard_watermark;
    o->emit_idle = discard_idle;
    return chain_keep(chain, o);
}

/* One output over the targets tagged `tag` (NULL: untagged): the target
 * itself when alone, a fan-out when several, discard when none. */
static struct output *
chain_group(struct operator_chain *chain, struct output **targets, const char **tags, int n,
            const char *tag)
{
    struct fanout_output *f;
    int count = 0;

    for (int k = 0; k < n; k++)
        count += (tag == NULL) ? tags[k] == NULL : (tags[k] && strcmp(tags[k], tag) == 0);
    if (count == 0)
        return chain_discard(chain);
    f = xcalloc(1, sizeof *f);
    f->base.collect = fanout_collect;
    f->base.emit_watermark = fanout_watermark;
    f->base.emit_idle = fanout_idle;
    f->base.emit_latency_marker = fanout_latency;
    f->random = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)f;
    f->targets = xcalloc((size_t)count, sizeof *f->targets);
    for (int k = 0; k < n; k++)
        if ((tag == NULL) ? tags[k] == NULL : (tags[k] && strcmp(tags[k], tag) == 0))
            f->targets[f->ntargets++] = targets[k];
    if (count == 1) {
        struct output *only = f->targets[0];

        free(f->targets);
        free(f);
        return only;
    }
    return chain_keep(chain, &f->base);
}

int
operator_chain_new(const struct job_graph *jg, int vertex, const struct task_info *task,
                   struct output *const *exchange_outputs, struct operator_chain **out,
                   spate_error *err)
{
    const struct jg_vertex *v = &jg->vertices[vertex];
    struct operator_chain *chain = xcalloc(1, sizeof *chain);
    int rc;

    chain->ops = xcalloc((size_t)v->nops, sizeof *chain->ops);
    chain->nops = v->nops;
    /* Tail first: an operator's successors exist before it is made. */
    for (int i = v->nops - 1; i >= 0; i--) {
        const struct jg_operator *jop = &v->ops[i];
        int ntargets = jop->nchained + jop->noutputs;
        struct output **targets = xcalloc((size_t)ntargets + 1, sizeof *targets);
        const char **tags = xcalloc((size_t)ntargets + 1, sizeof *tags);
        struct side_output *sides = NULL;
        int nsides = 0, t = 0;
        struct output *main;

        for (int c = 0; c < jop->nchained; c++) {
            struct chained_output *co = xcalloc(1, sizeof *co);

            co->base.collect = chained_collect;
            co->base.emit_watermark = chained_watermark;
            co->base.emit_idle = chained_idle;
            co->base.emit_latency_marker = chained_latency;
            co->next = chain->ops[jop->chained[c]];
            /* The next operator and what follows it are made: a run goes
             * through as far as each operator takes runs. */
            if (operator_takes_runs(co->next))
                co->base.collect_run = chained_collect_run;
            tags[t] = jop->chained_tags ? jop->chained_tags[c] : NULL;
            targets[t++] = chain_keep(chain, &co->base);
        }
        for (int x = 0; x < jop->noutputs; x++) {
            /* The operator's exchanges are numbered among the vertex's. */
            for (int vo = 0; vo < v->noutputs; vo++) {
                if (v->outputs[vo] == jop->outputs[x]) {
                    tags[t] = jg->edges[jop->outputs[x]].tag;
                    targets[t++] = exchange_outputs[vo];
                }
            }
        }
        /* The main output gathers the untagged targets; each side output tag
         * gathers its own. */
        main = chain_group(chain, targets, tags, t, NULL);
        for (int k = 0; k < t; k++) {
            bool seen = false;

            if (tags[k] == NULL)
                continue;
            for (int j = 0; j < nsides; j++)
                seen |= strcmp(sides[j].tag, tags[k]) == 0;
            if (seen)
                continue;
            sides = xrealloc(sides, (size_t)(nsides + 1) * sizeof *sides);
            sides[nsides].tag = tags[k];
            sides[nsides].id = output_tag_id(tags[k]);
            sides[nsides].out = chain_group(chain, targets, tags, t, tags[k]);
            nsides++;
        }
        free(targets);
        free(tags);
        if ((rc = operator_new(&jop->settings, i, task, main, &chain->ops[i], err)) != 0) {
            free(sides);
            spate_error_wrap(err, "cannot open operator '%s'", jop->name);
            operator_chain_free(chain);
            return rc;
        }
        chain->ops[i]->sides = sides;
        chain->ops[i]->nsides = nsides;
    }
    *out = chain;
    return 0;
}

void
operator_chain_free(struct operator_chain *chain)
{
    if (chain == NULL)
        return;
    for (int i = chain->nops - 1; i >= 0; i--)
        operator_free(chain->ops[i]);
    for (int i = 0; i < chain->noutputs; i++) {
        struct output *o = chain->outputs[i];

        if (o->collect == fanout_collect)
            free(((struct fanout_output *)o)->targets);
        free(o);
    }
    free(chain->outputs);
    free(chain->ops);
    free(chain);
}

const char *
operator_chain_failure(const struct operator_chain *chain)
{
    for (int i = 0; i < chain->nops; i++)
        if (chain->ops[i] != NULL && operator_failure(chain->ops[i]) != NULL)
            return operator_failure(chain->ops[i]);
    return NULL;
}

void
operator_chain_end_input(struct operator_chain *chain)
{
    for (int i = 0; i < chain->nops; i++)
        if (chain->ops[i]->vt->end_input != NULL)
            chain->ops[i]->vt->end_input(chain->ops[i]);
}
