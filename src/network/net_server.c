/* The server side of data connections (net_int.h): a remote consumer's
 * partition requests attach readers to local subpartitions, whose buffers are
 * written out (lz4 when it pays) as the consumer's credit allows; accepting
 * connections on the data port. Runs on the network I/O thread, but for
 * reader_notify (producers' task threads). */
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "network/net_int.h"

/* Bytes a connection may have queued for writing before its readers wait:
 * enough to keep the socket busy, little enough to stay fair. */
#define PUMP_LIMIT_SEGMENTS 8
/* Buffers written by one writev at most. */
#define PUMP_BATCH 8

/* A remote consumer's reader of one subpartition. */
struct net_reader {
    struct subpartition_reader base;
    struct net_cmd cmd;  /* READER_AVAILABLE */
    _Atomic bool queued; /* cmd is in the mailbox (set by producers, cleared here) */
    struct net_conn *conn;
    struct result_subpartition *sp;
    struct hmap_node node; /* in conn->readers until released */
    uint32_t receiver;
    int32_t credit;
    uint32_t seq;
    bool in_ready;
    bool released;
    struct net_reader *ready_next;
};

static void server_pump(struct net_conn *c);

static struct net_reader *
reader_find(struct net_conn *c, uint32_t receiver)
{
    struct hmap_node *node;

    HMAP_FOR_EACH_WITH_HASH(node, hmap_hash_u64(receiver), &c->readers)
    {
        struct net_reader *r = container_of(node, struct net_reader, node);

        if (r->receiver == receiver)
            return r;
    }
    return NULL;
}

/* ---- readers ---- */

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
    hmap_remove(&r->conn->readers, &r->node);
    /* After this no producer notifies r: its queued post is the last. */
    result_subpartition_release_reader(r->sp, code, why);
    reader_try_free(r);
}

/* The buffers one uv_write sends (a writev of their headers and bodies):
 * the first one's write_req is the write's, the others chained to it by
 * next. */
struct write_batch {
    struct net_buffer *first, *last;
    uv_buf_t bufs[2 * PUMP_BATCH];
    unsigned nbufs;
};

static void
buffer_written(uv_write_t *req, int status)
{
    struct net_buffer *buf = container_of(req, struct net_buffer, write_req);
    struct net_conn *c = buf->write_ctx;

    while (buf != NULL) {
        struct net_buffer *next = buf->next;

        c->bytes_in_flight -= buf->size + NET_FRAME_HEADER_SIZE;
        net_buffer_recycle(buf);
        buf = next;
    }
    if (status < 0 && status != UV_ECANCELED)
        net_conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(status));
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
        net_conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(status));
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

    for (int i = 0; i < NET_COMPRESS_SLOTS && s == NULL; i++)
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
    n = net_conn_write(c, &s->req, bufs, 2, slot_written);
    if (n != 0) {
        s->busy = false;
        c->bytes_in_flight -= s->len + NET_FRAME_HEADER_SIZE;
        net_conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(n));
    }
    return true;
}

/* Writes the batch's buffers out, if any. */
static void
batch_flush(struct net_conn *c, struct write_batch *b)
{
    struct net_buffer *first = b->first;
    int rc;

    if (first == NULL)
        return;
    b->first = b->last = NULL;
    first->write_ctx = c;
    rc = c->state == CONN_ACTIVE
             ? net_conn_write(c, &first->write_req, b->bufs, b->nbufs, buffer_written)
             : UV_ECANCELED;
    b->nbufs = 0;
    if (rc != 0) {
        while (first != NULL) {
            struct net_buffer *next = first->next;

            c->bytes_in_flight -= first->size + NET_FRAME_HEADER_SIZE;
            net_buffer_recycle(first);
            first = next;
        }
        if (c->state == CONN_ACTIVE)
            net_conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(rc));
    }
}

/* Adds a buffer (its frame header encoded) to the batch, which goes out
 * when full. */
static void
batch_add(struct net_conn *c, struct write_batch *b, struct net_buffer *buf)
{
    buf->next = NULL;
    if (b->first == NULL)
        b->first = buf;
    else
        b->last->next = buf;
    b->last = buf;
    b->bufs[b->nbufs++] = uv_buf_init((char *)buf->header, NET_FRAME_HEADER_SIZE);
    if (buf->size > 0)
        b->bufs[b->nbufs++] = uv_buf_init((char *)buf->data, buf->size);
    c->bytes_in_flight += buf->size + NET_FRAME_HEADER_SIZE;
    if (b->nbufs > 2 * PUMP_BATCH - 2)
        batch_flush(c, b);
}

static void
send_buffer(struct net_conn *c, struct write_batch *b, struct net_reader *r, struct net_buffer *buf,
            uint32_t backlog)
{
    struct net_frame f = { .type = NET_MSG_BUFFER,
                           .receiver = r->receiver,
                           .a = r->seq++,
                           .b = (int32_t)MIN(backlog, (uint32_t)INT32_MAX),
                           .length = buf->size };

    if (buf->type == NET_BUFFER_EVENT) {
        f.flags = NET_FLAG_EVENT;
    } else if (c->env->cfg.lz4 && buf->size > 0) {
        batch_flush(c, b); /* in order: what the batch holds goes first */
        if (c->state != CONN_ACTIVE) {
            net_buffer_recycle(buf);
            return;
        }
        if (send_compressed(c, &f, buf))
            return;
    }
    net_frame_encode(&f, buf->header);
    batch_add(c, b, buf);
}

/* Writes what the ready readers have and their credit allows, round-robin
 * one buffer at a time, until the socket's queue is deep enough: up to
 * PUMP_BATCH buffers a writev. */
static void
server_pump(struct net_conn *c)
{
    size_t limit = PUMP_LIMIT_SEGMENTS * network_buffer_pool_segment_size(c->env->pool);
    struct write_batch b = { 0 };

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
            batch_flush(c, &b); /* the buffers before the error first */
            net_conn_send_error(c, r->receiver, rc, err.message);
            reader_release(r, rc, err.message);
            continue;
        }
        if (rc == 0)
            continue; /* waits for credit or data: a post or ADD_CREDIT brings it back */
        eop = buf->type == NET_BUFFER_EVENT &&
              net_buffer_event_type(buf) == NET_EVENT_END_OF_PARTITION;
        if (buf->type == NET_BUFFER_DATA)
            r->credit--;
        send_buffer(c, &b, r, buf, backlog);
        if (eop) {
            reader_release(r, 0, NULL);
            continue;
        }
        if (more && (r->credit > 0 || next_is_event))
            reader_make_ready(r);
    }
    batch_flush(c, &b);
}

static void
server_on_request(struct net_conn *c, const struct net_frame *f, const uint8_t *body)
{
    struct net_reader *r;
    struct result_partition_id pid;
    spate_error err;
    int rc;

    if (reader_find(c, f->receiver) != NULL) {
        net_conn_close(c, SPATE_EPROTO,
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
    hmap_insert(&c->readers, &r->node, hmap_hash_u64(f->receiver));
    rc = result_partition_manager_attach(c->env, &pid, f->a, &r->base, &r->sp, &err);
    if (rc == 0) {
        SPATE_LOG_DEBUG(NET_LOG, "%s reads partition %s subpartition %u (credit %d)", c->peer,
                        result_partition_id_str(&pid).s, f->a, f->b);
        return;
    }
    hmap_remove(&c->readers, &r->node);
    free(r); /* never attached: nobody can have posted it */
    if (rc == SPATE_ENOENT) {
        struct net_frame nf = { .type = NET_MSG_PARTITION_NOT_FOUND, .receiver = f->receiver };

        net_conn_send_ctl(c, &nf, NULL, 0);
    } else {
        net_conn_send_error(c, f->receiver, rc, err.message);
    }
}

void
net_server_on_frame(struct net_conn *c, const struct net_frame *f, const uint8_t *body)
{
    struct net_reader *r = reader_find(c, f->receiver);

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

/* ---- connections from remote consumers ---- */

void
net_server_handshake(struct net_conn *c, const uint8_t *hello)
{
    enum handshake_status st;
    spate_error err;
    uv_buf_t buf;

    if (handshake_check_hello(&c->env->hs, &c->nonces, hello, &st, &err) != 0) {
        SPATE_LOG_LIMITED(&c->env->refusals, LOG_LEVEL_WARN, NET_LOG,
                          "dropping data connection from %s: %s", c->peer, err.message);
        handshake_encode_reply(&c->env->hs, &c->nonces, st, err.message, c->hs_reply);
        c->close_after_handshake = true;
    } else {
        handshake_encode_reply(&c->env->hs, &c->nonces, HANDSHAKE_OK, NULL, c->hs_reply);
        c->state = CONN_ACTIVE;
    }
    buf = uv_buf_init((char *)c->hs_reply, HANDSHAKE_SIZE);
    net_conn_write(c, &c->hs_reply_req, &buf, 1, NULL);
    if (c->close_after_handshake)
        net_conn_close(c, SPATE_EPROTO, "handshake refused");
}

void
net_server_sweep(uv_timer_t *t)
{
    struct net_env *env = t->data;
    uint64_t now = uv_now(&env->loop);
    struct net_conn *c, *next;

    for (c = env->conns; c != NULL; c = next) {
        next = c->next;
        if (c->is_server && c->state == CONN_HANDSHAKE &&
            now - c->accepted_ms > (uint64_t)env->cfg.handshake_timeout_ms)
            net_conn_close(c, SPATE_EPROTO,
                           "dropping data connection from %s: no handshake within %lld ms "
                           "(cluster.connections.handshake-timeout)",
                           c->peer, (long long)env->cfg.handshake_timeout_ms);
    }
}

static size_t
server_ip_len(const char *peer)
{
    const char *colon = strrchr(peer, ':');

    return colon != NULL ? (size_t)(colon - peer) : strlen(peer);
}

/* Why c may not stay (NULL: it may); makes room among connections still in
 * their handshake by closing the oldest (a peer that opens many and says
 * nothing cannot keep a real one out). */
static const char *
server_over_cap(struct net_env *env, struct net_conn *c, char *why, size_t cap)
{
    size_t iplen = server_ip_len(c->peer);
    int open = 0, from_peer = 0, handshaking = 0;
    struct net_conn *o, *oldest = NULL;

    for (;;) {
        open = from_peer = handshaking = 0;
        oldest = NULL;
        for (o = env->conns; o != NULL; o = o->next) {
            if (!o->is_server || o == c)
                continue;
            open++;
            if (server_ip_len(o->peer) == iplen && strncmp(o->peer, c->peer, iplen) == 0)
                from_peer++;
            if (o->state == CONN_HANDSHAKE) {
                handshaking++;
                if (oldest == NULL || o->accepted_ms <= oldest->accepted_ms)
                    oldest = o;
            }
        }
        if (handshaking < env->cfg.max_handshaking || oldest == NULL)
            break;
        net_conn_close(oldest, SPATE_EPROTO,
                       "dropping data connection from %s: %d connections are in their "
                       "handshake (the most kept); this one is the oldest",
                       oldest->peer, env->cfg.max_handshaking);
    }
    if (open >= env->cfg.max_connections) {
        snprintf(why, cap, "busy: %d data connections open (cluster.connections.max)", open);
        return why;
    }
    if (from_peer >= env->cfg.max_connections_per_peer) {
        snprintf(why, cap, "busy: %d data connections from %.*s (cluster.connections.max-per-peer)",
                 from_peer, (int)iplen, c->peer);
        return why;
    }
    return NULL;
}

void
net_server_on_connection(uv_stream_t *server, int status)
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
    c = net_conn_new(env, true);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        net_conn_close(c, SPATE_ECONNLOST, "accept failed");
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
    c->accepted_ms = uv_now(&env->loop);
    {
        char why[128];
        const char *busy = server_over_cap(env, c, why, sizeof why);
        uv_buf_t buf = uv_buf_init((char *)c->hs_out, HANDSHAKE_SIZE);

        handshake_encode_challenge(&env->hs, &c->nonces, busy ? HANDSHAKE_BUSY : HANDSHAKE_OK, busy,
                                   c->hs_out);
        net_conn_write(c, &c->hs_req, &buf, 1, NULL);
        if (busy != NULL) {
            net_conn_close(c, SPATE_EPROTO, "refused data connection from %s: %s", c->peer, busy);
            return;
        }
    }
    net_conn_read_start(c);
}

void
net_server_conn_closing(struct net_conn *c, const char *why)
{
    struct hmap_node *node;

    /* Every reader's consumer is gone: their partitions fail. Releasing a
     * reader takes it out of the map. */
    while ((node = hmap_first(&c->readers)) != NULL) {
        struct net_reader *r = container_of(node, struct net_reader, node);
        char reason[SPATE_ERROR_MESSAGE_MAX + 128];

        snprintf(reason, sizeof reason, "its consumer at %s went away (%s)", c->peer, why);
        reader_release(r, SPATE_ECONNLOST, reason);
    }
    while (c->ready_head != NULL) {
        struct net_reader *r = c->ready_head;

        c->ready_head = r->ready_next;
        r->in_ready = false;
        reader_try_free(r);
    }
    c->ready_tail = NULL;
}

void
net_server_reader_available(struct net_cmd *cmd)
{
    struct net_reader *r = container_of(cmd, struct net_reader, cmd);

    /* release: a notify after this store posts again */
    atomic_store_explicit(&r->queued, false, memory_order_release);
    if (r->released) {
        reader_try_free(r);
    } else if (r->conn->state == CONN_ACTIVE) {
        reader_make_ready(r);
        server_pump(r->conn);
    }
}
