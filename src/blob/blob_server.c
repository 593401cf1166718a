/* The BlobServer (blob_server.h): the store's table and files, the accept
 * thread that serves each TaskManager's fetch on a thread of its own, and
 * the HA blob store's folders (a recovered job's blob is restored from
 * there by its first fetch). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blob/blob_int.h"
#include "blob/blob_server.h"
#include "core/alloc.h"
#include "core/fs.h"
#include "core/id.h"
#include "core/log.h"
#include "core/tmp_dir.h"
#include "core/clock.h"
#include "core/util.h"
#include "rpc/handshake.h"

#define BLOB_LOG         "blobserver"
#define BLOB_MAX_FETCHES 64 /* authenticated fetches served at once */

struct blob_entry {
    struct blob_entry *next;
    uint8_t key[SHA256_BYTES];
    int refs;
    bool local;     /* its file is in the store's folder */
    bool restoring; /* a fetch copies it from the HA blob store */
    spate_id *jobs; /* whose folders of the HA blob store hold it (for a restore) */
    size_t njobs;
};

/* A connection still in its handshake (its thread's fd, for eviction). */
struct blob_handshaking {
    int fd;
    int64_t started_ms;
};

struct blob_server {
    pthread_mutex_t lock;    /* guards entries (and their fields), the counts, hs, stopping */
    pthread_cond_t idle;     /* nconns reached 0 */
    pthread_cond_t restored; /* a restore ended */
    struct blob_entry *entries;
    int nconns;   /* connection threads */
    int nfetches; /* of those, past the handshake and serving */
    struct blob_handshaking *hs;
    int nhs;
    int max_conns, max_handshaking;
    struct tls_context *tls; /* security.ssl.internal, or NULL */
    int64_t handshake_timeout_ms;
    struct log_ratelimit refusals;
    bool stopping;
    struct tmp_dir tmp; /* the folder of its blobs */
    const char *dir;    /* tmp.path */
    char *ha_dir;       /* the HA blob store's folder, or NULL */
    char address[300];
    int64_t max_size;
    char *secret;
    int listen_fd;
    int wake[2]; /* stop wakes the accept thread */
    pthread_t acceptor;
};

int
blob_server_options_from_config(const struct config *conf, struct blob_server_options *o,
                                spate_error *err)
{
    uint64_t max;
    int rc;

    memset(o, 0, sizeof *o);
    if (config_get_string(conf, CFG(BLOB_STORAGE_DIRECTORY), &o->storage_dir, NULL) != 0 ||
        o->storage_dir == NULL)
        o->storage_dir = tmp_dir_base(conf, o->storage_buf, sizeof o->storage_buf);
    if ((rc = config_get_string(conf, CFG(BLOB_SERVER_PORT), &o->port, err)) != 0 ||
        (rc = config_get_memory_bytes(conf, CFG(BLOB_MAX_SIZE), &max, err)) != 0)
        return rc;
    o->max_size_bytes = (int64_t)max;
    {
        int64_t conns, handshaking;

        if ((rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX), &conns, err)) != 0 ||
            (rc = config_get_int(conf, CFG(CLUSTER_CONNECTIONS_MAX_HANDSHAKING), &handshaking,
                                 err)) != 0 ||
            (rc = config_get_duration_ms(conf, CFG(CLUSTER_CONNECTIONS_HANDSHAKE_TIMEOUT),
                                         &o->handshake_timeout_ms, err)) != 0)
            return rc;
        o->max_connections = (int)conns;
        o->max_handshaking = (int)handshaking;
    }
    config_get_string(conf, CFG(SECURITY_RPC_SECRET), &o->secret, NULL);
    o->bind_host = "127.0.0.1";
    o->advertised_host = "127.0.0.1";
    return 0;
}

static void
blob_path(const struct blob_server *bs, const uint8_t key[SHA256_BYTES], char *out, size_t cap)
{
    char hex[SHA256_HEX_LEN + 1];

    snprintf(out, cap, "%s/blob_%s", bs->dir, sha256_hex(key, hex));
}

/* Where job's copy of key is in the HA blob store (Flink's layout). */
static void
blob_ha_path(const struct blob_server *bs, const spate_id *job, const uint8_t key[SHA256_BYTES],
             char *out, size_t cap)
{
    char hex[SHA256_HEX_LEN + 1];

    snprintf(out, cap, "%s/job_%s/blob_p-%s", bs->ha_dir, id_str(job).s, sha256_hex(key, hex));
}

static struct blob_entry *
blob_find(struct blob_server *bs, const uint8_t key[SHA256_BYTES])
{
    for (struct blob_entry *e = bs->entries; e != NULL; e = e->next)
        if (memcmp(e->key, key, SHA256_BYTES) == 0)
            return e;
    return NULL;
}

/* Drops one reference (lock held); the last one takes the entry out of the
 * table and removes its file, and returns it for blob_entry_free outside
 * the lock. */
static struct blob_entry *
blob_release_locked(struct blob_server *bs, struct blob_entry *e)
{
    struct blob_entry **p;
    char path[PATH_MAX];

    if (--e->refs > 0)
        return NULL;
    for (p = &bs->entries; *p != e; p = &(*p)->next)
        ;
    *p = e->next;
    if (e->local) {
        blob_path(bs, e->key, path, sizeof path);
        unlink(path);
    }
    return e;
}

static void
blob_entry_free(struct blob_entry *e)
{
    if (e == NULL)
        return;
    free(e->jobs);
    free(e);
}

/* Adds job to the jobs whose HA copy may restore e (lock held). */
static void
blob_entry_add_job(struct blob_entry *e, const spate_id *job)
{
    for (size_t i = 0; i < e->njobs; i++)
        if (id_equal(&e->jobs[i], job))
            return;
    e->jobs = xrealloc(e->jobs, (e->njobs + 1) * sizeof *e->jobs);
    e->jobs[e->njobs++] = *job;
}

static int blob_restore(struct blob_server *bs, const uint8_t key[SHA256_BYTES],
                        const spate_id *jobs, size_t njobs, spate_error *err);

/* Makes sure e's file is here (lock held, released meanwhile): a fetch of
 * an entry without its file restores it from the HA blob store, one fetch
 * at a time. e is pinned by the caller. */
static int
blob_ensure_local_locked(struct blob_server *bs, struct blob_entry *e, spate_error *err)
{
    spate_id *jobs;
    size_t njobs;
    int rc;

    while (e->restoring)
        pthread_cond_wait(&bs->restored, &bs->lock);
    if (e->local)
        return 0;
    e->restoring = true;
    njobs = e->njobs;
    jobs = xmalloc((njobs ? njobs : 1) * sizeof *jobs);
    memcpy(jobs, e->jobs, njobs * sizeof *jobs);
    pthread_mutex_unlock(&bs->lock);
    rc = blob_restore(bs, e->key, jobs, njobs, err);
    free(jobs);
    pthread_mutex_lock(&bs->lock);
    e->restoring = false;
    e->local = e->local || rc == 0; /* a put may have brought it meanwhile */
    pthread_cond_broadcast(&bs->restored);
    return e->local ? 0 : rc;
}

/* ---- serving one fetch -------------------------------------------------------------- */

static void
blob_send_error(struct blob_sock *s, uint8_t status, const char *msg)
{
    size_t len = strlen(msg) > 1000 ? 1000 : strlen(msg);
    uint8_t head[3] = { status, (uint8_t)(len >> 8), (uint8_t)len };

    if (blob_sock_write(s, head, sizeof head) == 0)
        blob_sock_write(s, msg, len);
}

/* The handshake (blob_int.h): 0 when the client proved the secret. */
static int
blob_handshake(struct blob_server *bs, struct blob_sock *s, const char *peer, int64_t deadline_ms)
{
    struct handshake_params hp = { HANDSHAKE_MAGIC_BLOB, BLOB_CLUSTER_ID, bs->secret };
    struct handshake_nonces n;
    uint8_t msg[HANDSHAKE_SIZE];
    enum handshake_status st;
    spate_error err;
    int rc;

    if (s->tls != NULL && (rc = tls_fd_handshake(s->tls, s->fd, deadline_ms, &err)) != 0) {
        SPATE_LOG_LIMITED(&bs->refusals, LOG_LEVEL_WARN, BLOB_LOG,
                          "refused a blob connection from %s: %s", peer, err.message);
        return rc;
    }
    handshake_encode_challenge(&hp, &n, HANDSHAKE_OK, NULL, msg);
    if (blob_sock_write(s, msg, sizeof msg) != 0)
        return SPATE_ECONNRESET;
    if ((rc = blob_sock_read(s, msg, sizeof msg, deadline_ms)) != 0) {
        if (rc == SPATE_ETIMEDOUT)
            SPATE_LOG_LIMITED(&bs->refusals, LOG_LEVEL_WARN, BLOB_LOG,
                              "closing the blob connection from %s: no handshake within %lld ms "
                              "(cluster.connections.handshake-timeout)",
                              peer, (long long)bs->handshake_timeout_ms);
        return rc;
    }
    if (handshake_check_hello(&hp, &n, msg, &st, &err) != 0) {
        SPATE_LOG_LIMITED(&bs->refusals, LOG_LEVEL_WARN, BLOB_LOG,
                          "refused a blob connection from %s: %s", peer, err.message);
        handshake_encode_reply(&hp, &n, st, err.message, msg);
        blob_sock_write(s, msg, sizeof msg);
        return SPATE_EPROTO;
    }
    handshake_encode_reply(&hp, &n, HANDSHAKE_OK, NULL, msg);
    return blob_sock_write(s, msg, sizeof msg);
}

/* The connection on fd passed (or failed) its handshake: no longer
 * evictable. */
static void
blob_forget_handshake(struct blob_server *bs, int fd)
{
    pthread_mutex_lock(&bs->lock);
    for (int i = 0; i < bs->nhs; i++) {
        if (bs->hs[i].fd == fd) {
            bs->hs[i] = bs->hs[--bs->nhs];
            break;
        }
    }
    pthread_mutex_unlock(&bs->lock);
}

static void blob_fetch(struct blob_server *bs, struct blob_sock *s, const uint8_t *key);

static void
blob_serve(struct blob_server *bs, int fd, const char *peer)
{
    struct blob_sock sock = { fd, bs->tls != NULL ? tls_session_new(bs->tls, TLS_SERVER) : NULL };

    uint8_t req[1 + SHA256_BYTES];
    const uint8_t *key = req + 1;
    int64_t deadline = (int64_t)clock_mono_ms() + bs->handshake_timeout_ms;
    bool busy;

    if (blob_handshake(bs, &sock, peer, deadline) != 0 ||
        blob_sock_read(&sock, req, sizeof req, deadline) != 0) {
        blob_forget_handshake(bs, fd);
        goto out;
    }
    blob_forget_handshake(bs, fd);
    if (req[0] != BLOB_OP_GET) {
        SPATE_LOG_LIMITED(&bs->refusals, LOG_LEVEL_WARN, BLOB_LOG,
                          "closing the blob connection from %s: unknown operation %u", peer,
                          req[0]);
        blob_send_error(&sock, BLOB_REFUSED, "unknown operation");
        goto out;
    }
    pthread_mutex_lock(&bs->lock);
    busy = bs->nfetches >= BLOB_MAX_FETCHES;
    if (!busy)
        bs->nfetches++;
    pthread_mutex_unlock(&bs->lock);
    if (busy) {
        SPATE_LOG_LIMITED(&bs->refusals, LOG_LEVEL_WARN, BLOB_LOG,
                          "%d fetches in flight: %s is to try again", BLOB_MAX_FETCHES, peer);
        blob_send_error(&sock, BLOB_BUSY, "busy: too many fetches in flight, try again");
        goto out;
    }
    blob_fetch(bs, &sock, key);
    pthread_mutex_lock(&bs->lock);
    bs->nfetches--;
    pthread_mutex_unlock(&bs->lock);
out:
    tls_session_free(sock.tls);
}

/* Some of file from *off on: sendfile in plaintext, else read and encrypted. */
static ssize_t
blob_send_file(struct blob_sock *s, int file, off_t *off, uint64_t size)
{
    char buf[1 << 16];
    ssize_t n;

    if (s->tls == NULL)
        return sendfile(s->fd, file, off, (size_t)(size - (uint64_t)*off));
    n = pread(file, buf, (size_t)MIN(sizeof buf, size - (uint64_t)*off), *off);
    if (n <= 0)
        return n;
    if (blob_sock_write(s, buf, (size_t)n) != 0) {
        errno = ECONNRESET;
        return -1;
    }
    *off += n;
    return n;
}

/* Sends the blob key names (or why not). */
static void
blob_fetch(struct blob_server *bs, struct blob_sock *s, const uint8_t *key)
{
    char path[PATH_MAX], hex[SHA256_HEX_LEN + 1];
    struct blob_entry *e, *gone = NULL;
    spate_error restore_err = { 0 };
    struct stat st;
    int file = -1;

    sha256_hex(key, hex);
    pthread_mutex_lock(&bs->lock);
    if ((e = blob_find(bs, key)) != NULL) {
        e->refs++; /* pinned while its file is restored and opened */
        /* Open under the lock: a concurrent last unref unlinks only after. */
        if (blob_ensure_local_locked(bs, e, &restore_err) == 0) {
            blob_path(bs, key, path, sizeof path);
            file = open(path, O_RDONLY | O_CLOEXEC);
        }
        gone = blob_release_locked(bs, e);
    }
    pthread_mutex_unlock(&bs->lock);
    blob_entry_free(gone);
    if (file < 0) {
        char msg[1000];

        if (restore_err.code != 0)
            snprintf(msg, sizeof msg, "%s", restore_err.message);
        else
            snprintf(msg, sizeof msg, "blob %s is not stored", hex);
        blob_send_error(s, BLOB_NOT_FOUND, msg);
        return;
    }
    if (fstat(file, &st) == 0) {
        uint8_t ok[9] = { BLOB_OK };
        uint64_t size = (uint64_t)st.st_size;
        off_t off = 0;

        for (int i = 0; i < 8; i++)
            ok[1 + i] = (uint8_t)(size >> (56 - 8 * i));
        if (blob_sock_write(s, ok, sizeof ok) == 0) {
            while ((uint64_t)off < size) {
                ssize_t n = blob_send_file(s, file, &off, size);

                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0) {
                    SPATE_LOG_WARN(BLOB_LOG, "sending blob %s failed: %s", hex,
                                   n < 0 ? spate_strerror(-errno) : "short file");
                    break;
                }
            }
        }
    }
    close(file);
}

/* A connection over the cap gets a challenge that refuses it (non-blocking:
 * the accept thread never waits on a client). */
static void
blob_refuse_busy(struct blob_server *bs, int fd)
{
    struct handshake_params hp = { HANDSHAKE_MAGIC_BLOB, BLOB_CLUSTER_ID, bs->secret };
    struct handshake_nonces n;
    uint8_t msg[HANDSHAKE_SIZE];
    char reason[96];

    SPATE_LOG_LIMITED(&bs->refusals, LOG_LEVEL_WARN, BLOB_LOG,
                      "%d blob connections open: refusing another (cluster.connections.max)",
                      bs->max_conns);
    snprintf(reason, sizeof reason, "busy: %d connections open", bs->max_conns);
    handshake_encode_challenge(&hp, &n, HANDSHAKE_BUSY, reason, msg);
    /* Under TLS the client sees its handshake fail when the socket closes. */
    if (bs->tls == NULL && send(fd, msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* nothing more to do: the client sees the connection close */
    }
}

struct blob_conn {
    struct blob_server *bs;
    int fd;
};

static void *
blob_conn_main(void *arg)
{
    struct blob_conn *c = arg;
    struct blob_server *bs = c->bs;
    struct timeval tv = { BLOB_IO_TIMEOUT_S, 0 };
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char peer[80] = "?", ip[64];

    log_set_thread_name("blob-conn");
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;

        inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof ip);
        snprintf(peer, sizeof peer, "%s:%d", ip, ntohs(sin->sin_port));
    }
    blob_serve(bs, c->fd, peer);
    close(c->fd);
    free(c);
    pthread_mutex_lock(&bs->lock);
    if (--bs->nconns == 0)
        pthread_cond_broadcast(&bs->idle);
    pthread_mutex_unlock(&bs->lock);
    return NULL;
}

static void *
blob_accept_main(void *arg)
{
    struct blob_server *bs = arg;

    log_set_thread_name("blob-accept");
    for (;;) {
        struct pollfd p[2] = { { .fd = bs->listen_fd, .events = POLLIN },
                               { .fd = bs->wake[0], .events = POLLIN } };
        struct blob_conn *c;
        pthread_attr_t attr;
        pthread_t t;
        int fd;

        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents != 0)
            return NULL;
        fd = accept4(bs->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&bs->lock);
        if (bs->nconns >= bs->max_conns) {
            pthread_mutex_unlock(&bs->lock);
            blob_refuse_busy(bs, fd);
            close(fd);
            continue;
        }
        /* Room among the handshakes: the oldest goes, so that a peer that
         * opens many and says nothing cannot keep a TaskManager out. */
        if (bs->nhs >= bs->max_handshaking) {
            int oldest = 0;

            for (int i = 1; i < bs->nhs; i++)
                if (bs->hs[i].started_ms < bs->hs[oldest].started_ms)
                    oldest = i;
            SPATE_LOG_LIMITED(&bs->refusals, LOG_LEVEL_WARN, BLOB_LOG,
                              "%d blob connections are in their handshake (the most kept): "
                              "closing the oldest",
                              bs->max_handshaking);
            shutdown(bs->hs[oldest].fd, SHUT_RDWR); /* its thread sees the end and leaves */
            bs->hs[oldest] = bs->hs[--bs->nhs];
        }
        bs->hs[bs->nhs].fd = fd;
        bs->hs[bs->nhs++].started_ms = (int64_t)clock_mono_ms();
        bs->nconns++;
        pthread_mutex_unlock(&bs->lock);
        c = xmalloc(sizeof *c);
        c->bs = bs;
        c->fd = fd;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, blob_conn_main, c) != 0) {
            blob_forget_handshake(bs, fd);
            close(fd);
            free(c);
            pthread_mutex_lock(&bs->lock);
            bs->nconns--;
            pthread_mutex_unlock(&bs->lock);
        }
        pthread_attr_destroy(&attr);
    }
}

/* ---- life cycle ------------------------------------------------------------------------ */

static int
blob_listen(struct blob_server *bs, const struct blob_server_options *o, spate_error *err)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof sa;
    int lo, hi, rc, one = 1;

    if ((rc = config_parse_port_range(o->port, &lo, &hi, err)) != 0)
        return spate_error_wrap(err, "blob.server.port");
    if (inet_pton(AF_INET, o->bind_host, &sa.sin_addr) != 1)
        return spate_error_set(err, SPATE_ECONFIG, "BlobServer bind address '%s' is not IPv4",
                               o->bind_host);
    bs->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (bs->listen_fd < 0)
        return spate_error_set(err, -errno, "cannot open the BlobServer's socket: %s",
                               spate_strerror(-errno));
    setsockopt(bs->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    for (int port = lo; port <= hi; port++) {
        sa.sin_port = htons((uint16_t)port);
        if (bind(bs->listen_fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
            listen(bs->listen_fd, 128) == 0 &&
            getsockname(bs->listen_fd, (struct sockaddr *)&sa, &len) == 0) {
            snprintf(bs->address, sizeof bs->address, "%s:%d", o->advertised_host,
                     ntohs(sa.sin_port));
            return 0;
        }
    }
    return spate_error_set(err, SPATE_EADDRINUSE, "cannot bind the BlobServer to %s:%s: %s",
                           o->bind_host, o->port, spate_strerror(-errno));
}

int
blob_server_start(const struct blob_server_options *o, struct blob_server **out, spate_error *err)
{
    struct blob_server *bs = xcalloc(1, sizeof *bs);
    int rc;

    pthread_mutex_init(&bs->lock, NULL);
    pthread_cond_init(&bs->idle, NULL);
    pthread_cond_init(&bs->restored, NULL);
    bs->listen_fd = bs->wake[0] = bs->wake[1] = -1;
    bs->ha_dir = o->ha_dir != NULL && *o->ha_dir ? xstrdup(o->ha_dir) : NULL;
    bs->max_size = o->max_size_bytes;
    bs->max_conns = o->max_connections > 0 ? o->max_connections : 1024;
    bs->max_handshaking = o->max_handshaking > 0 ? o->max_handshaking : 128;
    bs->handshake_timeout_ms = o->handshake_timeout_ms > 0 ? o->handshake_timeout_ms : 10000;
    bs->hs = xcalloc((size_t)bs->max_handshaking, sizeof *bs->hs);
    bs->secret = o->secret != NULL && *o->secret ? xstrdup(o->secret) : NULL;
    bs->tls = o->tls != NULL ? tls_context_ref(o->tls) : NULL;
    bs->tmp.lock_fd = -1;
    if ((rc = tmp_dir_make(o->storage_dir, "blobs", &bs->tmp, err)) != 0) {
        spate_error_wrap(err, "the BlobServer's folder");
        goto fail;
    }
    bs->dir = bs->tmp.path;
    if ((rc = blob_listen(bs, o, err)) != 0)
        goto fail;
    if (pipe2(bs->wake, O_CLOEXEC) != 0 ||
        pthread_create(&bs->acceptor, NULL, blob_accept_main, bs) != 0) {
        rc = spate_error_set(err, SPATE_EIO, "cannot start the BlobServer's thread");
        goto fail;
    }
    SPATE_LOG_INFO(BLOB_LOG, "BlobServer at %s stores in %s%s%s", bs->address, bs->dir,
                   bs->ha_dir ? ", job libraries also in the HA blob store " : "",
                   bs->ha_dir ? bs->ha_dir : "");
    *out = bs;
    return 0;
fail:
    if (bs->wake[0] >= 0) {
        close(bs->wake[0]);
        close(bs->wake[1]);
    }
    if (bs->listen_fd >= 0)
        close(bs->listen_fd);
    tmp_dir_remove(&bs->tmp);
    free(bs->secret);
    tls_context_unref(bs->tls);
    free(bs->ha_dir);
    free(bs->hs);
    pthread_cond_destroy(&bs->restored);
    pthread_cond_destroy(&bs->idle);
    pthread_mutex_destroy(&bs->lock);
    free(bs);
    return rc;
}

const char *
blob_server_address(const struct blob_server *bs)
{
    return bs->address;
}

const char *
blob_server_dir(const struct blob_server *bs)
{
    return bs->dir;
}

/* Copies the open file in (named from) into the open file to, hashing on
 * the way, at most max bytes; closes in. */
static int
blob_copy_fd_hashing(int in, const char *from, int to, int64_t max, uint8_t key[SHA256_BYTES],
                     spate_error *err)
{
    struct sha256_ctx ctx;
    char buf[1 << 16];
    int64_t total = 0;
    ssize_t n;

    sha256_init(&ctx);
    while ((n = read(in, buf, sizeof buf)) > 0) {
        total += n;
        if (total > max) {
            close(in);
            sha256_final(&ctx, key);
            return spate_error_set(err, SPATE_EMSGSIZE,
                                   "'%s' is larger than the blob size limit of %lld bytes "
                                   "(blob.max-size)",
                                   from, (long long)max);
        }
        sha256_update(&ctx, buf, (size_t)n);
        if (blob_write_all(to, buf, (size_t)n, false) != 0) {
            close(in);
            sha256_final(&ctx, key);
            return spate_error_set(err, -errno, "cannot write a blob: %s", spate_strerror(-errno));
        }
    }
    close(in);
    sha256_final(&ctx, key);
    if (n < 0)
        return spate_error_set(err, -errno, "cannot read '%s': %s", from, spate_strerror(-errno));
    return 0;
}

/* Copies the file from into the open file to, hashing on the way, at most
 * max bytes. */
static int
blob_copy_hashing(const char *from, int to, int64_t max, uint8_t key[SHA256_BYTES],
                  spate_error *err)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);

    if (in < 0)
        return spate_error_set(err, -errno, "cannot open '%s': %s", from, spate_strerror(-errno));
    return blob_copy_fd_hashing(in, from, to, max, key, err);
}

int
blob_server_put_file(struct blob_server *bs, const char *path, bool move, uint8_t key[SHA256_BYTES],
                     spate_error *err)
{
    char final[PATH_MAX], tmp[PATH_MAX];
    struct blob_entry *e;
    struct stat st;
    spate_id unique;
    int rc, fd;

    if (stat(path, &st) != 0)
        return spate_error_set(err, -errno, "cannot store '%s' as a blob: %s", path,
                               spate_strerror(-errno));
    if (st.st_size > bs->max_size)
        return spate_error_set(err, SPATE_EMSGSIZE,
                               "'%s' has %lld bytes, more than the blob size limit of %lld bytes "
                               "(blob.max-size)",
                               path, (long long)st.st_size, (long long)bs->max_size);
    id_random(&unique);
    snprintf(tmp, sizeof tmp, "%s/incoming-%s", bs->dir, id_str(&unique).s);
    if (move && rename(path, tmp) == 0) {
        if ((rc = sha256_file(tmp, key, err)) != 0) {
            unlink(tmp);
            return rc;
        }
    } else {
        /* A copy, hashed as it is written: the bytes stored are the bytes
         * hashed, whatever happens to the original meanwhile. */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
            return spate_error_set(err, -errno, "cannot make a blob in '%s': %s", bs->dir,
                                   spate_strerror(-errno));
        rc = blob_copy_hashing(path, fd, bs->max_size, key, err);
        if (close(fd) != 0 && rc == 0)
            rc = spate_error_set(err, SPATE_EIO, "cannot write a blob: %s", spate_strerror(-errno));
        if (rc != 0) {
            unlink(tmp);
            return rc;
        }
        if (move)
            unlink(path);
    }
    blob_path(bs, key, final, sizeof final);
    pthread_mutex_lock(&bs->lock);
    if ((e = blob_find(bs, key)) != NULL && e->local) {
        e->refs++;
        unlink(tmp); /* the same bytes are stored already */
    } else if (e != NULL && rename(tmp, final) == 0) {
        e->refs++; /* a recovered job's blob, not restored yet: here now */
        e->local = true;
    } else if (rename(tmp, final) != 0) {
        pthread_mutex_unlock(&bs->lock);
        rc = spate_error_set(err, -errno, "cannot store blob '%s': %s", final,
                             spate_strerror(-errno));
        unlink(tmp);
        return rc;
    } else {
        e = xcalloc(1, sizeof *e);
        memcpy(e->key, key, SHA256_BYTES);
        e->refs = 1;
        e->local = true;
        e->next = bs->entries;
        bs->entries = e;
    }
    pthread_mutex_unlock(&bs->lock);
    return 0;
}

int
blob_server_ref(struct blob_server *bs, const uint8_t key[SHA256_BYTES], spate_error *err)
{
    struct blob_entry *e;
    char hex[SHA256_HEX_LEN + 1];

    pthread_mutex_lock(&bs->lock);
    if ((e = blob_find(bs, key)) != NULL)
        e->refs++;
    pthread_mutex_unlock(&bs->lock);
    if (e == NULL)
        return spate_error_set(err, SPATE_ENOENT, "the BlobServer has no blob %s",
                               sha256_hex(key, hex));
    return 0;
}

void
blob_server_unref(struct blob_server *bs, const uint8_t key[SHA256_BYTES])
{
    struct blob_entry *e, *gone = NULL;

    pthread_mutex_lock(&bs->lock);
    if ((e = blob_find(bs, key)) != NULL)
        gone = blob_release_locked(bs, e);
    pthread_mutex_unlock(&bs->lock);
    if (gone != NULL) {
        char hex[SHA256_HEX_LEN + 1];

        SPATE_LOG_INFO(BLOB_LOG, "removed blob %s: no job uses it", sha256_hex(key, hex));
        blob_entry_free(gone);
    }
}

/* ---- the HA blob store ---------------------------------------------------------------- */

/* Restores key from path (a copy of the HA blob store): copied under a
 * temporary name, its size and SHA-256 checked, renamed into the store. */
static int
blob_restore_from(struct blob_server *bs, const uint8_t key[SHA256_BYTES], const char *path,
                  spate_error *err)
{
    char tmp[PATH_MAX], final[PATH_MAX], hex[SHA256_HEX_LEN + 1], got[SHA256_HEX_LEN + 1];
    uint8_t digest[SHA256_BYTES];
    spate_id unique;
    int fd, rc;

    id_random(&unique);
    snprintf(tmp, sizeof tmp, "%s/incoming-%s", bs->dir, id_str(&unique).s);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
        return spate_error_set(err, -errno, "cannot make a blob in '%s': %s", bs->dir,
                               spate_strerror(-errno));
    rc = blob_copy_hashing(path, fd, bs->max_size, digest, err);
    if (close(fd) != 0 && rc == 0)
        rc = spate_error_set(err, SPATE_EIO, "cannot write a blob: %s", spate_strerror(-errno));
    if (rc == 0 && !sha256_equal(digest, key))
        rc = spate_error_set(err, SPATE_EINVAL, "'%s' is corrupt: its SHA-256 is %s", path,
                             sha256_hex(digest, got));
    blob_path(bs, key, final, sizeof final);
    if (rc == 0 && rename(tmp, final) != 0)
        rc = spate_error_set(err, -errno, "cannot store blob '%s': %s", final,
                             spate_strerror(-errno));
    if (rc != 0) {
        unlink(tmp);
        return rc;
    }
    SPATE_LOG_INFO(BLOB_LOG, "restored blob %s from the HA blob store ('%s')", sha256_hex(key, hex),
                   path);
    return 0;
}

/* Restores key from the first of jobs' HA copies that is whole. */
static int
blob_restore(struct blob_server *bs, const uint8_t key[SHA256_BYTES], const spate_id *jobs,
             size_t njobs, spate_error *err)
{
    char hex[SHA256_HEX_LEN + 1], path[PATH_MAX];
    int rc = spate_error_set(err, SPATE_ENOENT, "blob %s is not stored", sha256_hex(key, hex));

    for (size_t i = 0; i < njobs; i++) {
        blob_ha_path(bs, &jobs[i], key, path, sizeof path);
        if ((rc = blob_restore_from(bs, key, path, err)) == 0)
            return 0;
        /* Short: the fetch's answer names the blob, the path the job. */
        spate_error_wrap(err, "its copy in the HA blob store is unusable");
        SPATE_LOG_ERROR(BLOB_LOG, "blob %s of job %s: %s", hex, id_str(&jobs[i]).s, err->message);
    }
    return rc;
}

int
blob_server_persist_job_blob(struct blob_server *bs, const spate_id *job,
                             const uint8_t key[SHA256_BYTES], spate_error *err)
{
    char path[PATH_MAX], folder[PATH_MAX], tmp[PATH_MAX + 8], hex[SHA256_HEX_LEN + 1];
    char got[SHA256_HEX_LEN + 1];
    uint8_t digest[SHA256_BYTES];
    struct blob_entry *e;
    int in = -1, out, rc;

    if (bs->ha_dir == NULL)
        return 0;
    sha256_hex(key, hex);
    pthread_mutex_lock(&bs->lock);
    if ((e = blob_find(bs, key)) != NULL && e->local) {
        blob_path(bs, key, path, sizeof path);
        in = open(path, O_RDONLY | O_CLOEXEC); /* under the lock: see blob_serve */
    }
    pthread_mutex_unlock(&bs->lock);
    if (in < 0)
        return spate_error_set(err, SPATE_ENOENT,
                               "blob %s is not stored here: it cannot go to the HA blob store",
                               hex);
    snprintf(folder, sizeof folder, "%s/job_%s", bs->ha_dir, id_str(job).s);
    if ((rc = fs_mkdirs(folder, err)) != 0) {
        close(in);
        return spate_error_wrap(err, "the HA blob store");
    }
    blob_ha_path(bs, job, key, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if ((out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        rc = spate_error_set(err, -errno, "cannot create '%s': %s", tmp, spate_strerror(-errno));
        close(in);
        return rc;
    }
    rc = blob_copy_fd_hashing(in, path, out, INT64_MAX, digest, err);
    if (rc == 0 && !sha256_equal(digest, key))
        rc = spate_error_set(err, SPATE_EIO, "blob %s changed on disk: its SHA-256 is now %s", hex,
                             sha256_hex(digest, got));
    if (rc == 0 && fsync(out) != 0)
        rc = spate_error_set(err, -errno, "cannot sync '%s': %s", tmp, spate_strerror(-errno));
    if (close(out) != 0 && rc == 0)
        rc = spate_error_set(err, -errno, "cannot write '%s': %s", tmp, spate_strerror(-errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = spate_error_set(err, -errno, "cannot rename '%s': %s", tmp, spate_strerror(-errno));
    if (rc != 0) {
        unlink(tmp);
        return rc;
    }
    SPATE_LOG_INFO(BLOB_LOG, "blob %s of job %s is in the HA blob store ('%s')", hex, id_str(job).s,
                   path);
    return 0;
}

int
blob_server_ref_job(struct blob_server *bs, const spate_id *job, const uint8_t key[SHA256_BYTES],
                    spate_error *err)
{
    char hex[SHA256_HEX_LEN + 1];
    struct blob_entry *e;
    bool made = false;

    pthread_mutex_lock(&bs->lock);
    if ((e = blob_find(bs, key)) != NULL) {
        e->refs++;
    } else if (bs->ha_dir != NULL) {
        e = xcalloc(1, sizeof *e);
        memcpy(e->key, key, SHA256_BYTES);
        e->refs = 1;
        e->next = bs->entries;
        bs->entries = e;
        made = true;
    }
    if (e != NULL && bs->ha_dir != NULL)
        blob_entry_add_job(e, job);
    pthread_mutex_unlock(&bs->lock);
    sha256_hex(key, hex);
    if (e == NULL)
        return spate_error_set(err, SPATE_ENOENT, "the BlobServer has no blob %s", hex);
    if (made)
        SPATE_LOG_INFO(BLOB_LOG,
                       "blob %s of job %s is not stored here: its first fetch restores it from "
                       "the HA blob store",
                       hex, id_str(job).s);
    return 0;
}

int
blob_server_cleanup_job(struct blob_server *bs, const spate_id *job, spate_error *err)
{
    char folder[PATH_MAX];
    int rc;

    if (bs->ha_dir == NULL)
        return 0;
    pthread_mutex_lock(&bs->lock);
    for (struct blob_entry *e = bs->entries; e != NULL; e = e->next) {
        for (size_t i = 0; i < e->njobs; i++) {
            if (id_equal(&e->jobs[i], job)) {
                e->jobs[i] = e->jobs[--e->njobs];
                break;
            }
        }
    }
    pthread_mutex_unlock(&bs->lock);
    snprintf(folder, sizeof folder, "%s/job_%s", bs->ha_dir, id_str(job).s);
    if ((rc = fs_remove_tree(folder, err)) != 0)
        return spate_error_wrap(err, "the HA blob store");
    SPATE_LOG_INFO(BLOB_LOG, "removed job %s's folder of the HA blob store", id_str(job).s);
    return 0;
}

int
blob_server_local_path(struct blob_server *bs, const uint8_t key[SHA256_BYTES], char *out,
                       size_t cap, spate_error *err)
{
    struct blob_entry *e;
    char hex[SHA256_HEX_LEN + 1];
    int rc;

    pthread_mutex_lock(&bs->lock);
    if ((e = blob_find(bs, key)) == NULL)
        rc = spate_error_set(err, SPATE_ENOENT, "blob %s is not stored", sha256_hex(key, hex));
    else if ((rc = blob_ensure_local_locked(bs, e, err)) == 0)
        blob_path(bs, key, out, cap);
    pthread_mutex_unlock(&bs->lock);
    return rc;
}

bool
blob_server_has_file(struct blob_server *bs, const uint8_t key[SHA256_BYTES])
{
    struct blob_entry *e;
    bool local;

    pthread_mutex_lock(&bs->lock);
    local = (e = blob_find(bs, key)) != NULL && e->local;
    pthread_mutex_unlock(&bs->lock);
    return local;
}

int
blob_server_count(struct blob_server *bs)
{
    int n = 0;

    pthread_mutex_lock(&bs->lock);
    for (struct blob_entry *e = bs->entries; e != NULL; e = e->next)
        n++;
    pthread_mutex_unlock(&bs->lock);
    return n;
}

void
blob_server_stop(struct blob_server *bs)
{
    char path[PATH_MAX];

    if (bs == NULL)
        return;
    if (write(bs->wake[1], "x", 1) < 0) {
        /* the thread still ends: poll sees the closed pipe below */
    }
    pthread_join(bs->acceptor, NULL);
    close(bs->listen_fd);
    pthread_mutex_lock(&bs->lock);
    bs->stopping = true;
    /* Transfers end by themselves (each has an I/O timeout). */
    while (bs->nconns > 0)
        pthread_cond_wait(&bs->idle, &bs->lock);
    pthread_mutex_unlock(&bs->lock);
    while (bs->entries != NULL) {
        struct blob_entry *e = bs->entries;

        bs->entries = e->next;
        if (e->local) {
            blob_path(bs, e->key, path, sizeof path);
            unlink(path);
        }
        blob_entry_free(e);
    }
    tmp_dir_remove(&bs->tmp);
    close(bs->wake[0]);
    close(bs->wake[1]);
    free(bs->secret);
    tls_context_unref(bs->tls);
    free(bs->ha_dir);
    free(bs->hs);
    pthread_cond_destroy(&bs->restored);
    pthread_cond_destroy(&bs->idle);
    pthread_mutex_destroy(&bs->lock);
    free(bs);
}
