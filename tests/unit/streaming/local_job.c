/* The streaming tests' local job runner (local_job.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connectors/connectors.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/fs.h"
#include "local_job.h"
#include "sync_runner.h"
#include "network/net_env.h"

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

/* The snapshot thread's: keeps the latest acknowledgement, packed. */
static void
lj_ack(void *data, Checkpoint__AcknowledgeCheckpoint *ack)
{
    struct task_thread *t = data;
    size_t len = checkpoint__acknowledge_checkpoint__get_packed_size(ack);
    uint8_t *bytes = xmalloc(len ? len : 1);

    checkpoint__acknowledge_checkpoint__pack(ack, bytes);
    pthread_mutex_lock(&t->lock);
    free(t->ack);
    t->ack = bytes;
    t->ack_len = len;
    t->acked_id = ack->checkpoint_id;
    pthread_mutex_unlock(&t->lock);
}

static void
lj_decline(void *data, int64_t checkpoint_id, const char *reason)
{
    struct task_thread *t = data;

    (void)reason;
    pthread_mutex_lock(&t->lock);
    t->declined_id = checkpoint_id;
    pthread_mutex_unlock(&t->lock);
}

/* The state a task of the new run starts from: the old run's same subtask's
 * acknowledgement (the same graph, the same parallelism). */
static void
lj_set_restore(struct task_thread *t, const struct task_thread *old)
{
    Checkpoint__AcknowledgeCheckpoint *a;

    cr_assert_not_null(old->ack, "no acknowledgement to restore from");
    a = checkpoint__acknowledge_checkpoint__unpack(NULL, old->ack_len, old->ack);
    cr_assert_not_null(a);
    t->restore = xcalloc(1, sizeof *t->restore);
    checkpoint__task_restore__init(t->restore);
    t->restore->checkpoint_id = a->checkpoint_id;
    t->restore->n_operators = a->n_operators;
    t->restore->operators = a->operators;
    a->n_operators = 0;
    a->operators = NULL;
    checkpoint__acknowledge_checkpoint__free_unpacked(a, NULL);
}

void
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
            task_mailbox_init(&t->mailbox, &t->notifier);
            pthread_mutex_init(&t->lock, NULL);
            accumulators_init(&t->acc);
            if (lj->checkpointing) {
                p->mailbox = &t->mailbox;
                p->exactly_once = true;
                p->checkpoint_ack = lj_ack;
                p->checkpoint_decline = lj_decline;
                p->data = t;
            }
            if (lj->restore_from != NULL) {
                lj_set_restore(t, &lj->restore_from->tasks[v][s]);
                p->restore = t->restore;
            }
            p->graph = jg;
            p->vertex = v;
            p->info = (struct task_info){ .subtask = s,
                                          .parallelism = vx->parallelism,
                                          .max_parallelism = vx->max_parallelism,
                                          .task_name = vx->name,
                                          .accumulators = &t->acc,
                                          .print_out = stdout,
                                          .connectors = connectors_builtin(),
                                          .state_backend = test_state_backend() };
            p->info.checkpointing = lj->checkpointing;
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

int
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
            task_mailbox_release(&t->mailbox);
            notifier_release(&t->notifier);
        }
    }
    net_env_free(lj->net);
    lj->net = NULL;
    return failed;
}

void
local_free(struct local_job *lj)
{
    for (int v = 0; v < lj->jg->nvertices; v++) {
        for (int s = 0; s < lj->jg->vertices[v].parallelism; s++) {
            struct task_thread *t = &lj->tasks[v][s];

            free(t->ack);
            accumulators_release(&t->acc);
            if (t->restore != NULL)
                checkpoint__task_restore__free_unpacked(t->restore, NULL);
            pthread_mutex_destroy(&t->lock);
        }
        free(lj->tasks[v]);
    }
    for (int e = 0; e < lj->jg->nedges; e++)
        free(lj->ids[e]);
    free(lj->ids);
    free(lj->tasks);
    config_free(lj->conf);
    job_graph_free(lj->jg);
    memset(lj, 0, sizeof *lj);
}

bool
local_checkpoint(struct local_job *lj, int64_t id, const char *dir)
{
    return local_savepoint(lj, id, dir, 0, false);
}

bool
local_savepoint(struct local_job *lj, int64_t id, const char *dir, int type, bool drain)
{
    char location[512];
    spate_error err = { 0 };

    /* As the CheckpointCoordinator does before it triggers. */
    snprintf(location, sizeof location, "%s/chk-%lld", dir, (long long)id);
    cr_assert_eq(fs_mkdirs(location, &err), 0, "%s", err.message);
    return local_trigger_at(lj, id, location, type, drain);
}

bool
local_trigger_at(struct local_job *lj, int64_t id, const char *location, int type, bool drain)
{
    struct timespec pause = { 0, 1000000 };

    for (int v = 0; v < lj->jg->nvertices; v++)
        if (lj->jg->vertices[v].ninputs == 0)
            for (int s = 0; s < lj->jg->vertices[v].parallelism; s++)
                task_mailbox_post(&lj->tasks[v][s].mailbox, TASK_MAIL_TRIGGER, id, 0, type, drain,
                                  location);
    for (int waited = 0; waited < 30000; waited++) {
        int acked = 0, declined = 0;

        for (int v = 0; v < lj->jg->nvertices; v++) {
            for (int s = 0; s < lj->jg->vertices[v].parallelism; s++) {
                struct task_thread *t = &lj->tasks[v][s];

                pthread_mutex_lock(&t->lock);
                acked += t->acked_id >= id;
                declined += t->declined_id == id;
                pthread_mutex_unlock(&t->lock);
            }
        }
        if (declined > 0)
            return false;
        if (acked == lj->ntasks)
            return true;
        nanosleep(&pause, NULL);
    }
    return false;
}

void
local_notify_complete(struct local_job *lj, int64_t id)
{
    for (int v = 0; v < lj->jg->nvertices; v++)
        for (int s = 0; s < lj->jg->vertices[v].parallelism; s++)
            task_mailbox_post(&lj->tasks[v][s].mailbox, TASK_MAIL_COMPLETE, id, 0, 0, false, NULL);
}

void
local_cancel(struct local_job *lj)
{
    for (int v = 0; v < lj->jg->nvertices; v++)
        for (int s = 0; s < lj->jg->vertices[v].parallelism; s++)
            notifier_cancel(&lj->tasks[v][s].notifier);
}
