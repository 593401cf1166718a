/* The synchronous test runner (sync_runner.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/connectors.h"
#include "connectors/source_operator.h"
#include "core/alloc.h"
#include "connectors/source_coordinator.h"
#include "state/state_backend.h"
#include "streaming/exchange_output.h"
#include "streaming/operator_chain.h"
#include "streaming/state_snapshot.h"
#include "streaming/stream_element.h"
#include "streaming/types.h"
#include "sync_runner.h"

/* ---- an in-memory exchange ---- */

struct mem_exchange {
    uint8_t *buf;
    size_t len, cap;
    size_t nrecords;
    size_t reserved_at;
};

static uint8_t *
mem_reserve(void *sink, uint32_t channel, uint32_t len, spate_error *err)
{
    struct mem_exchange *m = sink;

    (void)err;
    cr_assert_eq(channel, 0);
    xgrow((void **)&m->buf, &m->cap, m->len + 4 + len, 1);
    memcpy(m->buf + m->len, &len, 4);
    m->reserved_at = m->len + 4;
    return m->buf + m->reserved_at;
}

static int
mem_commit(void *sink, uint32_t len, spate_error *err)
{
    struct mem_exchange *m = sink;

    (void)err;
    m->len = m->reserved_at + len;
    m->nrecords++;
    return 0;
}

static const struct exchange_sink_ops mem_ops = { mem_reserve, mem_commit };

/* RocksDB's options, its working folders under $TMPDIR or /tmp. */
static void
rocksdb_options(struct state_backend_options *o)
{
    const char *tmp = getenv("TMPDIR");

    cr_assert_eq(state_backend_options_from_config(NULL, o, NULL), 0);
    o->type = STATE_BACKEND_ROCKSDB;
    snprintf(o->localdir, sizeof o->localdir, "%s", tmp != NULL && *tmp ? tmp : "/tmp");
}

const struct state_backend_options *
test_state_backend(void)
{
    static struct state_backend_options o;
    static int made; /* 1: the heap, 2: RocksDB */
    const char *want = getenv("SPATE_TEST_STATE_BACKEND");

    if (made == 0) {
        made = 1;
        if (want != NULL && strncmp(want, "rocksdb", 7) == 0) {
            rocksdb_options(&o);
            o.timers_in_rocksdb = strcmp(want, "rocksdb-timers") == 0;
            made = 2;
        }
    }
    return made == 2 ? &o : NULL;
}

const struct state_backend_options *
test_other_state_backend(void)
{
    static struct state_backend_options o;

    if (test_state_backend() != NULL)
        return NULL;
    rocksdb_options(&o);
    return &o;
}

void
sync_splits_init(struct sync_splits *s, const char *path, uint64_t split_size)
{
    spate_error err = { 0 };

    s->config = (struct file_source_config){ (char *)path, split_size };
    s->settings = (struct operator_settings){ .kind = OP_SOURCE_FILE, .conf = &s->config };
    cr_assert_eq(source_coordinator_new(&s->settings, 1, NULL, &s->coordinator, &err), 0, "%s",
                 err.message);
}

void
sync_splits_release(struct sync_splits *s)
{
    source_coordinator_free(s->coordinator);
}

int
sync_request_splits(void *data, int op, bool register_reader, bool request_split,
                    int64_t last_checkpoint, int (*add)(void *arg, const void *split, size_t len),
                    void *arg, bool *no_more, spate_error *err)
{
    struct sync_splits *s = data;
    Cluster__SplitAssignment a = CLUSTER__SPLIT_ASSIGNMENT__INIT;
    int rc = 0;

    (void)op;
    if ((rc = source_coordinator_request(s->coordinator, 0, register_reader, request_split,
                                         last_checkpoint, &a, err)) != 0)
        return rc;
    for (size_t i = 0; i < a.n_splits && rc == 0; i++)
        rc = add(arg, a.splits[i].data, a.splits[i].len);
    *no_more = a.no_more_splits;
    free(a.splits);
    return rc;
}

static struct sync_splits *env_splits;

void
sync_run_env_splits(spate_env *env, struct accumulators *acc, char **failure,
                    struct sync_splits *splits)
{
    env_splits = splits;
    sync_run_env(env, acc, failure);
    env_splits = NULL;
}

void
sync_run_env(spate_env *env, struct accumulators *acc, char **failure)
{
    struct job_graph *jg;
    spate_error err = { 0 };

    cr_assert_null(spate_env_error(env), "%s", env->error.message);
    cr_assert_eq(job_graph_build(env, "t", &jg, &err), 0, "%s", err.message);
    sync_run(jg, acc, failure);
    job_graph_free(jg);
}

/* ---- a cut: a checkpoint, a failure and a restore in the middle ---- */

/* The cut vertex's chain: its state snapshot into dir, the checkpoint
 * completed (two-phase commit sinks commit), the chain dropped as a
 * failure drops it (no end of input, no flush), and a new chain restored
 * from the snapshot. */
static struct operator_chain *
cut_chain(struct job_graph *jg, int v, struct task_info *task, struct output **outs,
          struct exchange_output *xo, struct operator_chain *chain, const struct sync_cut *cut)
{
    struct jg_vertex *vx = &jg->vertices[v];
    Checkpoint__AcknowledgeCheckpoint *ack = NULL;
    Checkpoint__TaskRestore restore;
    struct task_snapshot *s;
    spate_error err = { 0 };
    char path[4200];

    snprintf(path, sizeof path, "%s/%d.state", cut->dir, v);
    s = task_snapshot_take(chain, vx, 1, 0, NULL, path, &err);
    cr_assert_not_null(s, "the snapshot of '%s' is refused: %s", vx->name, err.message);
    cr_assert_eq(task_snapshot_write(s, &ack, &err), 0, "%s", err.message);
    task_snapshot_free(s);
    for (int i = 0; i < chain->nops; i++)
        if (chain->ops[i]->vt->checkpoint_complete != NULL)
            chain->ops[i]->vt->checkpoint_complete(chain->ops[i], 1);
    operator_chain_free(chain);
    task->attempt++;
    if (cut->other_backend)
        task->state_backend = test_other_state_backend();
    cr_assert_eq(operator_chain_new(jg, v, task, outs, &chain, &err), 0, "%s", err.message);
    for (int o = 0; o < vx->noutputs; o++)
        xo[o].ctx = &operator_chain_head(chain)->ctx;
    checkpoint__task_restore__init(&restore);
    restore.checkpoint_id = 1;
    restore.n_operators = ack->n_operators;
    restore.operators = ack->operators;
    cr_assert_eq(task_restore(chain, vx, &restore, &err), 0, "%s", err.message);
    task_ack_free(ack);
    return chain;
}

static bool
vertex_has(const struct jg_vertex *vx, enum operator_kind kind)
{
    for (int i = 0; i < vx->nops; i++)
        if (vx->ops[i].settings.kind == kind)
            return true;
    return false;
}

void
sync_run(struct job_graph *jg, struct accumulators *acc, char **failure)
{
    sync_run_cut(jg, acc, failure, NULL);
}

void
sync_run_cut(struct job_graph *jg, struct accumulators *acc, char **failure,
             const struct sync_cut *cut)
{
    if (getenv("SYNC_PLAN")) {
        json_t *plan = job_graph_plan_json(jg);
        char *text = json_dumps(plan, JSON_INDENT(1));

        fprintf(stderr, "%s\n", text);
        free(text);
        json_decref(plan);
    }
    spate_error err = { 0 };
    struct mem_exchange *ex = calloc((size_t)jg->nedges + 1, sizeof *ex);

    *failure = NULL;
    for (int v = 0; v < jg->nvertices && *failure == NULL; v++) {
        struct jg_vertex *vx = &jg->vertices[v];
        struct task_info task = { 0,
                                  1,
                                  vx->max_parallelism,
                                  0,
                                  vx->name,
                                  acc,
                                  cut && cut->print_out ? cut->print_out : stdout,
                                  sync_request_splits,
                                  cut && cut->splits ? cut->splits : env_splits,
                                  cut != NULL,
                                  connectors_builtin(),
                                  test_state_backend(),
                                  NULL,
                                  NULL };
        struct exchange_output *xo = calloc((size_t)vx->noutputs + 1, sizeof *xo);
        struct output **outs = calloc((size_t)vx->noutputs + 1, sizeof *outs);
        struct operator_chain *chain;
        struct stream_operator *head;
        /* The cut vertex: elements (records, or a source's records) before
         * the cut; -1: none here. */
        int64_t before_cut = cut != NULL && vertex_has(vx, cut->kind) ? cut->after : -1;

        for (int o = 0; o < vx->noutputs; o++) {
            const struct jg_edge *e = &jg->edges[vx->outputs[o]];
            const struct jg_operator *src = &vx->ops[e->source_operator];

            exchange_output_init(&xo[o], e, src->settings.out_type, 1,
                                 jg->vertices[e->target].max_parallelism, 0, &mem_ops,
                                 &ex[vx->outputs[o]], NULL);
            outs[o] = &xo[o].base;
        }
        cr_assert_eq(operator_chain_new(jg, v, &task, outs, &chain, &err), 0, "%s", err.message);
        head = operator_chain_head(chain);
        for (int o = 0; o < vx->noutputs; o++)
            xo[o].ctx = &head->ctx;
        if (vx->ninputs == 0) {
            enum source_status st;

            do {
                if (before_cut >= 0 && head->records_out >= (uint64_t)before_cut) {
                    chain = cut_chain(jg, v, &task, outs, xo, chain, cut);
                    head = operator_chain_head(chain);
                    before_cut = -1;
                }
                st = head->vt->poll(head, before_cut >= 0 ? 1 : 100, &err);
            } while (st != SOURCE_END && operator_chain_failure(chain) == NULL);
            operator_process_watermark(head, RECORD_MAX_WATERMARK);
            cr_assert_eq(err.code, 0, "%s", err.message);
        } else {
            int64_t seen = 0;

            /* Second inputs first: they are the control streams of the tests
             * (thresholds, broadcast rules). */
            for (int pass = 1; pass >= 0; pass--)
                for (int g = 0; g < vx->ninputs; g++) {
                    struct mem_exchange *in = &ex[vx->inputs[g]];
                    int second = jg->edges[vx->inputs[g]].input_index == 1;

                    if (second != pass)
                        continue;
                    const struct spate_type *t =
                        second ? head->config->in_type2 : head->config->in_type;
                    void *rec = calloc(1, t->size + 16);

                    for (size_t at = 0; at < in->len && operator_chain_failure(chain) == NULL;) {
                        uint32_t len;
                        struct element el;

                        if (before_cut >= 0 && seen++ == before_cut) {
                            chain = cut_chain(jg, v, &task, outs, xo, chain, cut);
                            head = operator_chain_head(chain);
                        }
                        memcpy(&len, in->buf + at, 4);
                        cr_assert_eq(element_read(in->buf + at + 4, len, &el), 0);
                        if (el.kind == ELEMENT_WATERMARK && vx->ninputs == 1) {
                            operator_process_watermark(head, el.watermark);
                        } else if (el.kind == ELEMENT_RECORD) {
                            cr_assert_eq(types_deserialize(t, el.body, el.body_len, rec), 0);
                            if (second)
                                operator_process2(head, rec, &el.meta);
                            else
                                operator_process(head, rec, &el.meta);
                        }
                        at += 4 + len;
                    }
                    free(rec);
                }
            /* Several inputs: event time ends once all have been read. */
            if (vx->ninputs > 1)
                operator_process_watermark(head, RECORD_MAX_WATERMARK);
        }
        operator_chain_end_input(chain);
        if (operator_chain_failure(chain))
            *failure = xstrdup(operator_chain_failure(chain));
        operator_chain_free(chain);
        for (int o = 0; o < vx->noutputs; o++)
            exchange_output_release(&xo[o]);
        free(xo);
        free(outs);
    }
    for (int e = 0; e < jg->nedges; e++)
        free(ex[e].buf);
    free(ex);
}
