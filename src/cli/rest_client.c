/* The REST client (rest_client.h): a request per connection
 * ("Connection: close"), the answer read to its Content-Length or the end. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cli/cli_leader.h"
#include "cli/rest_client.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/secret.h"
#include "core/tls.h"

#define RC_CONNECT_MS 5000
#define RC_ANSWER_MAX (64 << 20)
#define RC_BOUNDARY   "----spate-boundary-7d3a1e9c5b"
/* high-availability.type zookeeper (config_options.h's enum) and how long
 * to wait for a leader (a failover takes a session timeout or so) */
#define RC_HA_ZOOKEEPER 2
#define RC_LEADER_MS    30000

/* The first token or user:password line of a file (the server's own
 * files, shared by its user): written into out. */
static bool
rc_first_line(const char *path, char *out, size_t cap)
{
    char *text = xmalloc(64 * 1024), *save = NULL, *line;
    bool found = false;

    if (secret_file_read(path, text, 64 * 1024, NULL) == 0) {
        for (line = strtok_r(text, "\r\n", &save); line != NULL && !found;
             line = strtok_r(NULL, "\r\n", &save)) {
            if (line[0] == '#' || line[strspn(line, " \t")] == '\0' || strlen(line) >= cap)
                continue;
            snprintf(out, cap, "%s", line);
            found = true;
        }
    }
    explicit_bzero(text, 64 * 1024);
    free(text);
    return found;
}

static void
rc_auth(struct rest_client *rc, const struct config *conf)
{
    const char *path = NULL;
    char line[600];
    unsigned char b64[820];

    rc->auth[0] = '\0';
    if (config_get_string(conf, CFG(REST_AUTHENTICATION_TOKEN_FILE), &path, NULL) == 0 &&
        path != NULL && rc_first_line(path, line, sizeof line)) {
        snprintf(rc->auth, sizeof rc->auth, "Authorization: Bearer %s\r\n", line);
    } else if (config_get_string(conf, CFG(REST_AUTHENTICATION_CREDENTIALS_FILE), &path, NULL) ==
                   0 &&
               path != NULL && rc_first_line(path, line, sizeof line)) {
        EVP_EncodeBlock(b64, (const unsigned char *)line, (int)strlen(line));
        snprintf(rc->auth, sizeof rc->auth, "Authorization: Basic %s\r\n", b64);
    }
    explicit_bzero(line, sizeof line);
}

int
rest_client_init(struct rest_client *rc, const struct config *conf, const char *target,
                 spate_error *err)
{
    const char *host = "localhost";
    int64_t port = 8081;
    int rcode, ha_type = 0;

    memset(rc, 0, sizeof *rc);
    rc->timeout_ms = 60000;
    if (target != NULL) {
        const char *colon = strrchr(target, ':');
        char *end;
        long p;

        if (colon == NULL || colon == target)
            return spate_error_set(err, SPATE_EINVAL,
                                   "-m '%s': expected host:port of the JobManager's REST API",
                                   target);
        p = strtol(colon + 1, &end, 10);
        if (*end != '\0' || p < 1 || p > 65535)
            return spate_error_set(err, SPATE_EINVAL, "-m '%s': '%s' is not a port", target,
                                   colon + 1);
        snprintf(rc->host, sizeof rc->host, "%.*s", (int)(colon - target), target);
        rc->port = (int)p;
    } else if (config_get_enum(conf, CFG(HIGH_AVAILABILITY_TYPE), &ha_type, NULL) == 0 &&
               ha_type == RC_HA_ZOOKEEPER) {
        /* The leading JobManager's REST endpoint, from ZooKeeper (Flink's
         * RestClusterClient follows the leader the same way). */
        char url[512], *colon;
        long p;

        if ((rcode = cli_find_leader(conf, CLI_LEADER_REST, url, sizeof url, RC_LEADER_MS, err)) !=
            0)
            return spate_error_wrap(err, "cannot find the leading JobManager's REST API");
        host = strncmp(url, "http://", 7) == 0    ? url + 7
               : strncmp(url, "https://", 8) == 0 ? url + 8
                                                  : url;
        if ((colon = strrchr(host, ':')) == NULL || (p = strtol(colon + 1, NULL, 10)) < 1 ||
            p > 65535)
            return spate_error_set(err, SPATE_EPROTO,
                                   "the leading JobManager's REST URL '%s' has no port", url);
        snprintf(rc->host, sizeof rc->host, "%.*s", (int)(colon - host), host);
        rc->port = (int)p;
    } else {
        if ((rcode = config_get_string(conf, CFG(REST_ADDRESS), &host, err)) != 0 ||
            (rcode = config_get_int(conf, CFG(REST_PORT), &port, err)) != 0)
            return rcode;
        snprintf(rc->host, sizeof rc->host, "%s", host);
        rc->port = (int)port;
    }
    /* HTTPS with security.ssl.rest.enabled: the server's certificate must
     * chain to security.ssl.rest.truststore; this side's is sent when set. */
    {
        struct tls_context *tls = NULL;

        if ((rcode = tls_context_from_config(conf, TLS_REST, &tls, err)) != 0)
            return rcode;
        rc->https = tls != NULL;
        tls_context_unref(tls);
    }
    rc->conf = conf;
    snprintf(rc->url, sizeof rc->url, "%s://%s:%d", rc->https ? "https" : "http", rc->host,
             rc->port);
    rc_auth(rc, conf);
    return 0;
}

static int
rc_unreachable(struct rest_client *rc, int code, const char *why, spate_error *err)
{
    return spate_error_set(err, code,
                           "cannot reach the JobManager's REST API at %s: %s (is the cluster "
                           "running? set rest.address and rest.port, or -m host:port)",
                           rc->url, why);
}

/* One request's connection: its socket and, over HTTPS, its TLS. */
struct rc_conn {
    int fd;
    struct tls_session *tls;
};

static void
rc_close(struct rc_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    tls_session_free(c->tls);
    c->fd = -1;
    c->tls = NULL;
}

/* Connects with a timeout; the socket or a negative code. */
static int
rc_connect_tcp(struct rest_client *rc, spate_error *err)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
    char port[16];
    int fd = -1, gai, saved = ECONNREFUSED;

    snprintf(port, sizeof port, "%d", rc->port);
    if ((gai = getaddrinfo(rc->host, port, &hints, &res)) != 0)
        return rc_unreachable(rc, SPATE_EINVAL, gai_strerror(gai), err);
    for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        struct pollfd p;
        socklen_t len = sizeof saved;

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
            saved = errno;
        } else {
            p.fd = fd;
            p.events = POLLOUT;
            if (poll(&p, 1, RC_CONNECT_MS) <= 0)
                saved = ETIMEDOUT;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &saved, &len) == 0 && saved == 0)
                break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return rc_unreachable(rc, -saved, spate_strerror(-saved), err);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* The connection (with its TLS handshake over HTTPS): 0 or an error. */
static int
rc_connect(struct rest_client *rc, struct rc_conn *c, spate_error *err)
{
    struct tls_context *tls = NULL;
    spate_error terr = { 0 };
    int rcode;

    c->tls = NULL;
    if ((c->fd = rc_connect_tcp(rc, err)) < 0)
        return c->fd;
    if (!rc->https)
        return 0;
    /* The files are read per request (checked already by init). */
    if ((rcode = tls_context_from_config(rc->conf, TLS_REST, &tls, err)) != 0) {
        rc_close(c);
        return rcode;
    }
    c->tls = tls_session_new(tls, TLS_CLIENT);
    tls_context_unref(tls); /* the session holds what it needs */
    rcode = tls_fd_handshake(c->tls, c->fd, (int64_t)clock_mono_ms() + RC_CONNECT_MS, &terr);
    if (rcode != 0) {
        rc_close(c);
        return spate_error_set(err, rcode, "cannot talk to the JobManager's REST API at %s: %s",
                               rc->url, terr.message);
    }
    return 0;
}

static int
rc_send(struct rc_conn *c, const void *buf, size_t len)
{
    if (c->tls != NULL)
        return tls_fd_write(c->tls, c->fd, buf, len, (int64_t)clock_mono_ms() + 60000, NULL);
    for (size_t done = 0; done < len;) {
        ssize_t n = send(c->fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        done += (size_t)n;
    }
    return 0;
}

static int
rc_send_file(struct rc_conn *c, const char *path, spate_error *err)
{
    char buf[1 << 16];
    ssize_t n;
    int in = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

    if (in < 0)
        return spate_error_set(err, -errno, "cannot read '%s': %s", path, spate_strerror(-errno));
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        rc = rc_send(c, buf, (size_t)n);
    close(in);
    if (rc != 0)
        return spate_error_set(err, rc,
                               "the JobManager closed the connection during the upload "
                               "(the body may be larger than it accepts)");
    return 0;
}

/* Reads the answer until the server closes; parses status and body. */
static int
rc_answer(struct rest_client *rc, struct rc_conn *c, int *status, json_t **body, spate_error *err)
{
    uint64_t deadline = clock_mono_ms() + (uint64_t)rc->timeout_ms;
    char *buf = NULL, *head_end;
    size_t len = 0, cap = 0;
    int rcode = 0;

    for (;;) {
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        uint64_t now = clock_mono_ms();
        ssize_t n;

        if (now >= deadline || (c->tls == NULL && poll(&p, 1, (int)(deadline - now)) == 0)) {
            rcode = spate_error_set(err, SPATE_ETIMEDOUT,
                                    "the JobManager at %s did not answer within %d ms", rc->url,
                                    rc->timeout_ms);
            goto out;
        }
        xgrow((void **)&buf, &cap, len + 65536 + 1, 1);
        if (c->tls != NULL) {
            spate_error terr = { 0 };

            n = tls_fd_read(c->tls, c->fd, buf + len, cap - len - 1, (int64_t)deadline, &terr);
            if (n == SPATE_ETIMEDOUT)
                continue; /* the deadline above says so */
            if (n < 0) {
                rcode = rc_unreachable(rc, (int)n, terr.message, err);
                goto out;
            }
        } else {
            n = read(c->fd, buf + len, cap - len - 1);
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && len > 0 && errno == ECONNRESET)
            break; /* the answer came before the reset */
        if (n < 0) {
            rcode = rc_unreachable(rc, -errno, spate_strerror(-errno), err);
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > RC_ANSWER_MAX) {
            rcode = spate_error_set(err, SPATE_EMSGSIZE, "the answer of %s is too large", rc->url);
            goto out;
        }
    }
    if (buf == NULL || sscanf(buf, "HTTP/%*d.%*d %d", status) != 1 ||
        (head_end = strstr(buf, "\r\n\r\n")) == NULL) {
        rcode =
            spate_error_set(err, SPATE_EPROTO, "%s answered something that is not HTTP", rc->url);
        goto out;
    }
    buf[len] = '\0';
    *body = json_loads(head_end + 4, JSON_DECODE_ANY, NULL);
out:
    free(buf);
    return rcode;
}

int
rest_client_call(struct rest_client *rc, const char *method, const char *path, const char *json,
                 int *status, json_t **body, spate_error *err)
{
    char head[4096];
    size_t blen = json != NULL ? strlen(json) : 0;
    struct rc_conn c;
    int rcode;

    *body = NULL;
    if ((rcode = rc_connect(rc, &c, err)) < 0)
        return rcode;
    snprintf(head, sizeof head,
             "%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\nAccept: application/json\r\n"
             "%s%sContent-Length: %zu\r\n\r\n",
             method, path, rc->host, rc->port, rc->auth,
             json != NULL ? "Content-Type: application/json\r\n" : "", blen);
    if ((rcode = rc_send(&c, head, strlen(head))) != 0 ||
        (blen > 0 && (rcode = rc_send(&c, json, blen)) != 0))
        rcode = rc_unreachable(rc, rcode, spate_strerror(rcode), err);
    else
        rcode = rc_answer(rc, &c, status, body, err);
    rc_close(&c);
    return rcode;
}

int
rest_client_upload(struct rest_client *rc, const char *path, const struct rest_client_part *parts,
                   size_t nparts, int *status, json_t **body, spate_error *err)
{
    char head[4096], (*heads)[512] = xcalloc(nparts, sizeof *heads);
    const char *tail = "\r\n--" RC_BOUNDARY "--\r\n";
    size_t total = strlen(tail);
    struct rc_conn c = { -1, NULL };
    int rcode = 0;

    *body = NULL;
    /* Each part's header; files are measured for the Content-Length. */
    for (size_t i = 0; i < nparts; i++) {
        size_t len = parts[i].len;

        if (parts[i].path != NULL) {
            FILE *f = fopen(parts[i].path, "rb");

            if (f == NULL) {
                rcode = spate_error_set(err, -errno, "cannot read '%s': %s", parts[i].path,
                                        spate_strerror(-errno));
                goto out;
            }
            fseek(f, 0, SEEK_END);
            len = (size_t)ftell(f);
            fclose(f);
        }
        snprintf(heads[i], sizeof heads[i],
                 "%s--" RC_BOUNDARY "\r\nContent-Disposition: form-data; name=\"%s\"%s%s%s\r\n"
                 "Content-Type: %s\r\n\r\n",
                 i == 0 ? "" : "\r\n", parts[i].name, parts[i].filename ? "; filename=\"" : "",
                 parts[i].filename ? parts[i].filename : "", parts[i].filename ? "\"" : "",
                 parts[i].filename ? "application/octet-stream" : "application/json");
        total += strlen(heads[i]) + len;
    }
    if ((rcode = rc_connect(rc, &c, err)) < 0)
        goto out;
    snprintf(head, sizeof head,
             "POST %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\nAccept: application/json\r\n"
             "%sContent-Type: multipart/form-data; boundary=" RC_BOUNDARY "\r\n"
             "Content-Length: %zu\r\n\r\n",
             path, rc->host, rc->port, rc->auth, total);
    rcode = rc_send(&c, head, strlen(head));
    for (size_t i = 0; rcode == 0 && i < nparts; i++) {
        rcode = rc_send(&c, heads[i], strlen(heads[i]));
        if (rcode == 0 && parts[i].path != NULL)
            rcode = rc_send_file(&c, parts[i].path, err);
        else if (rcode == 0)
            rcode = rc_send(&c, parts[i].data, parts[i].len);
    }
    if (rcode == 0)
        rcode = rc_send(&c, tail, strlen(tail));
    /* A server that refused the body early (413) has answered already. */
    rcode = rc_answer(rc, &c, status, body, err);
out:
    rc_close(&c);
    free(heads);
    return rcode;
}

const char *
rest_client_error_text(const json_t *body, int status, char *buf, size_t cap)
{
    const char *e = json_string_value(json_array_get(json_object_get(body, "errors"), 0));

    if (e != NULL)
        return e;
    snprintf(buf, cap, "HTTP status %d", status);
    return buf;
}
