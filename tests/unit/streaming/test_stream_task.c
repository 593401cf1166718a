/* Unit tests of src/streaming/stream_task.c: whole jobs run as task threads
 * over one network environment (local channels), at several parallelisms and
 * with every partitioner; results are checked against what the test computes
 * itself. Cancellation and user failures end the tasks. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "streaming/accumulators.h"
#include "streaming/stream_task.h"
#include "streaming/types.h"

struct local_job;

struct task_thread {
    struct local_job *job;
    pthread_t thread;
    struct stream_task_params p;
    struct notifier notifier;
    struct accumulators acc;
    spate_error err;
    int rc;
};

static void local_cancel(struct local_job *lj);

/* As the JobMaster does on a failure: cancel every other task. */
static void *
task_main(void *arg)
{
    struct task_thread *t = arg;

    t->rc = stream_task_run(&t->p, &t->err);
    if (t->rc != 0 && t->rc != SPATE_ECANCELED)
        local_cancel(t->job);
    return NULL;
}

struct local_job {
    struct job_graph *jg;
    struct net_env *net;
    struct task_thread **tasks;       /* [vertex][subtask] */
    struct result_partition_id **ids; /* [edge][producer subtask] */
    int ntasks;
    struct config *conf;
};

/* Starts every subtask of env's job on its own thread. */
static void
local_start(struct local_job *lj, spate_env *env)
{
    struct net_env_config cfg;
    spate_error err = { 0 };
    struct job_graph *jg;

    cr_assert_null(spate_env_error(env), "%s", env->error.message);
    cr_assert_eq(job_graph_build(env, "t", &lj->jg, &err), 0, "%s", err.message);
    jg = lj->jg;
    /* The configuration outlives the environment: its strings are borrowed. */
    lj->conf = config_new();
    config_set(lj->conf, "security.rpc.secret", "", "test");
    cr_assert_eq(net_env_config_load(lj->conf, &cfg, &err), 0, "%s", err.message);
    cr_assert_eq(net_env_new(&cfg, &lj->net, &err), 0, "%s", err.message);
    lj->ids = xcalloc((size_t)jg->nedges + 1, sizeof *lj->ids);
    for (int e = 0; e < jg->nedges; e++) {
        int np = jg->vertices[jg->edges[e].source].parallelism;

        lj->ids[e] = xcalloc((size_t)np, sizeof **lj->ids);
        for (int s = 0; s < np; s++)
            result_partition_id_random(&lj->ids[e][s]);
    }
    lj->tasks = xcalloc((size_t)jg->nvertices, sizeof *lj->tasks);
    for (int v = 0; v < jg->nvertices; v++) {
        const struct jg_vertex *vx = &jg->vertices[v];

        lj->tasks[v] = xcalloc((size_t)vx->parallelism, sizeof **lj->tasks);
        for (int s = 0; s < vx->parallelism; s++) {
            struct task_thread *t = &lj->tasks[v][s];
            struct stream_task_params *p = &t->p;

            t->job = lj;
            cr_assert_eq(notifier_init(&t->notifier, &err), 0);
            accumulators_init(&t->acc);
            p->graph = jg;
            p->vertex = v;
            p->info = (struct task_info){
                s, vx->parallelism, vx->max_parallelism, 0, vx->name, &t->acc, stdout, NULL, NULL
            };
            p->net = lj->net;
            p->notifier = &t->notifier;
            p->buffer_timeout_ms = 1;
            p->npartitions = vx->noutputs;
            p->partitions = xcalloc((size_t)vx->noutputs + 1, sizeof *p->partitions);
            for (int o = 0; o < vx->noutputs; o++) {
                const struct jg_edge *e = &jg->edges[vx->outputs[o]];

                p->partitions[o].edge = vx->outputs[o];
                p->partitions[o].partition = lj->ids[vx->outputs[o]][s];
                p->partitions[o].nsubpartitions = jg_num_subpartitions(jg, e, s);
            }
            p->ngates = vx->ninputs;
            p->gates = xcalloc((size_t)vx->ninputs + 1, sizeof *p->gates);
            for (int g = 0; g < vx->ninputs; g++) {
                const struct jg_edge *e = &jg->edges[vx->inputs[g]];
                int *producers;
                uint32_t *subs;
                uint32_t n = jg_input_channels(jg, e, s, &producers, &subs);

                p->gates[g].edge = vx->inputs[g];
                p->gates[g].nchannels = n;
                p->gates[g].channels = xcalloc(n, sizeof *p->gates[g].channels);
                for (uint32_t c = 0; c < n; c++) {
                    p->gates[g].channels[c].partition = lj->ids[vx->inputs[g]][producers[c]];
                    p->gates[g].channels[c].subpartition = subs[c];
                    p->gates[g].channels[c].local = true;
                }
                free(producers);
                free(subs);
            }
            lj->ntasks++;
        }
    }
    for (int v = 0; v < jg->nvertices; v++)
        for (int s = 0; s < jg->vertices[v].parallelism; s++)
            pthread_create(&lj->tasks[v][s].thread, NULL, task_main, &lj->tasks[v][s]);
}

/* Joins every task; returns how many failed or were cancelled; *err is the
 * first failure, else the first cancellation. */
static int
local_join(struct local_job *lj, spate_error *err)
{
    struct job_graph *jg = lj->jg;
    int failed = 0;

    for (int v = 0; v < jg->nvertices; v++) {
        for (int s = 0; s < jg->vertices[v].parallelism; s++) {
            struct task_thread *t = &lj->tasks[v][s];

            pthread_join(t->thread, NULL);
            if (t->rc != 0 &&
                (failed++ == 0 || (err->code == SPATE_ECANCELED && t->rc != SPATE_ECANCELED)))
                *err = t->err;
            for (int g = 0; g < t->p.ngates; g++)
                free(t->p.gates[g].channels);
            free(t->p.gates);
            free(t->p.partitions);
            notifier_release(&t->notifier);
            accumulators_release(&t->acc);
        }
        free(lj->tasks[v]);
    }
    for (int e = 0; e < jg->nedges; e++)
        free(lj->ids[e]);
    free(lj->ids);
    free(lj->tasks);
    net_env_free(lj->net);
    config_free(lj->conf);
    job_graph_free(jg);
    return failed;
}

static void
local_cancel(struct local_job *lj)
{
    for (int v = 0; v < lj->jg->nvertices; v++)
        for (int s = 0; s < lj->jg->vertices[v].parallelism; s++)
            notifier_cancel(&lj->tasks[v][s].notifier);
}

/* ---- jobs ---- */

struct pair {
    int64_t key;
    int64_t count;
};

#define KEYS 97
#define N    20000

static void
gen_pair(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct pair *)out)->key = (int64_t)(i * 7919 % KEYS);
    ((struct pair *)out)->count = 1;
}

/* Per subtask: the sum of every emitted count and the number of records. */
struct sums {
    int64_t checksum[16];
    int64_t records[16];
};

static void
sum_sink(spate_ctx *ctx, const void *in)
{
    struct sums *s = *(struct sums *const *)spate_ctx_params(ctx, NULL);

    s->checksum[spate_ctx_subtask_index(ctx)] += ((const struct pair *)in)->count;
    s->records[spate_ctx_subtask_index(ctx)]++;
}

static void
pass(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(struct pair *)out = *(const struct pair *)in;
}

/* A keyed running count over N records of KEYS keys, with the given
 * parallelisms and a repartitioning step between source and count. */
static void
run_count(int p_source, int p_map, int p_count, spate_stream *(*part)(spate_stream *),
          int64_t expect_records_factor)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    struct sums sums = { { 0 }, { 0 } }, *sp = &sums;
    struct local_job lj = { 0 };
    spate_error err = { 0 };
    int64_t checksum = 0, records = 0, expected = 0;
    spate_stream *s;

    s = spate_set_parallelism(spate_source_generator(env, gen_pair, pt, N, 0), p_source);
    if (part != NULL)
        s = part(s);
    s = spate_set_parallelism(spate_map(s, pass, pt), p_map);
    s = spate_set_parallelism(spate_sum(spate_key_by_field(s, 0), 1), p_count);
    spate_set_parallelism(spate_params(spate_sink(s, sum_sink), &sp, sizeof sp), p_count);
    local_start(&lj, env);
    cr_assert_eq(local_join(&lj, &err), 0, "%s", err.message);
    for (int i = 0; i < 16; i++) {
        checksum += sums.checksum[i];
        records += sums.records[i];
    }
    /* Key k occurs n_k times; its running counts sum to n_k (n_k + 1) / 2. */
    for (int k = 0; k < KEYS; k++) {
        int64_t n = 0;

        for (uint64_t i = 0; i < N; i++)
            n += (int64_t)(i * 7919 % KEYS) == k;
        n *= expect_records_factor;
        expected += n * (n + 1) / 2;
    }
    cr_assert_eq(records, (int64_t)N * expect_records_factor);
    cr_assert_eq(checksum, expected);
    env_free(env);
}

Test(stream_task, keyed_count_at_parallelism_one, .timeout = 60)
{
    run_count(1, 1, 1, NULL, 1);
}

Test(stream_task, keyed_count_across_parallelisms, .timeout = 60)
{
    run_count(2, 3, 4, NULL, 1);
    run_count(3, 3, 2, NULL, 1); /* forward source -> map: chained */
}

Test(stream_task, every_partitioner, .timeout = 60)
{
    run_count(2, 2, 3, spate_forward, 1);
    run_count(2, 3, 2, spate_rebalance, 1);
    run_count(2, 4, 2, spate_rescale, 1);
    run_count(4, 2, 2, spate_rescale, 1);
    run_count(2, 3, 2, spate_shuffle, 1);
    run_count(1, 3, 2, spate_global, 1);
    /* Broadcast: every map subtask sees every record. */
    run_count(1, 3, 2, spate_broadcast, 3);
}

static void
gen_forever(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct pair *)out)->key = (int64_t)(i % 10);
    ((struct pair *)out)->count = 1;
}

static void
slow_sink(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

Test(stream_task, cancel_wakes_every_task, .timeout = 60)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    struct local_job lj = { 0 };
    spate_error err = { 0 };
    spate_stream *s;

    s = spate_set_parallelism(spate_source_generator(env, gen_forever, pt, 0, 0), 2);
    s = spate_set_parallelism(spate_sum(spate_key_by_field(s, 0), 1), 2);
    spate_sink(s, slow_sink);
    local_start(&lj, env);
    local_cancel(&lj);
    cr_assert_eq(local_join(&lj, &err), lj.ntasks);
    cr_assert_eq(err.code, SPATE_ECANCELED, "%s", err.message);
    cr_assert(strstr(err.message, "was cancelled") != NULL, "%s", err.message);
    env_free(env);
}

static void
fail_at(spate_ctx *ctx, const void *in, void *out)
{
    if (((const struct pair *)in)->count == 1 && ((const struct pair *)in)->key == 5)
        spate_ctx_fail(ctx, "key %lld is not allowed", (long long)((const struct pair *)in)->key);
    *(struct pair *)out = *(const struct pair *)in;
}

Test(stream_task, a_failing_function_fails_its_task_and_its_consumers_end, .timeout = 60)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    struct local_job lj = { 0 };
    spate_error err = { 0 };
    spate_stream *s;

    s = spate_source_generator(env, gen_forever, pt, 0, 0);
    s = spate_map(s, fail_at, pt);
    s = spate_set_parallelism(spate_sum(spate_key_by_field(s, 0), 1), 2);
    spate_sink(s, slow_sink);
    local_start(&lj, env);
    /* The source fails with the function's text; the others are cancelled. */
    cr_assert_eq(local_join(&lj, &err), lj.ntasks);
    cr_assert(strstr(err.message, "key 5 is not allowed") != NULL, "%s", err.message);
    env_free(env);
}
