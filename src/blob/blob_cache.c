/* The BlobCache (blob_cache.h): fetching a blob from the BlobServer into a
 * local file, verified against its key, and the table of local copies. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blob/blob_cache.h"
#include "blob/blob_int.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/id.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/handshake.h"

#define BC_LOG      "blobcache"
#define BC_RETRY_MS 60000

struct bc_entry {
    struct bc_entry *next;
    uint8_t key[SHA256_BYTES];
    int refs;
    bool loading; /* its first user is fetching it */
    int rc;       /* the fetch's outcome */
    spate_error err;
    char *path;
};

struct blob_cache {
    pthread_mutex_t lock; /* guards entries and their fields */
    pthread_cond_t fetched;
    struct bc_entry *entries;
    char *dir;
    char *secret;
    struct tls_context *tls; /* security.ssl.internal, or NULL */
    int64_t max_size;
};

struct blob_cache *
blob_cache_new(const char *dir, const char *secret, struct tls_context *tls, int64_t max_size_bytes)
{
    struct blob_cache *c = xcalloc(1, sizeof *c);

    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->fetched, NULL);
    c->dir = xstrdup(dir);
    c->secret = secret != NULL && *secret ? xstrdup(secret) : NULL;
    c->tls = tls != NULL ? tls_context_ref(tls) : NULL;
    c->max_size = max_size_bytes;
    mkdir(dir, 0700);
    return c;
}

void
blob_cache_free(struct blob_cache *c)
{
    if (c == NULL)
        return;
    while (c->entries != NULL) {
        struct bc_entry *e = c->entries;

        c->entries = e->next;
        if (e->path != NULL)
            unlink(e->path);
        free(e->path);
        free(e);
    }
    rmdir(c->dir);
    pthread_cond_destroy(&c->fetched);
    pthread_mutex_destroy(&c->lock);
    free(c->dir);
    free(c->secret);
    tls_context_unref(c->tls);
    free(c);
}

static int
bc_connect(const char *server, spate_error *err)
{
    char host[256], *colon;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
    struct timeval tv = { BLOB_IO_TIMEOUT_S, 0 };
    int fd = -1, gai, saved = ECONNREFUSED;

    snprintf(host, sizeof host, "%s", server);
    if ((colon = strrchr(host, ':')) == NULL)
        return spate_error_set(err, SPATE_EINVAL, "BlobServer address '%s' has no port", server);
    *colon = '\0';
    if ((gai = getaddrinfo(host, colon + 1, &hints, &res)) != 0)
        return spate_error_set(err, SPATE_EINVAL, "cannot resolve BlobServer '%s': %s", server,
                               gai_strerror(gai));
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        /* SO_SNDTIMEO bounds connect too. */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return spate_error_set(err, -saved, "cannot connect to the BlobServer at %s: %s", server,
                               spate_strerror(-saved));
    return fd;
}

static int bc_fetch(struct blob_cache *c, const char *server, const uint8_t key[SHA256_BYTES],
                    const char *path, spate_error *err);

/* bc_fetch, tried again while the server is busy (its fetches or its
 * connections at their caps) or cannot be reached for a moment: back-off
 * from 50 ms, doubling to 2 s, for at most BC_RETRY_MS. */
static int
bc_fetch_retrying(struct blob_cache *c, const char *server, const uint8_t key[SHA256_BYTES],
                  const char *path, spate_error *err)
{
    uint64_t deadline = clock_mono_ms() + BC_RETRY_MS, backoff = 50;
    int rc, tries = 1;

    while ((rc = bc_fetch(c, server, key, path, err)) == SPATE_EBUSY &&
           clock_mono_ms() + backoff < deadline) {
        struct timespec ts = { backoff / 1000, (backoff % 1000) * 1000000 };

        if (tries++ == 1)
            SPATE_LOG_INFO(BC_LOG, "%s; trying again for up to %d s", err->message,
                           BC_RETRY_MS / 1000);
        nanosleep(&ts, NULL);
        backoff = MIN(backoff * 2, 2000);
    }
    if (rc == SPATE_EBUSY)
        spate_error_wrap(err, "after %d tries in %d s", tries, BC_RETRY_MS / 1000);
    return rc;
}

/* Fetches key from server into path (a new file), verifying the bytes. */
static int
bc_fetch(struct blob_cache *c, const char *server, const uint8_t key[SHA256_BYTES],
         const char *path, spate_error *err)
{
    struct handshake_params hp = { HANDSHAKE_MAGIC_BLOB, BLOB_CLUSTER_ID, c->secret };
    struct handshake_nonces nonces;
    uint8_t hs[HANDSHAKE_SIZE + 1 + SHA256_BYTES], status, digest[SHA256_BYTES];
    char hex[SHA256_HEX_LEN + 1], buf[1 << 16];
    struct sha256_ctx ctx;
    uint64_t size = 0, got = 0;
    struct blob_sock s = { -1, NULL };
    int64_t deadline;
    int out = -1, rc;

    sha256_hex(key, hex);
    if ((rc = bc_connect(server, err)) < 0)
        return rc;
    s.fd = rc;
    deadline = (int64_t)clock_mono_ms() + BLOB_IO_TIMEOUT_S * 1000;
    if (c->tls != NULL) {
        s.tls = tls_session_new(c->tls, TLS_CLIENT);
        if ((rc = tls_fd_handshake(s.tls, s.fd, deadline, err)) != 0) {
            spate_error_wrap(err, "BlobServer at %s", server);
            goto out;
        }
    }
    /* The handshake (blob_int.h); the request rides with the hello. */
    if ((rc = blob_sock_read(&s, hs, HANDSHAKE_SIZE, deadline)) != 0) {
        rc = spate_error_set(err, rc, "the BlobServer at %s did not answer: %s", server,
                             spate_strerror(rc));
        goto out;
    }
    if ((rc = handshake_answer_challenge(&hp, hs, &nonces, hs, err)) != 0) {
        spate_error_wrap(err, "BlobServer at %s", server);
        if (hs[6] == HANDSHAKE_BUSY && err != NULL)
            err->code = rc = SPATE_EBUSY; /* worth a retry */
        goto out;
    }
    hs[HANDSHAKE_SIZE] = BLOB_OP_GET;
    memcpy(hs + HANDSHAKE_SIZE + 1, key, SHA256_BYTES);
    if (blob_sock_write(&s, hs, sizeof hs) != 0) {
        rc = spate_error_set(err, SPATE_EIO, "cannot send a request to the BlobServer at %s: %s",
                             server, spate_strerror(-errno));
        goto out;
    }
    if ((rc = blob_sock_read(&s, hs, HANDSHAKE_SIZE, deadline)) != 0) {
        rc = spate_error_set(err, rc, "the BlobServer at %s did not answer: %s", server,
                             spate_strerror(rc));
        goto out;
    }
    if ((rc = handshake_check_reply(&hp, &nonces, hs, err)) != 0) {
        spate_error_wrap(err, "BlobServer at %s", server);
        goto out;
    }
    if ((rc = blob_sock_read(&s, &status, 1, deadline)) != 0) {
        rc = spate_error_set(err, rc, "the BlobServer at %s did not answer: %s", server,
                             spate_strerror(rc));
        goto out;
    }
    if (status != BLOB_OK) {
        uint8_t l[2];
        char msg[1001] = "";
        size_t len;

        if (blob_sock_read(&s, l, 2, deadline) == 0) {
            len = (size_t)l[0] << 8 | l[1];
            if (len > 1000 || blob_sock_read(&s, msg, len, deadline) != 0)
                len = 0;
            msg[len] = '\0';
        }
        rc = spate_error_set(err,
                             status == BLOB_NOT_FOUND ? SPATE_ENOENT
                             : status == BLOB_BUSY    ? SPATE_EBUSY
                                                      : SPATE_EPERM,
                             "the BlobServer at %s refused blob %s: %s", server, hex, msg);
        goto out;
    }
    {
        uint8_t sz[8];

        if ((rc = blob_sock_read(&s, sz, 8, deadline)) != 0) {
            rc = spate_error_set(err, rc, "blob %s from %s: truncated answer", hex, server);
            goto out;
        }
        for (int i = 0; i < 8; i++)
            size = size << 8 | sz[i];
    }
    if (size > (uint64_t)c->max_size) {
        rc = spate_error_set(err, SPATE_EMSGSIZE,
                             "blob %s has %llu bytes, more than blob.max-size (%lld)", hex,
                             (unsigned long long)size, (long long)c->max_size);
        goto out;
    }
    if ((out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        rc = spate_error_set(err, -errno, "cannot create '%s': %s", path, spate_strerror(-errno));
        goto out;
    }
    sha256_init(&ctx);
    while (got < size) {
        size_t want = size - got < sizeof buf ? (size_t)(size - got) : sizeof buf;
        ssize_t n =
            blob_sock_read_some(&s, buf, want, (int64_t)clock_mono_ms() + BLOB_IO_TIMEOUT_S * 1000);

        if (n <= 0) {
            sha256_final(&ctx, digest);
            rc = spate_error_set(err, SPATE_ECONNRESET,
                                 "blob %s from %s ended after %llu of %llu bytes", hex, server,
                                 (unsigned long long)got, (unsigned long long)size);
            goto out;
        }
        sha256_update(&ctx, buf, (size_t)n);
        if (write(out, buf, (size_t)n) != n) {
            sha256_final(&ctx, digest);
            rc = spate_error_set(err, SPATE_EIO, "cannot write '%s': %s", path,
                                 spate_strerror(-errno));
            goto out;
        }
        got += (uint64_t)n;
    }
    sha256_final(&ctx, digest);
    if (!sha256_equal(digest, key)) {
        rc =
            spate_error_set(err, SPATE_EINVAL,
                            "blob %s from %s does not match its SHA-256: refusing it", hex, server);
        goto out;
    }
    rc = 0;
out:
    if (out >= 0 && close(out) != 0 && rc == 0)
        rc = spate_error_set(err, SPATE_EIO, "cannot write '%s': %s", path, spate_strerror(-errno));
    if (rc != 0 && out >= 0)
        unlink(path);
    close(s.fd);
    tls_session_free(s.tls);
    return rc;
}

static struct bc_entry *
bc_find(struct blob_cache *c, const uint8_t key[SHA256_BYTES])
{
    for (struct bc_entry *e = c->entries; e != NULL; e = e->next)
        if (memcmp(e->key, key, SHA256_BYTES) == 0)
            return e;
    return NULL;
}

/* Drops one reference (lock held); returns the entry once unused, taken out
 * of the table for the caller to free outside the lock. */
static struct bc_entry *
bc_drop_locked(struct blob_cache *c, struct bc_entry *e)
{
    struct bc_entry **p;

    if (--e->refs > 0 || e->loading)
        return NULL;
    for (p = &c->entries; *p != e; p = &(*p)->next)
        ;
    *p = e->next;
    return e;
}

static void
bc_free(struct bc_entry *e)
{
    if (e == NULL)
        return;
    if (e->path != NULL)
        unlink(e->path);
    free(e->path);
    free(e);
}

int
blob_cache_get(struct blob_cache *c, const char *server, const uint8_t key[SHA256_BYTES],
               const char **path, spate_error *err)
{
    struct bc_entry *e, *gone = NULL;
    spate_error fetch_err = { 0 };
    char hex[SHA256_HEX_LEN + 1];
    spate_id unique;
    char *file;
    int rc;

    pthread_mutex_lock(&c->lock);
    if ((e = bc_find(c, key)) != NULL) {
        e->refs++;
        while (e->loading)
            pthread_cond_wait(&c->fetched, &c->lock);
        if ((rc = e->rc) != 0) {
            *err = e->err;
            gone = bc_drop_locked(c, e);
        } else {
            *path = e->path;
        }
        pthread_mutex_unlock(&c->lock);
        bc_free(gone);
        return rc;
    }
    e = xcalloc(1, sizeof *e);
    memcpy(e->key, key, SHA256_BYTES);
    e->refs = 1;
    e->loading = true;
    e->next = c->entries;
    c->entries = e;
    pthread_mutex_unlock(&c->lock);

    /* A unique name: a failed entry may linger while its waiters leave. */
    id_random(&unique);
    file = xasprintf("%s/blob_%s-%s", c->dir, sha256_hex(key, hex), id_str(&unique).s);
    rc = bc_fetch_retrying(c, server, key, file, &fetch_err);
    if (rc == 0)
        SPATE_LOG_INFO(BC_LOG, "fetched blob %s from %s", hex, server);
    else
        SPATE_LOG_WARN(BC_LOG, "%s", fetch_err.message);

    pthread_mutex_lock(&c->lock);
    e->loading = false;
    e->rc = rc;
    e->err = fetch_err;
    if (rc == 0) {
        e->path = file;
        *path = file;
    } else {
        free(file);
        *err = fetch_err;
        gone = bc_drop_locked(c, e);
    }
    pthread_cond_broadcast(&c->fetched);
    pthread_mutex_unlock(&c->lock);
    bc_free(gone);
    return rc;
}

void
blob_cache_release(struct blob_cache *c, const uint8_t key[SHA256_BYTES])
{
    struct bc_entry *e, *gone = NULL;

    pthread_mutex_lock(&c->lock);
    if ((e = bc_find(c, key)) != NULL)
        gone = bc_drop_locked(c, e);
    pthread_mutex_unlock(&c->lock);
    bc_free(gone);
}
