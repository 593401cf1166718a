/* The REST server's open connections, and which of them are still sending
 * a request (its line and headers). Slow clients that send a byte every few
 * seconds never fall silent long enough for libmicrohttpd's timeout; here,
 * as on the RPC, data and blob ports, a new connection that finds
 * rest.server.connection-limit taken pushes out the oldest connection still
 * sending its request (or idle between requests), and one still sending
 * after rest.server.request-timeout is closed when the next one arrives.
 * Each connection's socket context is its rest_conn; the lock guards the
 * list across libmicrohttpd's threads. */
#ifndef SPATE_REST_REST_CONNS_H
#define SPATE_REST_REST_CONNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "core/log.h"

struct rest_server;

/* Room libmicrohttpd keeps over rest.server.connection-limit: for the new
 * connection that pushes out an old one, and for those pushed out whose
 * threads have not closed them yet. */
#define REST_CONNS_SPARE 16

/* One connection (libmicrohttpd's socket context). */
struct rest_conn {
    struct rest_server *rs;
    struct rest_conn *prev, *next; /* in rest_conns, oldest first */
    int fd;
    char peer[64];
    uint64_t waiting_since_ms; /* monotonic; 0: a request is being served */
    bool pushed_out;           /* shut down, not closed yet */
    bool served;               /* a request's headers arrived */
};

struct rest_conns {
    pthread_mutex_t lock;
    struct rest_conn list; /* sentinel */
    int64_t max;           /* rest.server.connection-limit */
    int64_t timeout_ms;    /* rest.server.request-timeout */
    size_t open;           /* in the list and not pushed out */
    struct log_ratelimit rl;
};

void rest_conns_init(struct rest_conns *cs, int64_t max, int64_t timeout_ms);
void rest_conns_destroy(struct rest_conns *cs);
/* MHD_OPTION_NOTIFY_CONNECTION with cls = the REST server. */
void rest_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe);
/* A request's headers arrived (true) or its answer went (false). */
void rest_conns_serving(struct MHD_Connection *c, bool serving);
/* The server of a connection (from its socket context); NULL if unknown. */
struct rest_server *rest_conns_server(struct MHD_Connection *c);

#endif
