/* Input gates and channels (input_gate.h): the task's poll, local channels
 * reading a subpartition of this TaskManager in place, and the gate-side
 * halves of remote channels (buffers to receive into, credit, floating
 * buffers) that the network I/O thread calls under the gate's lock. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "network/net_int.h"

/* Appends ch to the available queue (gate lock held); true when the queue
 * was empty, so the task may be waiting. */
static bool
gate_enqueue_locked(struct input_gate *g, struct input_channel *ch)
{
    bool was_empty = g->avail_head == NULL;

    if (ch->queued)
        return false;
    ch->queued = true;
    ch->avail_next = NULL;
    if (g->avail_tail != NULL)
        g->avail_tail->avail_next = ch;
    else
        g->avail_head = ch;
    g->avail_tail = ch;
    return was_empty;
}

static void
gate_enqueue(struct input_gate *g, struct input_channel *ch)
{
    bool poke;

    pthread_mutex_lock(&g->lock);
    poke = gate_enqueue_locked(g, ch);
    pthread_mutex_unlock(&g->lock);
    if (poke)
        notifier_notify(g->notifier);
}

void
input_gate_fail_channel(struct input_channel *ch, int code, const char *fmt, ...)
{
    struct input_gate *g = ch->gate;
    char *msg;
    va_list ap;
    bool poke = false;

    va_start(ap, fmt);
    msg = xvasprintf(fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&g->lock);
    if (ch->error == 0) {
        ch->error = code ? code : SPATE_EIO;
        ch->error_msg = msg;
        msg = NULL;
        gate_enqueue_locked(g, ch);
        poke = true; /* the task may be waiting even with others queued */
    }
    pthread_mutex_unlock(&g->lock);
    if (poke)
        notifier_notify(g->notifier);
    free(msg);
}

/* ---- local channels ---- */

static void
local_notify(struct subpartition_reader *reader)
{
    struct input_channel *ch = container_of(reader, struct input_channel, reader);

    gate_enqueue(ch->gate, ch);
}

/* Task thread: attach to the local subpartition, or back off. */
static int
local_request(struct input_channel *ch, uint64_t now_ns, spate_error *err)
{
    struct net_env *env = ch->gate->env;
    int rc = result_partition_manager_attach(env, &ch->partition, ch->subpartition, &ch->reader,
                                             &ch->sp, err);

    if (rc == 0) {
        ch->retry_at_ns = 0;
        return 0;
    }
    if (rc != SPATE_ENOENT)
        return rc;
    ch->backoff_ms = ch->backoff_ms == 0 ? env->cfg.backoff_initial_ms : 2 * ch->backoff_ms;
    if (ch->backoff_ms > env->cfg.backoff_max_ms)
        return spate_error_set(err, SPATE_ENOENT,
                               "partition %s not found in this TaskManager (gave up after "
                               "backing off to %llu ms)",
                               result_partition_id_str(&ch->partition).s,
                               (unsigned long long)env->cfg.backoff_max_ms);
    ch->retry_at_ns = now_ns + ch->backoff_ms * 1000000u;
    return 0;
}

/* ---- the gate ---- */

int
input_gate_new(struct net_env *env, uint32_t num_channels, struct notifier *task,
               struct task_io_metrics *metrics, struct input_gate **out, spate_error *err)
{
    struct input_gate *g;

    if (num_channels == 0)
        return spate_error_set(err, SPATE_EINVAL, "an input gate needs a channel");
    g = xcalloc(1, sizeof *g);
    g->env = env;
    g->notifier = task;
    g->metrics = metrics;
    g->num_channels = num_channels;
    g->channels = xcalloc(num_channels, sizeof *g->channels);
    pthread_mutex_init(&g->lock, NULL);
    for (uint32_t i = 0; i < num_channels; i++) {
        struct input_channel *ch = &g->channels[i];

        ch->gate = g;
        ch->index = i;
        ch->reader.notify = local_notify;
        ch->credit_cmd.kind = NET_CMD_ANNOUNCE_CREDIT;
        atomic_init(&ch->credit_queued, false);
    }
    *out = g;
    return 0;
}

uint32_t
input_gate_num_channels(const struct input_gate *g)
{
    return g->num_channels;
}

static int
gate_check_channel(struct input_gate *g, uint32_t channel, spate_error *err)
{
    if (g->started)
        return spate_error_set(err, SPATE_ESTATE, "input gate already started");
    if (channel >= g->num_channels)
        return spate_error_set(err, SPATE_EINVAL, "input channel %u of a gate of %u", channel,
                               g->num_channels);
    if (g->channels[channel].kind != CHANNEL_UNSET)
        return spate_error_set(err, SPATE_EINVAL, "input channel %u set twice", channel);
    return 0;
}

int
input_gate_set_local_channel(struct input_gate *g, uint32_t channel,
                             const struct result_partition_id *partition, uint32_t subpartition,
                             spate_error *err)
{
    int rc = gate_check_channel(g, channel, err);

    if (rc != 0)
        return rc;
    g->channels[channel].kind = CHANNEL_LOCAL;
    g->channels[channel].partition = *partition;
    g->channels[channel].subpartition = subpartition;
    return 0;
}

int
input_gate_set_remote_channel(struct input_gate *g, uint32_t channel,
                              const struct result_partition_id *partition, uint32_t subpartition,
                              const char *host, int port, spate_error *err)
{
    struct input_channel *ch;
    int rc = gate_check_channel(g, channel, err);

    if (rc != 0)
        return rc;
    if (port <= 0 || port > 65535 || strlen(host) > 64)
        return spate_error_set(err, SPATE_EINVAL, "bad producer data address '%s:%d'", host, port);
    ch = &g->channels[channel];
    ch->kind = CHANNEL_REMOTE;
    ch->partition = *partition;
    ch->subpartition = subpartition;
    ch->host = xstrdup(host);
    ch->port = port;
    snprintf(ch->peer, sizeof ch->peer, "%s:%d", host, port);
    return 0;
}

/* Recyclers of remote channels' buffers: any thread (the task's, mostly). */
static void
exclusive_recycle(struct net_buffer *buf)
{
    struct input_channel *ch = buf->owner;
    struct input_gate *g = ch->gate;
    bool post = false;

    pthread_mutex_lock(&g->lock);
    buf->next = ch->free_head;
    ch->free_head = buf;
    ch->num_free++;
    if (!ch->closing) {
        ch->unannounced++;
        /* relaxed: the flag only dedups mailbox posts; the gate lock orders
         * unannounced with the network thread's read */
        if (!atomic_exchange_explicit(&ch->credit_queued, true, memory_order_relaxed))
            post = true;
    }
    pthread_mutex_unlock(&g->lock);
    if (g->metrics != NULL)
        metric_level_add(&g->metrics->in_pool_used, -1);
    if (post)
        net_env_post(g->env, &ch->credit_cmd);
}

static void
floating_recycle(struct net_buffer *buf)
{
    struct input_gate *g = buf->owner;
    struct input_channel *to = NULL;

    pthread_mutex_lock(&g->lock);
    while (g->floating_waiters != NULL && to == NULL) {
        struct input_channel *ch = g->floating_waiters;

        g->floating_waiters = ch->floating_next;
        ch->waiting_floating = false;
        if (!ch->closing && ch->error == 0)
            to = ch;
    }
    if (to != NULL) {
        buf->next = to->free_head;
        to->free_head = buf;
        to->num_free++;
        to->unannounced++;
        /* still short: stays first in line */
        if ((int64_t)to->num_free < (int64_t)to->backlog + to->num_exclusive) {
            to->waiting_floating = true;
            to->floating_next = g->floating_waiters;
            g->floating_waiters = to;
        }
        if (atomic_exchange_explicit(&to->credit_queued, true, memory_order_relaxed))
            to = NULL; /* already posted */
    } else {
        buf->next = g->floating;
        g->floating = buf;
    }
    pthread_mutex_unlock(&g->lock);
    if (g->metrics != NULL)
        metric_level_add(&g->metrics->in_pool_used, -1);
    if (to != NULL)
        net_env_post(g->env, &to->credit_cmd);
}

static void
gate_return_buffers(struct input_gate *g)
{
    struct net_buffer *buf;
    uint32_t returned = 0;

    for (uint32_t i = 0; i < g->num_channels; i++) {
        struct input_channel *ch = &g->channels[i];

        while ((buf = ch->free_head) != NULL) {
            ch->free_head = buf->next;
            segment_pool_put(buf->seg);
            returned++;
        }
        ch->num_free = 0;
    }
    while ((buf = g->floating) != NULL) {
        g->floating = buf->next;
        segment_pool_put(buf->seg);
        returned++;
    }
    if (returned != g->exclusive_total + g->floating_total)
        SPATE_LOG_ERROR(NET_LOG, "input gate gave back %u of its %u buffers", returned,
                        g->exclusive_total + g->floating_total);
    if (g->metrics != NULL)
        metric_level_add(&g->metrics->in_pool_capacity,
                         -(int64_t)(g->exclusive_total + g->floating_total));
    g->exclusive_total = g->floating_total = 0;
}

/* Takes the exclusive buffers of each remote channel; the floating ones
 * come as the channels' backlog asks (gate_floating_get). */
static int
gate_take_buffers(struct input_gate *g, spate_error *err)
{
    struct net_env *env = g->env;
    uint32_t want = env->cfg.buffers_per_channel;

    for (uint32_t i = 0; i < g->num_channels; i++) {
        struct input_channel *ch = &g->channels[i];

        if (ch->kind != CHANNEL_REMOTE)
            continue;
        for (uint32_t k = 0; k < want; k++) {
            struct net_buffer *buf = network_buffer_pool_request(env->pool);

            if (buf == NULL)
                goto short_of_buffers;
            buf->recycler = exclusive_recycle;
            buf->owner = ch;
            buf->next = ch->free_head;
            ch->free_head = buf;
            ch->num_free++;
            ch->num_exclusive++;
            g->exclusive_total++;
        }
    }
    if (g->metrics != NULL)
        metric_level_add(&g->metrics->in_pool_capacity, (int64_t)g->exclusive_total);
    return 0;

short_of_buffers:
    gate_return_buffers(g);
    return spate_error_set(err, SPATE_ENOMEM,
                           "insufficient number of network buffers: an input gate of %u remote "
                           "channels needs %u exclusive buffers, but only %zu are available "
                           "(taskmanager.memory.network.*)",
                           g->num_remote, g->num_remote * want,
                           network_buffer_pool_available(env->pool));
}

int
input_gate_start(struct input_gate *g, spate_error *err)
{
    uint64_t now = clock_mono_ns();
    int rc;

    if (g->started)
        return spate_error_set(err, SPATE_ESTATE, "input gate already started");
    for (uint32_t i = 0; i < g->num_channels; i++) {
        if (g->channels[i].kind == CHANNEL_UNSET)
            return spate_error_set(err, SPATE_EINVAL, "input channel %u was never set", i);
        if (g->channels[i].kind == CHANNEL_REMOTE)
            g->num_remote++;
    }
    if (g->num_remote > 0 && (rc = gate_take_buffers(g, err)) != 0)
        return rc;
    g->started = true;
    for (uint32_t i = 0; i < g->num_channels; i++) {
        struct input_channel *ch = &g->channels[i];

        if (ch->kind == CHANNEL_LOCAL && (rc = local_request(ch, now, err)) != 0)
            input_gate_fail_channel(ch, rc, "%s", err->message);
    }
    if (g->num_remote > 0) {
        struct net_cmd_gate *cmd = xcalloc(1, sizeof *cmd);

        cmd->base.kind = NET_CMD_GATE_START;
        cmd->gate = g;
        net_env_post(g->env, &cmd->base);
    }
    return 0;
}

uint64_t
input_gate_next_deadline(struct input_gate *g)
{
    uint64_t next = NOTIFIER_FOREVER;

    for (uint32_t i = 0; i < g->num_channels; i++)
        if (g->channels[i].retry_at_ns != 0)
            next = MIN(next, g->channels[i].retry_at_ns);
    return next;
}

static void
gate_retry_local(struct input_gate *g)
{
    uint64_t now = clock_mono_ns();

    for (uint32_t i = 0; i < g->num_channels; i++) {
        struct input_channel *ch = &g->channels[i];
        spate_error err;
        int rc;

        if (ch->retry_at_ns == 0 || now < ch->retry_at_ns)
            continue;
        ch->retry_at_ns = 0;
        if ((rc = local_request(ch, now, &err)) != 0)
            input_gate_fail_channel(ch, rc, "%s", err.message);
    }
}

/* The channel's next buffer, and whether more wait. */
static int
channel_next(struct input_channel *ch, struct net_buffer **out, bool *more, spate_error *err)
{
    struct input_gate *g = ch->gate;

    if (ch->kind == CHANNEL_LOCAL) {
        uint32_t backlog;
        bool next_is_event;
        int rc;

        if (ch->sp == NULL)
            return 0;
        rc = result_subpartition_poll(ch->sp, true, out, &backlog, more, &next_is_event, err);
        if (rc < 0)
            return spate_error_wrap(err, "local input channel %u", ch->index);
        return rc;
    }
    pthread_mutex_lock(&g->lock);
    *out = ch->recv_head;
    if (*out != NULL) {
        ch->recv_head = (*out)->next;
        if (ch->recv_head == NULL)
            ch->recv_tail = NULL;
        (*out)->next = NULL;
    }
    *more = ch->recv_head != NULL;
    pthread_mutex_unlock(&g->lock);
    return *out != NULL;
}

int
input_gate_poll(struct input_gate *g, struct net_buffer **out, uint32_t *channel, spate_error *err)
{
    if (g->ended == g->num_channels)
        return INPUT_GATE_END;
    if (input_gate_next_deadline(g) != NOTIFIER_FOREVER)
        gate_retry_local(g);
    for (;;) {
        struct input_channel *ch;
        struct net_buffer *buf = NULL;
        bool more = false;
        int rc;

        pthread_mutex_lock(&g->lock);
        ch = g->avail_head;
        if (ch != NULL) {
            g->avail_head = ch->avail_next;
            if (g->avail_head == NULL)
                g->avail_tail = NULL;
            ch->queued = false;
        }
        pthread_mutex_unlock(&g->lock);
        if (ch == NULL)
            return INPUT_GATE_NONE;
        if (ch->ended || ch->blocked)
            continue; /* a blocked channel is queued again when resumed */
        rc = channel_next(ch, &buf, &more, err);
        if (rc == 0) {
            /* A failure is reported once every buffer before it was read. */
            pthread_mutex_lock(&g->lock);
            if (ch->error != 0) {
                rc = spate_error_set(err, ch->error, "%s", ch->error_msg);
                gate_enqueue_locked(g, ch); /* stays failed */
            }
            pthread_mutex_unlock(&g->lock);
            if (rc != 0)
                return rc;
        }
        if (rc < 0)
            return rc;
        if (rc == 0)
            continue;
        if (more) {
            gate_enqueue(g, ch);
        } else {
            /* A failure that came while buffers were still queued is reported
             * after the last of them: the channel must come round again. */
            pthread_mutex_lock(&g->lock);
            if (ch->error != 0)
                gate_enqueue_locked(g, ch);
            pthread_mutex_unlock(&g->lock);
        }
        if (buf->type == NET_BUFFER_EVENT &&
            net_buffer_event_type(buf) == NET_EVENT_END_OF_PARTITION) {
            ch->ended = true;
            g->ended++;
            if (ch->kind == CHANNEL_LOCAL) {
                result_subpartition_release_reader(ch->sp, 0, NULL);
                ch->sp = NULL;
            }
        } else if (g->metrics != NULL) {
            metric_counter_add(&g->metrics->num_bytes_in, buf->size);
        }
        *out = buf;
        *channel = ch->index;
        return INPUT_GATE_BUFFER;
    }
}

void
input_gate_block_channel(struct input_gate *g, uint32_t channel)
{
    if (channel < g->num_channels)
        g->channels[channel].blocked = true;
}

bool
input_gate_channel_ended(const struct input_gate *g, uint32_t channel)
{
    return channel < g->num_channels && g->channels[channel].ended;
}

void
input_gate_resume_consumption(struct input_gate *g)
{
    for (uint32_t i = 0; i < g->num_channels; i++) {
        struct input_channel *ch = &g->channels[i];

        if (!ch->blocked)
            continue;
        ch->blocked = false;
        /* It may hold buffers that arrived while it was blocked: look again
         * (a channel with nothing simply yields nothing). */
        if (!ch->ended)
            gate_enqueue(g, ch);
    }
}

void
input_gate_free(struct input_gate *g)
{
    if (g == NULL)
        return;
    if (g->started && g->num_remote > 0) {
        /* Stop credit posts, then have the network thread forget the channels:
         * posts made before the detach command are delivered before it. */
        pthread_mutex_lock(&g->lock);
        for (uint32_t i = 0; i < g->num_channels; i++)
            g->channels[i].closing = true;
        pthread_mutex_unlock(&g->lock);
        net_env_gate_detach(g->env, g);
    }
    for (uint32_t i = 0; i < g->num_channels; i++) {
        struct input_channel *ch = &g->channels[i];
        struct net_buffer *buf;

        if (ch->kind == CHANNEL_LOCAL && ch->sp != NULL)
            result_subpartition_release_reader(ch->sp, SPATE_ECANCELED,
                                               "its consumer went away before the end of the "
                                               "partition");
        while ((buf = ch->recv_head) != NULL) {
            ch->recv_head = buf->next;
            net_buffer_recycle(buf);
        }
        free(ch->host);
        free(ch->error_msg);
    }
    if (g->exclusive_total + g->floating_total > 0)
        gate_return_buffers(g);
    pthread_mutex_destroy(&g->lock);
    free(g->channels);
    free(g);
}

/* ---- the network thread's side of remote channels ---- */

struct net_buffer *
input_gate_take_free(struct input_channel *ch)
{
    struct input_gate *g = ch->gate;
    struct net_buffer *buf;

    pthread_mutex_lock(&g->lock);
    buf = ch->free_head;
    if (buf != NULL) {
        ch->free_head = buf->next;
        ch->num_free--;
        buf->next = NULL;
    }
    pthread_mutex_unlock(&g->lock);
    return buf;
}

void
input_gate_deliver(struct input_channel *ch, struct net_buffer *buf)
{
    struct input_gate *g = ch->gate;
    bool pooled = buf->seg != NULL; /* read now: the task may recycle it at once */
    bool poke;

    buf->next = NULL;
    pthread_mutex_lock(&g->lock);
    if (ch->recv_tail != NULL)
        ch->recv_tail->next = buf;
    else
        ch->recv_head = buf;
    ch->recv_tail = buf;
    poke = gate_enqueue_locked(g, ch);
    pthread_mutex_unlock(&g->lock);
    if (g->metrics != NULL && pooled)
        metric_level_add(&g->metrics->in_pool_used, 1);
    if (poke)
        notifier_notify(g->notifier);
}

/* A floating buffer for a channel short of buffers (gate lock held): a free
 * one, else a new one from the TaskManager's pool while the gate holds
 * fewer than floating-buffers-per-gate, as Flink's floating buffer pool
 * requests them; NULL: none to be had now (best effort: the channel's
 * exclusive buffers keep it going). Taken when asked for, not when the
 * gate starts, so that the floating buffers of the first gates to start
 * do not leave later ones short of their exclusive buffers. */
static struct net_buffer *
gate_floating_get(struct input_gate *g)
{
    struct net_buffer *buf = g->floating;

    if (buf != NULL) {
        g->floating = buf->next;
        return buf;
    }
    if (g->floating_total >= g->env->cfg.floating_per_gate ||
        (buf = network_buffer_pool_request_excess(g->env->pool)) == NULL)
        return NULL;
    buf->recycler = floating_recycle;
    buf->owner = g;
    g->floating_total++;
    if (g->metrics != NULL)
        metric_level_add(&g->metrics->in_pool_capacity, 1);
    return buf;
}

uint32_t
input_gate_on_backlog(struct input_channel *ch, int32_t backlog)
{
    struct input_gate *g = ch->gate;
    struct net_buffer *buf;
    uint32_t credit;

    pthread_mutex_lock(&g->lock);
    ch->backlog = backlog;
    /* Flink's rule: a channel wants backlog + its exclusive buffers free. */
    while ((int64_t)ch->num_free < (int64_t)backlog + ch->num_exclusive &&
           (buf = gate_floating_get(g)) != NULL) {
        buf->next = ch->free_head;
        ch->free_head = buf;
        ch->num_free++;
        ch->unannounced++;
    }
    if ((int64_t)ch->num_free < (int64_t)backlog + ch->num_exclusive && !ch->waiting_floating) {
        ch->waiting_floating = true;
        ch->floating_next = g->floating_waiters;
        g->floating_waiters = ch;
    }
    credit = ch->unannounced;
    ch->unannounced = 0;
    pthread_mutex_unlock(&g->lock);
    return credit;
}

uint32_t
input_gate_take_unannounced(struct input_channel *ch)
{
    struct input_gate *g = ch->gate;
    uint32_t credit;

    /* Cleared first: a recycle from now on posts again. */
    atomic_store_explicit(&ch->credit_queued, false, memory_order_relaxed);
    pthread_mutex_lock(&g->lock);
    credit = ch->closing ? 0 : ch->unannounced;
    ch->unannounced = 0;
    pthread_mutex_unlock(&g->lock);
    return credit;
}

uint32_t
input_gate_initial_credit(struct input_channel *ch)
{
    struct input_gate *g = ch->gate;
    uint32_t credit;

    pthread_mutex_lock(&g->lock);
    credit = ch->num_free;
    ch->unannounced = 0;
    pthread_mutex_unlock(&g->lock);
    return credit;
}
