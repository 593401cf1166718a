/* An operator chain (Flink's OperatorChain): the running operators of one
 * JobGraph vertex on one task thread, wired head to tail by direct calls,
 * with the vertex's exchanges as terminal outputs. Task thread only. */
#ifndef SPATE_STREAMING_OPERATOR_CHAIN_H
#define SPATE_STREAMING_OPERATOR_CHAIN_H

#include "streaming/job_graph.h"
#include "streaming/operator.h"

struct operator_chain {
    struct stream_operator **ops; /* ops[0] is the head */
    int nops;
    struct output **outputs; /* what each operator emits into */
    int noutputs;
};

/* Makes the outputs for the vertex's exchanges: exchange_outputs[i] is where
 * records for the vertex's i-th output edge go (owned by the caller). */
int operator_chain_new(const struct job_graph *jg, int vertex, const struct task_info *task,
                       struct output *const *exchange_outputs, struct operator_chain **out,
                       spate_error *err);
/* Closes every operator (user close functions run), tail first. */
void operator_chain_free(struct operator_chain *chain);

static inline struct stream_operator *
operator_chain_head(const struct operator_chain *chain)
{
    return chain->ops[0];
}

/* The first user failure of any operator in the chain, or NULL. */
const char *operator_chain_failure(const struct operator_chain *chain);
/* Tells every operator, head first, that its input ended. */
void operator_chain_end_input(struct operator_chain *chain);

#endif
