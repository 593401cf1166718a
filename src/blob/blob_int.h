/* The BlobServer's wire protocol, shared by blob_server.c and blob_cache.c.
 * Every connection opens with spate's handshake (rpc/handshake.h, magic
 * "SPBL": the server's challenge, the client's hello proving
 * security.rpc.secret, the server's reply); then the client sends one
 * request: op GET and the 32-byte SHA-256 key. The server answers a status
 * byte; OK is followed by a 64-bit size and the bytes, an error by a 16-bit
 * length and a message. Big-endian. */
#ifndef SPATE_BLOB_BLOB_INT_H
#define SPATE_BLOB_BLOB_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#define BLOB_CLUSTER_ID   "/default"
#define BLOB_OP_GET       1
#define BLOB_OK           0
#define BLOB_NOT_FOUND    1
#define BLOB_REFUSED      2
#define BLOB_BUSY         3 /* too many fetches in flight: try again */
#define BLOB_IO_TIMEOUT_S 30

/* "blob_<64 hex digits>": a blob's file name in a store or cache folder. */
#define BLOB_NAME_LEN (5 + 64)

/* Reads len bytes: 0, SPATE_ECONNRESET at end of stream, or -errno. */
static inline int
blob_read_all(int fd, void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? -ECONNRESET : -errno;
        got += (size_t)n;
    }
    return 0;
}

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

#endif
