/* Building and tearing down operator chains (operator_chain.h). An operator
 * with one successor emits straight into it; with several (chained
 * operators and exchanges) it emits into a fan-out output that calls each. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/util.h"
#include "streaming/operator_chain.h"

/* Emits into the next operator of the chain. */
struct chained_output {
    struct output base;
    struct operator* next;
};

static void
chained_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct operator* next =((struct chained_output *)self)->next;

    next->vt->process(next, rec, meta);
}

struct fanout_output {
    struct output base;
    struct output **targets;
    int ntargets;
};

static void
fanout_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct fanout_output *f = (struct fanout_output *)self;

    for (int i = 0; i < f->ntargets; i++)
        f->targets[i]->collect(f->targets[i], rec, meta);
}

/* Drops records: the end of a chain whose last operator emits nowhere. */
static void
discard_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    UNUSED(self);
    UNUSED(rec);
    UNUSED(meta);
}

static struct output discard_output = { discard_collect };

static struct output *
chain_keep(struct operator_chain *chain, struct output *o)
{
    chain->outputs = xrealloc(chain->outputs, (size_t)(chain->noutputs + 1) * sizeof *o);
    chain->outputs[chain->noutputs++] = o;
    return o;
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
        struct output *o;

        if (ntargets == 0) {
            o = &discard_output;
        } else {
            struct output **targets = xcalloc((size_t)ntargets, sizeof *targets);
            int t = 0;

            for (int c = 0; c < jop->nchained; c++) {
                struct chained_output *co = xcalloc(1, sizeof *co);

                co->base.collect = chained_collect;
                co->next = chain->ops[jop->chained[c]];
                targets[t++] = chain_keep(chain, &co->base);
            }
            for (int x = 0; x < jop->noutputs; x++) {
                /* The operator's exchanges are numbered among the vertex's. */
                for (int vo = 0; vo < v->noutputs; vo++)
                    if (v->outputs[vo] == jop->outputs[x])
                        targets[t++] = exchange_outputs[vo];
            }
            if (ntargets == 1) {
                o = targets[0];
                free(targets);
            } else {
                struct fanout_output *f = xcalloc(1, sizeof *f);

                f->base.collect = fanout_collect;
                f->targets = targets;
                f->ntargets = ntargets;
                o = chain_keep(chain, &f->base);
            }
        }
        if ((rc = operator_new(jop->node, i, task, o, &chain->ops[i], err)) != 0) {
            spate_error_wrap(err, "cannot open operator '%s'", jop->name);
            operator_chain_free(chain);
            return rc;
        }
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
