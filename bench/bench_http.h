/* What the benchmarks that drive a cluster share: one REST request over
 * loopback (HTTP/1.0, the answer read to the end) and a plain sleep.
 * Header only: static functions for each benchmark program. */
#ifndef SPATE_BENCH_BENCH_HTTP_H
#define SPATE_BENCH_BENCH_HTTP_H

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* method path (with a JSON body, or NULL) on the REST server at
 * 127.0.0.1:port; the parsed answer or NULL. */
static json_t *
bench_http_send(int port, const char *method, const char *path, const char *json)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    char req[4096], buf[1 << 16];
    size_t got = 0;
    ssize_t n;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char *body;
    json_t *j = NULL;

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return NULL;
    }
    if (json != NULL)
        snprintf(req, sizeof req,
                 "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n%s",
                 method, path, strlen(json), json);
    else
        snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
    if (write(fd, req, strlen(req)) < 0) {
        close(fd);
        return NULL;
    }
    while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    buf[got] = '\0';
    if ((body = strstr(buf, "\r\n\r\n")) != NULL)
        j = json_loads(body + 4, 0, NULL);
    return j;
}

/* method path on the REST server at 127.0.0.1:port; the parsed answer or NULL. */
static inline json_t *
bench_http(int port, const char *method, const char *path)
{
    return bench_http_send(port, method, path, NULL);
}

static void
sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

    nanosleep(&ts, NULL);
}

#endif
