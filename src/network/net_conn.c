/* Data connections (net_int.h): one TCP connection per remote peer, read
 * into a stage and split into frames for its server side (net_server.c) or
 * client side (net_client.c); control frames out, life cycle, close. Runs on
 * the network I/O thread. */
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "network/net_int.h"

/* What a consumer-side read takes into the stage: header and body of small
 * frames, only the start of a big buffer's body (which is then read straight
 * into its buffer rather than copied from the stage). */
#define STAGE_CLIENT_READ 512

struct ctl_write {
    uv_write_t req;
    uint8_t bytes[];
};

static void
ctl_write_done(uv_write_t *req, int status)
{
    UNUSED(status); /* a failed write shows as a read error too */
    free(container_of(req, struct ctl_write, req));
}

void
net_conn_send_ctl(struct net_conn *c, struct net_frame *f, const void *body, uint32_t len)
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
    rc = net_conn_write(c, &w->req, &buf, 1, ctl_write_done);
    if (rc != 0) {
        free(w);
        net_conn_close(c, SPATE_ECONNLOST, "cannot write to %s: %s", c->peer, uv_strerror(rc));
    }
}

void
net_conn_send_error(struct net_conn *c, uint32_t receiver, int code, const char *msg)
{
    struct net_frame f = { .type = NET_MSG_ERROR,
                           .receiver = receiver,
                           .a = (uint32_t)(code < 0 ? -code : code) };

    net_conn_send_ctl(c, &f, msg, (uint32_t)MIN(strlen(msg), NET_ERROR_MAX));
}

/* ---- reading ---- */

static void
conn_alloc_plain(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    struct net_conn *c = h->data;

    UNUSED(suggested);
    if (c->rx_mode == RX_DIRECT)
        /* The rest of the body, and into the segment's tail room what
         * follows it (the next frame's header, often the start of its
         * body): one read per buffer rather than two. */
        *out = uv_buf_init((char *)c->rx_dst + c->rx_have, c->rx.length - c->rx_have + c->rx_tail);
    else if (c->rx_mode == RX_DISCARD)
        *out = uv_buf_init((char *)c->scratch, MIN(c->scratch_size, c->rx.length - c->rx_have));
    else if (c->is_server)
        *out = uv_buf_init((char *)c->stage + c->stage_len, NET_STAGE_SIZE - c->stage_len);
    else /* a little past a header: the body of a big buffer goes direct */
        *out = uv_buf_init((char *)c->stage + c->stage_len,
                           MIN(STAGE_CLIENT_READ, NET_STAGE_SIZE - c->stage_len));
}

/* Frames in the stage: handles the complete ones; a BUFFER's body continues
 * straight into its buffer. */
static void
conn_process_stage(struct net_conn *c)
{
    uint32_t off = 0;
    spate_error err;

    while (c->state == CONN_CHALLENGE || c->state == CONN_HANDSHAKE || c->state == CONN_ACTIVE) {
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
            net_client_end_buffer(c);
            continue;
        }
        if (c->state == CONN_CHALLENGE || c->state == CONN_HANDSHAKE) {
            if (c->is_server && avail >= 4 &&
                ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]) !=
                    HANDSHAKE_MAGIC_DATA) {
                net_conn_close(c, SPATE_EPROTO,
                               "dropping data connection from %s: not a spate "
                               "data connection (bad magic)",
                               c->peer);
                return;
            }
            if (avail < HANDSHAKE_SIZE)
                break;
            off += HANDSHAKE_SIZE;
            if (c->is_server)
                net_server_handshake(c, p);
            else if (c->state == CONN_CHALLENGE)
                net_client_challenge(c, p);
            else
                net_client_handshake(c, p);
            continue;
        }
        if (avail < NET_FRAME_HEADER_SIZE)
            break;
        if (net_frame_decode(p, c->is_server,
                             (uint32_t)network_buffer_pool_segment_size(c->env->pool), &f,
                             &err) != 0) {
            net_conn_close(c, SPATE_EPROTO, "dropping data connection %s %s: %s",
                           c->is_server ? "from" : "to", c->peer, err.message);
            return;
        }
        if (!c->is_server && f.type == NET_MSG_BUFFER) {
            off += NET_FRAME_HEADER_SIZE;
            net_client_begin_buffer(c, &f);
            if (c->rx.length == 0 && c->state == CONN_ACTIVE) {
                net_client_end_buffer(c);
            }
            continue;
        }
        if (avail < NET_FRAME_HEADER_SIZE + f.length)
            break; /* control bodies are small: the stage holds them whole */
        off += NET_FRAME_HEADER_SIZE + f.length;
        if (c->is_server)
            net_server_on_frame(c, &f, p + NET_FRAME_HEADER_SIZE);
        else
            net_client_on_frame(c, &f, p + NET_FRAME_HEADER_SIZE);
    }
    if (c->state == CONN_CLOSING)
        return;
    memmove(c->stage, c->stage + off, c->stage_len - off);
    c->stage_len -= off;
}

static void
conn_read_plain(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct net_conn *c = s->data;

    UNUSED(b);
    c->env->activity++;
    if (nread == 0 || c->state == CONN_CLOSING)
        return;
    if (nread < 0) {
        if (nread == UV_EPROTO && c->tls != NULL)
            net_conn_close(c, SPATE_EPROTO, "%s data connection %s %s: %s",
                           c->is_server ? "refused" : "dropping", c->is_server ? "from" : "to",
                           c->peer, tls_stream_error(c->tls));
        else if (nread == UV_EOF)
            net_conn_close(c, SPATE_ECONNLOST, "%s closed the connection", c->peer);
        else
            net_conn_close(c, SPATE_ECONNLOST, "connection to %s failed: %s", c->peer,
                           uv_strerror((int)nread));
        return;
    }
    if (c->rx_mode == RX_STAGE) {
        c->stage_len += (uint32_t)nread;
        conn_process_stage(c);
        return;
    }
    if ((size_t)nread > c->rx.length - c->rx_have) {
        /* Past the body, in the tail room: the next frames' bytes, to the
         * (empty) stage before the buffer goes to its channel. */
        uint32_t extra = (uint32_t)nread - (c->rx.length - c->rx_have);

        SPATE_ASSERT(extra <= c->rx_tail && c->stage_len + extra <= NET_STAGE_SIZE);
        memcpy(c->stage + c->stage_len, c->rx_dst + c->rx.length, extra);
        c->stage_len += extra;
        c->rx_have = c->rx.length;
        net_client_end_buffer(c);
        conn_process_stage(c);
        return;
    }
    c->rx_have += (uint32_t)nread;
    if (c->rx_have == c->rx.length)
        net_client_end_buffer(c);
}

static void
conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    struct net_conn *c = h->data;

    if (c->tls != NULL)
        tls_stream_alloc(c->tls, out);
    else
        conn_alloc_plain(h, suggested, out);
}

static void
conn_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct net_conn *c = s->data;

    if (c->tls != NULL && nread > 0 && c->state != CONN_CLOSING)
        tls_stream_on_read(c->tls, nread);
    else
        conn_read_plain(s, nread, b);
}

void
net_conn_read_start(struct net_conn *c)
{
    uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_on_read);
    /* A client's TLS speaks first (the ClientHello). */
    if (c->tls != NULL && !c->is_server && tls_stream_start(c->tls) != 0)
        net_conn_close(c, SPATE_EPROTO, "dropping data connection to %s: %s", c->peer,
                       tls_stream_error(c->tls));
}

/* ---- life cycle ---- */

struct net_conn *
net_conn_new(struct net_env *env, bool is_server)
{
    struct net_conn *c = xcalloc(1, sizeof *c);

    c->env = env;
    c->is_server = is_server;
    c->scratch_size = net_compress_bound((uint32_t)network_buffer_pool_segment_size(env->pool));
    c->scratch = xmalloc(c->scratch_size);
    uv_tcp_init(&env->loop, &c->tcp);
    c->tcp.data = c;
    if (env->cfg.tls != NULL)
        c->tls = tls_stream_new(env->cfg.tls, is_server ? TLS_SERVER : TLS_CLIENT,
                                (uv_stream_t *)&c->tcp, conn_alloc_plain, conn_read_plain);
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

    tls_stream_free(c->tls); /* after libuv cancelled its writes */
    for (int i = 0; i < NET_COMPRESS_SLOTS; i++)
        free(c->slots[i].data);
    hmap_release(&c->readers);
    hmap_release(&c->channels);
    free(c->scratch);
    free(c);
}

void
net_conn_close(struct net_conn *c, int code, const char *fmt, ...)
{
    struct net_env *env = c->env;
    char why[SPATE_ERROR_MESSAGE_MAX];
    va_list ap;

    if (c->state == CONN_CLOSING)
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (code == SPATE_EPROTO && c->is_server) /* a peer can make us say it again */
        SPATE_LOG_LIMITED(&env->refusals, LOG_LEVEL_WARN, NET_LOG, "%s", why);
    else if (code == SPATE_EPROTO)
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
        net_server_conn_closing(c, why);
        atomic_fetch_sub_explicit(&env->n_server, 1, memory_order_relaxed);
    } else {
        net_client_conn_closing(c, why);
        atomic_fetch_sub_explicit(&env->n_client, 1, memory_order_relaxed);
    }
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

int
net_conn_resolve(const char *host, int port, struct sockaddr_storage *ss)
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
