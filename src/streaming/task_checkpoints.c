/* A task's side of checkpoints (Flink's SubtaskCheckpointCoordinator and
 * CheckpointBarrierHandler): mails, barrier alignment, the synchronous
 * snapshot on the task thread, and the snapshot thread that writes state
 * files and acknowledges. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint_storage.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "streaming/state_snapshot.h"
#include "streaming/stream_element.h"
#include "streaming/stream_task_int.h"

#define CP_LOG "checkpoint"

/* ---- the mailbox ---- */

void
task_mailbox_init(struct task_mailbox *mb, struct notifier *notifier)
{
    memset(mb, 0, sizeof *mb);
    pthread_mutex_init(&mb->lock, NULL);
    atomic_init(&mb->pending, false);
    mb->notifier = notifier;
}

static void
mail_free(struct task_mail *m)
{
    free(m->location);
    free(m);
}

void
task_mailbox_release(struct task_mailbox *mb)
{
    while (mb->head != NULL) {
        struct task_mail *m = mb->head;

        mb->head = m->next;
        mail_free(m);
    }
    pthread_mutex_destroy(&mb->lock);
}

void
task_mailbox_post(struct task_mailbox *mb, enum task_mail_kind kind, int64_t checkpoint_id,
                  int64_t timestamp, int type, bool drain, const char *location)
{
    struct task_mail *m = xcalloc(1, sizeof *m);

    m->kind = kind;
    m->checkpoint_id = checkpoint_id;
    m->timestamp = timestamp;
    m->type = type;
    m->drain = drain;
    m->location = location ? xstrdup(location) : NULL;
    pthread_mutex_lock(&mb->lock);
    if (mb->tail != NULL)
        mb->tail->next = m;
    else
        mb->head = m;
    mb->tail = m;
    atomic_store_explicit(&mb->pending, true, memory_order_release);
    pthread_mutex_unlock(&mb->lock);
    notifier_notify(mb->notifier);
}

static struct task_mail *
mailbox_take_all(struct task_mailbox *mb)
{
    struct task_mail *all;

    pthread_mutex_lock(&mb->lock);
    all = mb->head;
    mb->head = mb->tail = NULL;
    atomic_store_explicit(&mb->pending, false, memory_order_relaxed);
    pthread_mutex_unlock(&mb->lock);
    return all;
}

/* ---- the snapshot thread ---- */

struct task_checkpoints {
    struct stream_task *t;
    /* alignment of the checkpoint in progress (0: none) */
    int64_t pending_id;
    int64_t pending_ts;
    int pending_type;
    char *pending_location;
    uint8_t **seen; /* [gate][channel]: its barrier arrived */
    uint32_t seen_count;
    uint64_t align_start_ns;
    int64_t latest_id; /* barriers at or below it are late: ignored */
    /* the snapshot thread and its queue */
    pthread_t thread;
    char log_fields[96]; /* the task thread's job=/task= fields, for its lines */
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct queued_snapshot *head, *tail;
    bool stop;
};

struct queued_snapshot {
    struct queued_snapshot *next;
    struct task_snapshot *s;
};

static void *
snapshot_thread(void *arg)
{
    struct task_checkpoints *cp = arg;
    const struct stream_task_params *p = cp->t->p;

    log_set_thread_fields("%s", cp->log_fields);
    for (;;) {
        struct queued_snapshot *q;
        Checkpoint__AcknowledgeCheckpoint *ack = NULL;
        spate_error err = { 0 };
        int64_t id;
        int rc;

        pthread_mutex_lock(&cp->lock);
        while (cp->head == NULL && !cp->stop)
            pthread_cond_wait(&cp->cond, &cp->lock);
        q = cp->head;
        if (q != NULL && (cp->head = q->next) == NULL)
            cp->tail = NULL;
        pthread_mutex_unlock(&cp->lock);
        if (q == NULL)
            return NULL; /* stopped, and the queue is empty */
        rc = task_snapshot_write(q->s, &ack, &err);
        id = q->s->checkpoint_id;
        /* The frozen state goes before the answer: the next checkpoint's
         * freeze then finds the maps settled, not still shared. */
        task_snapshot_free(q->s);
        free(q);
        if (rc != 0) {
            SPATE_LOG_WARN(CP_LOG, "task %s: checkpoint %lld failed: %s", p->info.task_name,
                           (long long)id, err.message);
            if (p->checkpoint_decline != NULL)
                p->checkpoint_decline(p->data, id, err.message);
        } else {
            if (p->checkpoint_ack != NULL)
                p->checkpoint_ack(p->data, ack);
            task_ack_free(ack);
        }
    }
}

static int
queue_snapshot(struct task_checkpoints *cp, struct task_snapshot *s, spate_error *err)
{
    struct queued_snapshot *q = xcalloc(1, sizeof *q);

    if (!cp->started) {
        int rc;

        snprintf(cp->log_fields, sizeof cp->log_fields, "%s", log_thread_fields());
        rc = pthread_create(&cp->thread, NULL, snapshot_thread, cp);

        if (rc != 0) {
            free(q);
            return spate_error_set(err, -rc, "cannot start the snapshot thread: %s",
                                   spate_strerror(-rc));
        }
        cp->started = true;
    }
    q->s = s;
    pthread_mutex_lock(&cp->lock);
    if (cp->tail != NULL)
        cp->tail->next = q;
    else
        cp->head = q;
    cp->tail = q;
    pthread_cond_signal(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    return 0;
}

/* ---- taking a checkpoint ---- */

static void
decline(struct stream_task *t, int64_t id, const char *reason)
{
    SPATE_LOG_INFO(CP_LOG, "task %s declines checkpoint %lld: %s", t->p->info.task_name,
                   (long long)id, reason);
    if (t->p->checkpoint_decline != NULL)
        t->p->checkpoint_decline(t->p->data, id, reason);
}

/* Barrier downstream, then the synchronous snapshot, then the file on the
 * snapshot thread: nothing runs on the task in between, so the snapshot is
 * exactly the state before the barrier. */
static int
perform_checkpoint(struct stream_task *t, int64_t id, int64_t ts, int type, const char *location,
                   uint64_t alignment_ns, spate_error *err)
{
    struct barrier b = { id, ts, type, location, (uint32_t)strlen(location) };
    size_t n = barrier_encode(&b, NULL, 0);
    uint8_t *payload = xmalloc(n);
    struct task_snapshot *s;
    const char *failure = operator_chain_failure(t->chain);
    spate_error serr;
    char *path, *shared;
    int rc = 0;

    /* A failed call of this batch (a state write on a full disk) fails
     * the task at the batch's end: a snapshot now would hold the state
     * without that write while the barrier passed its record, and a
     * restore from it would lose the record. */
    if (failure != NULL) {
        free(payload);
        return spate_error_set(err, SPATE_EUSER, "%s", failure);
    }
    barrier_encode(&b, payload, n);
    for (int o = 0; o < t->v->noutputs && rc == 0; o++)
        rc = record_writer_broadcast_event(t->writers[o], NET_EVENT_CHECKPOINT_BARRIER, payload,
                                           (uint32_t)n, err);
    free(payload);
    if (rc != 0)
        return rc;
    if (checkpoint_storage_state_file(location, &t->v->id, t->p->info.subtask, &path, &serr) != 0) {
        decline(t, id, serr.message);
        return 0;
    }
    shared = type == CHECKPOINT__CHECKPOINT_TYPE__CHECKPOINT
                 ? checkpoint_storage_shared_dir(location)
                 : NULL;
    s = task_snapshot_take(t->chain, t->v, id, ts, shared, path, &serr);
    free(shared);
    free(path);
    if (s == NULL) {
        decline(t, id, serr.message);
        return 0;
    }
    s->alignment_ns = alignment_ns;
    t->cp->latest_id = MAX(t->cp->latest_id, id);
    /* A checkpoint (no savepoint: a restore starts from checkpoints) after
     * the end of input covers everything the task will ever emit. */
    if (t->input_ended && t->final_id == 0 && type == CHECKPOINT__CHECKPOINT_TYPE__CHECKPOINT)
        t->final_id = id;
    if (type == CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_TERMINATE ||
        type == CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_SUSPEND) {
        t->terminal_id = id;
        t->terminal_done = false;
    }
    return queue_snapshot(t->cp, s, err);
}

/* ---- barrier alignment ---- */

/* Every channel has brought the pending checkpoint's barrier or has ended
 * (an upstream task that finished sends none: FLIP-147). */
static bool
aligned(const struct stream_task *t)
{
    for (int g = 0; g < t->p->ngates; g++) {
        if (t->gate_ended[g])
            continue;
        for (uint32_t c = 0; c < t->p->gates[g].nchannels; c++)
            if (!t->cp->seen[g][c] && !input_gate_channel_ended(t->gates[g], c))
                return false;
    }
    return true;
}

/* Every input channel has ended: what the task still does is its end of
 * input. */
static bool
inputs_over(const struct stream_task *t)
{
    for (int g = 0; g < t->p->ngates; g++) {
        if (t->gate_ended[g])
            continue;
        for (uint32_t c = 0; c < t->p->gates[g].nchannels; c++)
            if (!input_gate_channel_ended(t->gates[g], c))
                return false;
    }
    return t->p->ngates > 0;
}

static void
end_alignment(struct stream_task *t)
{
    struct task_checkpoints *cp = t->cp;

    for (int g = 0; g < t->p->ngates; g++) {
        memset(cp->seen[g], 0, t->p->gates[g].nchannels);
        input_gate_resume_consumption(t->gates[g]);
    }
    cp->seen_count = 0;
    cp->pending_id = 0;
    free(cp->pending_location);
    cp->pending_location = NULL;
}

/* Checkpoint b's alignment begins (or goes on). */
static void
begin_alignment(struct stream_task *t, const struct barrier *b)
{
    struct task_checkpoints *cp = t->cp;

    if (b->checkpoint_id > cp->pending_id && cp->pending_id != 0) {
        /* A newer checkpoint overtook the one being aligned: give it up. */
        decline(t, cp->pending_id, "a newer checkpoint's barrier arrived during alignment");
        cp->latest_id = cp->pending_id;
        end_alignment(t);
    }
    if (cp->pending_id == 0) {
        cp->pending_id = b->checkpoint_id;
        cp->pending_ts = b->timestamp;
        cp->pending_type = b->type;
        cp->pending_location = xstrndup(b->location, b->location_len);
        cp->align_start_ns = clock_mono_ns();
    }
}

int
task_on_barrier(struct stream_task *t, int g, uint32_t channel, const uint8_t *payload,
                uint32_t len, spate_error *err)
{
    struct task_checkpoints *cp = t->cp;
    struct barrier b;

    if (barrier_decode(payload, len, &b) != 0 || channel >= t->p->gates[g].nchannels)
        return spate_error_set(err, SPATE_EPROTO,
                               "a malformed checkpoint barrier on input channel %u of '%s'",
                               channel, t->v->name);
    if (cp == NULL || b.checkpoint_id <= cp->latest_id)
        return 0; /* no checkpointing here, or a late barrier of an older one */
    begin_alignment(t, &b);
    if (cp->seen[g][channel])
        return 0;
    cp->seen[g][channel] = 1;
    cp->seen_count++;
    /* Exactly once: what a channel sends after its barrier waits until
     * every channel's barrier is in (Flink's aligned checkpoints). */
    if (t->p->exactly_once)
        input_gate_block_channel(t->gates[g], channel);
    return task_check_alignment(t, err);
}

int
task_check_alignment(struct stream_task *t, spate_error *err)
{
    struct task_checkpoints *cp = t->cp;

    if (cp == NULL || cp->pending_id == 0)
        return 0;
    /* Aligned because every channel ended (their producers finished, or
     * the coordinator triggered this task directly): the snapshot waits for
     * the end of input, as Flink's operators finish before their final
     * checkpoint; taken before it, it would miss what the end of input
     * emits, and a task waiting for its final checkpoint would wait for
     * another one (task_end_input takes it). */
    if (aligned(t) && !(inputs_over(t) && !t->input_ended)) {
        int64_t id = cp->pending_id, ts = cp->pending_ts;
        int type = cp->pending_type;
        char *location = cp->pending_location;
        uint64_t aligned = clock_mono_ns() - cp->align_start_ns;
        int rc;

        cp->pending_location = NULL;
        end_alignment(t);
        rc = perform_checkpoint(t, id, ts, type, location, aligned, err);
        free(location);
        return rc;
    }
    return 0;
}

/* ---- mails ---- */

int
task_run_mails(struct stream_task *t, spate_error *err)
{
    struct task_mail *m = mailbox_take_all(t->p->mailbox);
    int rc = 0;

    while (m != NULL) {
        struct task_mail *next = m->next;

        if (rc == 0 && t->cp != NULL) {
            switch (m->kind) {
            case TASK_MAIL_TRIGGER:
                if (t->p->ngates > 0) {
                    /* Every upstream task finished (the coordinator's plan):
                     * as if each channel not yet ended brought the barrier
                     * behind what it still holds (Flink's
                     * triggerUnfinishedChannelsCheckpoint): the checkpoint
                     * is taken once they all ended. */
                    const char *loc = m->location ? m->location : ".";
                    struct barrier b = { m->checkpoint_id, m->timestamp, m->type, loc,
                                         (uint32_t)strlen(loc) };

                    if (m->checkpoint_id > t->cp->latest_id) {
                        begin_alignment(t, &b);
                        rc = task_check_alignment(t, err);
                    }
                } else if (m->checkpoint_id > t->cp->latest_id && !t->source_stopping) {
                    bool stop = m->type == CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_TERMINATE ||
                                m->type == CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_SUSPEND;

                    /* Stop with drain: event time ends first, so every
                     * window and timer fires before the savepoint. */
                    if (stop && m->drain)
                        operator_process_watermark(operator_chain_head(t->chain),
                                                   RECORD_MAX_WATERMARK);
                    rc = perform_checkpoint(t, m->checkpoint_id, m->timestamp, m->type,
                                            m->location ? m->location : ".", 0, err);
                    if (stop) {
                        t->source_stopping = true;
                        t->stop_no_drain = !m->drain;
                    }
                }
                break;
            case TASK_MAIL_COMPLETE:
                for (int i = 0; i < t->chain->nops; i++) {
                    struct stream_operator *op = t->chain->ops[i];

                    if (op->vt->checkpoint_complete != NULL)
                        op->vt->checkpoint_complete(op, m->checkpoint_id);
                    if (op->backend != NULL && op->backend->ops->checkpoint_complete != NULL)
                        op->backend->ops->checkpoint_complete(op->backend, m->checkpoint_id);
                }
                if (m->checkpoint_id == t->terminal_id)
                    t->terminal_done = true;
                if (t->final_id != 0 && m->checkpoint_id >= t->final_id)
                    t->final_done = true;
                break;
            case TASK_MAIL_ABORTED:
                /* Its barriers still to come are late: an abort that
                 * overtakes them (a source finished before it sent its
                 * barrier, whose channel then ends without one) must not
                 * start an alignment that never completes. */
                t->cp->latest_id = MAX(t->cp->latest_id, m->checkpoint_id);
                if (t->cp->pending_id == m->checkpoint_id)
                    end_alignment(t);
                if (m->checkpoint_id == t->final_id)
                    t->final_id = 0; /* the next one after the end of input */
                if (m->checkpoint_id == t->terminal_id && t->terminal_id != 0) {
                    /* The stop failed: sources go on, the job keeps running. */
                    t->terminal_id = 0;
                    t->source_stopping = false;
                    t->stop_no_drain = false;
                }
                break;
            }
        }
        mail_free(m);
        m = next;
    }
    return rc;
}

/* Runs the task's mails until done(t) says it may go on (or the task is
 * cancelled): a source that stopped for a savepoint, or a task that waits
 * for its final checkpoint, takes part in checkpoints meanwhile. */
static int
run_mails_until(struct stream_task *t, bool (*done)(const struct stream_task *t), spate_error *err)
{
    int rc;

    while (!done(t)) {
        if (notifier_is_cancelled(t->p->notifier))
            return SPATE_ECANCELED;
        if (task_has_mail(t)) {
            if ((rc = task_run_mails(t, err)) != 0)
                return rc;
            continue;
        }
        if (notifier_wait_until(t->p->notifier, NOTIFIER_FOREVER) == SPATE_ECANCELED)
            return SPATE_ECANCELED;
    }
    return 0;
}

static bool
terminal_over(const struct stream_task *t)
{
    return t->terminal_id == 0 || t->terminal_done;
}

int
task_await_terminal(struct stream_task *t, spate_error *err)
{
    int rc;

    if ((rc = run_mails_until(t, terminal_over, err)) != 0)
        return rc;
    if (t->terminal_id == 0 && t->stop_no_drain)
        return spate_error_set(err, SPATE_ESTATE,
                               "the savepoint of a stop was aborted after task '%s' stopped",
                               t->v->name);
    return 0;
}

/* The final checkpoint completed, or a stop's savepoint taken after the
 * end of input did: the coordinator triggers nothing after a stop (not
 * even the final checkpoint it gives a task that waits for one), and the
 * savepoint's completion has committed what the task holds. */
static bool
final_over(const struct stream_task *t)
{
    return t->final_done || (t->terminal_id != 0 && t->terminal_done);
}

int
task_await_final(struct stream_task *t, spate_error *err)
{
    return run_mails_until(t, final_over, err);
}

/* ---- set-up and tear-down ---- */

int
task_checkpoints_open(struct stream_task *t, spate_error *err)
{
    struct task_checkpoints *cp;
    int rc;

    if (t->p->restore != NULL && (rc = task_restore(t->chain, t->v, t->p->restore, err)) != 0)
        return spate_error_wrap(err, "cannot restore task '%s'", t->v->name);
    if (t->p->mailbox == NULL)
        return 0;
    cp = xcalloc(1, sizeof *cp);
    cp->t = t;
    cp->latest_id = t->p->restore != NULL ? t->p->restore->checkpoint_id : 0;
    cp->seen = xcalloc((size_t)t->p->ngates + 1, sizeof *cp->seen);
    for (int g = 0; g < t->p->ngates; g++)
        cp->seen[g] = xcalloc(t->p->gates[g].nchannels + 1, 1);
    pthread_mutex_init(&cp->lock, NULL);
    pthread_cond_init(&cp->cond, NULL);
    t->cp = cp;
    return 0;
}

void
task_checkpoints_close(struct stream_task *t)
{
    struct task_checkpoints *cp = t->cp;

    if (cp == NULL)
        return;
    if (cp->started) {
        pthread_mutex_lock(&cp->lock);
        cp->stop = true;
        pthread_cond_signal(&cp->cond);
        pthread_mutex_unlock(&cp->lock);
        pthread_join(cp->thread, NULL);
    }
    for (int g = 0; g < t->p->ngates; g++)
        free(cp->seen[g]);
    free(cp->seen);
    free(cp->pending_location);
    pthread_mutex_destroy(&cp->lock);
    pthread_cond_destroy(&cp->cond);
    free(cp);
    t->cp = NULL;
}
