/* Tasks (task.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/execution_state.h"
#include "core/log.h"
#include "core/notifier.h"
#include "rpc/gateways.h"
#include "sql/sql_operators.h"
#include "state/state_backend.h"
#include "streaming/accumulators.h"
#include "streaming/job_graph_codec.h"
#include "streaming/stream_task.h"
#include "streaming/latency_stats.h"
#include "taskmanager/task.h"

#define TASK_LOG "task"
/* State reports are retried this often before the task gives up on them
 * (the JobMaster then learns of the end through its heartbeats). */
#define TASK_REPORT_TRIES 3

struct task {
    struct task_host host;
    Jobgraph__TaskDeployment *tdd; /* our own copy */
    spate_id job_id, attempt_id;
    struct rpc_gateway *jm; /* fenced with the JobMasterId */
    struct notifier notifier;
    struct task_mailbox mailbox; /* checkpoint triggers and notifications */
    pthread_t thread;
    _Atomic bool done;
    char name[160]; /* "<vertex> (i/n)" for logs */
    struct accumulators accumulators;
    struct task_io_metrics io; /* registered while the StreamTask runs */
    struct task_io_totals io_totals;
    bool has_io_totals;
    /* The host's state backend with the job's own settings over it. */
    struct state_backend_options backend;
    /* Set by the task thread once it runs its operators: its vertex, then
     * (release) its thread id, which task_thread reads (acquire). */
    spate_id vertex_id;
    _Atomic int tid;
};

/* ---- reports to the JobMaster ---- */

static void
task_report(struct task *t, enum execution_state state, const char *failure)
{
    Cluster__TaskExecutionState msg = CLUSTER__TASK_EXECUTION_STATE__INIT;
    Cluster__Accumulator *accs = NULL, **ptrs = NULL;
    Cluster__IOMetrics io = CLUSTER__IOMETRICS__INIT;
    spate_error err = { 0 };

    msg.job_id = gw_id_bytes(&t->job_id);
    msg.attempt_id = gw_id_bytes(&t->attempt_id);
    msg.state = (char *)execution_state_name(state);
    msg.failure = (char *)(failure ? failure : "");
    if (state == EXEC_FINISHED && t->accumulators.count > 0) {
        accs = xcalloc(t->accumulators.count, sizeof *accs);
        ptrs = xcalloc(t->accumulators.count, sizeof *ptrs);
        for (size_t i = 0; i < t->accumulators.count; i++) {
            cluster__accumulator__init(&accs[i]);
            accs[i].name = t->accumulators.counters[i]->name;
            accs[i].value = t->accumulators.counters[i]->value;
            ptrs[i] = &accs[i];
        }
        msg.n_accumulators = t->accumulators.count;
        msg.accumulators = ptrs;
    }
    if (t->has_io_totals) {
        io.records_in = t->io_totals.records_in;
        io.records_out = t->io_totals.records_out;
        io.bytes_in = t->io_totals.bytes_in;
        io.bytes_out = t->io_totals.bytes_out;
        io.idle_ms = t->io_totals.idle_ms;
        io.back_pressured_ms = t->io_totals.back_pressured_ms;
        io.busy_ms = t->io_totals.busy_ms;
        msg.io = &io;
    }
    for (int i = 0; i < TASK_REPORT_TRIES; i++) {
        struct rpc_future *f = jm_update_task_execution_state(t->jm, &msg, 0);
        /* Bounded: a loop that stopped completes nothing. */
        int rc = rpc_future_wait(f, rpc_service_ask_timeout_ms(t->host.svc) + 1000, &err);

        rpc_future_unref(f);
        if (rc == 0)
            break;
        SPATE_LOG_WARN(TASK_LOG, "task %s: cannot report %s to the JobMaster: %s", t->name,
                       execution_state_name(state), err.message);
    }
    free(accs);
    free(ptrs);
}

/* ---- source splits (jm.request_split: the seeds' RequestNextInputSplit) ---- */

static int
task_request_splits(void *data, int op, bool register_reader, bool request_split,
                    int64_t last_checkpoint, int (*add)(void *arg, const void *split, size_t len),
                    void *arg, bool *no_more, spate_error *err)
{
    struct task *t = data;
    Cluster__SplitRequest req = CLUSTER__SPLIT_REQUEST__INIT;
    Cluster__SplitAssignment *a;
    struct rpc_future *f;
    int rc = 0;

    req.job_id = gw_id_bytes(&t->job_id);
    req.attempt_id = gw_id_bytes(&t->attempt_id);
    req.vertex = t->tdd->vertex;
    req.operator_ = op;
    req.register_reader = register_reader;
    req.request_split = request_split;
    req.checkpoint_id = last_checkpoint;
    f = jm_request_split(t->jm, &req, 0);
    if ((rc = rpc_future_wait(f, rpc_service_ask_timeout_ms(t->host.svc) + 1000, err)) != 0) {
        rpc_future_unref(f);
        return spate_error_wrap(err, "cannot get source splits from the JobMaster");
    }
    a = rpc_future_value(f);
    for (size_t i = 0; i < a->n_splits && rc == 0; i++)
        rc = add(arg, a->splits[i].data, a->splits[i].len);
    *no_more = a->no_more_splits;
    rpc_future_unref(f);
    return rc;
}

/* ---- checkpoints ---- */

/* The snapshot thread's: the subtask's state is durable. */
static void
task_checkpoint_ack(void *data, Checkpoint__AcknowledgeCheckpoint *ack)
{
    struct task *t = data;
    spate_error err = { 0 };

    ack->job_id = gw_id_bytes(&t->job_id);
    ack->attempt_id = gw_id_bytes(&t->attempt_id);

    if (jm_acknowledge_checkpoint(t->jm, ack, &err) != 0)
        SPATE_LOG_WARN(TASK_LOG, "task %s: cannot acknowledge checkpoint %lld: %s", t->name,
                       (long long)ack->checkpoint_id, err.message);
}

static void
task_checkpoint_decline(void *data, int64_t checkpoint_id, const char *reason)
{
    struct task *t = data;
    Checkpoint__DeclineCheckpoint msg = CHECKPOINT__DECLINE_CHECKPOINT__INIT;
    spate_error err = { 0 };

    msg.job_id = gw_id_bytes(&t->job_id);
    msg.attempt_id = gw_id_bytes(&t->attempt_id);
    msg.checkpoint_id = checkpoint_id;
    msg.reason = (char *)reason;
    if (jm_decline_checkpoint(t->jm, &msg, &err) != 0)
        SPATE_LOG_WARN(TASK_LOG, "task %s: cannot decline checkpoint %lld: %s", t->name,
                       (long long)checkpoint_id, err.message);
}

void
task_trigger_checkpoint(struct task *t, const Checkpoint__TriggerCheckpoint *req)
{
    task_mailbox_post(&t->mailbox, TASK_MAIL_TRIGGER, req->checkpoint_id, req->timestamp, req->type,
                      req->drain, req->target_location);
}

void
task_notify_checkpoint(struct task *t, int64_t checkpoint_id, bool complete)
{
    task_mailbox_post(&t->mailbox, complete ? TASK_MAIL_COMPLETE : TASK_MAIL_ABORTED, checkpoint_id,
                      0, 0, false, NULL);
}

/* ---- the thread ---- */

static void
task_on_running(void *data)
{
    task_report(data, EXEC_RUNNING, NULL);
}

/* The deployment descriptor's wiring as the StreamTask's. */
static int
task_params(struct task *t, const struct job_graph *jg, struct stream_task_params *p,
            spate_error *err)
{
    const Jobgraph__TaskDeployment *d = t->tdd;
    const struct jg_vertex *v = &jg->vertices[d->vertex];

    p->partitions = xcalloc(d->n_partitions + 1, sizeof *p->partitions);
    p->npartitions = (int)d->n_partitions;
    for (size_t i = 0; i < d->n_partitions; i++) {
        const Jobgraph__PartitionDesc *pd = d->partitions[i];

        if (!gw_id_get(&pd->partition_id, &p->partitions[i].partition.partition))
            return spate_error_set(err, SPATE_EINVAL, "malformed partition id in deployment");
        p->partitions[i].partition.producer = t->attempt_id;
        p->partitions[i].edge = pd->edge;
        p->partitions[i].nsubpartitions = pd->subpartitions;
    }
    p->gates = xcalloc(d->n_gates + 1, sizeof *p->gates);
    p->ngates = (int)d->n_gates;
    for (size_t g = 0; g < d->n_gates; g++) {
        const Jobgraph__GateDesc *gd = d->gates[g];

        p->gates[g].edge = gd->edge;
        p->gates[g].nchannels = (uint32_t)gd->n_channels;
        p->gates[g].channels = xcalloc(gd->n_channels + 1, sizeof *p->gates[g].channels);
        for (size_t c = 0; c < gd->n_channels; c++) {
            const Jobgraph__ChannelDesc *cd = gd->channels[c];
            struct input_channel_desc *ch = &p->gates[g].channels[c];
            spate_id producer_tm;

            if (!gw_id_get(&cd->partition_id, &ch->partition.partition) ||
                !gw_id_get(&cd->producer_attempt, &ch->partition.producer) ||
                !gw_id_get(&cd->producer_resource_id, &producer_tm))
                return spate_error_set(err, SPATE_EINVAL, "malformed channel in deployment");
            ch->subpartition = cd->subpartition;
            ch->local = id_equal(&producer_tm, &t->host.resource_id);
            snprintf(ch->host, sizeof ch->host, "%s", cd->host ? cd->host : "");
            ch->port = cd->port;
        }
    }
    p->graph = jg;
    p->vertex = d->vertex;
    p->info = (struct task_info){ d->subtask,
                                  v->parallelism,
                                  v->max_parallelism,
                                  d->attempt_number,
                                  t->name,
                                  &t->accumulators,
                                  t->host.print_out,
                                  task_request_splits,
                                  t,
                                  false,
                                  sql_operator_table(),
                                  NULL,
                                  NULL,
                                  NULL };
    p->info.checkpointing = jg->checkpointing.interval_ms > 0;
    p->info.state_backend = t->host.state_backend;
    if (t->host.latency != NULL && t->host.latency->interval_ms > 0)
        p->info.latency = t->host.latency;
    if (t->host.state_backend != NULL && jg->checkpointing.incremental >= 0) {
        /* Flink: the job's execution.checkpointing.incremental over the
         * TaskManager's. */
        t->backend = *t->host.state_backend;
        t->backend.incremental = jg->checkpointing.incremental == 1;
        p->info.state_backend = &t->backend;
    }
    p->exactly_once = jg->checkpointing.exactly_once;
    p->mailbox = &t->mailbox;
    p->restore = d->restore;
    p->checkpoint_ack = task_checkpoint_ack;
    p->checkpoint_decline = task_checkpoint_decline;
    p->net = t->host.net;
    p->notifier = &t->notifier;
    p->buffer_timeout_ms = jg->buffer_timeout_ms;
    p->metrics = &t->io;
    p->on_running = task_on_running;
    p->data = t;
    return 0;
}

static void
task_params_release(struct stream_task_params *p)
{
    for (int g = 0; g < p->ngates; g++)
        free(p->gates[g].channels);
    free(p->gates);
    free(p->partitions);
}

/* The task's I/O metrics, under the scope a metric dump names it by. */
static void
task_register_metrics(struct task *t, const struct job_graph *jg, const struct jg_vertex *v)
{
    char scope[TASK_IO_SCOPE_MAX], subtask[16], attempt[16];
    id_text tm = id_str(&t->host.resource_id), job = id_str(&t->job_id), task = id_str(&v->id),
            attempt_id = id_str(&t->attempt_id);
    /* Flink's variables of a task's metric group. */
    const char *labels[] = { "host",
                             t->host.host != NULL ? t->host.host : "localhost",
                             "tm_id",
                             tm.s,
                             "job_id",
                             job.s,
                             "job_name",
                             jg->name != NULL ? jg->name : "",
                             "task_id",
                             task.s,
                             "task_attempt_id",
                             attempt_id.s,
                             "task_name",
                             v->name != NULL ? v->name : "",
                             "subtask_index",
                             subtask,
                             "task_attempt_num",
                             attempt,
                             NULL };
    unsigned flags = 0;

    if (t->host.metrics == NULL)
        return;
    if (v->ninputs > 0)
        flags |= TASK_IO_INPUT_WATERMARK;
    if (v->noutputs > 0)
        flags |= TASK_IO_OUTPUT_WATERMARK;
    task_io_scope_format(scope, sizeof scope, &t->job_id, &v->id, t->tdd->subtask,
                         t->tdd->attempt_number);
    snprintf(subtask, sizeof subtask, "%d", t->tdd->subtask);
    snprintf(attempt, sizeof attempt, "%d", t->tdd->attempt_number);
    /* For samples of this thread (flame graphs): its vertex, then its id. */
    t->vertex_id = v->id;
    atomic_store_explicit(&t->tid, (int)syscall(SYS_gettid), memory_order_release);
    task_io_metrics_register(&t->io, t->host.metrics, scope, labels, flags);
}

/* Whether the task's job has a library: a job of built-in operators only
 * (SQL's) names none, its key all zero (or absent). */
static bool
task_has_library(const Jobgraph__TaskDeployment *tdd)
{
    static const uint8_t none[32];

    return tdd->library_sha256.len == 32 && memcmp(tdd->library_sha256.data, none, 32) != 0;
}

static void *
task_main(void *arg)
{
    struct task *t = arg;
    const struct job_library *lib = NULL;
    struct stream_task_params p = { 0 };
    struct job_graph *jg = NULL;
    spate_error err = { 0 };
    char thread_name[16];
    bool have_lib = false;
    int rc;

    snprintf(thread_name, sizeof thread_name, "task-%d", t->tdd->subtask);
    log_set_thread_name(thread_name);
    log_set_thread_fields("job=%s task=%s", id_str(&t->job_id).s, id_str(&t->attempt_id).s);
    if (t->host.batch_scheduling) {
        /* Throughput work: a task woken (a buffer came, or came back) waits
         * for the running thread's time slice rather than preempting it, so
         * that tasks sharing a core hand over many buffers per switch, not
         * one; a woken task still runs at once on an idle core. The RPC and
         * network I/O threads keep the default policy, for their latency. */
        struct sched_param sp = { 0 };

        if (sched_setscheduler(0, SCHED_BATCH, &sp) != 0)
            SPATE_LOG_DEBUG(TASK_LOG, "cannot run task thread as SCHED_BATCH: %s",
                            spate_strerror(-errno));
    }
    task_report(t, EXEC_INITIALIZING, NULL);
    if (task_has_library(t->tdd)) {
        rc = library_cache_acquire(
            t->host.libraries, &t->job_id, t->tdd->blob_server,
            t->tdd->library_sha256.len == 32 ? t->tdd->library_sha256.data : NULL, &lib, &err);
        have_lib = rc == 0;
    } else {
        rc = 0; /* built-in operators only (a SQL job): no user code */
    }
    if (rc == 0)
        rc = job_graph_decode(t->tdd->job_graph.data, t->tdd->job_graph.len, lib, &jg, &err);
    if (rc == 0 && lib == NULL && jg->has_user_code)
        rc = spate_error_set(&err, SPATE_EINVAL,
                             "the job's graph refers to user functions but names no job library");
    if (rc == 0 && (t->tdd->vertex < 0 || t->tdd->vertex >= jg->nvertices))
        rc = spate_error_set(&err, SPATE_EINVAL, "deployment of vertex %d of %d", t->tdd->vertex,
                             jg->nvertices);
    if (rc == 0) {
        const struct jg_vertex *v = &jg->vertices[t->tdd->vertex];

        snprintf(t->name, sizeof t->name, "%.120s (%d/%d)", v->name, t->tdd->subtask + 1,
                 v->parallelism);
        /* The head operator's name and the subtask, as Flink names a task's
         * thread, in the few bytes a thread name has. */
        snprintf(thread_name, sizeof thread_name, "%.*s %d", (int)strcspn(v->name, " "), v->name,
                 t->tdd->subtask + 1);
        log_set_thread_name(thread_name);
        rc = task_params(t, jg, &p, &err);
    }
    if (rc == 0) {
        SPATE_LOG_INFO(TASK_LOG, "task %s of job %s starts", t->name, id_str(&t->job_id).s);
        task_register_metrics(t, jg, &jg->vertices[t->tdd->vertex]);
        p.info.metrics = t->io.group;
        /* A worker while it runs: no wait polls while more workers are
         * awake than CPUs (notifier.h). */
        notifier_worker_begin();
        rc = stream_task_run(&p, &err);
        notifier_worker_end();
        task_io_metrics_totals(&t->io, clock_mono_ns(), &t->io_totals);
        t->has_io_totals = true;
        task_io_metrics_release(&t->io);
    }
    if (rc == 0) {
        SPATE_LOG_INFO(TASK_LOG, "task %s finished", t->name);
        task_report(t, EXEC_FINISHED, NULL);
    } else if (rc == SPATE_ECANCELED || notifier_is_cancelled(&t->notifier)) {
        SPATE_LOG_INFO(TASK_LOG, "task %s was cancelled", t->name);
        task_report(t, EXEC_CANCELED, NULL);
    } else {
        SPATE_LOG_WARN(TASK_LOG, "task %s failed: %s", t->name, err.message);
        task_report(t, EXEC_FAILED, err.message);
    }
    task_params_release(&p);
    job_graph_free(jg);
    if (have_lib)
        library_cache_release(t->host.libraries, &t->job_id);
    atomic_store(&t->done, true);
    if (t->host.on_done != NULL)
        t->host.on_done(t->host.arg, t);
    return NULL;
}

/* ---- life cycle ---- */

int
task_start(const struct task_host *host, const Jobgraph__TaskDeployment *tdd, struct task **out,
           spate_error *err)
{
    struct task *t = xcalloc(1, sizeof *t);
    size_t len = jobgraph__task_deployment__get_packed_size(tdd);
    uint8_t *bytes = xmalloc(len ? len : 1);
    spate_id jm_id;
    int rc;

    t->host = *host;
    /* The request lives in the frame's arena: keep a copy of our own. */
    jobgraph__task_deployment__pack(tdd, bytes);
    t->tdd = jobgraph__task_deployment__unpack(NULL, len, bytes);
    free(bytes);
    if (t->tdd == NULL || !gw_id_get(&t->tdd->job_id, &t->job_id) ||
        !gw_id_get(&t->tdd->attempt_id, &t->attempt_id) ||
        !gw_id_get(&t->tdd->job_master_id, &jm_id)) {
        rc = spate_error_set(err, SPATE_EINVAL, "malformed task deployment");
        goto fail;
    }
    snprintf(t->name, sizeof t->name, "vertex %d (%d)", t->tdd->vertex, t->tdd->subtask + 1);
    if ((rc = rpc_gateway_new(host->svc, t->tdd->job_master_address, &jm_id, &t->jm, err)) != 0)
        goto fail;
    if ((rc = notifier_init(&t->notifier, err)) != 0)
        goto fail;
    if (host->net != NULL) /* how long a wait for input or a buffer polls first */
        notifier_set_spin(&t->notifier, net_env_busy_poll_ns(host->net));
    task_mailbox_init(&t->mailbox, &t->notifier);
    accumulators_init(&t->accumulators);
    task_io_metrics_init(&t->io);
    if ((rc = pthread_create(&t->thread, NULL, task_main, t)) != 0) {
        task_mailbox_release(&t->mailbox);
        notifier_release(&t->notifier);
        rc = spate_error_set(err, -rc, "cannot start a task thread: %s", spate_strerror(-rc));
        goto fail;
    }
    *out = t;
    return 0;
fail:
    rpc_gateway_free(t->jm);
    if (t->tdd != NULL)
        jobgraph__task_deployment__free_unpacked(t->tdd, NULL);
    free(t);
    return rc;
}

void
task_cancel(struct task *t)
{
    notifier_cancel(&t->notifier);
}

void
task_free(struct task *t)
{
    if (t == NULL)
        return;
    pthread_join(t->thread, NULL);
    task_mailbox_release(&t->mailbox);
    notifier_release(&t->notifier);
    accumulators_release(&t->accumulators);
    rpc_gateway_free(t->jm);
    jobgraph__task_deployment__free_unpacked(t->tdd, NULL);
    free(t);
}

const spate_id *
task_attempt_id(const struct task *t)
{
    return &t->attempt_id;
}

bool
task_thread(const struct task *t, spate_id *vertex, int *subtask, int *tid)
{
    int id = atomic_load_explicit(&((struct task *)t)->tid, memory_order_acquire);

    if (id == 0 || atomic_load(&((struct task *)t)->done))
        return false;
    *vertex = t->vertex_id;
    *subtask = t->tdd->subtask;
    *tid = id;
    return true;
}

const spate_id *
task_job_id(const struct task *t)
{
    return &t->job_id;
}

bool
task_is_done(const struct task *t)
{
    return atomic_load(&t->done);
}
