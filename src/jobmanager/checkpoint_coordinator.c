/* The CheckpointCoordinator (checkpoint_coordinator.h): pending checkpoints
 * from trigger to `_metadata`, the periodic trigger, manual triggers,
 * restores; the statistics are checkpoint_stats_tracker.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint_metadata.h"
#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/shared_state_registry.h"
#include "core/fs.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "jobmanager/checkpoint_coordinator.h"
#include "jobmanager/checkpoint_stats_tracker.h"
#include "rpc/gateways.h"

#define CC_LOG         "checkpoint"
#define CC_MANUAL_KEPT 100 /* finished manual triggers remembered */

enum phase {
    PHASE_INIT,       /* the id and folder are being made */
    PHASE_TRIGGERED,  /* waiting for acknowledgements */
    PHASE_FINALIZING, /* `_metadata` and the store are being written */
};

/* One execution a pending checkpoint waits for. */
struct cc_task {
    const struct execution *e;
    spate_id attempt; /* the attempt that was running at the trigger */
    bool acked;
    int64_t ack_ms;
    uint64_t state_size;
    Checkpoint__OperatorSubtaskState **ops; /* copies of its acknowledgement's */
    size_t nops;
};

struct cc_manual {
    struct list_node node;
    spate_id trigger_id;
    bool done;
    uint64_t checkpoint_id;
    char *failure;
    /* savepoints */
    bool savepoint;
    Checkpoint__CheckpointType type;
    bool drain;
    char *target;   /* the folder the savepoint's own folder goes into */
    char *location; /* the completed savepoint's folder */
    checkpoint_savepoint_done_fn done_fn;
    void *done_arg;
};

struct cc_pending {
    struct list_node node;
    struct checkpoint_coordinator *cc;
    uint64_t id; /* 0 until the counter answered */
    int64_t trigger_ms;
    char *dir;
    enum phase phase;
    bool aborted;          /* while blocking work was in flight */
    struct cc_task *tasks; /* the plan's tasks to wait for: every running one */
    int ntasks, nacked;
    /* The plan's finished tasks, recorded in the checkpoint as finished
     * (Flink's FinishedOperatorSubtaskState), and their entries in it. */
    const struct execution **finished;
    int nfinished;
    Checkpoint__OperatorSubtaskState **finished_states;
    size_t nfinished_states;
    Checkpoint__SourceCoordinatorState **splits; /* [vertex * max ops + op] at the trigger */
    void *timer;
    struct cc_manual *manual;
    bool savepoint; /* from manual: its type, drain and target */
    Checkpoint__CheckpointType type;
    uint64_t local_id; /* the id when the job has no id counter */
    /* blocking work results */
    int rc;
    spate_error err;
    struct completed_checkpoint_store *store; /* finalizing */
    Checkpoint__CheckpointMetadata *md;       /* finalizing: points into the tasks' copies */
    char *metadata_path;
    uint64_t *subsumed;
    size_t nsubsumed;
};

struct cc_load {
    struct list_node node;
    struct checkpoint_coordinator *cc;
    struct completed_checkpoint_store *store;
    checkpoint_restore_cb cb;
    void *arg;
    int rc;
    spate_error err;
    Checkpoint__CheckpointMetadata *md;
    char *path;
};

struct checkpoint_coordinator {
    struct checkpoint_coordinator_options o;
    const struct checkpoint_settings *cfg;
    struct execution_graph *eg;
    /* <checkpoints dir>/<job id>; NULL without a folder (no_storage: why) */
    struct checkpoint_storage *storage;
    char *no_storage;
    /* The shared files of the retained checkpoints (with storage); the
     * workers use it (it locks itself). */
    struct shared_state_registry *registry;
    struct list_node pending; /* oldest first */
    int npending, finalizing;
    bool periodic;        /* started */
    bool periodic_wanted; /* a tick found no room */
    bool final_wanted;    /* every source finished: a checkpoint for the tasks still running */
    bool stopping;        /* a stop's savepoint is in progress or completed */
    uint64_t next_id;     /* without an id counter: the next id */
    bool shut_down;
    void *tick, *pause_timer;
    int64_t last_end_ms; /* the end of the latest checkpoint, completed or failed */
    int continuous_failures;
    struct list_node loads;   /* restores waiting for a `_metadata` being written */
    struct list_node manuals; /* newest last */
    int nmanuals;
    int works; /* blocking work in flight */
    bool freed;
    bool shutdown_deferred;
    enum checkpoint_job_end end;
    bool discard_at_end; /* the shutdown deletes the job's checkpoints */
    struct checkpoint_stats_tracker *stats;
};

static void cc_maybe_trigger(struct checkpoint_coordinator *cc);
static void want_final(struct checkpoint_coordinator *cc);
static void stop_periodic(struct checkpoint_coordinator *cc);
static void cc_start_load(struct checkpoint_coordinator *cc, struct cc_load *l);

/* A stop-with-savepoint's type. */
static bool
is_stop(Checkpoint__CheckpointType type)
{
    return type == CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_TERMINATE ||
           type == CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_SUSPEND;
}

static const struct job_graph *
cc_graph(const struct checkpoint_coordinator *cc)
{
    return cc->eg->graph;
}

static int64_t
cc_now(struct checkpoint_coordinator *cc)
{
    return cc->o.ops->now_ms(cc->o.owner);
}

static const char *
cc_job(const struct checkpoint_coordinator *cc)
{
    static _Thread_local struct id_text t;

    t = id_str(&cc_graph(cc)->job_id);
    return t.s;
}

/* ---- blocking work ------------------------------------------------------------------ */

/* Every blocking work item is counted, so that a coordinator freed while
 * work is in flight lives on (marked freed) until the last done callback,
 * which only releases its item, and so that the shutdown, which frees the
 * store and the id counter and deletes the job's folder, comes after it. */
static void
cc_run(struct checkpoint_coordinator *cc, void (*work)(void *), void (*done)(void *), void *arg)
{
    cc->works++;
    cc->o.ops->run_blocking(cc->o.owner, work, done, arg);
}

static void cc_free_now(struct checkpoint_coordinator *cc);
static void shutdown_start(struct checkpoint_coordinator *cc);

/* The last thing of every done callback. A deferred shutdown runs even if
 * the coordinator was freed meanwhile (a JobMaster's blocking work holds
 * its endpoint, so there it is not; a caller without that guard is), so
 * that the job's folders go all the same. */
static void
cc_work_end(struct checkpoint_coordinator *cc)
{
    cc->works--;
    if (cc->works == 0 && cc->shutdown_deferred)
        shutdown_start(cc);
    if (cc->freed && cc->works == 0)
        cc_free_now(cc);
}

/* ---- manual triggers ---------------------------------------------------------------- */

static struct cc_manual *
manual_find(struct checkpoint_coordinator *cc, const spate_id *id)
{
    struct list_node *n;

    list_for_each(n, &cc->manuals)
    {
        struct cc_manual *m = container_of(n, struct cc_manual, node);

        if (id_equal(&m->trigger_id, id))
            return m;
    }
    return NULL;
}

static void
manual_release(struct cc_manual *m)
{
    free(m->failure);
    free(m->target);
    free(m->location);
    free(m);
}

static void
manual_finish(struct checkpoint_coordinator *cc, struct cc_manual *m, uint64_t id,
              const char *failure, const char *location)
{
    struct list_node *n, *tmp;
    spate_id trigger;

    if (m == NULL || m->done)
        return;
    m->done = true;
    m->checkpoint_id = id;
    m->failure = failure ? xstrdup(failure) : NULL;
    m->location = failure == NULL && location ? xstrdup(location) : NULL;
    trigger = m->trigger_id;
    if (m->done_fn != NULL)
        m->done_fn(m->done_arg, &trigger, m->location, m->failure);
    /* Forget the oldest finished ones beyond what is kept. */
    list_for_each_safe(n, tmp, &cc->manuals)
    {
        struct cc_manual *old = container_of(n, struct cc_manual, node);

        if (cc->nmanuals <= CC_MANUAL_KEPT)
            break;
        if (!old->done || old == m)
            continue;
        list_remove(n);
        manual_release(old);
        cc->nmanuals--;
    }
}

/* The oldest manual request not yet triggered, or NULL. */
static struct cc_manual *
manual_queued(struct checkpoint_coordinator *cc)
{
    struct list_node *n;

    list_for_each(n, &cc->manuals)
    {
        struct cc_manual *m = container_of(n, struct cc_manual, node);
        struct list_node *p;
        bool serving = false;

        if (m->done)
            continue;
        list_for_each(p, &cc->pending) serving |=
            container_of(p, struct cc_pending, node)->manual == m;
        if (!serving)
            return m;
    }
    return NULL;
}

static void
manual_fail_queued(struct checkpoint_coordinator *cc, const char *why)
{
    struct cc_manual *m;

    while ((m = manual_queued(cc)) != NULL)
        manual_finish(cc, m, 0, why, NULL);
}

/* ---- pending checkpoints ------------------------------------------------------------ */

static void
pending_free(struct cc_pending *p)
{
    if (p->timer != NULL)
        p->cc->o.ops->cancel(p->cc->o.owner, p->timer);
    for (int t = 0; t < p->ntasks; t++) {
        for (size_t k = 0; k < p->tasks[t].nops; k++)
            checkpoint__operator_subtask_state__free_unpacked(p->tasks[t].ops[k], NULL);
        free(p->tasks[t].ops);
    }
    for (int i = 0; p->splits && i < cc_graph(p->cc)->nvertices * p->cc->eg->max_ops; i++) {
        if (p->splits[i] == NULL)
            continue;
        /* Completed or given up: the valve opens. */
        if (!p->cc->freed && p->cc->eg->sources[i] != NULL)
            source_coordinator_checkpoint_ended(p->cc->eg->sources[i], (int64_t)p->id);
        checkpoint__source_coordinator_state__free_unpacked(p->splits[i], NULL);
    }
    free(p->splits);
    for (size_t i = 0; i < p->nfinished_states; i++)
        free(p->finished_states[i]); /* its operator id points into the graph */
    free(p->finished_states);
    free(p->finished);
    free(p->tasks);
    free(p->dir);
    free(p->metadata_path);
    free(p->subsumed);
    free(p);
}

static void
notify_all(struct checkpoint_coordinator *cc, struct cc_pending *p, bool completed)
{
    Checkpoint__CheckpointNotification m = CHECKPOINT__CHECKPOINT_NOTIFICATION__INIT;

    m.job_id = gw_id_bytes(&cc_graph(cc)->job_id);
    m.checkpoint_id = (int64_t)p->id;
    m.timestamp = p->trigger_ms;
    for (int t = 0; t < p->ntasks; t++) {
        const struct execution *e = p->tasks[t].e;

        /* Only the attempt that took part, and only while it runs. */
        if (!id_equal(&e->attempt_id, &p->tasks[t].attempt) || e->state != EXEC_RUNNING)
            continue;
        m.attempt_id = gw_id_bytes(&e->attempt_id);
        cc->o.ops->notify(cc->o.owner, e, completed, &m);
    }
}

static void
abort_cleanup_work(void *arg)
{
    struct cc_pending *p = arg;
    spate_error err = { 0 };

    if (p->dir != NULL && checkpoint_storage_dispose_location(p->dir, &err) != 0)
        SPATE_LOG_WARN(CC_LOG, "cannot delete aborted checkpoint %llu: %s",
                       (unsigned long long)p->id, err.message);
    /* The shared files its tasks uploaded: no other checkpoint uses them. */
    for (int t = 0; p->cc->registry != NULL && t < p->ntasks; t++)
        for (size_t o = 0; o < p->tasks[t].nops; o++)
            shared_state_registry_discard(p->cc->registry, p->tasks[t].ops[o]);
}

static void
abort_cleanup_done(void *arg)
{
    struct cc_pending *p = arg;
    struct checkpoint_coordinator *cc = p->cc;

    pending_free(p);
    cc_work_end(cc);
}

static void fail_job_for_checkpoints(struct checkpoint_coordinator *cc, const char *reason);

/* Ends p unsuccessfully. counted: the failure counts toward the tolerable
 * failures (timeouts, declines, failed writes); not counted: aborts for
 * failovers, finishing tasks, newer completed checkpoints. */
static void
pending_abort(struct cc_pending *p, const char *reason, bool counted)
{
    struct checkpoint_coordinator *cc = p->cc;

    if (p->phase == PHASE_FINALIZING || p->aborted)
        return; /* its `_metadata` is being written: it completes or fails then */
    if (p->timer != NULL) {
        cc->o.ops->cancel(cc->o.owner, p->timer);
        p->timer = NULL;
    }
    list_remove(&p->node);
    cc->npending--;
    if (p->id != 0) {
        if (counted)
            SPATE_LOG_WARN(CC_LOG, "checkpoint %llu of job %s failed: %s",
                           (unsigned long long)p->id, cc_job(cc), reason);
        else
            SPATE_LOG_INFO(CC_LOG, "checkpoint %llu of job %s aborted: %s",
                           (unsigned long long)p->id, cc_job(cc), reason);
        checkpoint_stats_tracker_report_failed(cc->stats, p->id, cc_now(cc), reason);
        notify_all(cc, p, false);
        cc->last_end_ms = cc_now(cc);
    }
    manual_finish(cc, p->manual, 0, reason, NULL);
    if (is_stop(p->type)) {
        /* The stop failed (a timeout, a decline): the sources go on, and
         * so do checkpoints. A failover or the job's end restart nothing. */
        cc->stopping = false;
        if (counted && !cc->shut_down)
            checkpoint_coordinator_start(cc);
    }
    /* A failed savepoint counts toward no tolerable failures (Flink's). */
    counted = counted && !p->savepoint;
    if (p->phase == PHASE_INIT) {
        p->aborted = true; /* its init work frees it */
    } else {
        p->aborted = true;
        cc_run(cc, abort_cleanup_work, abort_cleanup_done, p);
    }
    /* A final checkpoint that failed is asked for again: the tasks that
     * wait for one get no other once the sources are done. */
    want_final(cc);
    if (counted) {
        cc->continuous_failures++;
        if (cc->continuous_failures > cc->cfg->tolerable_failures) {
            char msg[700];

            snprintf(msg, sizeof msg,
                     "exceeded the checkpoint tolerable failure threshold (%d): the latest "
                     "checkpoint failed: %s",
                     cc->cfg->tolerable_failures, reason);
            cc->continuous_failures = 0;
            fail_job_for_checkpoints(cc, msg);
            return;
        }
    }
    cc_maybe_trigger(cc);
}

static void
fail_job_for_checkpoints(struct checkpoint_coordinator *cc, const char *reason)
{
    cc->o.ops->fail_job(cc->o.owner, reason);
}

static void
pending_timed_out(void *arg)
{
    struct cc_pending *p = arg;
    char msg[200];

    p->timer = NULL;
    snprintf(msg, sizeof msg,
             "checkpoint expired before completing (timeout %lld ms, %d of %d "
             "tasks acknowledged)",
             (long long)p->cc->cfg->timeout_ms, p->nacked, p->ntasks);
    pending_abort(p, msg, true);
}

/* Aborts every checkpoint in progress (not counted). */
static void
abort_all(struct checkpoint_coordinator *cc, const char *reason)
{
    struct list_node *n, *tmp;

    list_for_each_safe(n, tmp, &cc->pending)
    {
        struct cc_pending *p = container_of(n, struct cc_pending, node);

        if (p->phase != PHASE_FINALIZING)
            pending_abort(p, reason, false);
    }
}

/* ---- triggering --------------------------------------------------------------------- */

/* Why no checkpoint (savepoint) can be triggered now, or NULL; a stop's
 * own savepoint is not held back by the stop. Finished tasks hold none
 * back (FLIP-147): every task must run or have finished, and one run. */
static const char *
not_triggerable_for(struct checkpoint_coordinator *cc, bool savepoint, bool the_stop)
{
    struct execution_graph *eg = cc->eg;

    if (cc->shut_down)
        return "the job has ended";
    if (!savepoint && cc->storage == NULL)
        return cc->no_storage;
    if (cc->stopping && !the_stop)
        return "the job is stopping with a savepoint";
    for (int v = 0; v < eg->graph->nvertices; v++)
        for (int s = 0; s < eg->graph->vertices[v].parallelism; s++)
            if (eg->executions[v][s].state != EXEC_RUNNING &&
                eg->executions[v][s].state != EXEC_FINISHED)
                return "not every task of the job is running";
    if (eg->finished >= eg->total)
        return "every task of the job has finished";
    return NULL;
}

static const char *
not_triggerable_as(struct checkpoint_coordinator *cc, bool savepoint)
{
    return not_triggerable_for(cc, savepoint, false);
}

static const char *
not_triggerable(struct checkpoint_coordinator *cc)
{
    return not_triggerable_as(cc, false);
}

static void
init_work(void *arg)
{
    struct cc_pending *p = arg;
    struct checkpoint_coordinator *cc = p->cc;
    uint64_t id = p->local_id;

    if (cc->o.counter != NULL &&
        (p->rc = cc->o.counter->ops->get_and_increment(cc->o.counter, &id, &p->err)) != 0)
        return;
    p->id = id;
    if (p->savepoint)
        p->rc = checkpoint_storage_init_savepoint(p->manual->target, &cc_graph(cc)->job_id, &p->dir,
                                                  &p->err);
    else
        p->rc = checkpoint_storage_init_checkpoint(cc->storage, id, &p->dir, &p->err);
}

/* Whether a task producing for execution e has not finished. */
static bool
upstream_running(const struct checkpoint_coordinator *cc, const struct execution *e)
{
    const struct job_graph *jg = cc_graph(cc);
    const struct jg_vertex *v = &jg->vertices[e->vertex];

    for (int i = 0; i < v->ninputs; i++) {
        const struct jg_edge *edge = &jg->edges[v->inputs[i]];
        int np = jg->vertices[edge->source].parallelism, first = 0, count = np;

        if (jg_edge_pointwise(edge))
            jg_pointwise_sources(e->subtask, np, v->parallelism, &first, &count);
        for (int s = first; s < first + count; s++)
            if (cc->eg->executions[edge->source][s].state != EXEC_FINISHED)
                return true;
    }
    return false;
}

/* The plan's tasks to trigger (Flink's CheckpointPlanCalculator): the
 * running ones none of whose upstream tasks still runs, sources and tasks
 * whose inputs all ended; the others get barriers from their inputs. */
static void
send_triggers(struct checkpoint_coordinator *cc, struct cc_pending *p)
{
    Checkpoint__TriggerCheckpoint m = CHECKPOINT__TRIGGER_CHECKPOINT__INIT;

    m.job_id = gw_id_bytes(&cc_graph(cc)->job_id);
    m.checkpoint_id = (int64_t)p->id;
    m.timestamp = p->trigger_ms;
    m.type = p->type;
    m.drain = p->manual != NULL && p->manual->drain;
    m.target_location = p->dir;
    for (int t = 0; t < p->ntasks; t++) {
        const struct execution *e = p->tasks[t].e;

        if (upstream_running(cc, e))
            continue;
        m.attempt_id = gw_id_bytes(&p->tasks[t].attempt);
        cc->o.ops->trigger(cc->o.owner, e, &m);
    }
}

static void
stats_pending(struct checkpoint_coordinator *cc, const struct cc_pending *p)
{
    checkpoint_stats_tracker_report_pending(cc->stats, p->id, p->savepoint, p->trigger_ms,
                                            p->ntasks, p->finished, p->nfinished);
}

/* The sources' split enumerators, just before the triggers leave; until a
 * reader took its state in this checkpoint its coordinator hands it no
 * split (source_coordinator_request), so that every split handed out
 * later is in its reader's state, not also in the enumerator's. */
static void
snapshot_sources(struct checkpoint_coordinator *cc, struct cc_pending *p)
{
    struct execution_graph *eg = cc->eg;

    p->splits = xcalloc((size_t)(eg->graph->nvertices * eg->max_ops) + 1, sizeof *p->splits);
    for (int i = 0; i < eg->graph->nvertices * eg->max_ops; i++)
        if (eg->sources[i] != NULL)
            p->splits[i] = source_coordinator_snapshot(eg->sources[i], (int64_t)p->id);
}

static void
init_done(void *arg)
{
    struct cc_pending *p = arg;
    struct checkpoint_coordinator *cc = p->cc;
    const char *why;

    if (cc->freed) {
        pending_free(p);
    } else if (p->aborted) {
        /* Aborted while its id and folder were being made: the folder goes. */
        if (p->dir != NULL)
            cc_run(cc, abort_cleanup_work, abort_cleanup_done, p);
        else
            pending_free(p);
    } else if (p->rc != 0) {
        char msg[SPATE_ERROR_MESSAGE_MAX + 64];

        snprintf(msg, sizeof msg, "cannot start the %s: %s",
                 p->savepoint ? "savepoint" : "checkpoint", p->err.message);
        p->phase = PHASE_TRIGGERED; /* its folder, if made, is cleaned up */
        if (p->id != 0)
            stats_pending(cc, p);
        pending_abort(p, msg, true);
    } else {
        p->phase = PHASE_TRIGGERED;
        stats_pending(cc, p);
        /* The executions may have changed while the id was fetched. */
        why = not_triggerable_for(cc, p->savepoint, is_stop(p->type));
        for (int t = 0; why == NULL && t < p->ntasks; t++)
            if (!id_equal(&p->tasks[t].e->attempt_id, &p->tasks[t].attempt))
                why = "a task was restarted";
        if (why != NULL) {
            pending_abort(p, why, false);
        } else {
            SPATE_LOG_DEBUG(CC_LOG, "triggering checkpoint %llu of job %s in '%s'",
                            (unsigned long long)p->id, cc_job(cc), p->dir);
            p->timer = cc->o.ops->schedule(cc->o.owner, cc->cfg->timeout_ms, pending_timed_out, p);
            snapshot_sources(cc, p);
            send_triggers(cc, p);
        }
    }
    cc_work_end(cc);
}

/* Starts a checkpoint now (the caller checked that it may). */
static void
trigger_now(struct checkpoint_coordinator *cc, struct cc_manual *manual)
{
    struct execution_graph *eg = cc->eg;
    struct cc_pending *p = xcalloc(1, sizeof *p);

    p->cc = cc;
    p->trigger_ms = cc_now(cc);
    p->manual = manual;
    p->phase = PHASE_INIT;
    p->savepoint = manual != NULL && manual->savepoint;
    p->type = p->savepoint ? manual->type : CHECKPOINT__CHECKPOINT_TYPE__CHECKPOINT;
    if (cc->o.counter == NULL)
        p->local_id = cc->next_id++;
    if (is_stop(p->type)) {
        /* Nothing else is triggered until the stop ends. */
        cc->stopping = true;
        stop_periodic(cc);
    }
    /* The plan: it waits for every running task; the finished ones are
     * recorded as finished. */
    p->tasks = xcalloc((size_t)eg->total, sizeof *p->tasks);
    p->finished = xcalloc((size_t)eg->total, sizeof *p->finished);
    for (int v = 0; v < eg->graph->nvertices; v++)
        for (int s = 0; s < eg->graph->vertices[v].parallelism; s++) {
            const struct execution *e = &eg->executions[v][s];
            struct cc_task *t;

            if (e->state == EXEC_FINISHED) {
                p->finished[p->nfinished++] = e;
                continue;
            }
            t = &p->tasks[p->ntasks++];
            t->e = e;
            t->attempt = e->attempt_id;
        }
    list_push_back(&cc->pending, &p->node);
    cc->npending++;
    cc->periodic_wanted = false;
    cc->final_wanted = false;
    cc_run(cc, init_work, init_done, p);
}

static void
pause_over(void *arg)
{
    struct checkpoint_coordinator *cc = arg;

    cc->pause_timer = NULL;
    cc_maybe_trigger(cc);
}

/* Triggers what waits (a manual request, or a periodic tick that found no
 * room) as far as max concurrent, min pause and the tasks allow. */
static void
cc_maybe_trigger(struct checkpoint_coordinator *cc)
{
    struct cc_manual *m;
    const char *why;

    if (cc->shut_down || cc->freed)
        return;
    m = manual_queued(cc);
    if (m == NULL && !(cc->periodic && cc->periodic_wanted) && !cc->final_wanted)
        return;
    if ((why = not_triggerable_as(cc, m != NULL && m->savepoint)) != NULL) {
        if (cc->shut_down || cc->stopping || cc->eg->finished >= cc->eg->total)
            manual_fail_queued(cc, why);
        return;
    }
    if (m != NULL && m->savepoint) {
        trigger_now(cc, m); /* savepoints wait for no max-concurrent */
        return;
    }
    if (cc->npending >= cc->cfg->max_concurrent)
        return; /* again when one ends */
    if (m != NULL) {
        trigger_now(cc, m);
        return;
    }
    if (cc->last_end_ms > 0 && cc_now(cc) - cc->last_end_ms < cc->cfg->min_pause_ms) {
        if (cc->pause_timer == NULL)
            cc->pause_timer = cc->o.ops->schedule(
                cc->o.owner, cc->last_end_ms + cc->cfg->min_pause_ms - cc_now(cc), pause_over, cc);
        return;
    }
    trigger_now(cc, NULL);
}

static void
periodic_tick(void *arg)
{
    struct checkpoint_coordinator *cc = arg;

    cc->tick = cc->o.ops->schedule(cc->o.owner, cc->cfg->interval_ms, periodic_tick, cc);
    if (not_triggerable(cc) != NULL) {
        SPATE_LOG_DEBUG(CC_LOG, "job %s: no checkpoint now: %s", cc_job(cc), not_triggerable(cc));
        return;
    }
    cc->periodic_wanted = true;
    cc_maybe_trigger(cc);
}

void
checkpoint_coordinator_start(struct checkpoint_coordinator *cc)
{
    if (cc->periodic || cc->shut_down || cc->cfg->interval_ms <= 0 || cc->storage == NULL)
        return;
    cc->periodic = true;
    cc->tick = cc->o.ops->schedule(cc->o.owner, cc->cfg->interval_ms, periodic_tick, cc);
}

static void
stop_periodic(struct checkpoint_coordinator *cc)
{
    if (cc->tick != NULL)
        cc->o.ops->cancel(cc->o.owner, cc->tick);
    if (cc->pause_timer != NULL)
        cc->o.ops->cancel(cc->o.owner, cc->pause_timer);
    cc->tick = cc->pause_timer = NULL;
    cc->periodic = false;
    cc->periodic_wanted = false;
}

void
checkpoint_coordinator_suspend(struct checkpoint_coordinator *cc, const char *reason)
{
    stop_periodic(cc);
    abort_all(cc, reason);
    /* A stop whose savepoint completed but whose tasks failed before they
     * finished is over: the restarted job takes checkpoints again. */
    cc->stopping = false;
    manual_fail_queued(cc, reason);
}

/* Whether every task of a source vertex has finished. */
static bool
sources_finished(const struct checkpoint_coordinator *cc)
{
    const struct job_graph *jg = cc_graph(cc);

    for (int v = 0; v < jg->nvertices; v++)
        for (int s = 0; jg->vertices[v].ninputs == 0 && s < jg->vertices[v].parallelism; s++)
            if (cc->eg->executions[v][s].state != EXEC_FINISHED)
                return false;
    return true;
}

/* Once the sources are done, the tasks still running (two-phase commit
 * sinks waiting for a checkpoint after their end of input, Flink's final
 * checkpoint) get one without waiting for the interval. */
static void
want_final(struct checkpoint_coordinator *cc)
{
    if (cc->periodic && !cc->stopping && !cc->shut_down && cc->eg->finished < cc->eg->total &&
        sources_finished(cc))
        cc->final_wanted = true;
}

void
checkpoint_coordinator_task_finished(struct checkpoint_coordinator *cc, const struct execution *e)
{
    struct list_node *n, *tmp;

    /* Wanted before the aborts below: the first trigger they make serves
     * it (asked for after them, one more would follow). */
    want_final(cc);
    list_for_each_safe(n, tmp, &cc->pending)
    {
        struct cc_pending *p = container_of(n, struct cc_pending, node);

        for (int t = 0; t < p->ntasks; t++)
            if (p->tasks[t].e == e && !p->tasks[t].acked) {
                pending_abort(p, "a task finished before it acknowledged the checkpoint", false);
                break;
            }
    }
    if (cc->eg->finished >= cc->eg->total) {
        cc->final_wanted = false;
        manual_fail_queued(cc, "every task of the job has finished");
        return;
    }
    if (cc->final_wanted)
        cc_maybe_trigger(cc);
}

/* ---- acknowledgements and completion ------------------------------------------------ */

static struct cc_pending *
pending_find(struct checkpoint_coordinator *cc, int64_t id)
{
    struct list_node *n;

    list_for_each(n, &cc->pending)
    {
        struct cc_pending *p = container_of(n, struct cc_pending, node);

        if (p->id != 0 && (int64_t)p->id == id)
            return p;
    }
    return NULL;
}

static struct cc_task *
task_find(struct cc_pending *p, const ProtobufCBinaryData *attempt)
{
    spate_id a;

    if (!gw_id_get(attempt, &a))
        return NULL;
    for (int t = 0; t < p->ntasks; t++)
        if (id_equal(&p->tasks[t].attempt, &a))
            return &p->tasks[t];
    return NULL;
}

/* Whether op names an operator of the task's vertex. */
static bool
operator_of(const struct checkpoint_coordinator *cc, const struct execution *e,
            const Checkpoint__OperatorSubtaskState *op)
{
    const struct jg_vertex *v = &cc_graph(cc)->vertices[e->vertex];

    if (op->operator_id.len != ID_BYTES)
        return false;
    for (int o = 0; o < v->nops; o++)
        if (memcmp(v->ops[o].operator_id.bytes, op->operator_id.data, ID_BYTES) == 0)
            return true;
    return false;
}

static const char *
task_name(const struct checkpoint_coordinator *cc, const struct execution *e, char *buf,
          size_t size)
{
    const struct jg_vertex *v = &cc_graph(cc)->vertices[e->vertex];

    snprintf(buf, size, "%s (%d/%d)", v->name, e->subtask + 1, v->parallelism);
    return buf;
}

/* The `_metadata` message of a fully acknowledged checkpoint: every
 * operator of the job, its subtasks' state from the acknowledgements, the
 * sources' split enumerators. It points into p (which lives until done). */
static Checkpoint__CheckpointMetadata *
build_metadata(struct checkpoint_coordinator *cc, struct cc_pending *p)
{
    const struct job_graph *jg = cc_graph(cc);
    Checkpoint__CheckpointMetadata *md = xmalloc(sizeof *md);
    size_t nops = 0;

    checkpoint__checkpoint_metadata__init(md);
    md->checkpoint_id = (int64_t)p->id;
    md->job_id = gw_id_bytes(&jg->job_id);
    md->timestamp = p->trigger_ms;
    md->type = p->type;
    md->job_name = jg->name;
    for (int v = 0; v < jg->nvertices; v++)
        nops += (size_t)jg->vertices[v].nops;
    md->operators = xcalloc(nops + 1, sizeof *md->operators);
    p->finished_states = xcalloc(nops * (size_t)(p->nfinished + 1), sizeof *p->finished_states);
    for (int v = 0; v < jg->nvertices; v++) {
        const struct jg_vertex *vx = &jg->vertices[v];

        for (int o = 0; o < vx->nops; o++) {
            Checkpoint__OperatorState *st = xmalloc(sizeof *st);
            const char *uid = vx->ops[o].settings.uid;

            checkpoint__operator_state__init(st);
            st->operator_id = gw_id_bytes(&vx->ops[o].operator_id);
            st->uid = (char *)(vx->ops[o].uid_given && uid ? uid : "");
            st->name = vx->ops[o].name;
            st->parallelism = vx->parallelism;
            st->max_parallelism = vx->max_parallelism;
            st->subtasks = xcalloc((size_t)vx->parallelism + 1, sizeof *st->subtasks);
            for (int t = 0; t < p->ntasks; t++) {
                const struct cc_task *task = &p->tasks[t];

                if (task->e->vertex != v)
                    continue;
                for (size_t k = 0; k < task->nops; k++)
                    if (memcmp(task->ops[k]->operator_id.data, vx->ops[o].operator_id.bytes,
                               ID_BYTES) == 0 &&
                        (task->ops[k]->n_keyed > 0 || task->ops[k]->n_operator_ > 0 ||
                         task->ops[k]->n_states > 0))
                        st->subtasks[st->n_subtasks++] = task->ops[k];
            }
            for (int f = 0; f < p->nfinished; f++) {
                Checkpoint__OperatorSubtaskState *fin;

                if (p->finished[f]->vertex != v)
                    continue;
                fin = xmalloc(sizeof *fin);
                checkpoint__operator_subtask_state__init(fin);
                fin->operator_id = gw_id_bytes(&vx->ops[o].operator_id);
                fin->subtask = p->finished[f]->subtask;
                fin->finished = true;
                p->finished_states[p->nfinished_states++] = fin;
                st->subtasks[st->n_subtasks++] = fin;
            }
            st->source_coordinator = p->splits[v * cc->eg->max_ops + o];
            md->operators[md->n_operators++] = st;
        }
    }
    return md;
}

static void
metadata_release(Checkpoint__CheckpointMetadata *md)
{
    if (md == NULL)
        return;
    for (size_t o = 0; o < md->n_operators; o++) {
        free(md->operators[o]->subtasks);
        free(md->operators[o]);
    }
    free(md->operators);
    free(md);
}

static bool
contains(const uint64_t *ids, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Registers the retained checkpoints ids the registry does not know yet
 * (a new leader's, a restored job's): their `_metadata` says which shared
 * files they reference. */
static void
register_retained(struct checkpoint_coordinator *cc, const uint64_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        Checkpoint__CheckpointMetadata *md = NULL;
        spate_error err = { 0 };
        char *loc;

        if (shared_state_registry_contains(cc->registry, ids[i]))
            continue;
        loc = xasprintf("%s/" CHECKPOINT_STORAGE_CHK_PREFIX "%llu",
                        checkpoint_storage_job_dir(cc->storage), (unsigned long long)ids[i]);
        if (checkpoint_storage_read(loc, &md, NULL, &err) != 0 ||
            shared_state_registry_register(cc->registry, ids[i], md, &err) != 0)
            SPATE_LOG_WARN(CC_LOG, "job %s: shared files of checkpoint %llu unknown: %s",
                           cc_job(cc), (unsigned long long)ids[i], err.message);
        checkpoint_metadata_free(md);
        free(loc);
    }
}

static void
finalize_work(void *arg)
{
    struct cc_pending *p = arg;
    struct checkpoint_coordinator *cc = p->cc;
    struct completed_checkpoint c = { 0 };
    uint64_t *before = NULL, *after = NULL;
    size_t nbefore = 0, nafter = 0;

    if ((p->rc = checkpoint_storage_write_metadata(p->dir, p->md, &p->metadata_path, &p->err)) != 0)
        return;
    if (p->savepoint)
        return; /* the user's: in no store, never subsumed */
    /* The store keeps a pointer: the `_metadata` file's path. */
    c.id = p->id;
    c.metadata = (uint8_t *)p->metadata_path;
    c.len = strlen(p->metadata_path);
    if (p->store->ops->ids(p->store, &before, &nbefore, NULL) != 0)
        nbefore = 0;
    /* The shared files it references are counted before any subsumed
     * checkpoint lets go of them. */
    register_retained(cc, before, nbefore);
    if ((p->rc = shared_state_registry_register(cc->registry, p->id, p->md, &p->err)) != 0) {
        free(before);
        return;
    }
    if ((p->rc = p->store->ops->add(p->store, &c, &p->err)) != 0) {
        shared_state_registry_unregister(cc->registry, p->id);
        free(before);
        return;
    }
    if (p->store->ops->ids(p->store, &after, &nafter, NULL) != 0)
        nafter = 0;
    /* Subsumed: retained before, not after. Their folders go. */
    p->subsumed = xcalloc(nbefore + 1, sizeof *p->subsumed);
    for (size_t i = 0; i < nbefore; i++) {
        spate_error err = { 0 };

        if (contains(after, nafter, before[i]) || before[i] == p->id)
            continue;
        p->subsumed[p->nsubsumed++] = before[i];
        shared_state_registry_unregister(cc->registry, before[i]);
        if (checkpoint_storage_dispose_checkpoint(cc->storage, before[i], &err) != 0)
            SPATE_LOG_WARN(CC_LOG, "cannot delete subsumed checkpoint %llu: %s",
                           (unsigned long long)before[i], err.message);
    }
    free(before);
    free(after);
}

static void
finalize_done(void *arg)
{
    struct cc_pending *p = arg;
    struct checkpoint_coordinator *cc = p->cc;
    struct list_node *n, *tmp;
    int64_t now;

    metadata_release(p->md);
    p->md = NULL;
    if (cc->freed) {
        pending_free(p);
        cc_work_end(cc);
        return;
    }
    cc->finalizing--;
    p->phase = PHASE_TRIGGERED; /* an ordinary pending one again */
    if (p->rc != 0) {
        char msg[SPATE_ERROR_MESSAGE_MAX + 64];

        snprintf(msg, sizeof msg, "cannot finalize the %s: %s",
                 p->savepoint ? "savepoint" : "checkpoint", p->err.message);
        pending_abort(p, msg, true);
    } else {
        list_remove(&p->node);
        cc->npending--;
        now = cc_now(cc);
        cc->continuous_failures = 0;
        cc->last_end_ms = now;
        checkpoint_stats_tracker_report_completed(cc->stats, p->id, p->dir, p->subsumed,
                                                  p->nsubsumed);
        SPATE_LOG_INFO(CC_LOG, "completed %s %llu of job %s (%d tasks, %lld ms): '%s'",
                       p->savepoint ? "savepoint" : "checkpoint", (unsigned long long)p->id,
                       cc_job(cc), p->ntasks, (long long)(now - p->trigger_ms), p->metadata_path);
        /* Older checkpoints still in progress are subsumed. */
        list_for_each_safe(n, tmp, &cc->pending)
        {
            struct cc_pending *older = container_of(n, struct cc_pending, node);

            if (older->id != 0 && older->id < p->id)
                pending_abort(older, "subsumed by a newer completed checkpoint", false);
        }
        notify_all(cc, p, true);
        manual_finish(cc, p->manual, p->id, NULL, p->dir);
        pending_free(p);
        cc_maybe_trigger(cc);
    }
    /* Restores that waited for a `_metadata` being written. */
    while (cc->finalizing == 0 && (n = list_pop_front(&cc->loads)) != NULL)
        cc_start_load(cc, container_of(n, struct cc_load, node));
    cc_work_end(cc);
}

static void
pending_complete(struct checkpoint_coordinator *cc, struct cc_pending *p)
{
    if (p->timer != NULL) {
        cc->o.ops->cancel(cc->o.owner, p->timer);
        p->timer = NULL;
    }
    p->phase = PHASE_FINALIZING;
    cc->finalizing++;
    p->store = cc->o.store;
    p->md = build_metadata(cc, p);
    cc_run(cc, finalize_work, finalize_done, p);
}

void
checkpoint_coordinator_acknowledge(struct checkpoint_coordinator *cc,
                                   const Checkpoint__AcknowledgeCheckpoint *m)
{
    struct cc_pending *p = pending_find(cc, m->checkpoint_id);
    struct cc_task *t;
    char name[300];
    int64_t now;

    if (p == NULL || p->phase != PHASE_TRIGGERED || (t = task_find(p, &m->attempt_id)) == NULL) {
        SPATE_LOG_DEBUG(CC_LOG,
                        "job %s: acknowledgement of checkpoint %lld ignored (unknown, "
                        "ended, or from another attempt)",
                        cc_job(cc), (long long)m->checkpoint_id);
        return;
    }
    if (t->acked)
        return;
    for (size_t k = 0; k < m->n_operators; k++) {
        if (!operator_of(cc, t->e, m->operators[k])) {
            char msg[400];

            snprintf(msg, sizeof msg, "%s acknowledged the state of an operator it does not run",
                     task_name(cc, t->e, name, sizeof name));
            pending_abort(p, msg, true);
            return;
        }
    }
    now = cc_now(cc);
    t->acked = true;
    t->ack_ms = now;
    t->state_size = m->state_size;
    t->ops = xcalloc(m->n_operators + 1, sizeof *t->ops);
    for (size_t k = 0; k < m->n_operators; k++) {
        size_t len = checkpoint__operator_subtask_state__get_packed_size(m->operators[k]);
        uint8_t *buf = xmalloc(len ? len : 1);
        Checkpoint__OperatorSubtaskState *c;

        /* A copy that outlives the message (it packed: it unpacks). */
        checkpoint__operator_subtask_state__pack(m->operators[k], buf);
        c = checkpoint__operator_subtask_state__unpack(NULL, len, buf);
        free(buf);
        SPATE_ASSERT(c != NULL);
        c->subtask = t->e->subtask; /* the JobMaster's word, not the task's */
        t->ops[t->nops++] = c;
    }
    p->nacked++;
    checkpoint_stats_tracker_report_ack(
        cc->stats, p->id, t->e->vertex, t->e->subtask,
        &(struct checkpoint_ack_stats){ m->state_size, m->sync_duration_ms, m->async_duration_ms,
                                        m->alignment_duration_ms },
        now);
    if (p->nacked == p->ntasks)
        pending_complete(cc, p);
}

void
checkpoint_coordinator_decline(struct checkpoint_coordinator *cc,
                               const Checkpoint__DeclineCheckpoint *m)
{
    struct cc_pending *p = pending_find(cc, m->checkpoint_id);
    struct cc_task *t;
    char msg[800], name[300];

    if (p == NULL || p->phase != PHASE_TRIGGERED || (t = task_find(p, &m->attempt_id)) == NULL)
        return;
    snprintf(msg, sizeof msg, "declined by %s: %s", task_name(cc, t->e, name, sizeof name),
             m->reason && *m->reason ? m->reason : "no reason given");
    pending_abort(p, msg, true);
}

/* ---- restores ----------------------------------------------------------------------- */

/* Before a restore (no checkpoint of the restored tasks is in progress):
 * the shared files no retained checkpoint references go, those of
 * checkpoints aborted or cut short by a crash mid-upload. A checkpoint
 * that would still reference one is refused when it completes (the
 * registry checks new files exist). */
static void
sweep_shared(struct checkpoint_coordinator *cc, struct completed_checkpoint_store *store)
{
    uint64_t *ids = NULL;
    size_t n = 0, swept;
    char *dir;

    if (store->ops->ids(store, &ids, &n, NULL) != 0)
        return;
    register_retained(cc, ids, n);
    free(ids);
    dir = xasprintf("%s/" CHECKPOINT_STORAGE_SHARED_DIR, checkpoint_storage_job_dir(cc->storage));
    if ((swept = shared_state_registry_sweep(cc->registry, dir)) > 0)
        SPATE_LOG_INFO(CC_LOG, "job %s: deleted %zu shared files no checkpoint references",
                       cc_job(cc), swept);
    free(dir);
}

static void
load_work(void *arg)
{
    struct cc_load *l = arg;
    struct completed_checkpoint c = { 0 };

    if (l->store == NULL) {
        l->rc = spate_error_set(&l->err, SPATE_ENOENT, "the job has no checkpoint store");
        return;
    }
    if ((l->rc = l->store->ops->latest(l->store, &c, &l->err)) != 0)
        return;
    l->path = xstrndup((const char *)c.metadata, c.len);
    completed_checkpoint_release(&c);
    if ((l->rc = checkpoint_storage_read(l->path, &l->md, NULL, &l->err)) != 0) {
        /* Gone is no "no checkpoint": the store says there is one. */
        if (l->rc == SPATE_ENOENT)
            l->rc = SPATE_EIO;
        return;
    }
    if ((l->rc = checkpoint_metadata_check_files(l->md, l->path, &l->err)) != 0) {
        if (l->rc == SPATE_ENOENT)
            l->rc = SPATE_EIO;
        checkpoint_metadata_free(l->md);
        l->md = NULL;
        return;
    }
    if (l->cc->registry != NULL)
        sweep_shared(l->cc, l->store);
}

static void
load_done(void *arg)
{
    struct cc_load *l = arg;
    struct checkpoint_coordinator *cc = l->cc;

    if (!cc->freed)
        l->cb(l->arg, l->rc, l->rc == 0 ? l->md : NULL, l->path, &l->err);
    else if (l->md != NULL)
        checkpoint_metadata_free(l->md);
    free(l->path);
    free(l);
    cc_work_end(cc);
}

static void
cc_start_load(struct checkpoint_coordinator *cc, struct cc_load *l)
{
    l->store = cc->o.store;
    cc_run(cc, load_work, load_done, l);
}

void
checkpoint_coordinator_load_latest(struct checkpoint_coordinator *cc, checkpoint_restore_cb cb,
                                   void *arg)
{
    struct cc_load *l = xcalloc(1, sizeof *l);

    l->cc = cc;
    l->cb = cb;
    l->arg = arg;
    if (cc->finalizing > 0)
        list_push_back(&cc->loads, &l->node); /* when its `_metadata` is written */
    else
        cc_start_load(cc, l);
}

void
checkpoint_coordinator_restored(struct checkpoint_coordinator *cc,
                                const Checkpoint__CheckpointMetadata *md, const char *path)
{
    checkpoint_stats_tracker_report_restored(cc->stats, md, path, cc_now(cc));
    /* Without an id counter, ids go on past the restored one (a task
     * ignores barriers of ids up to the one it restored). */
    if ((uint64_t)md->checkpoint_id >= cc->next_id)
        cc->next_id = (uint64_t)md->checkpoint_id + 1;
}

/* ---- the end of the job ------------------------------------------------------------- */

struct cc_shutdown {
    struct checkpoint_coordinator *cc;
    struct completed_checkpoint_store *store;
    struct checkpoint_id_counter *counter;
    const struct checkpoint_storage *storage; /* cc's, which outlives this work */
    bool globally, discard;
};

static void
shutdown_work(void *arg)
{
    struct cc_shutdown *s = arg;
    spate_error err = { 0 };
    uint64_t *ids = NULL;
    char *shared;
    size_t n = 0;

    if (s->globally && s->cc->o.ops->confirm_leadership != NULL &&
        s->cc->o.ops->confirm_leadership(s->cc->o.owner, &err) != 0) {
        SPATE_LOG_WARN(CC_LOG,
                       "the job ended after its JobMaster lost leadership (%s): its checkpoints "
                       "are left to the leader",
                       err.message);
        s->globally = false;
        s->discard = false;
    }
    if (s->discard && s->store != NULL && s->store->ops->ids(s->store, &ids, &n, &err) == 0) {
        for (size_t i = 0; i < n; i++)
            if (checkpoint_storage_dispose_checkpoint(s->storage, ids[i], &err) != 0)
                SPATE_LOG_WARN(CC_LOG, "cannot delete checkpoint folder: %s", err.message);
        free(ids);
        /* Every checkpoint went: no file of the shared folder is used. */
        shared =
            xasprintf("%s/" CHECKPOINT_STORAGE_SHARED_DIR, checkpoint_storage_job_dir(s->storage));
        if (fs_remove_tree(shared, &err) != 0)
            SPATE_LOG_WARN(CC_LOG, "cannot delete the shared checkpoint files: %s", err.message);
        free(shared);
        checkpoint_storage_dispose_job(s->storage); /* only when nothing else is left */
    }
    if (s->store != NULL && s->store->ops->shutdown(s->store, s->globally, &err) != 0)
        SPATE_LOG_WARN(CC_LOG, "cannot shut down the checkpoint store: %s", err.message);
    if (s->counter != NULL && s->counter->ops->shutdown(s->counter, s->globally, &err) != 0)
        SPATE_LOG_WARN(CC_LOG, "cannot shut down the checkpoint id counter: %s", err.message);
    if (s->store != NULL)
        s->store->ops->free(s->store);
    if (s->counter != NULL)
        s->counter->ops->free(s->counter);
}

static void
shutdown_done(void *arg)
{
    struct cc_shutdown *s = arg;
    struct checkpoint_coordinator *cc = s->cc;

    free(s);
    cc_work_end(cc);
}

/* Hands the store and the counter to the shutdown work (no other work
 * uses them any more). */
static void
shutdown_start(struct checkpoint_coordinator *cc)
{
    struct cc_shutdown *s = xcalloc(1, sizeof *s);

    cc->shutdown_deferred = false;
    s->cc = cc;
    s->store = cc->o.store;
    s->counter = cc->o.counter;
    s->storage = cc->storage;
    s->globally = cc->end != CC_JOB_SUSPENDED;
    s->discard = cc->discard_at_end && s->storage != NULL;
    cc->o.store = NULL;
    cc->o.counter = NULL;
    cc_run(cc, shutdown_work, shutdown_done, s);
}

void
checkpoint_coordinator_shutdown(struct checkpoint_coordinator *cc, enum checkpoint_job_end end)
{
    if (cc->shut_down)
        return;
    stop_periodic(cc);
    abort_all(cc, end == CC_JOB_SUSPENDED ? "the job was suspended" : "the job ended");
    cc->shut_down = true;
    cc->end = end;
    /* Decided now, from the job's settings, which a coordinator freed
     * before its deferred shutdown need not keep. */
    cc->discard_at_end = end != CC_JOB_SUSPENDED &&
                         (cc->cfg->retention == RETAIN_NEVER ||
                          (cc->cfg->retention == RETAIN_ON_FAILURE && end != CC_JOB_FAILED));
    manual_fail_queued(cc, "the job ended");
    if (cc->o.store == NULL && cc->o.counter == NULL)
        return;
    /* The shutdown follows the work in flight: a checkpoint being
     * finalized or a restore being read still use the store, and an aborted
     * checkpoint's folder is being deleted (the workers run side by side:
     * the job's folder, removed when empty, stayed when that came last). */
    if (cc->works > 0)
        cc->shutdown_deferred = true;
    else
        shutdown_start(cc);
}

/* ---- manual checkpoints ------------------------------------------------------------- */

/* A new manual trigger (queued); NULL with *err for a trigger id used
 * before. */
static struct cc_manual *
manual_new(struct checkpoint_coordinator *cc, const spate_id *trigger_id, spate_error *err)
{
    struct cc_manual *m;

    if (manual_find(cc, trigger_id) != NULL) {
        spate_error_set(err, SPATE_EEXIST, "trigger id %s was used before", id_str(trigger_id).s);
        return NULL;
    }
    m = xcalloc(1, sizeof *m);
    m->trigger_id = *trigger_id;
    list_push_back(&cc->manuals, &m->node);
    cc->nmanuals++;
    return m;
}

/* As Flink's async operation: a trigger that cannot start is a done one
 * whose status says why (what: "checkpoint", "take a savepoint of").
 * Whether it was. */
static bool
manual_refused(struct checkpoint_coordinator *cc, struct cc_manual *m, const char *what)
{
    const char *why = not_triggerable_as(cc, m->savepoint);
    char msg[300];

    if (why == NULL)
        return false;
    snprintf(msg, sizeof msg, "cannot %s job %s: %s", what, cc_job(cc), why);
    manual_finish(cc, m, 0, msg, NULL);
    return true;
}

int
checkpoint_coordinator_trigger_manual(struct checkpoint_coordinator *cc, const spate_id *trigger_id,
                                      spate_error *err)
{
    struct cc_manual *m = manual_new(cc, trigger_id, err);

    if (m == NULL)
        return SPATE_EEXIST;
    if (!manual_refused(cc, m, "checkpoint"))
        cc_maybe_trigger(cc);
    return 0;
}

int
checkpoint_coordinator_trigger_status(struct checkpoint_coordinator *cc, const spate_id *trigger_id,
                                      Ckstats__TriggerStatus *out, spate_error *err)
{
    struct cc_manual *m = manual_find(cc, trigger_id);

    ckstats__trigger_status__init(out);
    if (m == NULL)
        return spate_error_set(err, SPATE_ENOENT, "no checkpoint was triggered with id %s",
                               id_str(trigger_id).s);
    out->done = m->done;
    out->checkpoint_id = (int64_t)m->checkpoint_id;
    out->failure = m->failure ? m->failure : "";
    out->trigger_id = gw_id_bytes(&m->trigger_id);
    out->savepoint = m->savepoint;
    out->location = m->location ? m->location : "";
    return 0;
}

int
checkpoint_coordinator_trigger_savepoint(struct checkpoint_coordinator *cc,
                                         const spate_id *trigger_id,
                                         const struct checkpoint_savepoint_request *r,
                                         spate_error *err)
{
    struct cc_manual *m = manual_new(cc, trigger_id, err);

    if (m == NULL)
        return SPATE_EEXIST;
    m->savepoint = true;
    m->type = r->type;
    m->drain = r->drain;
    m->target = xstrdup(r->target_dir);
    if (manual_refused(cc, m, "take a savepoint of"))
        return 0;
    /* Set after the checks: done never runs inside this call. */
    m->done_fn = r->done;
    m->done_arg = r->arg;
    SPATE_LOG_INFO(CC_LOG, "job %s: savepoint %s into '%s'%s", cc_job(cc), id_str(trigger_id).s,
                   r->target_dir,
                   r->type == CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT
                       ? ""
                       : (r->drain ? " (stop, drain)" : " (stop)"));
    cc_maybe_trigger(cc);
    return 0;
}

Ckstats__TriggerStatuses *
checkpoint_coordinator_trigger_statuses(struct checkpoint_coordinator *cc)
{
    Ckstats__TriggerStatuses *all = xmalloc(sizeof *all);
    struct list_node *n;

    ckstats__trigger_statuses__init(all);
    all->statuses = xcalloc((size_t)cc->nmanuals + 1, sizeof *all->statuses);
    list_for_each(n, &cc->manuals)
    {
        struct cc_manual *m = container_of(n, struct cc_manual, node);
        Ckstats__TriggerStatus *st = xmalloc(sizeof *st), view;

        checkpoint_coordinator_trigger_status(cc, &m->trigger_id, &view, NULL);
        ckstats__trigger_status__init(st);
        st->done = view.done;
        st->checkpoint_id = view.checkpoint_id;
        st->failure = xstrdup(view.failure);
        st->trigger_id.len = ID_BYTES;
        st->trigger_id.data = xmalloc(ID_BYTES);
        memcpy(st->trigger_id.data, m->trigger_id.bytes, ID_BYTES);
        st->savepoint = view.savepoint;
        st->location = xstrdup(view.location);
        all->statuses[all->n_statuses++] = st;
    }
    return all;
}

void
checkpoint_coordinator_stats_counts(const struct checkpoint_coordinator *cc,
                                    struct checkpoint_stats_counts *c)
{
    checkpoint_stats_tracker_counts(cc->stats, c);
}

Ckstats__CheckpointingStats *
checkpoint_coordinator_stats(const struct checkpoint_coordinator *cc, int64_t checkpoint_id)
{
    return checkpoint_stats_tracker_snapshot(cc->stats, cc->cfg, checkpoint_id);
}

int
checkpoint_coordinator_pending_count(const struct checkpoint_coordinator *cc)
{
    return cc->npending;
}

int64_t
checkpoint_coordinator_completed_count(const struct checkpoint_coordinator *cc)
{
    return checkpoint_stats_tracker_completed(cc->stats);
}

/* ---- life cycle --------------------------------------------------------------------- */

struct checkpoint_coordinator *
checkpoint_coordinator_new(const struct checkpoint_coordinator_options *o)
{
    struct checkpoint_coordinator *cc = xcalloc(1, sizeof *cc);
    const struct job_graph *jg = o->eg->graph;

    cc->o = *o;
    if (cc->o.history_size <= 0)
        cc->o.history_size = 10;
    cc->eg = o->eg;
    cc->cfg = &jg->checkpointing;
    if (jg->checkpointing.checkpoints_dir != NULL && o->store != NULL && o->counter != NULL) {
        spate_error err = { 0 };

        if (checkpoint_storage_new(jg->checkpointing.checkpoints_dir, &jg->job_id, &cc->storage,
                                   &err) != 0) {
            SPATE_LOG_ERROR(CC_LOG, "job %s: no checkpoints: %s", id_str(&jg->job_id).s,
                            err.message);
            cc->no_storage = xasprintf("the job's checkpoint folder is unusable: %s", err.message);
        }
    }
    if (cc->storage == NULL && cc->no_storage == NULL)
        cc->no_storage = xstrdup("the job has no checkpoint folder (state.checkpoints.dir)");
    if (cc->storage != NULL)
        cc->registry = shared_state_registry_new();
    list_init(&cc->pending);
    list_init(&cc->loads);
    list_init(&cc->manuals);
    cc->next_id = 1;
    cc->stats = checkpoint_stats_tracker_new(jg, cc->o.history_size);
    return cc;
}

static void
cc_free_now(struct checkpoint_coordinator *cc)
{
    struct list_node *n;

    while ((n = list_pop_front(&cc->manuals)) != NULL) {
        manual_release(container_of(n, struct cc_manual, node));
    }
    while ((n = list_pop_front(&cc->loads)) != NULL)
        free(container_of(n, struct cc_load, node));
    checkpoint_stats_tracker_free(cc->stats);
    if (cc->o.store != NULL)
        cc->o.store->ops->free(cc->o.store);
    if (cc->o.counter != NULL)
        cc->o.counter->ops->free(cc->o.counter);
    checkpoint_storage_free(cc->storage);
    shared_state_registry_free(cc->registry);
    free(cc->no_storage);
    free(cc);
}

void
checkpoint_coordinator_free(struct checkpoint_coordinator *cc)
{
    struct list_node *n;

    if (cc == NULL)
        return;
    stop_periodic(cc);
    cc->shut_down = true;
    /* Pending checkpoints without work in flight go now; the others with
     * their work. */
    while ((n = list_pop_front(&cc->pending)) != NULL) {
        struct cc_pending *p = container_of(n, struct cc_pending, node);

        if (p->timer != NULL) {
            cc->o.ops->cancel(cc->o.owner, p->timer);
            p->timer = NULL;
        }
        if (p->phase == PHASE_TRIGGERED && !p->aborted)
            pending_free(p);
    }
    cc->freed = true;
    if (cc->works == 0)
        cc_free_now(cc);
}
