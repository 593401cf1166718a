/* What the jobmanager unit tests share: an ExecutionGraph of the dataflow
 * built on env, through a JobGraph encoded as a client submits it. */
#ifndef SPATE_TESTS_UNIT_JOBMANAGER_EG_TEST_H
#define SPATE_TESTS_UNIT_JOBMANAGER_EG_TEST_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "jobmanager/execution_graph.h"
#include "streaming/job_graph_codec.h"

/* Frees env. Built-in operators only: no job library needed to encode. */
static inline struct execution_graph *
eg_test_build(spate_env *env)
{
    struct execution_graph *eg;
    struct job_graph *jg;
    spate_error err = { 0 };
    uint8_t *bytes;
    size_t len;

    cr_assert_eq(job_graph_build(env, "t", &jg, &err), 0, "%s", err.message);
    cr_assert_eq(job_graph_encode(jg, NULL, &bytes, &len, &err), 0, "%s", err.message);
    cr_assert_eq(execution_graph_new(bytes, len, "/tmp/lib.so", &eg, &err), 0, "%s", err.message);
    free(bytes);
    job_graph_free(jg);
    env_free(env);
    return eg;
}

#endif
