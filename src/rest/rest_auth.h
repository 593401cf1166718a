/* REST authentication (rest.authentication.*): bearer tokens from
 * rest.authentication.token-file and HTTP basic credentials (user:password
 * lines) from rest.authentication.credentials-file. When either is set,
 * every request that changes something (any method but GET, HEAD and
 * OPTIONS) must present one, else it gets 401 with Flink's error body and a
 * log line naming the peer. Read-only after start; any connection thread. */
#ifndef SPATE_REST_REST_AUTH_H
#define SPATE_REST_REST_AUTH_H

#include <stdbool.h>

#include <microhttpd.h>

#include "core/config.h"
#include "core/log.h"

struct rest_auth;

/* NULL in *out when neither file is set (authentication off). A file that
 * cannot be read, others may read, or that holds nothing is an error. */
int rest_auth_new(const struct config *conf, struct rest_auth **out, spate_error *err);
void rest_auth_free(struct rest_auth *a);
/* Whether an Authorization header's value (NULL: none) holds a known bearer
 * token or basic credentials; if not, why in *why. a is not NULL. */
bool rest_auth_valid(const struct rest_auth *a, const char *authorization, const char **why);
/* Whether the request may go on; if not, the 401 is queued, *ret is what
 * the access handler returns, and the refusal is logged through rl. a may
 * be NULL (off). */
/* The client's address as "ip:port" ("?" when unknown) into buf. */
void rest_peer(struct MHD_Connection *c, char *buf, size_t cap);
bool rest_auth_check(const struct rest_auth *a, struct log_ratelimit *rl, struct MHD_Connection *c,
                     const char *method, const char *url, enum MHD_Result *ret);

#endif
