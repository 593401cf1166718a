/* TLS (tls.h): contexts from security.ssl.*, sessions over memory BIOs, and
 * the two ways they are driven, under a libuv stream and over a socket. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/config_options.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/util.h"

#define TLS_IO_BYTES   (16 * 1024 + 512) /* a whole record and its overhead */
#define TLS_READ_BYTES (64 * 1024)       /* a socket read: several records */
/* A stream's ciphertext goes to the socket in writes of about this much (a
 * data buffer's records): written while it is still in the cache, from
 * output buffers that are used again (TLS_SPARES of them), rather than
 * a writev's batch encrypted into one buffer of several hundred KiB. A
 * batch of 8 data buffers is 8 such writes, all in flight while the socket
 * is full: with fewer spares than that, the others went back to malloc, whose
 * trimmed heap faulted their pages in again on every batch. */
#define TLS_FLUSH_BYTES (32 * 1024)
#define TLS_SPARES      16

/* Bumped by SIGHUP's handler; a context whose generation differs reads its
 * files again before its next session. Relaxed: a connection made just
 * before a reload may still use the old certificate. */
static _Atomic unsigned tls_generation;

struct tls_context {
    _Atomic int refs;
    enum tls_scope scope;
    const char *cert_key, *key_key, *trust_key; /* the option names, for messages */
    char *cert, *key, *trust;                   /* their files; NULL where unset */
    bool verify_client;
    int min_version;
    char *ciphers;
    pthread_mutex_t lock; /* guards ssl and generation */
    SSL_CTX *ssl[2];      /* by tls_role */
    unsigned generation;
};

/* Bytes [off, len) of data: a session's ciphertext in or out. */
struct tls_buf {
    uint8_t *data;
    size_t off, len, cap;
};

struct tls_session {
    SSL *ssl;
    struct tls_buf in, out; /* what its BIOs read and write (tls_bio_method) */
    bool established;
};

void
tls_reload_request(void)
{
    atomic_fetch_add_explicit(&tls_generation, 1, memory_order_relaxed);
}

unsigned
tls_reload_generation(void)
{
    return atomic_load_explicit(&tls_generation, memory_order_relaxed);
}

void
tls_reload_on_sighup(void)
{
    SPATE_LOG_INFO("tls", "SIGHUP: certificates are read again for the next connections "
                          "(security.ssl.*)");
    tls_reload_request();
}

/* Empties OpenSSL's error queue before a call whose SSL_get_error is read:
 * usually it is empty already, which is cheaper to check than to clear. */
static void
tls_clear_errors(void)
{
    if (ERR_peek_error() != 0)
        ERR_clear_error();
}

/* OpenSSL's reasons for the last failure, drained from its queue. */
static const char *
tls_reasons(char *buf, size_t cap)
{
    unsigned long e;
    size_t off = 0;

    buf[0] = '\0';
    while ((e = ERR_get_error()) != 0) {
        const char *r = ERR_reason_error_string(e);

        if (off + 3 < cap)
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? "; " : "",
                                    r ? r : "unknown reason");
        off = MIN(off, cap - 1);
    }
    return buf[0] ? buf : "no reason given by OpenSSL";
}

/* ---- contexts ---- */

static int
tls_file_check(const char *key, const char *path, spate_error *err)
{
    FILE *f;

    if (path == NULL || path[0] == '\0')
        return spate_error_set(err, SPATE_ECONFIG, "%s: not set (TLS is on and needs the file)",
                               key);
    if ((f = fopen(path, "r")) == NULL)
        return spate_error_set(err, SPATE_ECONFIG, "%s: cannot read '%s': %s", key, path,
                               strerror(errno));
    fclose(f);
    return 0;
}

/* The certificate must be valid now: an expired one would fail every
 * handshake with a message on the other side only. */
static int
tls_check_validity(const struct tls_context *ctx, SSL_CTX *ssl, spate_error *err)
{
    X509 *x = SSL_CTX_get0_certificate(ssl);
    char when[64] = "";
    BIO *b;

    if (x == NULL)
        return 0;
    if (X509_cmp_current_time(X509_get0_notAfter(x)) >= 0 &&
        X509_cmp_current_time(X509_get0_notBefore(x)) <= 0)
        return 0;
    b = BIO_new(BIO_s_mem());
    ASN1_TIME_print(b, X509_cmp_current_time(X509_get0_notAfter(x)) < 0 ? X509_get0_notAfter(x)
                                                                        : X509_get0_notBefore(x));
    BIO_read(b, when, sizeof when - 1);
    BIO_free(b);
    return spate_error_set(
        err, SPATE_ECONFIG, "%s: the certificate in '%s' is %s %s", ctx->cert_key, ctx->cert,
        X509_cmp_current_time(X509_get0_notAfter(x)) < 0 ? "expired since" : "not valid before",
        when);
}

static int
tls_build(const struct tls_context *ctx, enum tls_role role, SSL_CTX **out, spate_error *err)
{
    SSL_CTX *ssl = SSL_CTX_new(role == TLS_SERVER ? TLS_server_method() : TLS_client_method());
    bool need_cert = role == TLS_SERVER || ctx->scope == TLS_INTERNAL || ctx->cert != NULL;
    bool need_trust = role == TLS_CLIENT || ctx->verify_client;
    char why[256];
    int rc;

    SPATE_ASSERT(ssl != NULL);
    SSL_CTX_set_min_proto_version(ssl, ctx->min_version);
    SSL_CTX_set_num_tickets(ssl, 0);
    SSL_CTX_set_options(ssl, SSL_OP_NO_RENEGOTIATION);
    /* TLS 1.3: AES-128-GCM first, a third faster than AES-256 on the data
     * plane's volume and as secure in practice (Go and many servers put it
     * first); the others stay. */
    SSL_CTX_set_ciphersuites(ssl, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                  "TLS_CHACHA20_POLY1305_SHA256");
    if (ctx->ciphers != NULL && SSL_CTX_set_cipher_list(ssl, ctx->ciphers) != 1) {
        rc = spate_error_set(err, SPATE_ECONFIG,
                             "security.ssl.algorithms: no cipher of '%s' is known to OpenSSL (%s)",
                             ctx->ciphers, tls_reasons(why, sizeof why));
        goto fail;
    }
    if (need_cert) {
        if ((rc = tls_file_check(ctx->cert_key, ctx->cert, err)) != 0 ||
            (rc = tls_file_check(ctx->key_key, ctx->key, err)) != 0)
            goto fail;
        if (SSL_CTX_use_certificate_chain_file(ssl, ctx->cert) != 1) {
            rc = spate_error_set(err, SPATE_ECONFIG, "%s: '%s' holds no PEM certificate (%s)",
                                 ctx->cert_key, ctx->cert, tls_reasons(why, sizeof why));
            goto fail;
        }
        if ((rc = tls_check_validity(ctx, ssl, err)) != 0)
            goto fail;
        if (SSL_CTX_use_PrivateKey_file(ssl, ctx->key, SSL_FILETYPE_PEM) != 1) {
            tls_reasons(why, sizeof why);
            rc = spate_error_set(err, SPATE_ECONFIG,
                                 strstr(why, "mismatch") != NULL
                                     ? "%s: the key in '%s' does not match the certificate in "
                                       "'%s' (%s)"
                                     : "%s: '%s' holds no PEM private key for '%s' (%s)",
                                 ctx->key_key, ctx->key, ctx->cert, why);
            goto fail;
        }
        if (SSL_CTX_check_private_key(ssl) != 1) {
            rc = spate_error_set(err, SPATE_ECONFIG,
                                 "%s: the key in '%s' does not match the certificate in '%s' (%s)",
                                 ctx->key_key, ctx->key, ctx->cert, tls_reasons(why, sizeof why));
            goto fail;
        }
    }
    if (need_trust) {
        if ((rc = tls_file_check(ctx->trust_key, ctx->trust, err)) != 0)
            goto fail;
        if (SSL_CTX_load_verify_locations(ssl, ctx->trust, NULL) != 1) {
            rc = spate_error_set(err, SPATE_ECONFIG, "%s: '%s' holds no PEM CA certificate (%s)",
                                 ctx->trust_key, ctx->trust, tls_reasons(why, sizeof why));
            goto fail;
        }
        SSL_CTX_set_verify(ssl,
                           role == TLS_CLIENT ? SSL_VERIFY_PEER
                                              : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                           NULL);
    }
    *out = ssl;
    return 0;
fail:
    ERR_clear_error();
    SSL_CTX_free(ssl);
    return rc;
}

/* Both roles' SSL_CTX from the files, swapped in only when both are good. */
static int
tls_load(struct tls_context *ctx, spate_error *err)
{
    SSL_CTX *server = NULL, *client = NULL;
    int rc;

    /* A REST client (the CLI) has no certificate of its own to serve. */
    if ((ctx->scope == TLS_INTERNAL || ctx->cert != NULL) &&
        (rc = tls_build(ctx, TLS_SERVER, &server, err)) != 0)
        return rc;
    if ((rc = tls_build(ctx, TLS_CLIENT, &client, err)) != 0) {
        SSL_CTX_free(server);
        return rc;
    }
    SSL_CTX_free(ctx->ssl[TLS_SERVER]);
    SSL_CTX_free(ctx->ssl[TLS_CLIENT]);
    ctx->ssl[TLS_SERVER] = server;
    ctx->ssl[TLS_CLIENT] = client;
    return 0;
}

static char *
tls_conf_path(const struct config *conf, const struct config_option *opt)
{
    const char *v = NULL;

    if (config_get_string(conf, opt, &v, NULL) != 0 || v == NULL || v[0] == '\0')
        return NULL;
    return xstrdup(v);
}

int
tls_context_from_config(const struct config *conf, enum tls_scope scope, struct tls_context **out,
                        spate_error *err)
{
    const struct config_option *enabled, *cert, *key, *trust;
    struct tls_context *ctx;
    bool on = false, auth = false;
    const char *ciphers = NULL;
    int proto = 0, rc;

    *out = NULL;
    if (scope == TLS_INTERNAL) {
        enabled = CFG(SECURITY_SSL_INTERNAL_ENABLED);
        cert = CFG(SECURITY_SSL_INTERNAL_CERT);
        key = CFG(SECURITY_SSL_INTERNAL_KEY);
        trust = CFG(SECURITY_SSL_INTERNAL_TRUSTSTORE);
        auth = true;
    } else {
        enabled = CFG(SECURITY_SSL_REST_ENABLED);
        cert = CFG(SECURITY_SSL_REST_CERT);
        key = CFG(SECURITY_SSL_REST_KEY);
        trust = CFG(SECURITY_SSL_REST_TRUSTSTORE);
        if ((rc = config_get_bool(conf, CFG(SECURITY_SSL_REST_AUTHENTICATION_ENABLED), &auth,
                                  err)) != 0)
            return rc;
    }
    if ((rc = config_get_bool(conf, enabled, &on, err)) != 0)
        return rc;
    if (!on)
        return 0;
    if ((rc = config_get_enum(conf, CFG(SECURITY_SSL_PROTOCOL), &proto, err)) != 0)
        return rc;
    config_get_string(conf, CFG(SECURITY_SSL_ALGORITHMS), &ciphers, NULL);
    ctx = xcalloc(1, sizeof *ctx);
    atomic_init(&ctx->refs, 1);
    ctx->scope = scope;
    ctx->cert_key = cert->key;
    ctx->key_key = key->key;
    ctx->trust_key = trust->key;
    ctx->cert = tls_conf_path(conf, cert);
    ctx->key = tls_conf_path(conf, key);
    ctx->trust = tls_conf_path(conf, trust);
    ctx->verify_client = auth;
    ctx->min_version = proto == 1 ? TLS1_3_VERSION : TLS1_2_VERSION;
    ctx->ciphers = ciphers != NULL && ciphers[0] != '\0' ? xstrdup(ciphers) : NULL;
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->generation = atomic_load_explicit(&tls_generation, memory_order_relaxed);
    if ((rc = tls_load(ctx, err)) != 0) {
        tls_context_unref(ctx);
        return rc;
    }
    *out = ctx;
    return 0;
}

struct tls_context *
tls_context_ref(struct tls_context *ctx)
{
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
    return ctx;
}

void
tls_context_unref(struct tls_context *ctx)
{
    /* acq_rel: the last holder sees every other holder's use. */
    if (ctx == NULL || atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) != 1)
        return;
    SSL_CTX_free(ctx->ssl[TLS_SERVER]);
    SSL_CTX_free(ctx->ssl[TLS_CLIENT]);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx->cert);
    free(ctx->key);
    free(ctx->trust);
    free(ctx->ciphers);
    free(ctx);
}

int
tls_context_reload(struct tls_context *ctx, spate_error *err)
{
    int rc;

    pthread_mutex_lock(&ctx->lock);
    rc = tls_load(ctx, err);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

const char *
tls_context_cert_file(const struct tls_context *ctx)
{
    return ctx->cert;
}

const char *
tls_context_key_file(const struct tls_context *ctx)
{
    return ctx->key;
}

const char *
tls_context_truststore_file(const struct tls_context *ctx)
{
    return ctx->trust;
}

/* The role's SSL_CTX, read again first when a reload was asked for. */
static SSL_CTX *
tls_context_current(struct tls_context *ctx, enum tls_role role)
{
    unsigned gen = atomic_load_explicit(&tls_generation, memory_order_relaxed);
    SSL_CTX *ssl;

    pthread_mutex_lock(&ctx->lock);
    if (ctx->generation != gen) {
        spate_error err = { 0 };

        ctx->generation = gen;
        if (tls_load(ctx, &err) != 0)
            SPATE_LOG_ERROR("tls", "certificates not reloaded, the old ones stay: %s", err.message);
        else
            SPATE_LOG_INFO("tls", "certificates reloaded from '%s'",
                           ctx->cert ? ctx->cert : ctx->trust);
    }
    ssl = ctx->ssl[role];
    if (ssl != NULL)
        SSL_CTX_up_ref(ssl);
    pthread_mutex_unlock(&ctx->lock);
    return ssl;
}

/* ---- the BIOs under a session ----
 * OpenSSL's memory BIO moves what is left unread to the front on every
 * write and grows by copying: at the data plane's rates, more time than the
 * cipher. These read and write a tls_buf, which moves its rest only when it
 * must, and whose output buffer a stream hands to uv_write as it is. */

static BIO_METHOD *tls_bio_methods; /* made once (pthread_once), then read only */
static pthread_once_t tls_bio_once = PTHREAD_ONCE_INIT;

/* Room for n more bytes at data + len. */
static uint8_t *
tls_buf_reserve(struct tls_buf *b, size_t n)
{
    if (b->cap - b->len < n && b->off > 0) {
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : TLS_READ_BYTES + TLS_IO_BYTES; /* a data buffer's records */

        while (cap - b->len < n)
            cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    return b->data + b->len;
}

static int
tls_bio_write(BIO *bio, const char *in, int n)
{
    struct tls_buf *b = BIO_get_data(bio);

    BIO_clear_retry_flags(bio);
    if (n <= 0)
        return 0;
    memcpy(tls_buf_reserve(b, (size_t)n), in, (size_t)n);
    b->len += (size_t)n;
    return n;
}

static int
tls_bio_read(BIO *bio, char *out, int n)
{
    struct tls_buf *b = BIO_get_data(bio);
    size_t have = b->len - b->off;

    BIO_clear_retry_flags(bio);
    if (have == 0) {
        BIO_set_retry_read(bio); /* more to come, not the end */
        return -1;
    }
    have = MIN(have, (size_t)n);
    memcpy(out, b->data + b->off, have);
    b->off += have;
    if (b->off == b->len)
        b->off = b->len = 0;
    return (int)have;
}

static long
tls_bio_ctrl(BIO *bio, int cmd, long num, void *ptr)
{
    struct tls_buf *b = BIO_get_data(bio);

    UNUSED(num);
    UNUSED(ptr);
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
    case BIO_CTRL_PENDING:
    case BIO_CTRL_WPENDING:
        return (long)(b->len - b->off);
    default:
        return 0;
    }
}

static void
tls_bio_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "spate tls_buf");

    SPATE_ASSERT(m != NULL);
    BIO_meth_set_write(m, tls_bio_write);
    BIO_meth_set_read(m, tls_bio_read);
    BIO_meth_set_ctrl(m, tls_bio_ctrl);
    tls_bio_methods = m;
}

static BIO *
tls_bio_new(struct tls_buf *b)
{
    BIO *bio;

    pthread_once(&tls_bio_once, tls_bio_init);
    bio = BIO_new(tls_bio_methods);
    SPATE_ASSERT(bio != NULL);
    BIO_set_data(bio, b);
    BIO_set_init(bio, 1);
    return bio;
}

/* ---- sessions ---- */

struct tls_session *
tls_session_new(struct tls_context *ctx, enum tls_role role)
{
    struct tls_session *s = xcalloc(1, sizeof *s);
    SSL_CTX *ssl = tls_context_current(ctx, role);

    SPATE_ASSERT(ssl != NULL); /* a server's context has its certificate */
    s->ssl = SSL_new(ssl);
    SSL_CTX_free(ssl); /* the SSL holds its own reference */
    SPATE_ASSERT(s->ssl != NULL);
    SSL_set_bio(s->ssl, tls_bio_new(&s->in), tls_bio_new(&s->out));
    if (role == TLS_SERVER)
        SSL_set_accept_state(s->ssl);
    else
        SSL_set_connect_state(s->ssl);
    return s;
}

void
tls_session_free(struct tls_session *s)
{
    if (s == NULL)
        return;
    SSL_free(s->ssl);
    free(s->in.data);
    free(s->out.data);
    free(s);
}

void
tls_session_put_input(struct tls_session *s, const void *buf, size_t len)
{
    if (len == 0)
        return;
    memcpy(tls_buf_reserve(&s->in, len), buf, len);
    s->in.len += len;
}

/* Why this session failed, with a hint where the cause is a usual one. */
static int
tls_session_failed(struct tls_session *s, int ret, const char *what, spate_error *err)
{
    int e = SSL_get_error(s->ssl, ret);
    unsigned long first = ERR_peek_error();
    long verify = SSL_get_verify_result(s->ssl);
    char why[256];
    const char *hint = "";

    if (e == SSL_ERROR_SYSCALL && first == 0)
        return spate_error_set(err, SPATE_EPROTO, "TLS %s failed: the connection ended", what);
    if (ERR_GET_LIB(first) == ERR_LIB_SSL) {
        switch (ERR_GET_REASON(first)) {
        case SSL_R_WRONG_VERSION_NUMBER:
        case SSL_R_HTTP_REQUEST:
        case SSL_R_UNKNOWN_PROTOCOL:
        case SSL_R_PACKET_LENGTH_TOO_LONG:
            hint = " (the peer does not speak TLS: a plaintext client, or security.ssl.*.enabled "
                   "differs between the two sides)";
            break;
        case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
        case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
        case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
            hint = " (the peer refused this side's certificate)";
            break;
        default:
            break;
        }
    }
    tls_reasons(why, sizeof why);
    if (verify != X509_V_OK)
        return spate_error_set(err, SPATE_EPROTO,
                               "TLS %s failed: the peer's certificate is refused: %s", what,
                               X509_verify_cert_error_string(verify));
    return spate_error_set(err, SPATE_EPROTO, "TLS %s failed: %s%s", what, why, hint);
}

int
tls_session_handshake(struct tls_session *s, spate_error *err)
{
    int ret;

    if (s->established)
        return 1;
    tls_clear_errors();
    ret = SSL_do_handshake(s->ssl);
    if (ret == 1) {
        s->established = true;
        return 1;
    }
    if (SSL_get_error(s->ssl, ret) == SSL_ERROR_WANT_READ)
        return 0;
    return tls_session_failed(s, ret, "handshake", err);
}

bool
tls_session_established(const struct tls_session *s)
{
    return s->established;
}

ssize_t
tls_session_read(struct tls_session *s, void *buf, size_t cap, spate_error *err)
{
    int n, e;

    tls_clear_errors();
    n = SSL_read(s->ssl, buf, (int)MIN(cap, (size_t)INT32_MAX));
    if (n > 0)
        return n;
    e = SSL_get_error(s->ssl, n);
    if (e == SSL_ERROR_WANT_READ)
        return 0;
    if (e == SSL_ERROR_ZERO_RETURN)
        return spate_error_set(err, SPATE_ECONNLOST, "the peer closed its TLS");
    return tls_session_failed(s, n, "read", err);
}

int
tls_session_write(struct tls_session *s, const void *buf, size_t len, spate_error *err)
{
    size_t off = 0;

    tls_clear_errors();
    while (off < len) {
        int n = SSL_write(s->ssl, (const char *)buf + off, (int)MIN(len - off, (size_t)1 << 30));

        if (n <= 0)
            return tls_session_failed(s, n, "write", err);
        off += (size_t)n;
    }
    return 0;
}

size_t
tls_session_pending_output(const struct tls_session *s)
{
    return s->out.len - s->out.off;
}

size_t
tls_session_take_output(struct tls_session *s, void *buf, size_t cap)
{
    size_t n = MIN(cap, s->out.len - s->out.off);

    if (n == 0)
        return 0;
    memcpy(buf, s->out.data + s->out.off, n);
    s->out.off += n;
    if (s->out.off == s->out.len)
        s->out.off = s->out.len = 0;
    return n;
}

const char *
tls_session_peer_subject(struct tls_session *s, char *buf, size_t cap)
{
    X509 *x = SSL_get1_peer_certificate(s->ssl);

    buf[0] = '\0';
    if (x != NULL) {
        X509_NAME_oneline(X509_get_subject_name(x), buf, (int)cap);
        X509_free(x);
    }
    return buf;
}

/* ---- under a libuv stream ---- */

/* A ciphertext write; user (may be NULL) is the transport's write it
 * carries, whose callback runs when this one completes. */
struct ts_write {
    uv_write_t req;
    struct tls_stream *ts;
    uv_write_t *user;
    uv_write_cb cb;
    struct tls_buf buf; /* the session's output, taken as it was */
};

/* A transport's write that waits for the handshake (its plaintext copied). */
struct ts_pending {
    struct ts_pending *next;
    uv_write_t *user;
    uv_write_cb cb;
    size_t len;
    uint8_t data[];
};

struct tls_stream {
    struct tls_session *s;
    uv_stream_t *stream;
    uv_alloc_cb alloc_cb;
    uv_read_cb read_cb;
    bool reading, failed;
    struct ts_pending *pending, *pending_tail;
    char error[SPATE_ERROR_MESSAGE_MAX];
    struct tls_buf spares[TLS_SPARES]; /* written output buffers, for the next ones */
    int n_spares;
};

struct tls_stream *
tls_stream_new(struct tls_context *ctx, enum tls_role role, uv_stream_t *stream,
               uv_alloc_cb alloc_cb, uv_read_cb read_cb)
{
    struct tls_stream *ts = xcalloc(1, sizeof *ts);

    ts->s = tls_session_new(ctx, role);
    ts->stream = stream;
    ts->alloc_cb = alloc_cb;
    ts->read_cb = read_cb;
    ts->reading = true;
    return ts;
}

void
tls_stream_free(struct tls_stream *ts)
{
    struct ts_pending *p;

    if (ts == NULL)
        return;
    while ((p = ts->pending) != NULL) {
        ts->pending = p->next;
        if (p->cb != NULL)
            p->cb(p->user, UV_ECANCELED);
        free(p);
    }
    tls_session_free(ts->s);
    for (int i = 0; i < ts->n_spares; i++)
        free(ts->spares[i].data);
    free(ts);
}

static void
ts_on_written(uv_write_t *req, int status)
{
    struct ts_write *w = container_of(req, struct ts_write, req);
    struct tls_stream *ts = w->ts;

    if (ts->n_spares < TLS_SPARES) { /* kept for a next output: no malloc, no page faults */
        w->buf.off = w->buf.len = 0;
        ts->spares[ts->n_spares++] = w->buf;
    } else {
        free(w->buf.data);
    }
    if (w->cb != NULL)
        w->cb(w->user, status);
    free(w);
}

/* Sends the session's pending ciphertext in one write carrying user's. 0,
 * or uv_write's error (then no callback runs). */
static int
ts_flush(struct tls_stream *ts, uv_write_t *user, uv_write_cb cb)
{
    struct tls_buf *out = &ts->s->out;
    struct ts_write *w;
    uv_buf_t buf;
    int rc;

    if (out->len == out->off && user == NULL)
        return 0;
    w = xmalloc(sizeof *w);
    w->ts = ts;
    w->user = user;
    w->cb = cb;
    if (user != NULL)
        user->handle = ts->stream;
    /* The output buffer goes to uv_write as it is; the session writes the
     * next into a spare one. */
    w->buf = *out;
    if (ts->n_spares > 0)
        *out = ts->spares[--ts->n_spares];
    else
        memset(out, 0, sizeof *out);
    buf = uv_buf_init(w->buf.data ? (char *)w->buf.data + w->buf.off : NULL,
                      (unsigned)(w->buf.len - w->buf.off));
    if ((rc = uv_write(&w->req, ts->stream, &buf, 1, ts_on_written)) != 0) {
        free(w->buf.data);
        free(w);
        return rc;
    }
    return 0;
}

int
tls_stream_start(struct tls_stream *ts)
{
    spate_error err = { 0 };

    if (tls_session_handshake(ts->s, &err) < 0) {
        snprintf(ts->error, sizeof ts->error, "%s", err.message);
        ts->failed = true;
        return UV_EPROTO;
    }
    return ts_flush(ts, NULL, NULL);
}

/* The socket reads straight into the session's input. */
void
tls_stream_alloc(struct tls_stream *ts, uv_buf_t *buf)
{
    *buf = uv_buf_init((char *)tls_buf_reserve(&ts->s->in, TLS_READ_BYTES), TLS_READ_BYTES);
}

void
tls_stream_read_stop(struct tls_stream *ts)
{
    ts->reading = false;
}

const char *
tls_stream_error(const struct tls_stream *ts)
{
    return ts->error[0] ? ts->error : "TLS failed";
}

static void
ts_fail(struct tls_stream *ts, const char *why)
{
    uv_buf_t none = uv_buf_init(NULL, 0);

    ts_flush(ts, NULL, NULL); /* an alert, for the peer's log */
    snprintf(ts->error, sizeof ts->error, "%s", why);
    ts->failed = true;
    if (ts->reading)
        ts->read_cb(ts->stream, UV_EPROTO, &none);
}

/* Encrypts bufs; the ciphertext goes out every TLS_FLUSH_BYTES, what is
 * left for the caller's ts_flush. 0, SPATE_EPROTO (err set) or uv_write's
 * error. */
static int
ts_encrypt(struct tls_stream *ts, const uv_buf_t bufs[], unsigned int nbufs, spate_error *err)
{
    int rc;

    for (unsigned int i = 0; i < nbufs; i++) {
        if (bufs[i].len > 0 && tls_session_write(ts->s, bufs[i].base, bufs[i].len, err) != 0)
            return SPATE_EPROTO;
        if (i + 1 < nbufs && tls_session_pending_output(ts->s) >= TLS_FLUSH_BYTES &&
            (rc = ts_flush(ts, NULL, NULL)) != 0)
            return rc;
    }
    return 0;
}

/* The handshake is done: the writes that waited go, in order. */
static void
ts_send_pending(struct tls_stream *ts)
{
    struct ts_pending *p;

    while ((p = ts->pending) != NULL) {
        uv_buf_t b = uv_buf_init((char *)p->data, (unsigned)p->len);
        spate_error err = { 0 };
        int rc;

        ts->pending = p->next;
        rc = ts_encrypt(ts, &b, 1, &err);
        if (rc == 0)
            rc = ts_flush(ts, p->user, p->cb);
        if (rc != 0 && p->cb != NULL)
            p->cb(p->user, rc < 0 && rc != SPATE_EPROTO ? rc : UV_EPROTO);
        free(p);
    }
    ts->pending_tail = NULL;
}

void
tls_stream_on_read(struct tls_stream *ts, ssize_t nread)
{
    spate_error err = { 0 };
    uv_handle_t *h = (uv_handle_t *)ts->stream;
    int rc;

    if (ts->failed || nread <= 0)
        return;
    ts->s->in.len += (size_t)nread; /* read into tls_stream_alloc's room */
    if (!tls_session_established(ts->s)) {
        rc = tls_session_handshake(ts->s, &err);
        if (rc < 0) {
            ts_fail(ts, err.message);
            return;
        }
        ts_flush(ts, NULL, NULL);
        if (rc == 0)
            return;
        ts_send_pending(ts);
    }
    while (ts->reading && !uv_is_closing(h)) {
        uv_buf_t b = uv_buf_init(NULL, 0);
        ssize_t n;

        ts->alloc_cb(h, 64 * 1024, &b);
        if (b.base == NULL || b.len == 0) {
            ts->read_cb(ts->stream, UV_ENOBUFS, &b);
            return;
        }
        n = tls_session_read(ts->s, b.base, b.len, &err);
        if (n >= 0) {
            ts->read_cb(ts->stream, n, &b);
            if (n == 0)
                break;
            continue;
        }
        if (n == SPATE_ECONNLOST) {
            ts->read_cb(ts->stream, UV_EOF, &b);
            return;
        }
        ts_fail(ts, err.message);
        return;
    }
    ts_flush(ts, NULL, NULL);
}

int
tls_stream_write(struct tls_stream *ts, uv_write_t *req, const uv_buf_t bufs[], unsigned int nbufs,
                 uv_write_cb cb)
{
    spate_error err = { 0 };
    struct ts_pending *p;
    size_t len = 0, off = 0;
    int rc;

    if (ts->failed)
        return UV_EPROTO;
    if (tls_session_established(ts->s)) {
        rc = ts_encrypt(ts, bufs, nbufs, &err);
        if (rc == SPATE_EPROTO) {
            snprintf(ts->error, sizeof ts->error, "%s", err.message);
            return UV_EPROTO;
        }
        return rc != 0 ? rc : ts_flush(ts, req, cb);
    }
    for (unsigned int i = 0; i < nbufs; i++)
        len += bufs[i].len;
    p = xmalloc(sizeof *p + len);
    p->next = NULL;
    p->user = req;
    p->cb = cb;
    p->len = len;
    for (unsigned int i = 0; i < nbufs; i++) {
        if (bufs[i].len > 0)
            memcpy(p->data + off, bufs[i].base, bufs[i].len);
        off += bufs[i].len;
    }
    if (ts->pending_tail != NULL)
        ts->pending_tail->next = p;
    else
        ts->pending = p;
    ts->pending_tail = p;
    return 0;
}

/* ---- over a socket ---- */

static int
tls_fd_wait(int fd, short events, int64_t deadline_ms, spate_error *err)
{
    for (;;) {
        int64_t left = deadline_ms - (int64_t)clock_mono_ms();
        struct pollfd p = { .fd = fd, .events = events };
        int n;

        if (left <= 0)
            return spate_error_set(err, SPATE_ETIMEDOUT, "TLS: the peer did not answer in time");
        n = poll(&p, 1, (int)MIN(left, 1000));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return spate_error_set(err, -errno, "TLS: poll: %s", strerror(errno));
    }
}

static int
tls_fd_flush(struct tls_session *s, int fd, int64_t deadline_ms, spate_error *err)
{
    uint8_t buf[TLS_IO_BYTES];
    size_t len;

    while ((len = tls_session_take_output(s, buf, sizeof buf)) > 0) {
        size_t off = 0;

        while (off < len) {
            ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
            int rc;

            if (n > 0) {
                off += (size_t)n;
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if ((rc = tls_fd_wait(fd, POLLOUT, deadline_ms, err)) != 0)
                    return rc;
                continue;
            }
            return spate_error_set(err, n < 0 ? -errno : SPATE_ECONNRESET, "TLS: send: %s",
                                   n < 0 ? strerror(errno) : "nothing sent");
        }
    }
    return 0;
}

/* More ciphertext from fd: 0, SPATE_ECONNRESET at its end, or an error. */
static int
tls_fd_fill(struct tls_session *s, int fd, int64_t deadline_ms, spate_error *err)
{
    uint8_t buf[TLS_IO_BYTES];

    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        int rc;

        if (n > 0) {
            tls_session_put_input(s, buf, (size_t)n);
            return 0;
        }
        if (n == 0)
            return spate_error_set(err, SPATE_ECONNRESET, "the peer closed the connection");
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return spate_error_set(err, -errno, "TLS: recv: %s", strerror(errno));
        if ((rc = tls_fd_wait(fd, POLLIN, deadline_ms, err)) != 0)
            return rc;
    }
}

int
tls_fd_handshake(struct tls_session *s, int fd, int64_t deadline_ms, spate_error *err)
{
    for (;;) {
        int rc = tls_session_handshake(s, err);
        int frc = tls_fd_flush(s, fd, deadline_ms, NULL); /* an alert too */

        if (rc < 0)
            return rc;
        if (frc != 0)
            return spate_error_set(err, frc, "TLS handshake failed: cannot send");
        if (rc == 1)
            return 0;
        if ((rc = tls_fd_fill(s, fd, deadline_ms, err)) != 0) {
            if (rc == SPATE_ECONNRESET)
                return spate_error_set(err, SPATE_EPROTO,
                                       "TLS handshake failed: the peer closed the connection (it "
                                       "refused this side, or does not speak TLS)");
            return rc;
        }
    }
}

ssize_t
tls_fd_read(struct tls_session *s, int fd, void *buf, size_t cap, int64_t deadline_ms,
            spate_error *err)
{
    for (;;) {
        ssize_t n = tls_session_read(s, buf, cap, err);
        int rc;

        if (n > 0)
            return n;
        if (n == SPATE_ECONNLOST)
            return 0;
        if (n < 0)
            return n;
        if ((rc = tls_fd_flush(s, fd, deadline_ms, err)) != 0)
            return rc;
        if ((rc = tls_fd_fill(s, fd, deadline_ms, err)) != 0)
            return rc == SPATE_ECONNRESET ? 0 : rc;
    }
}

int
tls_fd_write(struct tls_session *s, int fd, const void *buf, size_t len, int64_t deadline_ms,
             spate_error *err)
{
    int rc;

    if ((rc = tls_session_write(s, buf, len, err)) != 0)
        return rc;
    return tls_fd_flush(s, fd, deadline_ms, err);
}
