/* The network environment and its I/O thread (net_env.h): serves remote
 * consumers' partition requests (one reader per subpartition, written out as
 * credit allows) and connects to remote producers for this TaskManager's
 * gates (one connection per address, received straight into the channels'
 * buffers). Everything but net_env_new/free/post/stats runs on the I/O thread. */
#include <lz4.h>
#include <netdb.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/util.h"
#include "network/net_int.h"

#define STAGE_SIZE 4096
/* What a consumer-side read takes into the stage: header and body of small
 * frames, only the start of a big buffer's body (which is then read straight
 * into its buffer rather than copied from the stage). */
#define STAGE_CLIENT_READ 512
#define COMPRESS_SLOTS    4
/* Bytes a connection may have queued for writing before its readers wait:
 * enough to keep the socket busy, little enough to stay fair. */
#define PUMP_LIMIT_SEGMENTS 8

/* ---- a small map of receiver ids (open addressing, linear probing) ---- */

struct id_map {
    uint32_t *keys;
    void **vals; /* NULL: free; TOMBSTONE: removed */
    uint32_t cap, used;
};

static char id_map_tombstone;
#define TOMBSTONE ((void *)&id_map_tombstone)

static uint32_t
id_hash32(uint32_t k)
{
    k ^= k >> 16;
    k *= 0x45d9f3bu;
    k ^= k >> 16;
    return k;
}

static void *
id_map_get(struct id_map *m, uint32_t key)
{
    if (m->cap == 0)
        return NULL;
    for (uint32_t i = id_hash32(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] == NULL)
            return NULL;
        if (m->vals[i] != TOMBSTONE && m->keys[i] == key)
            return m->vals[i];
    }
}

static void id_map_put(struct id_map *m, uint32_t key, void *val);

static void
id_map_grow(struct id_map *m)
{
    struct id_map old = *m;

    m->cap = old.cap ? old.cap * 2 : 16;
    m->used = 0;
    m->keys = xcalloc(m->cap, sizeof *m->keys);
    m->vals = xcalloc(m->cap, sizeof *m->vals);
    for (uint32_t i = 0; i < old.cap; i++)
        if (old.vals[i] != NULL && old.vals[i] != TOMBSTONE)
            id_map_put(m, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
}

static void
id_map_put(struct id_map *m, uint32_t key, void *val)
{
    uint32_t i;

    if ((m->used + 1) * 4 > m->cap * 3)
        id_map_grow(m);
    for (i = id_hash32(key) & (m->cap - 1); m->vals[i] != NULL; i = (i + 1) & (m->cap - 1))
        ;
    m->keys[i] = key;
    m->vals[i] = val;
    m->used++;
}

static void
id_map_remove(struct id_map *m, uint32_t key)
{
    if (m->cap == 0)
        return;
    for (uint32_t i = id_hash32(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] == NULL)
            return;
        if (m->vals[i] != TOMBSTONE && m->keys[i] == key) {
            m->vals[i] = TOMBSTONE; /* still counted in used until the next grow */
            return;
        }
    }
}

static void
id_map_release(struct id_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- connections ---- */

enum conn_state { CONN_CONNECTING, CONN_HANDSHAKE, CONN_ACTIVE, CONN_CLOSING };
enum rx_mode { RX_STAGE, RX_DIRECT, RX_DISCARD };

/* A remote consumer's reader of one subpartition (server side). */
struct net_reader {
    struct subpartition_reader base;
    struct net_cmd cmd;  /* READER_AVAILABLE */
    _Atomic bool queued; /* cmd is in the mailbox (set by producers, cleared here) */
    struct net_conn *conn;
    struct result_subpartition *sp;
    uint32_t receiver;
    int32_t credit;
    uint32_t seq;
    bool in_ready;
    bool released;
    struct net_reader *ready_next;
};

struct compress_slot {
    uv_write_t req;
    uint8_t header[NET_FRAME_HEADER_SIZE];
    uint8_t *data;
    uint32_t len;
    bool busy;
    struct net_conn *conn;
};

struct net_conn {
    uv_tcp_t tcp;
    struct net_env *env;
    struct net_conn *next;
    bool is_server;
    enum conn_state state;
    char peer[80];
    /* receiving */
    uint8_t stage[STAGE_SIZE];
    uint32_t stage_len;
    enum rx_mode rx_mode;
    struct net_frame rx;
    uint8_t *rx_dst;
    uint32_t rx_have;
    struct net_buffer *rx_buf;
    struct input_channel *rx_channel;
    uint8_t *scratch; /* compressed bodies, discarded bodies */
    uint32_t scratch_size;
    /* sending */
    size_t bytes_in_flight;
    uint8_t hs_out[HANDSHAKE_SIZE];
    uv_write_t hs_req;
    bool close_after_handshake;
    /* server side */
    struct id_map readers;
    struct net_reader *ready_head, *ready_tail;
    struct compress_slot slots[COMPRESS_SLOTS];
    /* client side */
    uv_connect_t connect_req;
    struct id_map channels;
    struct input_channel *pending; /* waiting for the handshake */
    uint32_t next_receiver;
};

struct ctl_write {
    uv_write_t req;
    uint8_t bytes[];
};

static void conn_close(struct net_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void server_pump(struct net_conn *c);

static void
ctl_write_done(uv_write_t *req, int status)
{
    UNUSED(status); /* a failed write shows as a read error too */
    free(container_of(req, struct ctl_write, req));
}

/* Sends a small control frame (requests, credit, errors). */
static void
conn_send_ctl(struct net_conn *c, struct net_frame *f, const void *body, uint32_t len)
{
    struct ctl_write *w;
    uv_buf_t buf;
    int rc;

    if (c->state != CONN_ACTIVE)
        return;
    w = xmalloc(sizeof *w + NET_FRAME_HEADER_SIZE + len);
    f->length = len;
    net_frame_encode(f, w->bytes);
    if (len > 0)
        memcpy(w->bytes + NET_FRAME_HEADER_SIZE, body, len);
    buf = uv_buf_init((char *)w->bytes, NET_FRAME_HEADER_SIZE + len);
    rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, ctl_write_done);
    if (rc != 0) {
        free(w);
        conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(rc));
    }
}

static void
send_error(struct net_conn *c, uint32_t receiver, int code, const char *msg)
{
    struct net_frame f = { .type = NET_MSG_ERROR,
                           .receiver = receiver,
                           .a = (uint32_t)(code < 0 ? -code : code) };

    conn_send_ctl(c, &f, msg, (uint32_t)MIN(strlen(msg), NET_ERROR_MAX));
}

/* ---- server side: readers of remote consumers ---- */

static void
reader_notify(struct subpartition_reader *base)
{
    struct net_reader *r = container_of(base, struct net_reader, base);

    /* acq_rel: pairs with the I/O thread's clearing store; one post per burst */
    if (!atomic_exchange_explicit(&r->queued, true, memory_order_acq_rel))
        net_env_post(r->conn->env, &r->cmd);
}

static void
reader_try_free(struct net_reader *r)
{
    if (r->released && !r->in_ready && !atomic_load_explicit(&r->queued, memory_order_acquire))
        free(r);
}

static void
reader_make_ready(struct net_reader *r)
{
    struct net_conn *c = r->conn;

    if (r->in_ready || r->released)
        return;
    r->in_ready = true;
    r->ready_next = NULL;
    if (c->ready_tail != NULL)
        c->ready_tail->ready_next = r;
    else
        c->ready_head = r;
    c->ready_tail = r;
}

/* The consumer is done with the subpartition (end taken, cancelled, gone). */
static void
reader_release(struct net_reader *r, int code, const char *why)
{
    if (r->released)
        return;
    r->released = true;
    id_map_remove(&r->conn->readers, r->receiver);
    /* After this no producer notifies r: its queued post is the last. */
    result_subpartition_release_reader(r->sp, code, why);
    reader_try_free(r);
}

static void
buffer_written(uv_write_t *req, int status)
{
    struct net_buffer *buf = container_of(req, struct net_buffer, write_req);
    struct net_conn *c = buf->write_ctx;

    c->bytes_in_flight -= buf->size + NET_FRAME_HEADER_SIZE;
    net_buffer_recycle(buf);
    if (status < 0 && status != UV_ECANCELED)
        conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(status));
    else if (c->state == CONN_ACTIVE)
        server_pump(c);
}

static void
slot_written(uv_write_t *req, int status)
{
    struct compress_slot *s = container_of(req, struct compress_slot, req);
    struct net_conn *c = s->conn;

    c->bytes_in_flight -= s->len + NET_FRAME_HEADER_SIZE;
    s->busy = false;
    if (status < 0 && status != UV_ECANCELED)
        conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(status));
    else if (c->state == CONN_ACTIVE)
        server_pump(c);
}

/* lz4 into a free slot when it pays; the original buffer goes back at once. */
static bool
send_compressed(struct net_conn *c, struct net_frame *f, struct net_buffer *buf)
{
    uint32_t bound = net_compress_bound(buf->capacity);
    struct compress_slot *s = NULL;
    uv_buf_t bufs[2];
    int n;

    for (int i = 0; i < COMPRESS_SLOTS && s == NULL; i++)
        if (!c->slots[i].busy)
            s = &c->slots[i];
    if (s == NULL)
        return false; /* all in flight: send this one as it is */
    if (s->data == NULL)
        s->data = xmalloc(bound);
    n = LZ4_compress_default((const char *)buf->data, (char *)s->data, (int)buf->size, (int)bound);
    if (n <= 0 || (uint32_t)n >= buf->size)
        return false;
    f->flags |= NET_FLAG_COMPRESSED;
    f->c = buf->size;
    f->length = (uint32_t)n;
    net_frame_encode(f, s->header);
    net_buffer_recycle(buf);
    s->busy = true;
    s->conn = c;
    s->len = (uint32_t)n;
    bufs[0] = uv_buf_init((char *)s->header, NET_FRAME_HEADER_SIZE);
    bufs[1] = uv_buf_init((char *)s->data, (unsigned)n);
    c->bytes_in_flight += s->len + NET_FRAME_HEADER_SIZE;
    n = uv_write(&s->req, (uv_stream_t *)&c->tcp, bufs, 2, slot_written);
    if (n != 0) {
        s->busy = false;
        c->bytes_in_flight -= s->len + NET_FRAME_HEADER_SIZE;
        conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(n));
    }
    return true;
}

static void
send_buffer(struct net_conn *c, struct net_reader *r, struct net_buffer *buf, uint32_t backlog)
{
    struct net_frame f = { .type = NET_MSG_BUFFER,
                           .receiver = r->receiver,
                           .a = r->seq++,
                           .b = (int32_t)MIN(backlog, (uint32_t)INT32_MAX),
                           .length = buf->size };
    uv_buf_t bufs[2];
    int rc;

    if (buf->type == NET_BUFFER_EVENT)
        f.flags = NET_FLAG_EVENT;
    else if (c->env->cfg.lz4 && buf->size > 0 && send_compressed(c, &f, buf))
        return;
    net_frame_encode(&f, buf->header);
    buf->write_ctx = c;
    bufs[0] = uv_buf_init((char *)buf->header, NET_FRAME_HEADER_SIZE);
    bufs[1] = uv_buf_init((char *)buf->data, buf->size);
    c->bytes_in_flight += buf->size + NET_FRAME_HEADER_SIZE;
    rc = uv_write(&buf->write_req, (uv_stream_t *)&c->tcp, bufs, buf->size ? 2 : 1, buffer_written);
    if (rc != 0) {
        c->bytes_in_flight -= buf->size + NET_FRAME_HEADER_SIZE;
        net_buffer_recycle(buf);
        conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(rc));
    }
}

/* Writes what the ready readers have and their credit allows, round-robin
 * one buffer at a time, until the socket's queue is deep enough. */
static void
server_pump(struct net_conn *c)
{
    size_t limit = PUMP_LIMIT_SEGMENTS * network_buffer_pool_segment_size(c->env->pool);

    while (c->state == CONN_ACTIVE && c->ready_head != NULL && c->bytes_in_flight < limit) {
        struct net_reader *r = c->ready_head;
        struct net_buffer *buf;
        uint32_t backlog;
        bool more, next_is_event, eop;
        spate_error err;
        int rc;

        c->ready_head = r->ready_next;
        if (c->ready_head == NULL)
            c->ready_tail = NULL;
        r->in_ready = false;
        if (r->released) {
            reader_try_free(r);
            continue;
        }
        rc = result_subpartition_poll(r->sp, r->credit > 0, &buf, &backlog, &more, &next_is_event,
                                      &err);
        if (rc < 0) {
            send_error(c, r->receiver, rc, err.message);
            reader_release(r, rc, err.message);
            continue;
        }
        if (rc == 0)
            continue; /* waits for credit or data: a post or ADD_CREDIT brings it back */
        eop = buf->type == NET_BUFFER_EVENT &&
              net_buffer_event_type(buf) == NET_EVENT_END_OF_PARTITION;
        if (buf->type == NET_BUFFER_DATA)
            r->credit--;
        send_buffer(c, r, buf, backlog);
        if (eop) {
            reader_release(r, 0, NULL);
            continue;
        }
        if (more && (r->credit > 0 || next_is_event))
            reader_make_ready(r);
    }
}

static void
server_on_request(struct net_conn *c, const struct net_frame *f, const uint8_t *body)
{
    struct net_reader *r;
    struct result_partition_id pid;
    spate_error err;
    int rc;

    if (id_map_get(&c->readers, f->receiver) != NULL) {
        conn_close(c, SPATE_EPROTO,
                   "dropping data connection from %s: receiver %u requested "
                   "twice",
                   c->peer, f->receiver);
        return;
    }
    memcpy(pid.partition.bytes, body, ID_BYTES);
    memcpy(pid.producer.bytes, body + ID_BYTES, ID_BYTES);
    r = xcalloc(1, sizeof *r);
    r->base.notify = reader_notify;
    r->cmd.kind = NET_CMD_READER_AVAILABLE;
    atomic_init(&r->queued, false);
    r->conn = c;
    r->receiver = f->receiver;
    r->credit = f->b;
    /* In the map first: attach may notify, and the post finds r by pointer. */
    id_map_put(&c->readers, f->receiver, r);
    rc = result_partition_manager_attach(c->env, &pid, f->a, &r->base, &r->sp, &err);
    if (rc == 0) {
        SPATE_LOG_DEBUG(NET_LOG, "%s reads partition %s subpartition %u (credit %d)", c->peer,
                        result_partition_id_str(&pid).s, f->a, f->b);
        return;
    }
    id_map_remove(&c->readers, f->receiver);
    free(r); /* never attached: nobody can have posted it */
    if (rc == SPATE_ENOENT) {
        struct net_frame nf = { .type = NET_MSG_PARTITION_NOT_FOUND, .receiver = f->receiver };

        conn_send_ctl(c, &nf, NULL, 0);
    } else {
        send_error(c, f->receiver, rc, err.message);
    }
}

static void
server_on_frame(struct net_conn *c, const struct net_frame *f, const uint8_t *body)
{
    struct net_reader *r = id_map_get(&c->readers, f->receiver);

    switch (f->type) {
    case NET_MSG_PARTITION_REQUEST:
        server_on_request(c, f, body);
        break;
    case NET_MSG_ADD_CREDIT:
        if (r == NULL)
            break; /* the reader finished meanwhile */
        r->credit += (int32_t)f->a;
        reader_make_ready(r);
        server_pump(c);
        break;
    case NET_MSG_CANCEL_REQUEST:
        if (r != NULL)
            reader_release(r, SPATE_ECANCELED, "its consumer cancelled the request");
        break;
    default:
        break;
    }
}

/* ---- client side: remote input channels ---- */

static void
retry_list_remove(struct net_env *env, struct input_channel *ch)
{
    for (struct input_channel **p = &env->retry_list; *p != NULL; p = &(*p)->rnext) {
        if (*p == ch) {
            *p = ch->rnext;
            break;
        }
    }
}

static void
pending_remove(struct net_conn *c, struct input_channel *ch)
{
    for (struct input_channel **p = &c->pending; *p != NULL; p = &(*p)->rnext) {
        if (*p == ch) {
            *p = ch->rnext;
            break;
        }
    }
}

static void
channel_send_request(struct net_conn *c, struct input_channel *ch)
{
    struct net_frame f = { .type = NET_MSG_PARTITION_REQUEST,
                           .receiver = ch->receiver,
                           .a = ch->subpartition };
    uint8_t body[RESULT_PARTITION_ID_BYTES];

    f.b = (int32_t)input_gate_initial_credit(ch);
    memcpy(body, ch->partition.partition.bytes, ID_BYTES);
    memcpy(body + ID_BYTES, ch->partition.producer.bytes, ID_BYTES);
    ch->rstate = REMOTE_REQUESTED;
    ch->expected_seq = 0;
    conn_send_ctl(c, &f, body, sizeof body);
}

/* The channel is over on this connection (ended, failed, detached). */
static void
channel_forget(struct input_channel *ch)
{
    struct net_conn *c = ch->conn;

    if (ch->rstate == REMOTE_BACKOFF)
        retry_list_remove(c ? c->env : ch->gate->env, ch);
    if (c != NULL) {
        if (ch->rstate == REMOTE_CONNECTING)
            pending_remove(c, ch);
        id_map_remove(&c->channels, ch->receiver);
        if (c->rx_channel == ch) {
            /* Mid-frame: the rest of the body is read and dropped. */
            if (c->rx_buf != NULL)
                net_buffer_recycle(c->rx_buf);
            c->rx_buf = NULL;
            c->rx_channel = NULL;
            if (c->rx_mode == RX_DIRECT)
                c->rx_mode = RX_DISCARD;
        }
    }
    ch->rstate = REMOTE_DONE;
    ch->conn = NULL;
}

static void
channel_fail(struct input_channel *ch, int code, const char *why)
{
    const char *peer = ch->peer;

    input_gate_fail_channel(ch, code, "partition %s subpartition %u from the producer at %s: %s",
                            result_partition_id_str(&ch->partition).s, ch->subpartition, peer, why);
    channel_forget(ch);
}

static void retry_timer_arm(struct net_env *env);

static void
client_on_not_found(struct net_conn *c, struct input_channel *ch)
{
    struct net_env *env = c->env;
    uint64_t now = clock_mono_ms();

    ch->rbackoff_ms = ch->rbackoff_ms == 0 ? env->cfg.backoff_initial_ms : 2 * ch->rbackoff_ms;
    if (ch->rbackoff_ms > env->cfg.backoff_max_ms) {
        char why[160];

        snprintf(why, sizeof why, "partition not found (gave up after %llu ms of retries)",
                 (unsigned long long)(now - ch->first_request_ms));
        channel_fail(ch, SPATE_ENOENT, why);
        return;
    }
    ch->rstate = REMOTE_BACKOFF;
    ch->retry_at_ms = now + ch->rbackoff_ms;
    ch->rnext = env->retry_list;
    env->retry_list = ch;
    retry_timer_arm(env);
}

static void
retry_timer_fired(uv_timer_t *t)
{
    struct net_env *env = t->data;
    uint64_t now = clock_mono_ms();
    struct input_channel **p = &env->retry_list;

    while (*p != NULL) {
        struct input_channel *ch = *p;

        if (ch->retry_at_ms > now) {
            p = &ch->rnext;
            continue;
        }
        *p = ch->rnext;
        if (ch->conn != NULL && ch->conn->state == CONN_ACTIVE)
            channel_send_request(ch->conn, ch);
    }
    retry_timer_arm(env);
}

static void
retry_timer_arm(struct net_env *env)
{
    uint64_t next = UINT64_MAX, now = clock_mono_ms();

    if (env->stopping)
        return;
    for (struct input_channel *ch = env->retry_list; ch != NULL; ch = ch->rnext)
        next = MIN(next, ch->retry_at_ms);
    if (next == UINT64_MAX)
        uv_timer_stop(&env->retry_timer);
    else
        uv_timer_start(&env->retry_timer, retry_timer_fired, next > now ? next - now : 0, 0);
}

/* A BUFFER header arrived: where its body goes. */
static void
client_begin_buffer(struct net_conn *c, const struct net_frame *f)
{
    struct input_channel *ch = id_map_get(&c->channels, f->receiver);

    c->rx = *f;
    c->rx_have = 0;
    c->rx_buf = NULL;
    c->rx_channel = NULL;
    c->rx_mode = RX_DIRECT;
    if (ch == NULL || ch->rstate != REMOTE_REQUESTED) {
        c->rx_mode = RX_DISCARD; /* a channel that went away: the frame was in flight */
        return;
    }
    if (f->a != ch->expected_seq) {
        conn_close(c, SPATE_EPROTO,
                   "dropping data connection to %s: buffer %u of receiver %u "
                   "out of order (expected %u)",
                   c->peer, f->a, f->receiver, ch->expected_seq);
        return;
    }
    ch->expected_seq++;
    c->rx_channel = ch;
    if (f->flags & NET_FLAG_EVENT) {
        c->rx_buf = net_buffer_new_heap(f->length);
        c->rx_dst = c->rx_buf->data;
    } else if (f->flags & NET_FLAG_COMPRESSED) {
        c->rx_dst = c->scratch;
    } else {
        c->rx_buf = input_gate_take_free(ch);
        if (c->rx_buf == NULL) {
            conn_close(c, SPATE_EPROTO,
                       "dropping data connection to %s: receiver %u got a "
                       "buffer without credit",
                       c->peer, f->receiver);
            return;
        }
        c->rx_dst = c->rx_buf->data;
    }
}

static void
client_end_buffer(struct net_conn *c)
{
    struct input_channel *ch = c->rx_channel;
    struct net_buffer *buf = c->rx_buf;
    const struct net_frame *f = &c->rx;
    bool eop = false;

    c->rx_mode = RX_STAGE;
    c->rx_buf = NULL;
    c->rx_channel = NULL;
    if (ch == NULL)
        return; /* discarded */
    if (f->flags & NET_FLAG_COMPRESSED) {
        int n;

        buf = input_gate_take_free(ch);
        if (buf == NULL) {
            conn_close(c, SPATE_EPROTO,
                       "dropping data connection to %s: receiver %u got a "
                       "buffer without credit",
                       c->peer, f->receiver);
            return;
        }
        n = LZ4_decompress_safe((const char *)c->scratch, (char *)buf->data, (int)f->length,
                                (int)buf->capacity);
        if (n < 0 || (uint32_t)n != f->c) {
            net_buffer_recycle(buf);
            conn_close(c, SPATE_EPROTO,
                       "dropping data connection to %s: a compressed buffer "
                       "does not decompress to its %u bytes",
                       c->peer, f->c);
            return;
        }
    }
    buf->size = (f->flags & NET_FLAG_COMPRESSED) ? f->c : f->length;
    if (f->flags & NET_FLAG_EVENT) {
        buf->type = NET_BUFFER_EVENT;
        eop = net_buffer_event_type(buf) == NET_EVENT_END_OF_PARTITION;
    } else {
        buf->type = NET_BUFFER_DATA;
    }
    input_gate_deliver(ch, buf);
    if (eop) {
        channel_forget(ch); /* the producer released its reader when it sent this */
    } else if (!(f->flags & NET_FLAG_EVENT)) {
        uint32_t credit = input_gate_on_backlog(ch, f->b);

        if (credit > 0) {
            struct net_frame cf = { .type = NET_MSG_ADD_CREDIT,
                                    .receiver = ch->receiver,
                                    .a = credit };

            conn_send_ctl(c, &cf, NULL, 0);
        }
    }
}

static void
client_on_frame(struct net_conn *c, const struct net_frame *f, const uint8_t *body)
{
    struct input_channel *ch = id_map_get(&c->channels, f->receiver);
    char msg[NET_ERROR_MAX + 1];

    switch (f->type) {
    case NET_MSG_ERROR:
        memcpy(msg, body, f->length);
        msg[f->length] = '\0';
        if (f->receiver == NET_RECEIVER_NONE) {
            conn_close(c, SPATE_EREMOTE, "the producer at %s closed the connection: %s", c->peer,
                       msg);
        } else if (ch != NULL) {
            int code = f->a > 0 && f->a < 5000 ? -(int)f->a : SPATE_EREMOTE;

            channel_fail(ch, code, msg);
        }
        break;
    case NET_MSG_PARTITION_NOT_FOUND:
        if (ch != NULL && ch->rstate == REMOTE_REQUESTED)
            client_on_not_found(c, ch);
        break;
    default:
        break;
    }
}

/* ---- connections: reading ---- */

static void
conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    struct net_conn *c = h->data;

    UNUSED(suggested);
    if (c->rx_mode == RX_DIRECT)
        *out = uv_buf_init((char *)c->rx_dst + c->rx_have, c->rx.length - c->rx_have);
    else if (c->rx_mode == RX_DISCARD)
        *out = uv_buf_init((char *)c->scratch, MIN(c->scratch_size, c->rx.length - c->rx_have));
    else if (c->is_server)
        *out = uv_buf_init((char *)c->stage + c->stage_len, STAGE_SIZE - c->stage_len);
    else /* a little past a header: the body of a big buffer goes direct */
        *out = uv_buf_init((char *)c->stage + c->stage_len,
                           MIN(STAGE_CLIENT_READ, STAGE_SIZE - c->stage_len));
}

static void
server_handshake(struct net_conn *c, const uint8_t *hello)
{
    enum handshake_status st;
    spate_error err;
    uv_buf_t buf;

    if (handshake_check_hello(&c->env->hs, hello, &st, &err) != 0) {
        SPATE_LOG_WARN(NET_LOG, "dropping data connection from %s: %s", c->peer, err.message);
        handshake_encode_reply(&c->env->hs, st, err.message, c->hs_out);
        c->close_after_handshake = true;
    } else {
        handshake_encode_reply(&c->env->hs, HANDSHAKE_OK, NULL, c->hs_out);
        c->state = CONN_ACTIVE;
    }
    buf = uv_buf_init((char *)c->hs_out, HANDSHAKE_SIZE);
    uv_write(&c->hs_req, (uv_stream_t *)&c->tcp, &buf, 1, NULL);
    if (c->close_after_handshake)
        conn_close(c, SPATE_EPROTO, "handshake refused");
}

static void
client_handshake(struct net_conn *c, const uint8_t *reply)
{
    spate_error err;

    if (handshake_check_reply(&c->env->hs, reply, &err) != 0) {
        conn_close(c, SPATE_EPROTO, "data connection to %s: %s", c->peer, err.message);
        return;
    }
    c->state = CONN_ACTIVE;
    SPATE_LOG_DEBUG(NET_LOG, "data connection to %s is up", c->peer);
    while (c->pending != NULL) {
        struct input_channel *ch = c->pending;

        c->pending = ch->rnext;
        channel_send_request(c, ch);
    }
}

/* Frames in the stage: handles the complete ones; a BUFFER's body continues
 * straight into its buffer. */
static void
conn_process_stage(struct net_conn *c)
{
    uint32_t off = 0;
    spate_error err;

    while (c->state == CONN_HANDSHAKE || c->state == CONN_ACTIVE) {
        uint32_t avail = c->stage_len - off;
        const uint8_t *p = c->stage + off;
        struct net_frame f;

        if (c->rx_mode != RX_STAGE) {
            /* A body begun in the stage: copy what the stage holds of it. */
            uint32_t n = MIN(avail, c->rx.length - c->rx_have);

            if (c->rx_mode == RX_DIRECT && n > 0)
                memcpy(c->rx_dst + c->rx_have, p, n);
            c->rx_have += n;
            off += n;
            if (c->rx_have < c->rx.length)
                break;
            client_end_buffer(c);
            continue;
        }
        if (c->state == CONN_HANDSHAKE) {
            if (c->is_server && avail >= 4 &&
                ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]) !=
                    HANDSHAKE_MAGIC_DATA) {
                conn_close(c, SPATE_EPROTO,
                           "dropping data connection from %s: not a spate "
                           "data connection (bad magic)",
                           c->peer);
                return;
            }
            if (avail < HANDSHAKE_SIZE)
                break;
            off += HANDSHAKE_SIZE;
            if (c->is_server)
                server_handshake(c, p);
            else
                client_handshake(c, p);
            continue;
        }
        if (avail < NET_FRAME_HEADER_SIZE)
            break;
        if (net_frame_decode(p, c->is_server,
                             (uint32_t)network_buffer_pool_segment_size(c->env->pool), &f,
                             &err) != 0) {
            conn_close(c, SPATE_EPROTO, "dropping data connection %s %s: %s",
                       c->is_server ? "from" : "to", c->peer, err.message);
            return;
        }
        if (!c->is_server && f.type == NET_MSG_BUFFER) {
            off += NET_FRAME_HEADER_SIZE;
            client_begin_buffer(c, &f);
            if (c->rx.length == 0 && c->state == CONN_ACTIVE) {
                client_end_buffer(c);
            }
            continue;
        }
        if (avail < NET_FRAME_HEADER_SIZE + f.length)
            break; /* control bodies are small: the stage holds them whole */
        off += NET_FRAME_HEADER_SIZE + f.length;
        if (c->is_server)
            server_on_frame(c, &f, p + NET_FRAME_HEADER_SIZE);
        else
            client_on_frame(c, &f, p + NET_FRAME_HEADER_SIZE);
    }
    if (c->state == CONN_CLOSING)
        return;
    memmove(c->stage, c->stage + off, c->stage_len - off);
    c->stage_len -= off;
}

static void
conn_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct net_conn *c = s->data;

    UNUSED(b);
    c->env->activity++;
    if (nread == 0 || c->state == CONN_CLOSING)
        return;
    if (nread < 0) {
        if (nread == UV_EOF)
            conn_close(c, SPATE_ECONNLOST, "%s closed the connection", c->peer);
        else
            conn_close(c, SPATE_ECONNLOST, "connection to %s failed: %s", c->peer,
                       uv_strerror((int)nread));
        return;
    }
    if (c->rx_mode == RX_STAGE) {
        c->stage_len += (uint32_t)nread;
        conn_process_stage(c);
        return;
    }
    c->rx_have += (uint32_t)nread;
    if (c->rx_have == c->rx.length)
        client_end_buffer(c);
}

/* ---- connections: life cycle ---- */

static struct net_conn *
conn_new(struct net_env *env, bool is_server)
{
    struct net_conn *c = xcalloc(1, sizeof *c);

    c->env = env;
    c->is_server = is_server;
    c->scratch_size = net_compress_bound((uint32_t)network_buffer_pool_segment_size(env->pool));
    c->scratch = xmalloc(c->scratch_size);
    uv_tcp_init(&env->loop, &c->tcp);
    c->tcp.data = c;
    c->next = env->conns;
    env->conns = c;
    if (is_server)
        atomic_fetch_add_explicit(&env->n_server, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&env->n_client, 1, memory_order_relaxed);
    return c;
}

static void
conn_closed(uv_handle_t *h)
{
    struct net_conn *c = h->data;

    for (int i = 0; i < COMPRESS_SLOTS; i++)
        free(c->slots[i].data);
    id_map_release(&c->readers);
    id_map_release(&c->channels);
    free(c->scratch);
    free(c);
}

static void
conn_close(struct net_conn *c, int code, const char *fmt, ...)
{
    struct net_env *env = c->env;
    char why[SPATE_ERROR_MESSAGE_MAX];
    va_list ap;

    if (c->state == CONN_CLOSING)
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (code == SPATE_EPROTO)
        SPATE_LOG_WARN(NET_LOG, "%s", why);
    else if (!env->stopping)
        SPATE_LOG_INFO(NET_LOG, "%s", why);
    if (code == SPATE_EPROTO)
        atomic_fetch_add_explicit(&env->n_dropped, 1, memory_order_relaxed);
    c->state = CONN_CLOSING;
    for (struct net_conn **p = &env->conns; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    if (c->is_server) {
        /* Every reader's consumer is gone: their partitions fail. */
        for (uint32_t i = 0; i < c->readers.cap; i++) {
            struct net_reader *r = c->readers.vals[i];

            if (r != NULL && r != TOMBSTONE) {
                char reason[SPATE_ERROR_MESSAGE_MAX + 128];

                snprintf(reason, sizeof reason, "its consumer at %s went away (%s)", c->peer, why);
                reader_release(r, SPATE_ECONNLOST, reason);
            }
        }
        while (c->ready_head != NULL) {
            struct net_reader *r = c->ready_head;

            c->ready_head = r->ready_next;
            r->in_ready = false;
            reader_try_free(r);
        }
        c->ready_tail = NULL;
        atomic_fetch_sub_explicit(&env->n_server, 1, memory_order_relaxed);
    } else {
        while (c->pending != NULL) {
            struct input_channel *ch = c->pending;

            c->pending = ch->rnext;
            ch->rstate = REMOTE_IDLE; /* not in the map yet */
            channel_fail(ch, SPATE_ECONNLOST, why);
        }
        for (uint32_t i = 0; i < c->channels.cap; i++) {
            struct input_channel *ch = c->channels.vals[i];

            if (ch != NULL && ch != TOMBSTONE)
                channel_fail(ch, SPATE_ECONNLOST, why);
        }
        if (c->rx_buf != NULL)
            net_buffer_recycle(c->rx_buf);
        c->rx_buf = NULL;
        atomic_fetch_sub_explicit(&env->n_client, 1, memory_order_relaxed);
    }
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void
server_on_connection(uv_stream_t *server, int status)
{
    struct net_env *env = server->data;
    struct sockaddr_storage ss;
    int len = sizeof ss;
    struct net_conn *c;
    char host[64] = "?";

    if (status < 0) {
        SPATE_LOG_WARN(NET_LOG, "data port: accept failed: %s", uv_strerror(status));
        return;
    }
    c = conn_new(env, true);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c, SPATE_ECONNLOST, "accept failed");
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof host);
            snprintf(c->peer, sizeof c->peer, "%s:%d", host,
                     ntohs(((struct sockaddr_in *)&ss)->sin_port));
        } else {
            uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof host);
            snprintf(c->peer, sizeof c->peer, "[%s]:%d", host,
                     ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
        }
    }
    c->state = CONN_HANDSHAKE;
    uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_on_read);
}

static void
client_on_connect(uv_connect_t *req, int status)
{
    struct net_conn *c = req->handle->data;
    uv_buf_t buf;

    if (status == UV_ECANCELED || c->state == CONN_CLOSING)
        return;
    if (status < 0) {
        conn_close(c, SPATE_ECONNLOST, "cannot connect to %s: %s", c->peer, uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->state = CONN_HANDSHAKE;
    handshake_encode_hello(&c->env->hs, c->hs_out);
    buf = uv_buf_init((char *)c->hs_out, HANDSHAKE_SIZE);
    uv_write(&c->hs_req, (uv_stream_t *)&c->tcp, &buf, 1, NULL);
    uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_on_read);
}

static int
resolve(const char *host, int port, struct sockaddr_storage *ss)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
    char service[16];

    if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0)
        return 0;
    if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0)
        return 0;
    /* A host name: resolved here, on the I/O thread, once per connection. */
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(host, service, &hints, &res) != 0)
        return SPATE_ENOENT;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static struct net_conn *
client_conn_get(struct net_env *env, struct input_channel *ch)
{
    struct sockaddr_storage ss;
    struct net_conn *c;
    int rc;

    for (c = env->conns; c != NULL; c = c->next)
        if (!c->is_server && c->state != CONN_CLOSING && strcmp(c->peer, ch->peer) == 0)
            return c;
    c = conn_new(env, false);
    snprintf(c->peer, sizeof c->peer, "%s", ch->peer);
    c->state = CONN_CONNECTING;
    rc = resolve(ch->host, ch->port, &ss);
    if (rc == 0)
        rc = uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&ss, client_on_connect);
    if (rc != 0) {
        conn_close(c, SPATE_ECONNLOST, "cannot connect to %s: %s", c->peer,
                   rc == SPATE_ENOENT ? "unknown host" : uv_strerror(rc));
        return NULL;
    }
    return c;
}

static void
channel_start(struct net_env *env, struct input_channel *ch)
{
    struct net_conn *c = client_conn_get(env, ch);

    if (c == NULL) {
        channel_fail(ch, SPATE_ECONNREFUSED, "cannot connect");
        return;
    }
    ch->conn = c;
    ch->receiver = c->next_receiver++;
    if (c->next_receiver == NET_RECEIVER_NONE)
        c->next_receiver = 0;
    ch->first_request_ms = clock_mono_ms();
    ch->rbackoff_ms = 0;
    if (c->state == CONN_ACTIVE) {
        id_map_put(&c->channels, ch->receiver, ch);
        channel_send_request(c, ch);
        return;
    }
    id_map_put(&c->channels, ch->receiver, ch);
    ch->rstate = REMOTE_CONNECTING;
    ch->rnext = c->pending;
    c->pending = ch;
}

void
net_env_gate_start(struct net_env *env, struct input_gate *g)
{
    for (uint32_t i = 0; i < g->num_channels; i++)
        if (g->channels[i].kind == CHANNEL_REMOTE)
            channel_start(env, &g->channels[i]);
}

static void
channel_detach(struct input_channel *ch)
{
    struct net_conn *c = ch->conn;

    if (c != NULL && c->state == CONN_ACTIVE &&
        (ch->rstate == REMOTE_REQUESTED || ch->rstate == REMOTE_BACKOFF)) {
        struct net_frame f = { .type = NET_MSG_CANCEL_REQUEST, .receiver = ch->receiver };

        conn_send_ctl(c, &f, NULL, 0);
    }
    if (ch->rstate != REMOTE_DONE && ch->rstate != REMOTE_IDLE)
        channel_forget(ch);
}

static void
net_env_announce_credit(struct net_env *env, struct input_channel *ch)
{
    uint32_t credit = input_gate_take_unannounced(ch);

    UNUSED(env);
    if (credit > 0 && ch->rstate == REMOTE_REQUESTED && ch->conn != NULL) {
        struct net_frame f = { .type = NET_MSG_ADD_CREDIT, .receiver = ch->receiver, .a = credit };

        conn_send_ctl(ch->conn, &f, NULL, 0);
    }
}

/* ---- the I/O thread's mailbox ---- */

static void
env_stop(struct net_env *env)
{
    env->stopping = true;
    while (env->conns != NULL)
        conn_close(env->conns, SPATE_ECONNLOST, "network environment shutting down");
    uv_close((uv_handle_t *)&env->server, NULL);
    uv_timer_stop(&env->retry_timer);
    uv_close((uv_handle_t *)&env->retry_timer, NULL);
    mailbox_close(&env->mailbox, NULL);
}

static void
env_deliver(struct mailbox *mb, struct mpsc_node *node)
{
    struct net_env *env = mb->data;
    struct net_cmd *cmd = container_of(node, struct net_cmd, node);

    env->activity++;
    switch (cmd->kind) {
    case NET_CMD_READER_AVAILABLE: {
        struct net_reader *r = container_of(cmd, struct net_reader, cmd);

        /* release: a notify after this store posts again */
        atomic_store_explicit(&r->queued, false, memory_order_release);
        if (r->released) {
            reader_try_free(r);
        } else if (r->conn->state == CONN_ACTIVE) {
            reader_make_ready(r);
            server_pump(r->conn);
        }
        break;
    }
    case NET_CMD_ANNOUNCE_CREDIT:
        net_env_announce_credit(env, container_of(cmd, struct input_channel, credit_cmd));
        break;
    case NET_CMD_GATE_START: {
        struct net_cmd_gate *gc = container_of(cmd, struct net_cmd_gate, base);

        net_env_gate_start(env, gc->gate);
        free(gc);
        break;
    }
    case NET_CMD_GATE_DETACH: {
        struct net_cmd_gate *gc = container_of(cmd, struct net_cmd_gate, base);

        for (uint32_t i = 0; i < gc->gate->num_channels; i++)
            if (gc->gate->channels[i].kind == CHANNEL_REMOTE)
                channel_detach(&gc->gate->channels[i]);
        uv_sem_post(gc->done); /* gc lives on the waiting thread's stack */
        break;
    }
    case NET_CMD_STOP:
        env_stop(env);
        break;
    }
}

void
net_env_post(struct net_env *env, struct net_cmd *cmd)
{
    mailbox_post(&env->mailbox, &cmd->node);
}

void
net_env_gate_detach(struct net_env *env, struct input_gate *g)
{
    struct net_cmd_gate cmd = { .base.kind = NET_CMD_GATE_DETACH, .gate = g };
    uv_sem_t done;

    uv_sem_init(&done, 0);
    cmd.done = &done;
    net_env_post(env, &cmd.base);
    uv_sem_wait(&done);
    uv_sem_destroy(&done);
}

/* ---- the environment ---- */

int
net_env_config_load(const struct config *conf, struct net_env_config *cfg, spate_error *err)
{
    struct config *empty = NULL;
    uint64_t segment, network;
    int64_t i, initial, max;
    const char *port;
    int codec, lo, hi, rc;

    if (conf == NULL)
        conf = empty = config_new();
    memset(cfg, 0, sizeof *cfg);
    if ((rc = config_get_memory_bytes(conf, CFG(TASKMANAGER_MEMORY_SEGMENT_SIZE), &segment, err)) !=
            0 ||
        (rc = config_get_memory_bytes(conf, CFG(TASKMANAGER_MEMORY_NETWORK_MAX), &network, err)) !=
            0)
        goto out;
    cfg->segment_size = segment;
    cfg->num_buffers = network / segment;
    if (cfg->num_buffers == 0) {
        rc = spate_error_set(err, SPATE_ECONFIG,
                             "taskmanager.memory.network.max holds no "
                             "buffer of taskmanager.memory.segment-size");
        goto out;
    }
    if ((rc = config_get_int(conf, CFG(TASKMANAGER_NETWORK_BUFFERS_PER_CHANNEL), &i, err)) != 0)
        goto out;
    cfg->buffers_per_channel = (uint32_t)i;
    if ((rc = config_get_int(conf, CFG(TASKMANAGER_NETWORK_FLOATING_BUFFERS_PER_GATE), &i, err)) !=
        0)
        goto out;
    cfg->floating_per_gate = (uint32_t)i;
    if ((rc = config_get_duration_ms(conf, CFG(TASKMANAGER_NETWORK_REQUEST_BACKOFF_INITIAL),
                                     &initial, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(TASKMANAGER_NETWORK_REQUEST_BACKOFF_MAX), &max,
                                     err)) != 0)
        goto out;
    cfg->backoff_initial_ms = (uint64_t)initial;
    cfg->backoff_max_ms = (uint64_t)max;
    if ((rc = config_get_enum(conf, CFG(TASKMANAGER_NETWORK_COMPRESSION_CODEC), &codec, err)) != 0)
        goto out;
    cfg->lz4 = codec == 1;
    if ((rc = config_get_duration_ms(conf, CFG(TASKMANAGER_NETWORK_BUSY_POLL), &i, err)) != 0)
        goto out;
    {
        const char *value, *origin;
        int64_t ns = 0;

        /* checked above; read again for its microseconds */
        config_effective(conf, CFG(TASKMANAGER_NETWORK_BUSY_POLL), &value, &origin);
        config_parse_duration_ns(value, &ns, NULL);
        cfg->busy_poll_ns = (uint64_t)ns;
    }
    if ((rc = config_get_string(conf, CFG(TASKMANAGER_BIND_HOST), &cfg->bind_host, err)) != 0 ||
        (rc = config_get_string(conf, CFG(TASKMANAGER_DATA_PORT), &port, err)) != 0)
        goto out;
    if ((rc = config_parse_port_range(port, &lo, &hi, err)) != 0) {
        spate_error_wrap(err, "config key 'taskmanager.data.port'");
        goto out;
    }
    cfg->port = lo;
    cfg->secret = config_lookup(conf, CFG(SECURITY_RPC_SECRET)->key);
    cfg->cluster_id = "/default";
    if (empty != NULL) {
        /* Strings from the defaults table stay valid; set ones would not. */
        cfg->bind_host = config_options[CONFIG_TASKMANAGER_BIND_HOST].default_value;
        cfg->secret = NULL;
    }
out:
    config_free(empty);
    return rc;
}

/* After an event the loop keeps polling without blocking (yielding the core
 * between polls) for busy_poll_ns before it sleeps in epoll again: the next
 * buffer or credit usually comes soon, and a sleeping thread's wake-up is
 * most of a record's latency at low load. An idle loop sleeps. */
static void
env_thread(void *arg)
{
    struct net_env *env = arg;
    uint64_t no_spin_until = 0;

    log_set_thread_name("net-io");
    while (uv_run(&env->loop, UV_RUN_ONCE) != 0) {
        uint64_t now = clock_mono_ns(), seen = env->activity, before;
        uint64_t until = now < no_spin_until ? now : now + env->cfg.busy_poll_ns;

        if (now >= until || env->stopping)
            continue;
        /* While it polls, tasks' posts need no eventfd write to wake it. */
        mailbox_set_polling(&env->mailbox, true);
        while (now < until && !env->stopping) {
            if (uv_run(&env->loop, UV_RUN_NOWAIT) == 0)
                return;
            if (!env->stopping)
                mailbox_poll(&env->mailbox);
            if (env->activity != seen) {
                seen = env->activity;
                until = clock_mono_ns() + env->cfg.busy_poll_ns;
            } else {
                sched_yield();
            }
            before = now;
            now = clock_mono_ns();
            if (now - before > NOTIFIER_PREEMPTED_NS) {
                /* Lost the core to someone else: sleep in epoll for a while,
                 * where a wake-up preempts (see notifier.c). */
                no_spin_until = now + NOTIFIER_NO_SPIN_NS;
                break;
            }
        }
        if (!env->stopping)
            mailbox_set_polling(&env->mailbox, false);
    }
}

int
net_env_new(const struct net_env_config *cfg, struct net_env **out, spate_error *err)
{
    struct net_env *env = xcalloc(1, sizeof *env);
    struct sockaddr_storage ss;
    struct sigaction pipe_action;
    int len = sizeof ss, rc;

    /* A peer that goes away while a buffer is being written must be an EPIPE
     * on that connection, not a SIGPIPE that ends the TaskManager. libuv
     * writes with writev(2), so the signal itself has to go; a process that
     * installed its own handler keeps it. */
    if (sigaction(SIGPIPE, NULL, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);

    env->cfg = *cfg;
    env->cfg.bind_host = xstrdup(cfg->bind_host ? cfg->bind_host : "127.0.0.1");
    env->cfg.cluster_id = xstrdup(cfg->cluster_id ? cfg->cluster_id : "/default");
    env->cfg.secret = cfg->secret ? xstrdup(cfg->secret) : NULL;
    env->cfg.name = xstrdup(cfg->name ? cfg->name : "");
    if (env->cfg.buffers_per_channel == 0)
        env->cfg.buffers_per_channel = 2;
    env->hs.magic = HANDSHAKE_MAGIC_DATA;
    env->hs.cluster_id = env->cfg.cluster_id;
    env->hs.secret = env->cfg.secret;
    result_partition_manager_init(env);
    rc = network_buffer_pool_new(cfg->segment_size, cfg->num_buffers, &env->pool, err);
    if (rc != 0)
        goto fail_pool;
    uv_loop_init(&env->loop);
    mailbox_init(&env->loop, &env->mailbox, env_deliver);
    env->mailbox.data = env;
    uv_timer_init(&env->loop, &env->retry_timer);
    env->retry_timer.data = env;
    uv_tcp_init(&env->loop, &env->server);
    env->server.data = env;
    rc = resolve(env->cfg.bind_host, cfg->port, &ss);
    if (rc != 0) {
        spate_error_set(err, rc, "cannot resolve the data port's bind host '%s'",
                        env->cfg.bind_host);
        goto fail_bind;
    }
    if ((rc = uv_tcp_bind(&env->server, (struct sockaddr *)&ss, 0)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&env->server, 128, server_on_connection)) != 0) {
        rc = spate_error_set(err, rc == UV_EADDRINUSE ? SPATE_EADDRINUSE : SPATE_EIO,
                             "cannot listen on data port %s:%d: %s", env->cfg.bind_host, cfg->port,
                             uv_strerror(rc));
        goto fail_bind;
    }
    uv_tcp_getsockname(&env->server, (struct sockaddr *)&ss, &len);
    env->port = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                        : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    rc = uv_thread_create(&env->thread, env_thread, env);
    if (rc != 0) {
        spate_error_set(err, SPATE_EIO, "cannot start the network I/O thread: %s", uv_strerror(rc));
        rc = SPATE_EIO;
        goto fail_bind;
    }
    SPATE_LOG_INFO(NET_LOG, "%s%sdata port %s:%d, %zu buffers of %zu bytes%s", env->cfg.name,
                   env->cfg.name[0] ? ": " : "", env->cfg.bind_host, env->port, cfg->num_buffers,
                   cfg->segment_size, cfg->lz4 ? ", lz4" : "");
    *out = env;
    return 0;

fail_bind:
    env->stopping = true;
    uv_close((uv_handle_t *)&env->server, NULL);
    uv_close((uv_handle_t *)&env->retry_timer, NULL);
    mailbox_close(&env->mailbox, NULL);
    uv_run(&env->loop, UV_RUN_DEFAULT);
    uv_loop_close(&env->loop);
    network_buffer_pool_free(env->pool);
fail_pool:
    result_partition_manager_release(env);
    free((char *)env->cfg.bind_host);
    free((char *)env->cfg.cluster_id);
    free((char *)env->cfg.secret);
    free((char *)env->cfg.name);
    free(env);
    return rc;
}

void
net_env_free(struct net_env *env)
{
    struct net_cmd stop = { .kind = NET_CMD_STOP };

    if (env == NULL)
        return;
    net_env_post(env, &stop);
    uv_thread_join(&env->thread);
    if (uv_loop_close(&env->loop) != 0)
        SPATE_LOG_ERROR(NET_LOG, "network loop closed with handles open");
    result_partition_manager_clear(env);
    network_buffer_pool_free(env->pool);
    result_partition_manager_release(env);
    free((char *)env->cfg.bind_host);
    free((char *)env->cfg.cluster_id);
    free((char *)env->cfg.secret);
    free((char *)env->cfg.name);
    free(env);
}

int
net_env_data_port(const struct net_env *env)
{
    return env->port;
}

uint64_t
net_env_busy_poll_ns(const struct net_env *env)
{
    return env->cfg.busy_poll_ns;
}

void
net_env_stats(struct net_env *env, struct net_env_stats *st)
{
    st->buffers_total = network_buffer_pool_total(env->pool);
    st->buffers_available = network_buffer_pool_available(env->pool);
    st->client_connections = atomic_load_explicit(&env->n_client, memory_order_relaxed);
    st->server_connections = atomic_load_explicit(&env->n_server, memory_order_relaxed);
    st->connections_dropped = atomic_load_explicit(&env->n_dropped, memory_order_relaxed);
    st->partitions = result_partition_manager_count(env);
}
