/* Result partitions, subpartitions and the partition manager
 * (result_partition.h, net_int.h). Locks: the partition manager's (table),
 * a partition's (failure, consumption count), a subpartition's (its queue).
 * Order: subpartition, then whatever a reader's notify takes (a gate's); the
 * partition lock is never held while taking a subpartition's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "network/input_gate.h"
#include "network/net_int.h"

static void
rp_ref(struct result_partition *rp)
{
    atomic_fetch_add_explicit(&rp->refs, 1, memory_order_relaxed);
}

static void
rp_unref(struct result_partition *rp)
{
    /* acq_rel: the last owner sees every other owner's writes before freeing */
    if (atomic_fetch_sub_explicit(&rp->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (uint32_t i = 0; i < rp->num_subpartitions; i++) {
        struct result_subpartition *sp = &rp->subs[i];
        struct net_buffer *buf;

        while ((buf = sp->head) != NULL) {
            sp->head = buf->next;
            net_buffer_recycle(buf);
        }
        pthread_mutex_destroy(&sp->lock);
    }
    local_buffer_pool_destroy(rp->pool);
    pthread_mutex_destroy(&rp->lock);
    free(rp->subs);
    free(rp);
}

/* Removes rp from the partition manager (once) and drops its reference. */
static void
rp_unregister(struct result_partition *rp)
{
    struct net_env *env = rp->env;
    bool was;

    pthread_mutex_lock(&rp->lock);
    was = rp->registered;
    rp->registered = false;
    pthread_mutex_unlock(&rp->lock);
    if (!was)
        return;
    pthread_mutex_lock(&env->pm_lock);
    for (size_t i = 0; i < env->num_parts; i++) {
        if (env->parts[i] == rp) {
            env->parts[i] = env->parts[--env->num_parts];
            break;
        }
    }
    pthread_mutex_unlock(&env->pm_lock);
    rp_unref(rp);
}

int
result_partition_new(struct net_env *env, const struct result_partition_id *id,
                     uint32_t num_subpartitions, struct notifier *producer,
                     struct task_io_metrics *metrics, struct result_partition **out,
                     spate_error *err)
{
    struct result_partition *rp;
    size_t min = (size_t)num_subpartitions + 1;
    size_t max =
        (size_t)env->cfg.buffers_per_channel * num_subpartitions + env->cfg.floating_per_gate;
    int rc;

    if (num_subpartitions == 0)
        return spate_error_set(err, SPATE_EINVAL, "partition '%s' has no subpartitions",
                               result_partition_id_str(id).s);
    rp = xcalloc(1, sizeof *rp);
    rc = local_buffer_pool_new(env->pool, min, MAX(min, max), producer,
                               metrics ? &metrics->out_pool_used : NULL,
                               metrics ? &metrics->out_pool_capacity : NULL, &rp->pool, err);
    if (rc != 0) {
        free(rp);
        return spate_error_wrap(err, "partition '%s'", result_partition_id_str(id).s);
    }
    rp->id = *id;
    rp->env = env;
    rp->num_subpartitions = num_subpartitions;
    rp->subs = xcalloc(num_subpartitions, sizeof *rp->subs);
    for (uint32_t i = 0; i < num_subpartitions; i++) {
        pthread_mutex_init(&rp->subs[i].lock, NULL);
        rp->subs[i].partition = rp;
        rp->subs[i].index = i;
    }
    pthread_mutex_init(&rp->lock, NULL);
    atomic_init(&rp->refs, 2); /* the producer's and the partition manager's */
    atomic_init(&rp->failed, 0);
    rp->producer = producer;
    rp->registered = true;

    pthread_mutex_lock(&env->pm_lock);
    for (size_t i = 0; i < env->num_parts; i++) {
        if (result_partition_id_equal(&env->parts[i]->id, id)) {
            pthread_mutex_unlock(&env->pm_lock);
            rp->registered = false;
            atomic_store(&rp->refs, 1);
            rp_unref(rp);
            return spate_error_set(err, SPATE_EEXIST, "partition '%s' is already registered",
                                   result_partition_id_str(id).s);
        }
    }
    xgrow((void **)&env->parts, &env->parts_cap, env->num_parts + 1, sizeof *env->parts);
    env->parts[env->num_parts++] = rp;
    pthread_mutex_unlock(&env->pm_lock);
    *out = rp;
    return 0;
}

void
result_partition_fail(struct result_partition *rp, int code, const char *fmt, ...)
{
    va_list ap;
    bool first;

    pthread_mutex_lock(&rp->lock);
    first = atomic_load_explicit(&rp->failed, memory_order_relaxed) == 0;
    if (first) {
        va_start(ap, fmt);
        vsnprintf(rp->error, sizeof rp->error, fmt, ap);
        va_end(ap);
        atomic_store_explicit(&rp->failed, code ? code : SPATE_EIO, memory_order_release);
        if (rp->producer != NULL)
            notifier_notify(rp->producer);
    }
    pthread_mutex_unlock(&rp->lock);
    if (!first)
        return;
    /* The message names the partition; a cancelled job's are expected. */
    if (code == SPATE_ECANCELED)
        SPATE_LOG_DEBUG(NET_LOG, "%s", rp->error);
    else
        SPATE_LOG_WARN(NET_LOG, "%s", rp->error);
    for (uint32_t i = 0; i < rp->num_subpartitions; i++) {
        struct result_subpartition *sp = &rp->subs[i];

        pthread_mutex_lock(&sp->lock);
        if (sp->reader != NULL)
            sp->reader->notify(sp->reader);
        pthread_mutex_unlock(&sp->lock);
    }
    rp_unregister(rp);
}

int
result_partition_check(struct result_partition *rp, spate_error *err)
{
    int code = atomic_load_explicit(&rp->failed, memory_order_acquire);

    if (code == 0)
        return 0;
    return spate_error_set(err, code, "%s", rp->error);
}

void
result_partition_release(struct result_partition *rp, const spate_error *cause)
{
    bool finished;

    if (rp == NULL)
        return;
    pthread_mutex_lock(&rp->lock);
    finished = rp->finished;
    rp->producer = NULL;
    pthread_mutex_unlock(&rp->lock);
    /* From here on recycling pokes no notifier of the producer and counts
     * into none of its metrics: both may go before the consumers' buffers
     * come back. */
    local_buffer_pool_set_waiter(rp->pool, NULL);
    local_buffer_pool_detach_metrics(rp->pool);
    if (cause != NULL)
        result_partition_fail(rp, cause->code, "producer of partition %s failed: %s",
                              result_partition_id_str(&rp->id).s, cause->message);
    else if (!finished)
        result_partition_fail(rp, SPATE_ESTATE,
                              "producer of partition %s released it "
                              "before finishing",
                              result_partition_id_str(&rp->id).s);
    rp_unref(rp);
}

void
result_partition_mark_finished(struct result_partition *rp)
{
    pthread_mutex_lock(&rp->lock);
    rp->finished = true;
    pthread_mutex_unlock(&rp->lock);
}

size_t
result_partition_manager_count(struct net_env *env)
{
    size_t n;

    pthread_mutex_lock(&env->pm_lock);
    n = env->num_parts;
    pthread_mutex_unlock(&env->pm_lock);
    return n;
}

const struct result_partition_id *
result_partition_id(const struct result_partition *rp)
{
    return &rp->id;
}

uint32_t
result_partition_num_subpartitions(const struct result_partition *rp)
{
    return rp->num_subpartitions;
}

/* ---- subpartitions ---- */

void
result_subpartition_add(struct result_subpartition *sp, struct net_buffer *buf)
{
    bool drop;

    buf->next = NULL;
    pthread_mutex_lock(&sp->lock);
    /* After a reader went away unfinished the partition has failed and the
     * producer stops at its next buffer; what it adds meanwhile is dropped. */
    drop = sp->consumed || (sp->attached && sp->reader == NULL);
    if (!drop) {
        bool was_empty = sp->head == NULL;

        if (sp->tail != NULL)
            sp->tail->next = buf;
        else
            sp->head = buf;
        sp->tail = buf;
        if (buf->type == NET_BUFFER_DATA)
            sp->backlog++;
        else if (net_buffer_event_type(buf) == NET_EVENT_END_OF_PARTITION)
            sp->ended = true;
        if (was_empty && sp->reader != NULL)
            sp->reader->notify(sp->reader);
    }
    pthread_mutex_unlock(&sp->lock);
    if (drop)
        net_buffer_recycle(buf);
}

int
result_subpartition_poll(struct result_subpartition *sp, bool allow_data, struct net_buffer **out,
                         uint32_t *backlog, bool *more, bool *next_is_event, spate_error *err)
{
    struct result_partition *rp = sp->partition;
    struct net_buffer *buf;
    int rc = result_partition_check(rp, err);

    if (rc != 0)
        return rc;
    pthread_mutex_lock(&sp->lock);
    buf = sp->head;
    if (buf == NULL || (buf->type == NET_BUFFER_DATA && !allow_data)) {
        *more = buf != NULL;
        *next_is_event = false;
        *backlog = sp->backlog;
        pthread_mutex_unlock(&sp->lock);
        return 0;
    }
    sp->head = buf->next;
    if (sp->head == NULL)
        sp->tail = NULL;
    buf->next = NULL;
    if (buf->type == NET_BUFFER_DATA)
        sp->backlog--;
    else if (net_buffer_event_type(buf) == NET_EVENT_END_OF_PARTITION)
        sp->consumed = true;
    *backlog = sp->backlog;
    *more = sp->head != NULL;
    *next_is_event = sp->head != NULL && sp->head->type == NET_BUFFER_EVENT;
    pthread_mutex_unlock(&sp->lock);
    *out = buf;
    return 1;
}

void
result_subpartition_release_reader(struct result_subpartition *sp, int code, const char *why)
{
    struct result_partition *rp = sp->partition;
    bool consumed, all = false;

    pthread_mutex_lock(&sp->lock);
    sp->reader = NULL;
    consumed = sp->consumed;
    pthread_mutex_unlock(&sp->lock);
    if (!consumed) {
        result_partition_fail(rp, code, "partition %s subpartition %u: %s",
                              result_partition_id_str(&rp->id).s, sp->index, why);
    } else {
        pthread_mutex_lock(&rp->lock);
        all = ++rp->consumed == rp->num_subpartitions;
        pthread_mutex_unlock(&rp->lock);
        if (all)
            rp_unregister(rp);
    }
    rp_unref(rp);
}

/* ---- the partition manager ---- */

int
result_partition_manager_attach(struct net_env *env, const struct result_partition_id *id,
                                uint32_t subpartition, struct subpartition_reader *reader,
                                struct result_subpartition **out, spate_error *err)
{
    struct result_partition *rp = NULL;
    struct result_subpartition *sp;
    bool taken;

    pthread_mutex_lock(&env->pm_lock);
    for (size_t i = 0; i < env->num_parts; i++) {
        if (result_partition_id_equal(&env->parts[i]->id, id)) {
            rp = env->parts[i];
            break;
        }
    }
    if (rp != NULL && subpartition < rp->num_subpartitions)
        rp_ref(rp);
    pthread_mutex_unlock(&env->pm_lock);
    if (rp == NULL)
        return spate_error_set(err, SPATE_ENOENT, "partition %s not found",
                               result_partition_id_str(id).s);
    if (subpartition >= rp->num_subpartitions)
        return spate_error_set(err, SPATE_EINVAL, "partition %s has %u subpartitions, not %u",
                               result_partition_id_str(id).s, rp->num_subpartitions,
                               subpartition + 1);
    sp = &rp->subs[subpartition];
    pthread_mutex_lock(&sp->lock);
    taken = sp->attached;
    if (!taken) {
        sp->attached = true;
        sp->reader = reader;
        if (sp->head != NULL || atomic_load_explicit(&rp->failed, memory_order_acquire) != 0)
            reader->notify(reader);
    }
    pthread_mutex_unlock(&sp->lock);
    if (taken) {
        rp_unref(rp);
        return spate_error_set(err, SPATE_EBUSY,
                               "partition %s subpartition %u already has a "
                               "consumer",
                               result_partition_id_str(id).s, subpartition);
    }
    *out = sp;
    return 0;
}

void
result_partition_manager_init(struct net_env *env)
{
    pthread_mutex_init(&env->pm_lock, NULL);
}

void
result_partition_manager_release(struct net_env *env)
{
    pthread_mutex_destroy(&env->pm_lock);
    free(env->parts);
    env->parts = NULL;
}

void
result_partition_manager_clear(struct net_env *env)
{
    for (;;) {
        struct result_partition *rp = NULL;

        pthread_mutex_lock(&env->pm_lock);
        if (env->num_parts > 0)
            rp = env->parts[env->num_parts - 1];
        pthread_mutex_unlock(&env->pm_lock);
        if (rp == NULL)
            break;
        rp_unregister(rp);
    }
}
