/* Private structures of the RPC layer, shared by its modules (service.c,
 * conn.c, endpoint.c, gateway.c, future.c, heartbeat.c). Everything here is
 * owned by the service's loop thread unless a field says otherwise. */
#ifndef SPATE_RPC_RPC_INT_H
#define SPATE_RPC_RPC_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <uv.h>

#include "core/hmap.h"
#include "core/list.h"
#include "core/log.h"
#include "core/mailbox.h"
#include "rpc/arena.h"
#include "rpc/endpoint.h"
#include "rpc/frame.h"
#include "rpc/future.h"
#include "rpc/gateway.h"
#include "core/tls.h"
#include "rpc/handshake.h"
#include "rpc/service.h"

/* Work for the loop thread: queued on the run queue (from the loop) or posted
 * through the service's mailbox (from other threads). */
struct rpc_runnable {
    struct mpsc_node mpsc;
    struct rpc_runnable *next;
    void (*run)(struct rpc_runnable *r);
};

/* ---- service ---------------------------------------------------------- */

#define RPC_TOMBSTONES 64

struct rpc_service {
    uv_loop_t loop;
    uv_thread_t thread;
    pthread_t loop_thread; /* valid while running; written before the loop starts */
    _Atomic bool running;
    bool stopping;
    struct mailbox mailbox;
    uv_prepare_t prepare;
    uv_check_t check;
    uv_idle_t idle; /* active while work is left for the next turn */
    struct rpc_runnable *runq_head, *runq_tail;

    /* listener */
    uv_tcp_t listener;
    bool listening;
    int port;
    char address[128]; /* "host:port" others reach this service at */
    char bind_host[64];

    struct hmap endpoints; /* name -> rpc_endpoint */
    char *tombstones[RPC_TOMBSTONES];
    unsigned tombstone_next;

    struct hmap pool;             /* peer "host:port" -> outgoing rpc_conn */
    struct list_node conns;       /* every open connection */
    struct list_node handshaking; /* accepted connections whose hello is due, oldest first */
    uv_timer_t handshake_timer;
    int64_t handshake_timeout_ms;
    uv_timer_t sweep_timer; /* each second: frames past their deadline */
    int n_incoming;         /* accepted connections not closed */
    size_t buffered;        /* bytes of incoming connections' read buffers */
    int max_connections, max_connections_per_peer, max_handshaking;
    int64_t frame_timeout_ms;
    size_t max_buffered_bytes;
    struct log_ratelimit refusals; /* lines about peers' bad input and refusals */
    struct hmap access_limits;     /* peer IP -> rpc_access_limit, while a connection holds it */
    struct list_node dirty;        /* connections with output to flush this turn */
    struct rpc_conn *local_client, *local_server; /* the in-process pair */

    struct hmap calls;          /* call id -> pending ask (rpc_future) */
    struct list_node deadlines; /* pending asks, earliest deadline first */
    uv_timer_t call_timer;
    uint64_t next_call_id;

    struct hmap watches; /* peer -> struct rpc_watch_list */

    /* options */
    char cluster_id[HANDSHAKE_CLUSTER_ID_MAX + 1];
    char *secret;
    struct handshake_params hs;
    struct tls_context *tls; /* security.ssl.internal; NULL: plaintext */
    size_t max_frame_bytes;
    int64_t ask_timeout_ms;
    char thread_name[16];
};

bool rpc_service_in_loop(const struct rpc_service *svc);
/* Loop thread: runs r on this turn's run queue (or the next turn's). */
void rpc_service_defer(struct rpc_service *svc, struct rpc_runnable *r);
/* Any thread. */
void rpc_service_post(struct rpc_service *svc, struct rpc_runnable *r);
/* Keeps the loop from blocking in poll this turn (work is left). */
void rpc_service_wake(struct rpc_service *svc);
struct rpc_endpoint *rpc_service_find_endpoint(struct rpc_service *svc, const char *name,
                                               size_t len);
bool rpc_service_is_tombstone(struct rpc_service *svc, const char *name, size_t len);
void rpc_service_add_tombstone(struct rpc_service *svc, const char *name);
/* Called by conn.c when an outgoing connection to peer is gone. */
void rpc_service_peer_lost(struct rpc_service *svc, const char *peer, const char *reason);

/* ---- connections ------------------------------------------------------ */

enum conn_state {
    CONN_RESOLVING,
    CONN_CONNECTING,
    CONN_CHALLENGE, /* client: connected; the server's challenge is due, output waits */
    CONN_HANDSHAKE, /* server: the client's hello is due; client: the server's reply */
    CONN_OPEN,
    CONN_CLOSING, /* flushing a last message, then closing */
    CONN_CLOSED,
};

/* The access lines of one peer (an IP address: all its connections), at
 * most RPC_ACCESS_BURST per LOG_RATELIMIT_WINDOW_MS: an authenticated peer
 * cannot flood the log with control calls. */
#define RPC_ACCESS_BURST 100

struct rpc_access_limit {
    struct hmap_node node; /* in svc->access_limits */
    struct log_ratelimit rl;
    int refs; /* connections that logged a line */
    char ip[64];
};

struct rpc_conn {
    struct rpc_service *svc;
    struct rpc_access_limit *access; /* its peer's, from its first access line */
    uv_tcp_t tcp;
    struct tls_stream *tls; /* NULL: plaintext (or in-process) */
    enum conn_state state;
    bool outgoing;
    bool local;                  /* the in-process transport: no socket */
    struct rpc_conn *local_peer; /* local: where flushed bytes go */
    char peer[128];              /* outgoing: "host:port" as addressed; incoming: remote ip:port */
    struct hmap_node pool_node;  /* outgoing, in svc->pool */
    struct list_node all_node;   /* svc->conns */
    struct list_node dirty_node; /* svc->dirty */
    struct list_node hs_node;    /* svc->handshaking */
    uint64_t accepted_ms;
    uint64_t frame_started_ms; /* incoming: when the incomplete frame in rbuf began; 0: none */
    size_t counted;            /* incoming: rcap as counted in svc->buffered */
    struct handshake_nonces nonces;
    struct list_node calls; /* pending asks sent on this connection */
    int refs;               /* calls being served hold one each */

    uint8_t *rbuf;
    size_t rlen, rcap;
    uint8_t *obuf; /* being filled */
    size_t olen, ocap;
    uint8_t *wbuf; /* being written */
    size_t wlen, wcap;
    bool writing;
    uv_write_t wreq;
    uv_connect_t creq;
    uv_getaddrinfo_t gai;
};

/* The pooled outgoing connection to peer ("host:port"), created on first
 * use; the in-process one when peer is this service's own address. */
struct rpc_conn *conn_get(struct rpc_service *svc, const char *peer);
void conn_accept(struct rpc_service *svc);
/* Each second: closes incoming connections whose frame is past
 * rpc.frame-timeout. */
void conn_on_sweep(uv_timer_t *t);
void conn_local_pair(struct rpc_service *svc);
/* Room for n more output bytes; conn_commit adds them to the next flush. */
uint8_t *conn_reserve(struct rpc_conn *c, size_t n);
void conn_commit(struct rpc_conn *c, size_t n);
/* Loop: writes every dirty connection's output (one write per connection). */
void conn_flush_dirty(struct rpc_service *svc);
/* Closes with a logged reason; pending asks fail with SPATE_ECONNLOST. */
void conn_close(struct rpc_conn *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends what is queued (a refusal, an error reply), then closes. */
void conn_close_after_flush(struct rpc_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void conn_ref(struct rpc_conn *c);
void conn_unref(struct rpc_conn *c);
/* The limiter of c's peer's access lines (shared by its connections). */
struct log_ratelimit *conn_access_limit(struct rpc_conn *c);
/* Service stop: frees the limiters left (a closed connection gives its back). */
void conn_access_release_all(struct rpc_service *svc);
bool conn_usable(const struct rpc_conn *c);
/* Shutdown: closes every connection quietly. */
void conn_close_all(struct rpc_service *svc);

/* ---- asks in flight (inside their future) ------------------------------ */

struct rpc_pending {
    uint64_t call_id;
    struct hmap_node call_node; /* svc->calls */
    struct list_node deadline_node;
    struct list_node conn_node; /* conn->calls */
    struct list_node ep_node;   /* caller endpoint's asks */
    uint64_t deadline_ms;       /* uv_now based */
    int64_t timeout_ms;
    const struct rpc_method *method;
    struct rpc_conn *conn;
    struct rpc_endpoint *caller;
    char target[400]; /* "host:port/endpoint", for messages */
};

struct rpc_callback {
    struct rpc_runnable r;
    struct rpc_callback *next;
    struct rpc_future *f;
    struct rpc_endpoint *ep;
    rpc_future_cb cb;
    void *arg;
};

struct rpc_future {
    _Atomic int refs;
    struct rpc_service *svc;
    pthread_mutex_t lock; /* guards done/code for waiters on other threads */
    pthread_cond_t cond;
    bool done;
    bool cb_scheduled;
    int code;
    char *message;
    void *value;
    rpc_value_free value_free;
    struct rpc_callback *cbs, *cbs_tail; /* loop thread only */
    struct rpc_callback first_cb;        /* the usual single callback, no malloc */
    bool first_cb_used;
    struct rpc_pending pending; /* when the future is an ask's */
    bool has_arena;
    struct arena arena; /* the reply's message lives here */
    char arena_first[256];
};

/* gateway.c: a reply or error frame arrived on c. */
void gateway_on_reply(struct rpc_conn *c, const struct frame *fr);
/* Fails every ask pending on c. */
void gateway_fail_conn_calls(struct rpc_conn *c, int code, const char *reason);
void gateway_fail_endpoint_asks(struct rpc_endpoint *ep);
void gateway_on_timer(uv_timer_t *t);

/* endpoint.c: an ASK or TELL frame arrived on c. */
void endpoint_on_request(struct rpc_conn *c, const struct frame *fr);
void endpoint_stop_all(struct rpc_service *svc);

/* future.c */
void future_schedule_callbacks(struct rpc_future *f);

/* The endpoint whose code runs on this thread now (NULL: none). */
extern _Thread_local struct rpc_endpoint *rpc_current_endpoint;

static inline struct rpc_endpoint *
rpc_enter(struct rpc_endpoint *ep)
{
    struct rpc_endpoint *prev = rpc_current_endpoint;

    rpc_current_endpoint = ep;
    log_enter_fields(ep != NULL ? ep->log_fields : NULL);
    return prev;
}

static inline void
rpc_leave(struct rpc_endpoint *prev)
{
    rpc_current_endpoint = prev;
    log_enter_fields(prev != NULL ? prev->log_fields : NULL);
}

#endif
