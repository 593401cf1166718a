/* A small HTTP/1.1 client for the JobManager's REST API, as the spate
 * commands use it (run, list, cancel): one request per connection, JSON
 * bodies or multipart uploads streamed from files, timeouts on connect and on
 * the answer, a clear message when the JobManager cannot be reached. The
 * target comes from -m host:port, else with ZooKeeper high availability from
 * the REST leader's node (cli_find_leader, so that run, list and cancel
 * follow the leader), else rest.address and rest.port. Main thread. */
#ifndef SPATE_CLI_REST_CLIENT_H
#define SPATE_CLI_REST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/config.h"

struct rest_client {
    char host[256];
    int port;
    char url[300]; /* "http://host:port" (https with TLS), for messages */
    int timeout_ms;
    char auth[1100];           /* "Authorization: ...\r\n" (rest.authentication.*), or "" */
    const struct config *conf; /* outlives the client: security.ssl.rest.* */
    bool https;                /* security.ssl.rest.enabled */
};

/* target: "host:port" from -m, or NULL for the leading JobManager's REST
 * endpoint (ZooKeeper HA: waits up to 30 s for one) or rest.address and
 * rest.port. Every request carries the first bearer token of
 * rest.authentication.token-file, else the first user:password of
 * rest.authentication.credentials-file, when this user may read it. */
int rest_client_init(struct rest_client *rc, const struct config *conf, const char *target,
                     spate_error *err);

/* One part of a multipart/form-data body: a field (data) or a file (path). */
struct rest_client_part {
    const char *name;
    const char *filename; /* NULL: a plain field */
    const char *path;     /* the file to send, or NULL for data */
    const void *data;
    size_t len;
};

/* Sends method path (with a JSON body when json is not NULL) and returns the
 * HTTP status and the parsed answer (NULL when it is not JSON). Errors: the
 * server cannot be reached or does not answer, with a message saying where
 * and what to check. */
int rest_client_call(struct rest_client *rc, const char *method, const char *path, const char *json,
                     int *status, json_t **body, spate_error *err);
int rest_client_upload(struct rest_client *rc, const char *path,
                       const struct rest_client_part *parts, size_t nparts, int *status,
                       json_t **body, spate_error *err);
/* The first of Flink's {"errors": [...]}, or a stand-in naming the status. */
const char *rest_client_error_text(const json_t *body, int status, char *buf, size_t cap);

#endif
