/* The ZooKeeper plugin (coord.h) over Debian's libzookeeper-mt: built as
 * libspate_zookeeper.so and loaded by ha/plugin.c only when
 * high-availability.type is zookeeper. The client's IO and completion
 * threads are libzookeeper's; events are handed on from the latter. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include <spate/error.h>

#include "ha/coord.h"

/* errno's text, thread-safe (strerror is not, and the plugin has no libspate
 * to ask: it links libzookeeper alone). */
static const char *
errno_text(int e)
{
    const char *text = strerrordesc_np(e);

    return text != NULL ? text : "unknown error";
}

/* The handle is replaced after a session expired: calls hold the read lock
 * while they use it, reconnect the write lock. The watcher never takes the
 * lock (zookeeper_close joins the thread it runs on): it drops the events of
 * the handle being closed, `retiring`. It cannot compare with `zh` instead:
 * a new handle's first events (its connection) may come before
 * zookeeper_init has returned it, and were lost that way under load. */
struct coord_client {
    pthread_rwlock_t lock;
    _Atomic(zhandle_t *) zh;
    _Atomic(zhandle_t *) retiring; /* set only while zookeeper_close runs */
    char *quorum;
    int session_timeout_ms;
    coord_event_fn fn;
    void *arg;
    coord_log_fn log;
};

#define ZK_GET_BUFFER (64 * 1024)
#define ZK_MAX_NODE   (1024 * 1024 + 1024)

static int
zk_code(int rc)
{
    switch (rc) {
    case ZOK:
        return 0;
    case ZNONODE:
        return SPATE_ENOENT;
    case ZNODEEXISTS:
        return SPATE_EEXIST;
    case ZBADVERSION:
        return SPATE_EAGAIN;
    case ZNOTEMPTY:
        return SPATE_EBUSY;
    case ZCONNECTIONLOSS:
    case ZSESSIONEXPIRED:
    case ZOPERATIONTIMEOUT:
    case ZINVALIDSTATE:
    case ZCLOSING:
    case ZSESSIONMOVED:
        return SPATE_ECONNLOST;
    default:
        return SPATE_EIO;
    }
}

static int zk_fail(int rc, char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
zk_fail(int rc, char *errbuf, size_t errlen, const char *fmt, ...)
{
    char what[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (errbuf != NULL && errlen > 0)
        snprintf(errbuf, errlen, "%s: %s", what, zerror(rc));
    return zk_code(rc);
}

static int
zk_state_of(int state)
{
    if (state == ZOO_CONNECTED_STATE || state == ZOO_READONLY_STATE)
        return COORD_CONNECTED;
    if (state == ZOO_EXPIRED_SESSION_STATE)
        return COORD_EXPIRED;
    if (state == ZOO_AUTH_FAILED_STATE)
        return COORD_AUTH_FAILED;
    return COORD_CONNECTING;
}

static int
zk_event_of(int type)
{
    if (type == ZOO_CREATED_EVENT)
        return COORD_EV_CREATED;
    if (type == ZOO_DELETED_EVENT)
        return COORD_EV_DELETED;
    if (type == ZOO_CHANGED_EVENT)
        return COORD_EV_CHANGED;
    if (type == ZOO_CHILD_EVENT)
        return COORD_EV_CHILD;
    if (type == ZOO_SESSION_EVENT)
        return COORD_EV_SESSION;
    return COORD_EV_NOT_WATCHING;
}

/* libzookeeper's completion thread. */
static void
zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    struct coord_client *c = ctx;

    if (zh == atomic_load_explicit(&c->retiring, memory_order_acquire))
        return; /* a replaced handle's last words */
    c->fn(c->arg, zk_event_of(type), zk_state_of(state), path ? path : "");
}

/* libzookeeper's own lines are off (its connection errors would repeat
 * many times a second): spate logs the session's states itself. Level 0
 * turns them off; the setting is process-wide and idempotent. */
static zhandle_t *
zk_init(struct coord_client *c)
{
    zoo_set_debug_level((ZooLogLevel)0);
    return zookeeper_init(c->quorum, zk_watcher, c->session_timeout_ms, NULL, c, 0);
}

static int
zk_connect(const char *quorum, int session_timeout_ms, coord_event_fn fn, void *arg,
           coord_log_fn log, struct coord_client **out, char *errbuf, size_t errlen)
{
    struct coord_client *c = calloc(1, sizeof *c);
    zhandle_t *zh;

    if (c == NULL)
        return SPATE_ENOMEM;
    pthread_rwlock_init(&c->lock, NULL);
    c->quorum = strdup(quorum);
    c->session_timeout_ms = session_timeout_ms;
    c->fn = fn;
    c->arg = arg;
    c->log = log;
    /* Calls wait for the handle; its events go through at once. */
    pthread_rwlock_wrlock(&c->lock);
    zh = zk_init(c);
    if (zh == NULL) {
        int e = errno;

        pthread_rwlock_unlock(&c->lock);
        snprintf(errbuf, errlen, "cannot start a ZooKeeper client for quorum '%s': %s", quorum,
                 errno_text(e));
        pthread_rwlock_destroy(&c->lock);
        free(c->quorum);
        free(c);
        return SPATE_EINVAL;
    }
    atomic_store_explicit(&c->zh, zh, memory_order_release);
    pthread_rwlock_unlock(&c->lock);
    *out = c;
    return 0;
}

/* Under the write lock. Once zookeeper_close has returned, the handle's
 * threads are joined: no event of it comes later, and its address may be
 * reused by the next handle, so `retiring` is cleared. */
static void
zk_retire(struct coord_client *c)
{
    zhandle_t *old = atomic_exchange_explicit(&c->zh, NULL, memory_order_acq_rel);

    if (old == NULL)
        return;
    atomic_store_explicit(&c->retiring, old, memory_order_release);
    zookeeper_close(old);
    atomic_store_explicit(&c->retiring, NULL, memory_order_release);
}

static int
zk_reconnect(struct coord_client *c, char *errbuf, size_t errlen)
{
    zhandle_t *zh;

    pthread_rwlock_wrlock(&c->lock);
    zk_retire(c);
    zh = zk_init(c);
    atomic_store_explicit(&c->zh, zh, memory_order_release);
    pthread_rwlock_unlock(&c->lock);
    if (zh == NULL) {
        snprintf(errbuf, errlen, "cannot start a ZooKeeper client for quorum '%s': %s", c->quorum,
                 errno_text(errno));
        return SPATE_EIO;
    }
    return 0;
}

/* Takes the read lock; NULL (and no lock) when there is no handle. */
static zhandle_t *
zk_use(struct coord_client *c)
{
    zhandle_t *zh;

    pthread_rwlock_rdlock(&c->lock);
    zh = atomic_load_explicit(&c->zh, memory_order_acquire);
    if (zh == NULL)
        pthread_rwlock_unlock(&c->lock);
    return zh;
}

static void
zk_done(struct coord_client *c)
{
    pthread_rwlock_unlock(&c->lock);
}

static int
zk_state(struct coord_client *c)
{
    zhandle_t *zh = zk_use(c);
    int s;

    if (zh == NULL)
        return COORD_CLOSED;
    s = zk_state_of(zoo_state(zh));
    zk_done(c);
    return s;
}

static int
zk_session_timeout_ms(struct coord_client *c)
{
    zhandle_t *zh = zk_use(c);
    int t = 0;

    if (zh == NULL)
        return 0;
    if (zoo_state(zh) == ZOO_CONNECTED_STATE)
        t = zoo_recv_timeout(zh);
    zk_done(c);
    return t;
}

static int64_t
zk_session_id(struct coord_client *c)
{
    zhandle_t *zh = zk_use(c);
    int64_t id = 0;

    if (zh == NULL)
        return 0;
    id = zoo_client_id(zh)->client_id;
    zk_done(c);
    return id;
}

#define ZK_USE_OR_FAIL(c, zh, errbuf, errlen)                               \
    do {                                                                    \
        if (((zh) = zk_use(c)) == NULL) {                                   \
            snprintf((errbuf), (errlen), "the ZooKeeper client is closed"); \
            return SPATE_ECONNLOST;                                         \
        }                                                                   \
    } while (0)

static int
zk_create(struct coord_client *c, const char *path, const void *data, size_t len, int flags,
          char *out_path, size_t out_size, char *errbuf, size_t errlen)
{
    int mode = 0, rc;
    zhandle_t *zh;

    if (flags & COORD_EPHEMERAL)
        mode |= ZOO_EPHEMERAL;
    if (flags & COORD_SEQUENTIAL)
        mode |= ZOO_SEQUENCE;
    ZK_USE_OR_FAIL(c, zh, errbuf, errlen);
    rc = zoo_create(zh, path, data, data ? (int)len : -1, &ZOO_OPEN_ACL_UNSAFE, mode, out_path,
                    out_path ? (int)out_size : 0);
    zk_done(c);
    if (rc != ZOK)
        return zk_fail(rc, errbuf, errlen, "cannot create znode '%s'", path);
    return 0;
}

static int
zk_get(struct coord_client *c, const char *path, int watch, uint8_t **data, size_t *len,
       int32_t *version, char *errbuf, size_t errlen)
{
    int size = ZK_GET_BUFFER, rc;
    zhandle_t *zh;

    for (;;) {
        char *buf = malloc((size_t)size);
        int n = size;
        struct Stat st;

        if (buf == NULL)
            return SPATE_ENOMEM;
        ZK_USE_OR_FAIL(c, zh, errbuf, errlen);
        rc = zoo_get(zh, path, watch, buf, &n, &st);
        zk_done(c);
        if (rc != ZOK) {
            free(buf);
            return zk_fail(rc, errbuf, errlen, "cannot read znode '%s'", path);
        }
        if (st.dataLength > size && size < ZK_MAX_NODE) {
            free(buf); /* grew meanwhile: read again, big enough */
            size = st.dataLength < ZK_MAX_NODE ? st.dataLength : ZK_MAX_NODE;
            continue;
        }
        *data = (uint8_t *)buf;
        *len = n < 0 ? 0 : (size_t)n;
        if (version != NULL)
            *version = st.version;
        return 0;
    }
}

static int
zk_set(struct coord_client *c, const char *path, const void *data, size_t len, int32_t version,
       char *errbuf, size_t errlen)
{
    zhandle_t *zh;
    int rc;

    ZK_USE_OR_FAIL(c, zh, errbuf, errlen);
    rc = zoo_set(zh, path, data, (int)len, version);
    zk_done(c);
    if (rc != ZOK)
        return zk_fail(rc, errbuf, errlen, "cannot write znode '%s'", path);
    return 0;
}

static int
zk_remove(struct coord_client *c, const char *path, int32_t version, char *errbuf, size_t errlen)
{
    zhandle_t *zh;
    int rc;

    ZK_USE_OR_FAIL(c, zh, errbuf, errlen);
    rc = zoo_delete(zh, path, version);
    zk_done(c);
    if (rc != ZOK)
        return zk_fail(rc, errbuf, errlen, "cannot delete znode '%s'", path);
    return 0;
}

static int
zk_exists(struct coord_client *c, const char *path, int watch, char *errbuf, size_t errlen)
{
    struct Stat st;
    zhandle_t *zh;
    int rc;

    ZK_USE_OR_FAIL(c, zh, errbuf, errlen);
    rc = zoo_exists(zh, path, watch, &st);
    zk_done(c);
    if (rc != ZOK)
        return zk_fail(rc, errbuf, errlen, "cannot look up znode '%s'", path);
    return 0;
}

static int
zk_children(struct coord_client *c, const char *path, int watch, char ***names, size_t *count,
            char *errbuf, size_t errlen)
{
    struct String_vector v = { 0, NULL };
    zhandle_t *zh;
    char **out;
    int rc;

    ZK_USE_OR_FAIL(c, zh, errbuf, errlen);
    rc = zoo_get_children(zh, path, watch, &v);
    zk_done(c);
    if (rc != ZOK)
        return zk_fail(rc, errbuf, errlen, "cannot list znode '%s'", path);
    out = calloc(v.count > 0 ? (size_t)v.count : 1, sizeof *out);
    if (out == NULL) {
        deallocate_String_vector(&v);
        return SPATE_ENOMEM;
    }
    for (int i = 0; i < v.count; i++)
        out[i] = strdup(v.data[i]);
    *count = v.count > 0 ? (size_t)v.count : 0;
    *names = out;
    deallocate_String_vector(&v);
    return 0;
}

static int
zk_check_and_put(struct coord_client *c, const char *check_path, const char *path, const void *data,
                 size_t len, char *errbuf, size_t errlen)
{
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    char created[512];
    zhandle_t *zh;
    int rc;

    ZK_USE_OR_FAIL(c, zh, errbuf, errlen);
    zoo_check_op_init(&ops[0], check_path, -1);
    zoo_set_op_init(&ops[1], path, data, (int)len, -1, NULL);
    rc = zoo_multi(zh, 2, ops, res);
    if (rc == ZNONODE && res[0].err == ZOK) {
        /* The information node does not exist yet: create it instead. */
        zoo_check_op_init(&ops[0], check_path, -1);
        zoo_create_op_init(&ops[1], path, data, (int)len, &ZOO_OPEN_ACL_UNSAFE, 0, created,
                           sizeof created);
        rc = zoo_multi(zh, 2, ops, res);
    }
    zk_done(c);
    if (rc != ZOK) {
        if (res[0].err == ZNONODE)
            return zk_fail(ZNONODE, errbuf, errlen,
                           "cannot write '%s': the latch node '%s' is gone", path, check_path);
        return zk_fail(rc, errbuf, errlen, "cannot write znode '%s'", path);
    }
    return 0;
}

static void
zk_close(struct coord_client *c)
{
    if (c == NULL)
        return;
    pthread_rwlock_wrlock(&c->lock);
    zk_retire(c);
    pthread_rwlock_unlock(&c->lock);
    pthread_rwlock_destroy(&c->lock);
    free(c->quorum);
    free(c);
}

static const struct coord_plugin zk_plugin = {
    .abi_version = COORD_ABI_VERSION,
    .connect = zk_connect,
    .reconnect = zk_reconnect,
    .state = zk_state,
    .session_timeout_ms = zk_session_timeout_ms,
    .session_id = zk_session_id,
    .create = zk_create,
    .get = zk_get,
    .set = zk_set,
    .remove = zk_remove,
    .exists = zk_exists,
    .children = zk_children,
    .check_and_put = zk_check_and_put,
    .close = zk_close,
};

/* The plugin's one export (coord.h's COORD_PLUGIN_SYMBOL). */
__attribute__((visibility("default"))) const struct coord_plugin *spate_ha_zookeeper_plugin(void);

const struct coord_plugin *
spate_ha_zookeeper_plugin(void)
{
    return &zk_plugin;
}
