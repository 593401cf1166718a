/* The socket text source (Flink's socketTextStream): lines read from a TCP
 * server, one reader (parallelism 1); nothing to checkpoint, as in Flink.
 * Task thread only. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "connectors/connectors_int.h"
#include "connectors/line_reader.h"
#include "connectors/source_operator.h"
#include "core/util.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"

static int
socket_open(struct stream_operator *op, spate_error *err)
{
    const struct socket_source_config *c = op->conf;
    struct line_reader *l = line_reader_new();
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL, *ai;
    char port[16];
    int rc;

    op->impl = l;
    snprintf(port, sizeof port, "%d", c->port);
    if ((rc = getaddrinfo(c->host, port, &hints, &res)) != 0)
        return spate_error_set(err, SPATE_EINVAL, "cannot resolve '%s': %s", c->host,
                               gai_strerror(rc));
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        l->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (l->fd >= 0 && connect(l->fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        rc = -errno;
        if (l->fd >= 0)
            close(l->fd);
        l->fd = -1;
    }
    freeaddrinfo(res);
    if (l->fd < 0)
        return spate_error_set(err, rc ? rc : SPATE_ECONNREFUSED,
                               "cannot connect to socket source %s:%d: %s", c->host, c->port,
                               spate_strerror(rc));
    fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
    op->wait_fd = l->fd;
    return 0;
}

static enum source_status
socket_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct line_reader *l = op->impl;
    struct spate_reader_output out = { 0 };
    int n;

    source_output_begin(&out, op);
    n = line_reader_emit(&out, l, budget, false);
    source_output_end(&out);
    if (n > 0)
        return SOURCE_MORE;
    n = line_reader_fill(l, err, "the socket source");
    if (n < 0)
        return SOURCE_END;
    if (l->eof) {
        source_output_begin(&out, op);
        line_reader_emit(&out, l, budget, true);
        source_output_end(&out);
        return line_reader_pending(l) ? SOURCE_MORE : SOURCE_END;
    }
    return n > 0 ? SOURCE_MORE : SOURCE_WAITING;
}

static void
socket_close(struct stream_operator *op)
{
    line_reader_free(op->impl);
    op->impl = NULL;
}

const struct operator_vtable socket_source_vtable = {
    .state = OPERATOR_STATELESS,
    .open = socket_open,
    .close = socket_close,
    .poll = socket_poll,
};
