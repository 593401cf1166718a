/* The REST server's connections (rest_conns.h). A connection pushed out is
 * shut down, not closed: its libmicrohttpd thread reads the end and closes
 * it, and only then does it leave the list, so that the descriptor shut
 * down is never one already reused. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gnutls/gnutls.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/hmap.h"
#include "rest/rest_auth.h"
#include "rest/rest_conns.h"
#include "rest/rest_int.h"

void
rest_conns_init(struct rest_conns *cs, int64_t max, int64_t timeout_ms)
{
    pthread_mutex_init(&cs->lock, NULL);
    cs->list.prev = cs->list.next = &cs->list;
    cs->max = max;
    cs->timeout_ms = timeout_ms;
    cs->open = 0;
}

void
rest_conns_destroy(struct rest_conns *cs)
{
    pthread_mutex_destroy(&cs->lock);
}

/* Shuts x down and says why. Under the lock. */
static void
conns_push_out(struct rest_conns *cs, struct rest_conn *x, const char *why)
{
    x->pushed_out = true;
    cs->open--;
    shutdown(x->fd, SHUT_RDWR);
    SPATE_LOG_LIMITED(&cs->rl, LOG_LEVEL_WARN, REST_LOG,
                      "closed the REST connection from %s, which sent no whole request: %s",
                      x->peer, why);
}

/* The connection to push out at rest.server.connection-limit: the oldest
 * still sending its request of the address that has the most such
 * connections. Clients pushed out come back at once, so with the oldest of
 * all a flood from a few addresses would soon push out any other client's
 * connection before its request was read; this way it pushes out its own.
 * Under the lock. */
static struct rest_conn *
conns_victim(struct rest_conns *cs)
{
    struct peer_count {
        const char *ip; /* into the oldest's peer, len bytes */
        size_t len, n;
        struct rest_conn *oldest;
    } * t;
    size_t cap = 16, most = 0;
    struct rest_conn *victim = NULL;

    while (cap < 2 * cs->open + 2)
        cap *= 2;
    t = xcalloc(cap, sizeof *t);
    for (struct rest_conn *o = cs->list.next; o != &cs->list; o = o->next) {
        const char *colon = strrchr(o->peer, ':');
        size_t len = colon != NULL ? (size_t)(colon - o->peer) : strlen(o->peer), i;

        if (o->pushed_out || o->waiting_since_ms == 0 || o->fd < 0)
            continue;
        i = hmap_hash_bytes(o->peer, len) & (cap - 1);
        while (t[i].ip != NULL && (t[i].len != len || memcmp(t[i].ip, o->peer, len) != 0))
            i = (i + 1) & (cap - 1);
        if (t[i].ip == NULL)
            t[i] = (struct peer_count){ o->peer, len, 0, o };
        if (++t[i].n > most) {
            most = t[i].n;
            victim = t[i].oldest;
        }
    }
    free(t);
    return victim;
}

static void
conns_started(struct rest_server *rs, struct MHD_Connection *c, void **socket_context)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct rest_conns *cs = &rs->conns;
    struct rest_conn *x = xcalloc(1, sizeof *x);
    uint64_t now = clock_mono_ms();

    x->rs = rs;
    x->fd = ci != NULL ? ci->connect_fd : -1;
    x->waiting_since_ms = now;
    rest_peer(c, x->peer, sizeof x->peer);
    *socket_context = x;
    pthread_mutex_lock(&cs->lock);
    for (struct rest_conn *o = cs->list.next, *next; o != &cs->list; o = next) {
        next = o->next;
        if (!o->pushed_out && o->waiting_since_ms != 0 && o->fd >= 0 &&
            now - o->waiting_since_ms >= (uint64_t)cs->timeout_ms)
            conns_push_out(cs, o, "past rest.server.request-timeout");
    }
    if (cs->open >= (size_t)cs->max) {
        struct rest_conn *o = conns_victim(cs);

        if (o != NULL)
            conns_push_out(cs, o,
                           "rest.server.connection-limit reached; this one is the oldest of "
                           "the address with the most");
    }
    x->prev = cs->list.prev;
    x->next = &cs->list;
    cs->list.prev->next = x;
    cs->list.prev = x;
    cs->open++;
    pthread_mutex_unlock(&cs->lock);
}

/* A connection to the HTTPS port that closes before any request, its
 * client having sent bytes but no TLS hello, was a plaintext client (an
 * http:// URL): libmicrohttpd's own line names neither the client nor the
 * reason. Called before libmicrohttpd closes the socket, which still holds
 * what the TLS layer did not read (it reads a record's 5-byte header, then
 * gives up). A client that sends nothing is closed by the timeouts, as
 * before, without this line. */
static void
conns_closed_tls(struct rest_server *rs, struct MHD_Connection *c, const struct rest_conn *x)
{
    const union MHD_ConnectionInfo *ci;
    char b;

    if (x->served || x->pushed_out || x->fd < 0 || !rest_tls_on(&rs->tls))
        return;
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    /* No handshake message came in: GnuTLS's last one is still none (-1). */
    if (ci == NULL || ci->tls_session == NULL ||
        (int)gnutls_handshake_get_last_in(ci->tls_session) >= 0 ||
        recv(x->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 1)
        return;
    SPATE_LOG_LIMITED(&rs->conns.rl, LOG_LEVEL_WARN, REST_LOG,
                      "refused REST connection from %s: TLS handshake failed: the client does "
                      "not speak TLS (it sent no TLS hello: plain HTTP on the HTTPS port, "
                      "security.ssl.rest.enabled is true; use https://)",
                      x->peer);
}

void
rest_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode toe)
{
    struct rest_server *rs = cls;
    struct rest_conn *x = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conns_started(rs, c, socket_context);
        return;
    }
    if (x == NULL)
        return;
    conns_closed_tls(rs, c, x);
    pthread_mutex_lock(&rs->conns.lock);
    x->prev->next = x->next;
    x->next->prev = x->prev;
    if (!x->pushed_out)
        rs->conns.open--;
    pthread_mutex_unlock(&rs->conns.lock);
    free(x);
    *socket_context = NULL;
}

void
rest_conns_serving(struct MHD_Connection *c, bool serving)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct rest_conn *x = ci != NULL ? ci->socket_context : NULL;

    if (x == NULL)
        return;
    pthread_mutex_lock(&x->rs->conns.lock);
    x->waiting_since_ms = serving ? 0 : clock_mono_ms();
    x->served = x->served || serving;
    pthread_mutex_unlock(&x->rs->conns.lock);
}

struct rest_server *
rest_conns_server(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        c != NULL ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    const struct rest_conn *x = ci != NULL ? ci->socket_context : NULL;

    return x != NULL ? x->rs : NULL;
}
