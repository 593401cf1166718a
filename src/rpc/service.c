/* The RPC service (service.h): the loop thread, its run queue and mailbox,
 * the listener, the endpoint registry and peer watches. Everything but
 * new/start/stop/free/post runs on the loop thread. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/rpc_int.h"

_Thread_local struct rpc_endpoint *rpc_current_endpoint;

struct rpc_endpoint *
rpc_endpoint_current(void)
{
    return rpc_current_endpoint;
}

/* ---- options ------------------------------------------------------------ */

int
rpc_service_options_from_config(const struct config *conf, struct rpc_service_options *o,
                                spate_error *err)
{
    uint64_t frame;
    int64_t timeout;
    const char *secret = NULL;
    int rc;

    if ((rc = config_get_memory_bytes(conf, CFG(RPC_MAX_FRAME_SIZE), &frame, err)) != 0)
        return rc;
    if ((rc = config_get_duration_ms(conf, CFG(RPC_ASK_TIMEOUT), &timeout, err)) != 0)
        return rc;
    /* Optional: unset is no secret (and no error left behind in err). */
    if (config_is_set(conf, CFG(SECURITY_RPC_SECRET)) &&
        (rc = config_get_string(conf, CFG(SECURITY_RPC_SECRET), &secret, err)) != 0)
        return rc;
    o->max_frame_bytes = (size_t)frame;
    o->ask_timeout_ms = timeout;
    o->secret = secret;
    {
        int64_t conns, per_peer, handshaking;
        uint64_t buffered;

        if ((rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX), &conns, err)) != 0 ||
            (rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX_PER_PEER), &per_peer, err)) !=
                0 ||
            (rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX_HANDSHAKING), &handshaking,
                                 err)) != 0 ||
            (rc = config_get_duration_ms(conf, CFG(CLUSTER_CONNECTIONS_HANDSHAKE_TIMEOUT),
                                         &o->handshake_timeout_ms, err)) != 0 ||
            (rc = config_get_duration_ms(conf, CFG(RPC_FRAME_TIMEOUT), &o->frame_timeout_ms,
                                         err)) != 0 ||
            (rc = config_get_memory_bytes(conf, CFG(RPC_MAX_BUFFERED), &buffered, err)) != 0)
            return rc;
        o->max_connections = (int)conns;
        o->max_connections_per_peer = (int)per_peer;
        o->max_handshaking = (int)handshaking;
        o->max_buffered_bytes = (size_t)buffered;
    }
    return 0;
}

/* ---- run queue and mailbox ------------------------------------------------ */

/* Before start and after stop, the thread that creates or frees the service
 * is the only one touching it and counts as the loop's. */
bool
rpc_service_in_loop(const struct rpc_service *svc)
{
    if (!atomic_load_explicit(&((struct rpc_service *)svc)->running, memory_order_acquire))
        return true;
    return pthread_equal(pthread_self(), svc->loop_thread);
}

void
rpc_service_defer(struct rpc_service *svc, struct rpc_runnable *r)
{
    r->next = NULL;
    if (svc->runq_tail != NULL)
        svc->runq_tail->next = r;
    else
        svc->runq_head = r;
    svc->runq_tail = r;
}

void
rpc_service_post(struct rpc_service *svc, struct rpc_runnable *r)
{
    mailbox_post(&svc->mailbox, &r->mpsc);
}

static void
service_on_mail(struct mailbox *mb, struct mpsc_node *node)
{
    struct rpc_runnable *r = container_of(node, struct rpc_runnable, mpsc);

    UNUSED(mb);
    r->run(r);
}

/* Runs what was queued before this call; what those queue runs next time, so
 * that two endpoints telling each other forever cannot starve the sockets. */
static void
service_drain(struct rpc_service *svc)
{
    struct rpc_runnable *r = svc->runq_head, *next;

    svc->runq_head = svc->runq_tail = NULL;
    for (; r != NULL; r = next) {
        next = r->next;
        r->run(r);
    }
}

static void
service_idle_noop(uv_idle_t *h)
{
    UNUSED(h);
}

void
rpc_service_wake(struct rpc_service *svc)
{
    if (!uv_is_active((uv_handle_t *)&svc->idle))
        uv_idle_start(&svc->idle, service_idle_noop);
}

static void
service_after_turn(struct rpc_service *svc)
{
    if (svc->runq_head != NULL || !list_empty(&svc->dirty)) {
        if (!uv_is_active((uv_handle_t *)&svc->idle))
            uv_idle_start(&svc->idle, service_idle_noop);
    } else if (uv_is_active((uv_handle_t *)&svc->idle)) {
        uv_idle_stop(&svc->idle);
    }
}

/* Before the loop blocks: run the queue, then write each connection's output
 * once (the coalesced writev of this turn). */
static void
service_on_prepare(uv_prepare_t *h)
{
    struct rpc_service *svc = h->data;

    service_drain(svc);
    conn_flush_dirty(svc);
    service_after_turn(svc);
}

/* After I/O: run what the reads queued, so replies are flushed this turn. */
static void
service_on_check(uv_check_t *h)
{
    struct rpc_service *svc = h->data;

    service_drain(svc);
    service_after_turn(svc);
}

/* ---- listener ------------------------------------------------------------ */

static void
service_on_connection(uv_stream_t *server, int status)
{
    struct rpc_service *svc = server->data;

    if (status < 0) {
        SPATE_LOG_WARN("rpc", "accept on %s failed: %s", svc->address, uv_strerror(status));
        return;
    }
    conn_accept(svc);
}

static int
service_resolve_host(const char *host, struct sockaddr_in *sa, spate_error *err)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int rc;

    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
        return 0;
    rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || res == NULL)
        return spate_error_set(err, SPATE_EINVAL, "cannot resolve host '%s': %s", host,
                               gai_strerror(rc));
    sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return 0;
}

/* Binds the first free port of [lo, hi] with a plain socket, so that a taken
 * port is known at once and the next one tried. */
static int
service_bind(struct rpc_service *svc, const char *host, const char *ports, spate_error *err)
{
    struct sockaddr_in sa;
    int lo, hi, fd = -1, rc, one = 1;
    socklen_t len = sizeof sa;

    if ((rc = config_parse_port_range(ports, &lo, &hi, err)) != 0)
        return spate_error_wrap(err, "rpc port '%s'", ports);
    if ((rc = service_resolve_host(host, &sa, err)) != 0)
        return rc;
    for (int port = lo; port <= hi; port++) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return spate_error_set(err, -errno, "cannot create a socket: %s",
                                   spate_strerror(-errno));
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sa.sin_port = htons((uint16_t)port);
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, SOMAXCONN) == 0)
            break;
        rc = -errno;
        close(fd);
        fd = -1;
        if (rc != SPATE_EADDRINUSE || port == hi)
            return spate_error_set(err, rc, "cannot listen on %s:%s: %s", host, ports,
                                   spate_strerror(rc));
    }
    getsockname(fd, (struct sockaddr *)&sa, &len);
    svc->port = ntohs(sa.sin_port);
    uv_tcp_init(&svc->loop, &svc->listener);
    svc->listener.data = svc;
    if ((rc = uv_tcp_open(&svc->listener, fd)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&svc->listener, SOMAXCONN, service_on_connection)) != 0) {
        uv_close((uv_handle_t *)&svc->listener, NULL);
        return spate_error_set(err, SPATE_EIO, "cannot listen on %s:%d: %s", host, svc->port,
                               uv_strerror(rc));
    }
    svc->listening = true;
    return 0;
}

/* ---- life cycle ------------------------------------------------------------ */

static void
service_close_handles(struct rpc_service *svc)
{
    uv_close((uv_handle_t *)&svc->prepare, NULL);
    uv_close((uv_handle_t *)&svc->check, NULL);
    uv_close((uv_handle_t *)&svc->idle, NULL);
    uv_close((uv_handle_t *)&svc->call_timer, NULL);
    uv_close((uv_handle_t *)&svc->handshake_timer, NULL);
    uv_close((uv_handle_t *)&svc->sweep_timer, NULL);
    if (svc->listening) {
        uv_close((uv_handle_t *)&svc->listener, NULL);
        svc->listening = false;
    }
    mailbox_close(&svc->mailbox, NULL);
}

int
rpc_service_new(const struct rpc_service_options *o, struct rpc_service **out, spate_error *err)
{
    struct rpc_service *svc = xcalloc(1, sizeof *svc);
    const char *adv;
    int rc;

    if ((rc = uv_loop_init(&svc->loop)) != 0) {
        free(svc);
        return spate_error_set(err, SPATE_EIO, "cannot create the rpc loop: %s", uv_strerror(rc));
    }
    svc->loop.data = svc;
    snprintf(svc->cluster_id, sizeof svc->cluster_id, "%s",
             o->cluster_id ? o->cluster_id : "spate");
    svc->secret = o->secret && *o->secret ? xstrdup(o->secret) : NULL;
    svc->hs.magic = HANDSHAKE_MAGIC_RPC;
    svc->hs.cluster_id = svc->cluster_id;
    svc->hs.secret = svc->secret;
    svc->tls = o->tls != NULL ? tls_context_ref(o->tls) : NULL;
    svc->max_frame_bytes = o->max_frame_bytes ? o->max_frame_bytes : 10u << 20;
    svc->ask_timeout_ms = o->ask_timeout_ms > 0 ? o->ask_timeout_ms : 10000;
    snprintf(svc->thread_name, sizeof svc->thread_name, "%s",
             o->thread_name ? o->thread_name : "rpc");
    hmap_init(&svc->endpoints);
    hmap_init(&svc->pool);
    hmap_init(&svc->calls);
    hmap_init(&svc->watches);
    hmap_init(&svc->access_limits);
    list_init(&svc->conns);
    list_init(&svc->dirty);
    list_init(&svc->deadlines);
    list_init(&svc->handshaking);
    svc->handshake_timeout_ms = o->handshake_timeout_ms > 0 ? o->handshake_timeout_ms : 10000;
    svc->max_connections = o->max_connections > 0 ? o->max_connections : 1024;
    svc->max_connections_per_peer =
        o->max_connections_per_peer > 0 ? o->max_connections_per_peer : 256;
    svc->max_handshaking = o->max_handshaking > 0 ? o->max_handshaking : 128;
    svc->frame_timeout_ms = o->frame_timeout_ms > 0 ? o->frame_timeout_ms : 60000;
    svc->max_buffered_bytes = o->max_buffered_bytes > 0 ? o->max_buffered_bytes : 256u << 20;
    svc->next_call_id = 1;

    mailbox_init(&svc->loop, &svc->mailbox, service_on_mail);
    svc->mailbox.data = svc;
    uv_prepare_init(&svc->loop, &svc->prepare);
    svc->prepare.data = svc;
    uv_prepare_start(&svc->prepare, service_on_prepare);
    uv_check_init(&svc->loop, &svc->check);
    svc->check.data = svc;
    uv_check_start(&svc->check, service_on_check);
    uv_idle_init(&svc->loop, &svc->idle);
    svc->idle.data = svc;
    uv_timer_init(&svc->loop, &svc->call_timer);
    svc->call_timer.data = svc;
    uv_timer_init(&svc->loop, &svc->handshake_timer);
    svc->handshake_timer.data = svc;
    uv_timer_init(&svc->loop, &svc->sweep_timer);
    svc->sweep_timer.data = svc;

    if (o->bind_host != NULL) {
        if ((rc = service_bind(svc, o->bind_host, o->port ? o->port : "0", err)) != 0)
            goto fail;
        uv_timer_start(&svc->sweep_timer, conn_on_sweep, 1000, 1000);
        adv = o->advertised_host ? o->advertised_host : o->bind_host;
        if (strcmp(adv, "0.0.0.0") == 0 || strcmp(adv, "localhost") == 0)
            adv = "127.0.0.1";
        snprintf(svc->address, sizeof svc->address, "%s:%d", adv, svc->port);
        snprintf(svc->bind_host, sizeof svc->bind_host, "%s", o->bind_host);
    }
    conn_local_pair(svc);
    *out = svc;
    return 0;
fail:
    conn_close_all(svc);
    service_close_handles(svc);
    uv_run(&svc->loop, UV_RUN_DEFAULT);
    uv_loop_close(&svc->loop);
    free(svc->secret);
    tls_context_unref(svc->tls);
    free(svc);
    return rc;
}

struct thread_start {
    struct rpc_service *svc;
    uv_sem_t started;
};

static void
service_thread_main(void *arg)
{
    struct thread_start *ts = arg;
    struct rpc_service *svc = ts->svc;

    log_set_thread_name(svc->thread_name);
    svc->loop_thread = pthread_self();
    /* Release: loop_thread is visible to whoever sees running. */
    atomic_store_explicit(&svc->running, true, memory_order_release);
    uv_sem_post(&ts->started);
    uv_run(&svc->loop, UV_RUN_DEFAULT);
}

int
rpc_service_start(struct rpc_service *svc, spate_error *err)
{
    struct thread_start ts = { .svc = svc };
    int rc;

    SPATE_ASSERT(!atomic_load(&svc->running));
    uv_sem_init(&ts.started, 0);
    rc = uv_thread_create(&svc->thread, service_thread_main, &ts);
    if (rc != 0) {
        uv_sem_destroy(&ts.started);
        return spate_error_set(err, SPATE_EIO, "cannot start the rpc thread: %s", uv_strerror(rc));
    }
    uv_sem_wait(&ts.started);
    uv_sem_destroy(&ts.started);
    if (svc->listening)
        SPATE_LOG_INFO("rpc", "rpc service listening at %s (cluster '%s')", svc->address,
                       svc->cluster_id);
    return 0;
}

struct sync_call {
    struct rpc_runnable r;
    struct rpc_endpoint *ep;
    void (*fn)(void *arg);
    void *arg;
    uv_sem_t done;
};

static void
sync_call_run(struct rpc_runnable *r)
{
    struct sync_call *sc = container_of(r, struct sync_call, r);
    struct rpc_endpoint *prev = rpc_enter(sc->ep);

    sc->fn(sc->arg);
    rpc_leave(prev);
    uv_sem_post(&sc->done);
}

void
rpc_service_run_sync(struct rpc_service *svc, struct rpc_endpoint *ep, void (*fn)(void *arg),
                     void *arg)
{
    struct sync_call sc = { .ep = ep, .fn = fn, .arg = arg };

    if (!atomic_load(&svc->running)) {
        /* Not started yet: this thread is the only one touching it. */
        struct rpc_endpoint *prev = rpc_enter(ep);

        fn(arg);
        rpc_leave(prev);
        return;
    }
    SPATE_ASSERT(!rpc_service_in_loop(svc));
    uv_sem_init(&sc.done, 0);
    sc.r.run = sync_call_run;
    rpc_service_post(svc, &sc.r);
    uv_sem_wait(&sc.done);
    uv_sem_destroy(&sc.done);
}

static void
service_shutdown(void *arg)
{
    struct rpc_service *svc = arg;

    svc->stopping = true;
    endpoint_stop_all(svc);
    /* Callbacks of what the stops failed run before the sockets go. */
    service_drain(svc);
    service_drain(svc);
    /* Last words (a TaskExecutor's disconnect) leave if the socket takes them. */
    conn_flush_dirty(svc);
    conn_close_all(svc);
    service_close_handles(svc);
}

void
rpc_service_stop(struct rpc_service *svc)
{
    if (svc == NULL || !atomic_load(&svc->running))
        return;
    rpc_service_run_sync(svc, NULL, service_shutdown, svc);
    uv_thread_join(&svc->thread);
    atomic_store(&svc->running, false);
}

void
rpc_service_free(struct rpc_service *svc)
{
    struct hmap_node *n;

    if (svc == NULL)
        return;
    if (atomic_load(&svc->running)) {
        rpc_service_stop(svc);
    } else if (!svc->stopping) {
        service_shutdown(svc);
        uv_run(&svc->loop, UV_RUN_DEFAULT);
    }
    /* Whatever a close callback queued last. */
    service_drain(svc);
    uv_loop_close(&svc->loop);
    while ((n = hmap_first(&svc->watches)) != NULL) {
        hmap_remove(&svc->watches, n);
        free(n);
    }
    hmap_release(&svc->endpoints);
    hmap_release(&svc->pool);
    hmap_release(&svc->calls);
    hmap_release(&svc->watches);
    conn_access_release_all(svc);
    for (int i = 0; i < RPC_TOMBSTONES; i++)
        free(svc->tombstones[i]);
    free(svc->secret);
    tls_context_unref(svc->tls);
    free(svc);
}

const char *
rpc_service_address(const struct rpc_service *svc)
{
    return svc->address;
}

int
rpc_service_port(const struct rpc_service *svc)
{
    return svc->port;
}

int64_t
rpc_service_ask_timeout_ms(const struct rpc_service *svc)
{
    return svc->ask_timeout_ms;
}

/* ---- endpoint registry ------------------------------------------------------ */

struct rpc_endpoint *
rpc_service_find_endpoint(struct rpc_service *svc, const char *name, size_t len)
{
    uint64_t h = hmap_hash_bytes(name, len);
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, h, &svc->endpoints)
    {
        struct rpc_endpoint *ep = container_of(n, struct rpc_endpoint, name_node);

        if (strlen(ep->name) == len && memcmp(ep->name, name, len) == 0)
            return ep;
    }
    return NULL;
}

bool
rpc_service_is_tombstone(struct rpc_service *svc, const char *name, size_t len)
{
    for (int i = 0; i < RPC_TOMBSTONES; i++) {
        const char *t = svc->tombstones[i];

        if (t != NULL && strlen(t) == len && memcmp(t, name, len) == 0)
            return true;
    }
    return false;
}

void
rpc_service_add_tombstone(struct rpc_service *svc, const char *name)
{
    unsigned i = svc->tombstone_next++ % RPC_TOMBSTONES;

    free(svc->tombstones[i]);
    svc->tombstones[i] = xstrdup(name);
}

/* ---- peer watches ------------------------------------------------------------ */

struct rpc_watch_list {
    struct hmap_node node;
    struct list_node watches;
    char peer[];
};

struct rpc_peer_watch {
    struct list_node node;
    struct rpc_watch_list *list;
    struct rpc_service *svc;
    struct rpc_endpoint *ep;
    rpc_peer_lost_cb cb;
    void *arg;
    bool firing;
};

static struct rpc_watch_list *
watch_list_find(struct rpc_service *svc, const char *peer, bool create)
{
    uint64_t h = hmap_hash_string(peer);
    struct hmap_node *n;
    struct rpc_watch_list *wl;

    HMAP_FOR_EACH_WITH_HASH(n, h, &svc->watches)
    {
        wl = container_of(n, struct rpc_watch_list, node);
        if (strcmp(wl->peer, peer) == 0)
            return wl;
    }
    if (!create)
        return NULL;
    wl = xmalloc(sizeof *wl + strlen(peer) + 1);
    strcpy(wl->peer, peer);
    list_init(&wl->watches);
    hmap_insert(&svc->watches, &wl->node, h);
    return wl;
}

struct rpc_peer_watch *
rpc_service_watch_peer(struct rpc_service *svc, struct rpc_endpoint *ep, const char *peer,
                       rpc_peer_lost_cb cb, void *arg)
{
    struct rpc_peer_watch *w = xcalloc(1, sizeof *w);

    w->list = watch_list_find(svc, peer, true);
    w->svc = svc;
    w->ep = ep;
    w->cb = cb;
    w->arg = arg;
    list_push_back(&w->list->watches, &w->node);
    /* A watch is only as good as a connection that can break. */
    conn_get(svc, peer);
    return w;
}

void
rpc_service_unwatch_peer(struct rpc_peer_watch *w)
{
    struct rpc_watch_list *wl;

    if (w == NULL)
        return;
    wl = w->list;
    list_remove(&w->node);
    if (list_empty(&wl->watches)) {
        hmap_remove(&w->svc->watches, &wl->node);
        free(wl);
    }
    free(w);
}

void
rpc_service_peer_lost(struct rpc_service *svc, const char *peer, const char *reason)
{
    struct rpc_watch_list *wl;
    struct list_node *p;

    if (svc->stopping || (wl = watch_list_find(svc, peer, false)) == NULL)
        return;
    list_for_each(p, &wl->watches) container_of(p, struct rpc_peer_watch, node)->firing = true;
    /* Rescan after each callback: it may remove any watch, even the list. */
    for (;;) {
        struct rpc_peer_watch *w = NULL;
        struct rpc_endpoint *prev;

        if ((wl = watch_list_find(svc, peer, false)) == NULL)
            return;
        list_for_each(p, &wl->watches)
        {
            struct rpc_peer_watch *c = container_of(p, struct rpc_peer_watch, node);

            if (c->firing) {
                w = c;
                break;
            }
        }
        if (w == NULL)
            return;
        w->firing = false;
        prev = rpc_enter(w->ep);
        w->cb(w->arg, peer, reason);
        rpc_leave(prev);
    }
}

/* ---- addresses ------------------------------------------------------------------ */

int
rpc_address_parse(const char *address, char *peer, size_t peer_size, char *endpoint,
                  size_t endpoint_size, spate_error *err)
{
    const char *slash = strchr(address, '/');
    const char *colon;
    size_t hlen;
    char *end;
    long port;

    if (slash == NULL || slash[1] == '\0')
        return spate_error_set(err, SPATE_EINVAL,
                               "malformed rpc address '%s': expected host:port/endpoint", address);
    colon = memrchr(address, ':', (size_t)(slash - address));
    if (colon == NULL || colon == address)
        return spate_error_set(err, SPATE_EINVAL,
                               "malformed rpc address '%s': expected host:port/endpoint", address);
    port = strtol(colon + 1, &end, 10);
    if (end != slash || port <= 0 || port > 65535)
        return spate_error_set(err, SPATE_EINVAL, "malformed rpc address '%s': bad port", address);
    hlen = (size_t)(colon - address);
    if (hlen == 9 && strncmp(address, "localhost", 9) == 0) {
        address = "127.0.0.1";
        hlen = 9;
    }
    if ((size_t)snprintf(peer, peer_size, "%.*s:%ld", (int)hlen, address, port) >= peer_size ||
        (size_t)snprintf(endpoint, endpoint_size, "%s", slash + 1) >= endpoint_size)
        return spate_error_set(err, SPATE_EINVAL, "rpc address '%s' is too long", address);
    return 0;
}
