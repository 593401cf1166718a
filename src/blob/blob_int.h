/* The BlobServer's wire protocol, shared by blob_server.c and blob_cache.c.
 * Every connection opens with spate's handshake (rpc/handshake.h, magic
 * "SPBL": the server's challenge, the client's hello proving
 * security.rpc.secret, the server's reply); then the client sends one
 * request: op GET and the 32-byte SHA-256 key. The server answers a status
 * byte; OK is followed by a 64-bit size and the bytes, an error by a 16-bit
 * length and a message. Big-endian. Under TLS (security.ssl.internal) all of
 * it runs inside a TLS session that the connection opens with. */
#ifndef SPATE_BLOB_BLOB_INT_H
#define SPATE_BLOB_BLOB_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/tls.h"
#include "core/util.h"

#define BLOB_CLUSTER_ID   "/default"
#define BLOB_OP_GET       1
#define BLOB_OK           0
#define BLOB_NOT_FOUND    1
#define BLOB_REFUSED      2
#define BLOB_BUSY         3 /* too many fetches in flight: try again */
#define BLOB_IO_TIMEOUT_S 30

/* "blob_<64 hex digits>": a blob's file name in a store or cache folder. */
#define BLOB_NAME_LEN (5 + 64)

/* Writes len bytes to a socket (without SIGPIPE) or a file: 0 or -errno. */
static inline int
blob_write_all(int fd, const void *buf, size_t len, bool socket)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = socket ? send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL)
                           : write(fd, (const char *)buf + done, len - done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        done += (size_t)n;
    }
    return 0;
}

/* A blob connection: its socket and, under TLS, its session. */
struct blob_sock {
    int fd;
    struct tls_session *tls; /* NULL: plaintext */
};

/* Reads len bytes before deadline_ms (clock_mono_ms): 0, SPATE_ETIMEDOUT,
 * SPATE_ECONNRESET at the end of the stream, or another error. A peer that
 * trickles cannot hold a thread past the deadline. */
static inline int
blob_sock_read(struct blob_sock *s, void *buf, size_t len, int64_t deadline_ms)
{
    size_t got = 0;

    while (got < len) {
        int64_t left = deadline_ms - (int64_t)clock_mono_ms();
        struct pollfd p = { .fd = s->fd, .events = POLLIN };
        ssize_t n;

        if (left <= 0)
            return -ETIMEDOUT;
        if (s->tls != NULL) {
            n = tls_fd_read(s->tls, s->fd, (char *)buf + got, len - got, deadline_ms, NULL);
            if (n <= 0)
                return n == 0 ? -ECONNRESET : (int)n;
            got += (size_t)n;
            continue;
        }
        if (poll(&p, 1, (int)MIN(left, 1000)) <= 0)
            continue;
        n = read(s->fd, (char *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? -ECONNRESET : -errno;
        got += (size_t)n;
    }
    return 0;
}

/* Some bytes (at most cap) before deadline_ms: > 0, 0 at the end, or an error. */
static inline ssize_t
blob_sock_read_some(struct blob_sock *s, void *buf, size_t cap, int64_t deadline_ms)
{
    if (s->tls != NULL)
        return tls_fd_read(s->tls, s->fd, buf, cap, deadline_ms, NULL);
    for (;;) {
        ssize_t n = read(s->fd, buf, cap);

        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -errno : n;
    }
}

static inline int
blob_sock_write(struct blob_sock *s, const void *buf, size_t len)
{
    if (s->tls != NULL)
        return tls_fd_write(s->tls, s->fd, buf, len,
                            (int64_t)clock_mono_ms() + BLOB_IO_TIMEOUT_S * 1000, NULL);
    return blob_write_all(s->fd, buf, len, true);
}

#endif
