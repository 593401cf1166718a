/* Connections (rpc_int.h): TCP with the handshake, frame reading, coalesced
 * writes (all frames queued during a loop turn leave in one write), and the
 * in-process transport, which runs the same frame code minus the socket.
 * Loop thread only. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/rpc_int.h"

#define CONN_READ_MIN 4096
#define CONN_BUF_KEEP (256 * 1024) /* larger idle buffers are given back */

static struct rpc_conn *
conn_new(struct rpc_service *svc, bool outgoing, const char *peer)
{
    struct rpc_conn *c = xcalloc(1, sizeof *c);

    c->svc = svc;
    c->outgoing = outgoing;
    c->refs = 1; /* the service's, dropped when the handle has closed */
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    list_init(&c->calls);
    list_init(&c->dirty_node);
    list_init(&c->hs_node);
    list_push_back(&svc->conns, &c->all_node);
    c->tcp.data = c;
    return c;
}

void
conn_ref(struct rpc_conn *c)
{
    c->refs++;
}

static size_t conn_ip_len(const char *peer);

struct log_ratelimit *
conn_access_limit(struct rpc_conn *c)
{
    struct rpc_service *svc = c->svc;
    struct rpc_access_limit *a;
    struct hmap_node *n;
    char ip[sizeof a->ip];
    uint64_t h;

    if (c->access != NULL)
        return &c->access->rl;
    snprintf(ip, sizeof ip, "%.*s", (int)conn_ip_len(c->peer), c->peer);
    h = hmap_hash_string(ip);
    HMAP_FOR_EACH_WITH_HASH(n, h, &svc->access_limits)
    {
        a = container_of(n, struct rpc_access_limit, node);
        if (strcmp(a->ip, ip) == 0)
            goto found;
    }
    a = xcalloc(1, sizeof *a);
    a->rl.burst = RPC_ACCESS_BURST;
    snprintf(a->ip, sizeof a->ip, "%s", ip);
    hmap_insert(&svc->access_limits, &a->node, h);
found:
    a->refs++;
    c->access = a;
    return &a->rl;
}

/* The peer's last connection is gone: what its limiter dropped since its
 * last line is said now, not at a next line that may never come. */
static void
conn_access_free(struct rpc_service *svc, struct rpc_access_limit *a)
{
    int dropped = atomic_load_explicit(&a->rl.suppressed, memory_order_relaxed);

    if (dropped > 0)
        SPATE_LOG_INFO("rpc",
                       "access: %d lines of controls from %s were not logged (at most %d per "
                       "%d s from one peer)",
                       dropped, a->ip, RPC_ACCESS_BURST, LOG_RATELIMIT_WINDOW_MS / 1000);
    hmap_remove(&svc->access_limits, &a->node);
    free(a);
}

void
conn_access_release_all(struct rpc_service *svc)
{
    struct hmap_node *n;

    while ((n = hmap_first(&svc->access_limits)) != NULL)
        conn_access_free(svc, container_of(n, struct rpc_access_limit, node));
    hmap_release(&svc->access_limits);
}

void
conn_unref(struct rpc_conn *c)
{
    if (--c->refs > 0)
        return;
    free(c->rbuf);
    free(c->obuf);
    free(c->wbuf);
    free(c);
}

bool
conn_usable(const struct rpc_conn *c)
{
    return c->state != CONN_CLOSED && c->state != CONN_CLOSING;
}

/* Keeps svc->buffered, the read buffers of incoming connections, current. */
static void
conn_account(struct rpc_conn *c)
{
    if (c->outgoing || c->local)
        return;
    c->svc->buffered = c->svc->buffered - c->counted + c->rcap;
    c->counted = c->rcap;
}

/* ---- output ------------------------------------------------------------------ */

uint8_t *
conn_reserve(struct rpc_conn *c, size_t n)
{
    if (c->ocap - c->olen < n) {
        size_t cap = c->ocap ? c->ocap : 4096;

        while (cap - c->olen < n)
            cap *= 2;
        c->obuf = xrealloc(c->obuf, cap);
        c->ocap = cap;
    }
    return c->obuf + c->olen;
}

void
conn_commit(struct rpc_conn *c, size_t n)
{
    c->olen += n;
    if (!list_linked(&c->dirty_node) && c->state != CONN_CLOSED)
        list_push_back(&c->svc->dirty, &c->dirty_node);
}

static void conn_process(struct rpc_conn *c);
static void conn_really_close(struct rpc_conn *c);

static void
conn_on_write(uv_write_t *req, int status)
{
    struct rpc_conn *c = req->data;

    c->writing = false;
    c->wlen = 0;
    if (c->state == CONN_CLOSED)
        return;
    if (status < 0) {
        conn_close(c, LOG_LEVEL_INFO, "connection to %s lost: write failed: %s", c->peer,
                   uv_strerror(status));
        return;
    }
    if (c->wcap > CONN_BUF_KEEP) {
        free(c->wbuf);
        c->wbuf = NULL;
        c->wcap = 0;
    }
    if (c->olen > 0 || c->state == CONN_CLOSING) {
        if (!list_linked(&c->dirty_node))
            list_push_back(&c->svc->dirty, &c->dirty_node);
        rpc_service_wake(c->svc);
    }
}

/* One write of everything queued: try it at once; what the socket does not
 * take goes out with uv_write from the swapped buffer. */
static void
conn_write(struct rpc_conn *c)
{
    uv_buf_t buf = uv_buf_init((char *)c->obuf, (unsigned)c->olen);
    uint8_t *tmp;
    size_t tcap;
    int n, rc;

    /* Under TLS every byte is encrypted into a write of its own. */
    n = c->tls != NULL ? UV_EAGAIN : uv_try_write((uv_stream_t *)&c->tcp, &buf, 1);
    if (n == UV_EAGAIN) {
        n = 0;
    } else if (n < 0) {
        conn_close(c, LOG_LEVEL_INFO, "connection to %s lost: %s", c->peer, uv_strerror(n));
        return;
    }
    if ((size_t)n == c->olen) {
        c->olen = 0;
        if (c->ocap > CONN_BUF_KEEP) {
            free(c->obuf);
            c->obuf = NULL;
            c->ocap = 0;
        }
        return;
    }
    tmp = c->wbuf;
    tcap = c->wcap;
    c->wbuf = c->obuf;
    c->wcap = c->ocap;
    c->wlen = c->olen;
    c->obuf = tmp;
    c->ocap = tcap;
    c->olen = 0;
    buf = uv_buf_init((char *)c->wbuf + n, (unsigned)(c->wlen - (size_t)n));
    c->wreq.data = c;
    c->writing = true;
    rc = c->tls != NULL ? tls_stream_write(c->tls, &c->wreq, &buf, 1, conn_on_write)
                        : uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &buf, 1, conn_on_write);
    if (rc != 0) {
        c->writing = false;
        conn_close(c, LOG_LEVEL_INFO, "connection to %s lost: %s", c->peer, uv_strerror(rc));
    }
}

/* The in-process transport: the bytes become the other side's input. */
static void
conn_local_deliver(struct rpc_conn *c)
{
    struct rpc_conn *to = c->local_peer;

    if (to->rcap - to->rlen < c->olen) {
        to->rcap = to->rlen + c->olen;
        to->rbuf = xrealloc(to->rbuf, to->rcap);
    }
    memcpy(to->rbuf + to->rlen, c->obuf, c->olen);
    to->rlen += c->olen;
    c->olen = 0;
    conn_process(to);
}

void
conn_flush_dirty(struct rpc_service *svc)
{
    struct list_node batch;
    struct list_node *n;

    /* What this turn's flush dirties again (the in-process transport's
     * answers) waits for the next turn. */
    if (list_empty(&svc->dirty))
        return;
    batch = svc->dirty;
    batch.next->prev = &batch;
    batch.prev->next = &batch;
    list_init(&svc->dirty);
    while ((n = list_pop_front(&batch)) != NULL) {
        struct rpc_conn *c = container_of(n, struct rpc_conn, dirty_node);

        if (c->state == CONN_CLOSED)
            continue;
        if (c->local) {
            if (c->olen > 0)
                conn_local_deliver(c);
            continue;
        }
        if (c->state == CONN_RESOLVING || c->state == CONN_CONNECTING ||
            c->state == CONN_CHALLENGE || c->writing)
            continue; /* flushed when the challenge is answered or the write completes */
        if (c->olen > 0)
            conn_write(c);
        if (c->state == CONN_CLOSING && c->olen == 0 && !c->writing)
            conn_really_close(c);
    }
}

/* ---- closing ------------------------------------------------------------------ */

static void
conn_on_closed(uv_handle_t *h)
{
    struct rpc_conn *c = h->data;

    tls_stream_free(c->tls); /* after libuv cancelled its writes */
    c->tls = NULL;
    conn_unref(c);
}

static void
conn_really_close(struct rpc_conn *c)
{
    if (!c->outgoing && !c->local) {
        c->svc->buffered -= c->counted;
        c->counted = 0;
        c->svc->n_incoming--;
    }
    c->state = CONN_CLOSED;
    if (c->access != NULL && --c->access->refs == 0)
        conn_access_free(c->svc, c->access);
    c->access = NULL;
    list_remove(&c->dirty_node);
    list_remove(&c->hs_node);
    list_remove(&c->all_node);
    if (c->local) {
        conn_unref(c);
        return;
    }
    uv_close((uv_handle_t *)&c->tcp, conn_on_closed);
}

static void conn_closev(struct rpc_conn *c, int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void
conn_closev(struct rpc_conn *c, int level, const char *fmt, va_list ap)
{
    char reason[SPATE_ERROR_MESSAGE_MAX];
    bool was_pooled;

    if (c->state == CONN_CLOSED)
        return;
    vsnprintf(reason, sizeof reason, fmt, ap);
    if (c->svc->stopping)
        level = LOG_LEVEL_DEBUG;
    if (!c->outgoing && level >= LOG_LEVEL_WARN) /* a peer can make us say it again */
        SPATE_LOG_LIMITED(&c->svc->refusals, (enum log_level)level, "rpc", "%s", reason);
    else
        SPATE_LOG((enum log_level)level, "rpc", "%s", reason);
    was_pooled = c->outgoing && !c->local && c->pool_node.hash != 0;
    if (was_pooled) {
        hmap_remove(&c->svc->pool, &c->pool_node);
        c->pool_node.hash = 0;
    }
    gateway_fail_conn_calls(c, SPATE_ECONNLOST, reason);
    conn_really_close(c);
    if (was_pooled)
        rpc_service_peer_lost(c->svc, c->peer, reason);
}

void
conn_close(struct rpc_conn *c, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    conn_closev(c, level, fmt, ap);
    va_end(ap);
}

void
conn_close_after_flush(struct rpc_conn *c, const char *fmt, ...)
{
    char reason[SPATE_ERROR_MESSAGE_MAX];
    va_list ap;

    if (!conn_usable(c))
        return;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    SPATE_LOG_LIMITED(&c->svc->refusals, LOG_LEVEL_WARN, "rpc", "%s", reason);
    if (c->local) {
        /* The process talking to itself sent garbage: a bug, not input. */
        SPATE_LOG_ERROR("rpc", "in-process transport: %s", reason);
        return;
    }
    if (c->outgoing && c->pool_node.hash != 0) {
        hmap_remove(&c->svc->pool, &c->pool_node);
        c->pool_node.hash = 0;
    }
    gateway_fail_conn_calls(c, SPATE_ECONNLOST, reason);
    c->state = CONN_CLOSING;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (c->tls != NULL)
        tls_stream_read_stop(c->tls);
    if (!list_linked(&c->dirty_node))
        list_push_back(&c->svc->dirty, &c->dirty_node);
    rpc_service_wake(c->svc);
}

void
conn_close_all(struct rpc_service *svc)
{
    struct list_node *n;

    while ((n = svc->conns.next) != &svc->conns) {
        struct rpc_conn *c = container_of(n, struct rpc_conn, all_node);

        if (c->state == CONN_CLOSED) {
            list_remove(n);
            continue;
        }
        conn_close(c, LOG_LEVEL_DEBUG, "closing connection to %s: rpc service stopping", c->peer);
    }
    svc->local_client = svc->local_server = NULL;
}

/* ---- input ----------------------------------------------------------------- */

/* Room for plaintext: the socket's, or TLS's (tls_stream_on_read). */
static void
conn_alloc_plain(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct rpc_conn *c = h->data;
    size_t want = CONN_READ_MIN;

    UNUSED(suggested);
    /* Room for more of the frame being read, once its length is known: as
     * much again as came, so that a peer that announces a large frame holds
     * only what it sent. */
    if (c->rlen >= FRAME_PREFIX_BYTES && c->state == CONN_OPEN) {
        size_t need = ((size_t)c->rbuf[0] << 24 | (size_t)c->rbuf[1] << 16 |
                       (size_t)c->rbuf[2] << 8 | c->rbuf[3]) +
                      FRAME_PREFIX_BYTES;

        if (need <= c->svc->max_frame_bytes && need > c->rlen && need - c->rlen > want)
            want = MIN(need - c->rlen, MAX(want, c->rlen));
    }
    if (c->rcap - c->rlen < want) {
        size_t cap = c->rcap ? c->rcap : 8192;

        while (cap - c->rlen < want)
            cap *= 2;
        if (!c->outgoing && !c->local &&
            c->svc->buffered - c->counted + cap > c->svc->max_buffered_bytes) {
            *buf = uv_buf_init(NULL, 0); /* conn_on_read gets UV_ENOBUFS and closes */
            return;
        }
        c->rbuf = xrealloc(c->rbuf, cap);
        c->rcap = cap;
        conn_account(c);
    }
    *buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)(c->rcap - c->rlen));
}

static void
conn_read_plain(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct rpc_conn *c = s->data;

    UNUSED(buf);
    if (nread == UV_EPROTO && c->tls != NULL) {
        conn_close(c, LOG_LEVEL_WARN, "%s rpc connection %s %s: %s",
                   c->outgoing ? "closing" : "refused", c->outgoing ? "to" : "from", c->peer,
                   tls_stream_error(c->tls));
        return;
    }
    if (nread < 0) {
        if (c->state == CONN_CLOSING) {
            conn_really_close(c);
            return;
        }
        if (nread == UV_ENOBUFS) {
            conn_close(c, LOG_LEVEL_WARN,
                       "closing rpc connection from %s: incomplete frames of all connections "
                       "would hold more than %zu bytes (rpc.max-buffered)",
                       c->peer, c->svc->max_buffered_bytes);
            return;
        }
        if (nread == UV_EOF && c->rlen > 0) {
            /* The peer ended in the middle of a frame (or handshake). */
            conn_close(c, LOG_LEVEL_WARN,
                       "connection %s %s closed by the peer in a truncated %s (%zu bytes of it "
                       "arrived)",
                       c->outgoing ? "to" : "from", c->peer,
                       c->state == CONN_OPEN ? "frame" : "handshake", c->rlen);
            return;
        }
        conn_close(c, LOG_LEVEL_INFO, "connection %s %s lost: %s", c->outgoing ? "to" : "from",
                   c->peer, nread == UV_EOF ? "closed by the peer" : uv_strerror((int)nread));
        return;
    }
    c->rlen += (size_t)nread;
    conn_process(c);
}

static void
conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct rpc_conn *c = h->data;

    if (c->tls != NULL)
        tls_stream_alloc(c->tls, buf);
    else
        conn_alloc_plain(h, suggested, buf);
}

static void
conn_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct rpc_conn *c = s->data;

    if (c->tls != NULL && nread > 0)
        tls_stream_on_read(c->tls, nread);
    else
        conn_read_plain(s, nread, buf);
}

/* One handshake message in: the server's challenge or reply on the client
 * side, the client's hello on the server side (handshake.h). */
static int
conn_handshake(struct rpc_conn *c, const uint8_t *in)
{
    spate_error err = { 0 };
    enum handshake_status status;

    if (c->outgoing && c->state == CONN_CHALLENGE) {
        /* The hello goes in the slot conn_get kept before the queued frames. */
        if (handshake_answer_challenge(&c->svc->hs, in, &c->nonces, c->obuf, &err) != 0) {
            conn_close(c, LOG_LEVEL_WARN, "connection to %s closed: %s", c->peer, err.message);
            return SPATE_EPROTO;
        }
        c->state = CONN_HANDSHAKE;
        if (!list_linked(&c->dirty_node))
            list_push_back(&c->svc->dirty, &c->dirty_node);
        rpc_service_wake(c->svc);
        return 0;
    }
    if (c->outgoing) {
        if (handshake_check_reply(&c->svc->hs, &c->nonces, in, &err) != 0) {
            conn_close(c, LOG_LEVEL_WARN, "connection to %s closed: %s", c->peer, err.message);
            return SPATE_EPROTO;
        }
        c->state = CONN_OPEN;
        return 0;
    }
    list_remove(&c->hs_node);
    if (handshake_check_hello(&c->svc->hs, &c->nonces, in, &status, &err) != 0) {
        handshake_encode_reply(&c->svc->hs, &c->nonces, status, err.message,
                               conn_reserve(c, HANDSHAKE_SIZE));
        conn_commit(c, HANDSHAKE_SIZE);
        conn_close_after_flush(c, "refused rpc connection from %s: %s", c->peer, err.message);
        return SPATE_EPROTO;
    }
    handshake_encode_reply(&c->svc->hs, &c->nonces, HANDSHAKE_OK, NULL,
                           conn_reserve(c, HANDSHAKE_SIZE));
    conn_commit(c, HANDSHAKE_SIZE);
    c->state = CONN_OPEN;
    return 0;
}

static void
conn_process(struct rpc_conn *c)
{
    spate_error err = { 0 };
    size_t off = 0;
    struct frame fr;
    int rc;

    while (c->state == CONN_CHALLENGE || c->state == CONN_HANDSHAKE) {
        if (c->rlen - off < HANDSHAKE_SIZE)
            break;
        if (conn_handshake(c, c->rbuf + off) != 0)
            return;
        off += HANDSHAKE_SIZE;
    }
    while (c->state == CONN_OPEN) {
        rc = frame_decode(c->rbuf + off, c->rlen - off, c->svc->max_frame_bytes, &fr, &err);
        if (rc == 0)
            break;
        if (rc < 0) {
            conn_close(c, LOG_LEVEL_WARN, "closing rpc connection %s %s: %s",
                       c->outgoing ? "to" : "from", c->peer, err.message);
            return;
        }
        if (fr.type == FRAME_ASK || fr.type == FRAME_TELL) {
            if (c->outgoing) {
                conn_close(c, LOG_LEVEL_WARN,
                           "closing rpc connection to %s: the server sent a %s frame", c->peer,
                           frame_type_name(fr.type));
                return;
            }
            endpoint_on_request(c, &fr);
        } else {
            if (!c->outgoing) {
                conn_close(c, LOG_LEVEL_WARN,
                           "closing rpc connection from %s: a client sent a %s frame", c->peer,
                           frame_type_name(fr.type));
                return;
            }
            gateway_on_reply(c, &fr);
        }
        off += fr.size;
    }
    if (c->state == CONN_CLOSED)
        return;
    if (off > 0) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
    /* rpc.frame-timeout runs from a frame's first bytes (conn_on_sweep). */
    if (c->rlen == 0)
        c->frame_started_ms = 0;
    else if (off > 0 || c->frame_started_ms == 0)
        c->frame_started_ms = uv_now(&c->svc->loop);
    if (c->rlen == 0 && c->rcap > CONN_BUF_KEEP) {
        free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
        conn_account(c);
    }
}

/* ---- opening ----------------------------------------------------------------- */

static void
conn_use_tls(struct rpc_conn *c, enum tls_role role)
{
    if (c->svc->tls != NULL)
        c->tls = tls_stream_new(c->svc->tls, role, (uv_stream_t *)&c->tcp, conn_alloc_plain,
                                conn_read_plain);
}

static void
conn_start_reading(struct rpc_conn *c)
{
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, conn_on_alloc, conn_on_read);
}

static void
conn_on_connect(uv_connect_t *req, int status)
{
    struct rpc_conn *c = req->data;

    if (c->state == CONN_CLOSED)
        return;
    if (status < 0) {
        conn_close(c, LOG_LEVEL_DEBUG, "cannot connect to %s: %s", c->peer, uv_strerror(status));
        return;
    }
    /* The hello and what was queued meanwhile wait for the server's
     * challenge. */
    c->state = CONN_CHALLENGE;
    conn_start_reading(c);
    if (c->tls != NULL && tls_stream_start(c->tls) != 0)
        conn_close(c, LOG_LEVEL_WARN, "connection to %s closed: %s", c->peer,
                   tls_stream_error(c->tls));
}

static void
conn_connect(struct rpc_conn *c, const struct sockaddr *sa)
{
    int rc;

    c->state = CONN_CONNECTING;
    c->creq.data = c;
    rc = uv_tcp_connect(&c->creq, &c->tcp, sa, conn_on_connect);
    if (rc != 0)
        conn_close(c, LOG_LEVEL_DEBUG, "cannot connect to %s: %s", c->peer, uv_strerror(rc));
}

static void
conn_on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct rpc_conn *c = req->data;

    if (c->state == CONN_CLOSED) {
        /* closed while resolving */
    } else if (status < 0 || res == NULL) {
        conn_close(c, LOG_LEVEL_WARN, "cannot resolve %s: %s", c->peer, uv_strerror(status));
    } else {
        conn_connect(c, res->ai_addr);
    }
    uv_freeaddrinfo(res);
    conn_unref(c);
}

struct rpc_conn *
conn_get(struct rpc_service *svc, const char *peer)
{
    uint64_t h = hmap_hash_string(peer);
    struct hmap_node *n;
    struct rpc_conn *c;
    struct sockaddr_in sa;
    char host[128];
    const char *colon;
    int rc;

    if (svc->listening && strcmp(peer, svc->address) == 0 && svc->local_client != NULL)
        return svc->local_client;
    HMAP_FOR_EACH_WITH_HASH(n, h, &svc->pool)
    {
        c = container_of(n, struct rpc_conn, pool_node);
        if (strcmp(c->peer, peer) == 0)
            return c;
    }
    c = conn_new(svc, true, peer);
    uv_tcp_init(&svc->loop, &c->tcp);
    conn_use_tls(c, TLS_CLIENT);
    hmap_insert(&svc->pool, &c->pool_node, h == 0 ? 1 : h);
    /* The hello's slot, filled in when the server's challenge comes. */
    memset(conn_reserve(c, HANDSHAKE_SIZE), 0, HANDSHAKE_SIZE);
    c->olen += HANDSHAKE_SIZE;
    c->state = CONN_RESOLVING;

    colon = strrchr(peer, ':');
    if (colon == NULL || (size_t)(colon - peer) >= sizeof host) {
        conn_close(c, LOG_LEVEL_WARN, "malformed peer address '%s'", peer);
        return c;
    }
    memcpy(host, peer, (size_t)(colon - peer));
    host[colon - peer] = '\0';
    if (uv_ip4_addr(host, atoi(colon + 1), &sa) == 0) {
        conn_connect(c, (const struct sockaddr *)&sa);
        return c;
    }
    {
        struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };

        c->gai.data = c;
        conn_ref(c);
        rc = uv_getaddrinfo(&svc->loop, &c->gai, conn_on_resolved, host, colon + 1, &hints);
        if (rc != 0) {
            conn_unref(c);
            conn_close(c, LOG_LEVEL_WARN, "cannot resolve %s: %s", peer, uv_strerror(rc));
        }
    }
    return c;
}

/* Closes accepted connections that did not say hello in time, so that idle
 * sockets cannot pile up (a slow-loris client). */
static void
conn_on_handshake_timer(uv_timer_t *t)
{
    struct rpc_service *svc = t->data;
    uint64_t now = uv_now(&svc->loop);
    struct list_node *n;

    while ((n = svc->handshaking.next) != &svc->handshaking) {
        struct rpc_conn *c = container_of(n, struct rpc_conn, hs_node);
        uint64_t due = c->accepted_ms + (uint64_t)svc->handshake_timeout_ms;

        if (due > now) {
            uv_timer_start(t, conn_on_handshake_timer, due - now, 0);
            return;
        }
        conn_close(c, LOG_LEVEL_WARN,
                   "closing rpc connection from %s: no handshake within %lld ms (%zu bytes "
                   "came%s)",
                   c->peer, (long long)svc->handshake_timeout_ms, c->rlen,
                   c->tls != NULL ? "; TLS is on here: a plaintext client?" : "");
    }
}

void
conn_on_sweep(uv_timer_t *t)
{
    struct rpc_service *svc = t->data;
    uint64_t now = uv_now(&svc->loop);
    struct list_node *n, *next;

    for (n = svc->conns.next; n != &svc->conns; n = next) {
        struct rpc_conn *c = container_of(n, struct rpc_conn, all_node);

        next = n->next;
        if (c->outgoing || c->local || c->state != CONN_OPEN || c->frame_started_ms == 0 ||
            now - c->frame_started_ms <= (uint64_t)svc->frame_timeout_ms)
            continue;
        conn_close(c, LOG_LEVEL_WARN,
                   "closing rpc connection from %s: a frame begun %llu ms ago is still "
                   "incomplete (%zu bytes came; rpc.frame-timeout is %lld ms)",
                   c->peer, (unsigned long long)(now - c->frame_started_ms), c->rlen,
                   (long long)svc->frame_timeout_ms);
    }
}

/* The peer's IP address: "1.2.3.4" of "1.2.3.4:5678". */
static size_t
conn_ip_len(const char *peer)
{
    const char *colon = strrchr(peer, ':');

    return colon != NULL ? (size_t)(colon - peer) : strlen(peer);
}

/* Why a new connection from c's peer may not stay (NULL: it may): the
 * global and per-peer caps. Connections still in their handshake beyond
 * max_handshaking make room for it, the oldest first: a peer that opens
 * many and says nothing cannot keep a real one out. */
static const char *
conn_over_cap(struct rpc_service *svc, struct rpc_conn *c, char *why, size_t cap)
{
    size_t iplen = conn_ip_len(c->peer);
    int handshaking = 0, from_peer = 0;
    struct list_node *n;

    for (n = svc->handshaking.next; n != &svc->handshaking; n = n->next)
        handshaking++;
    while (handshaking-- >= svc->max_handshaking) {
        struct rpc_conn *old = container_of(svc->handshaking.next, struct rpc_conn, hs_node);

        conn_close(old, LOG_LEVEL_WARN,
                   "closing rpc connection from %s: %d connections are in their handshake "
                   "(the most kept); this one is the oldest",
                   old->peer, svc->max_handshaking);
    }
    for (n = svc->conns.next; n != &svc->conns; n = n->next) {
        struct rpc_conn *o = container_of(n, struct rpc_conn, all_node);

        if (o != c && !o->outgoing && !o->local && o->state != CONN_CLOSED &&
            conn_ip_len(o->peer) == iplen && strncmp(o->peer, c->peer, iplen) == 0)
            from_peer++;
    }
    if (svc->n_incoming > svc->max_connections) {
        snprintf(why, cap, "busy: %d connections open (cluster.connections.max)",
                 svc->n_incoming - 1);
        return why;
    }
    if (from_peer >= svc->max_connections_per_peer) {
        snprintf(why, cap, "busy: %d connections from %.*s (cluster.connections.max-per-peer)",
                 from_peer, (int)iplen, c->peer);
        return why;
    }
    return NULL;
}

void
conn_accept(struct rpc_service *svc)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[64] = "?", why[128];
    struct rpc_conn *c = conn_new(svc, false, "?");

    uv_tcp_init(&svc->loop, &c->tcp);
    conn_use_tls(c, TLS_SERVER);
    svc->n_incoming++; /* counted down in conn_really_close */
    if (uv_accept((uv_stream_t *)&svc->listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_really_close(c);
        return;
    }
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

        uv_ip4_name(sin, ip, sizeof ip);
        snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(sin->sin_port));
    }
    c->state = CONN_HANDSHAKE;
    c->accepted_ms = uv_now(&svc->loop);
    if (conn_over_cap(svc, c, why, sizeof why) != NULL) {
        if (c->tls != NULL) { /* the busy challenge would wait for a TLS handshake */
            conn_close(c, LOG_LEVEL_WARN, "refused rpc connection from %s: %s", c->peer, why);
            return;
        }
        handshake_encode_challenge(&svc->hs, &c->nonces, HANDSHAKE_BUSY, why,
                                   conn_reserve(c, HANDSHAKE_SIZE));
        conn_commit(c, HANDSHAKE_SIZE);
        conn_close_after_flush(c, "refused rpc connection from %s: %s", c->peer, why);
        return;
    }
    handshake_encode_challenge(&svc->hs, &c->nonces, HANDSHAKE_OK, NULL,
                               conn_reserve(c, HANDSHAKE_SIZE));
    conn_commit(c, HANDSHAKE_SIZE);
    if (list_empty(&svc->handshaking))
        uv_timer_start(&svc->handshake_timer, conn_on_handshake_timer,
                       (uint64_t)svc->handshake_timeout_ms, 0);
    list_push_back(&svc->handshaking, &c->hs_node);
    conn_start_reading(c);
}

void
conn_local_pair(struct rpc_service *svc)
{
    struct rpc_conn *client = conn_new(svc, true, svc->address[0] ? svc->address : "local");
    struct rpc_conn *server = conn_new(svc, false, "in-process");

    client->local = server->local = true;
    client->state = server->state = CONN_OPEN;
    client->local_peer = server;
    server->local_peer = client;
    svc->local_client = client;
    svc->local_server = server;
}
