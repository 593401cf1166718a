/* TLS for spate's connections (security.ssl.*), over OpenSSL: one mechanism
 * for every transport. A tls_context per scope (internal: RPC, data, blob;
 * rest: the REST client) is built from the configuration, which it checks at
 * start; a tls_session runs one connection's TLS over memory BIOs, so any
 * I/O drives it: tls_stream puts it under a libuv stream in that loop's
 * thread (RPC, the data plane), tls_fd_* over a socket in the calling thread
 * (BlobServer, BlobCache, REST client). Certificates are read again on the
 * next connection after tls_reload_request (SIGHUP).
 * A context is shared by any threads (its reload is under a mutex); a
 * session and a stream belong to one thread. */
#ifndef SPATE_CORE_TLS_H
#define SPATE_CORE_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include <spate/error.h>

#include "core/config.h"

enum tls_scope {
    TLS_INTERNAL, /* security.ssl.internal.*: mutual authentication */
    TLS_REST,     /* security.ssl.rest.*: clients' certificates optional */
};

enum tls_role { TLS_SERVER, TLS_CLIENT };

struct tls_context;

/* The scope's context from conf, checked: *out is NULL when the scope's
 * TLS is off. A missing or unreadable file, a file without PEM, a key that
 * does not match its certificate, an expired certificate, a bad protocol
 * or cipher list: an error naming the key and the file. */
int tls_context_from_config(const struct config *conf, enum tls_scope scope,
                            struct tls_context **out, spate_error *err);
struct tls_context *tls_context_ref(struct tls_context *ctx);
/* NULL is fine. */
void tls_context_unref(struct tls_context *ctx);
/* Reads the context's files again now; on error the old ones stay. */
int tls_context_reload(struct tls_context *ctx, spate_error *err);
/* The configured files (for the REST server's libmicrohttpd). */
const char *tls_context_cert_file(const struct tls_context *ctx);
const char *tls_context_key_file(const struct tls_context *ctx);
const char *tls_context_truststore_file(const struct tls_context *ctx);
/* Async-signal-safe: every context reads its files again before its next
 * connection (SIGHUP). */
void tls_reload_request(void);
/* How many reloads were asked for so far: a holder of certificates other
 * than a context's (the REST server's) reads them again when it changed. */
unsigned tls_reload_generation(void);
/* A daemon's SIGHUP (from its signalfd's thread): the same, with a log line. */
void tls_reload_on_sighup(void);

/* ---- one connection's TLS over memory BIOs ---- */

struct tls_session;

struct tls_session *tls_session_new(struct tls_context *ctx, enum tls_role role);
void tls_session_free(struct tls_session *s);
/* Ciphertext that came from the peer. */
void tls_session_put_input(struct tls_session *s, const void *buf, size_t len);
/* Drives the handshake: 1 done, 0 more input needed, or SPATE_EPROTO with
 * why (certificate, protocol, a plaintext peer) in err. */
int tls_session_handshake(struct tls_session *s, spate_error *err);
bool tls_session_established(const struct tls_session *s);
/* Plaintext in: > 0 bytes, 0 none until more input, SPATE_ECONNLOST when the peer
 * closed its TLS, SPATE_EPROTO on a bad record. */
ssize_t tls_session_read(struct tls_session *s, void *buf, size_t cap, spate_error *err);
/* Plaintext out, all of it (after the handshake). */
int tls_session_write(struct tls_session *s, const void *buf, size_t len, spate_error *err);
/* Ciphertext waiting to go to the peer; take_output moves up to cap of it. */
size_t tls_session_pending_output(const struct tls_session *s);
size_t tls_session_take_output(struct tls_session *s, void *buf, size_t cap);
/* The peer's certificate subject ("" before the handshake or without one). */
const char *tls_session_peer_subject(struct tls_session *s, char *buf, size_t cap);

/* ---- a session under a libuv stream (the stream's loop thread) ----
 * The transport keeps its own alloc and read callbacks for plaintext and
 * routes its stream's callbacks here when TLS is on: its uv alloc callback
 * calls tls_stream_alloc, its uv read callback tls_stream_on_read with what
 * came (nread > 0), which calls its plaintext callbacks back with the same
 * handle (nread 0 when nothing is left). A TLS failure comes to the read
 * callback as UV_EPROTO, tls_stream_error says why. Writes keep uv_write's
 * contract: cb(req, status) once, in order, after the bytes left. */
struct tls_stream;

struct tls_stream *tls_stream_new(struct tls_context *ctx, enum tls_role role, uv_stream_t *stream,
                                  uv_alloc_cb alloc_cb, uv_read_cb read_cb);
/* In the handle's close callback: pending writes' callbacks run with
 * UV_ECANCELED, then it is freed. NULL is fine. */
void tls_stream_free(struct tls_stream *ts);
/* Client: sends the ClientHello (after the connect). */
int tls_stream_start(struct tls_stream *ts);
void tls_stream_alloc(struct tls_stream *ts, uv_buf_t *buf);
void tls_stream_on_read(struct tls_stream *ts, ssize_t nread);
/* Stops delivering plaintext (as uv_read_stop; the transport stops reading). */
void tls_stream_read_stop(struct tls_stream *ts);
int tls_stream_write(struct tls_stream *ts, uv_write_t *req, const uv_buf_t bufs[],
                     unsigned int nbufs, uv_write_cb cb);
const char *tls_stream_error(const struct tls_stream *ts);

/* ---- a session over a socket (the calling thread; blocking until deadline,
 * a clock_mono_ms value) ---- */

int tls_fd_handshake(struct tls_session *s, int fd, int64_t deadline_ms, spate_error *err);
/* > 0 bytes read, 0 at the peer's end, or an error. */
ssize_t tls_fd_read(struct tls_session *s, int fd, void *buf, size_t cap, int64_t deadline_ms,
                    spate_error *err);
int tls_fd_write(struct tls_session *s, int fd, const void *buf, size_t len, int64_t deadline_ms,
                 spate_error *err);

#endif
