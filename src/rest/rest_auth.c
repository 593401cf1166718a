/* REST authentication (rest_auth.h). Only SHA-256 digests of the tokens and
 * credentials stay in memory; a presented one is hashed and compared in
 * constant time with each. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/sha256.h"
#include "rest/rest_auth.h"
#include "rest/rest_int.h"

#define AUTH_FILE_MAX (64 * 1024)

struct rest_auth {
    uint8_t (*tokens)[SHA256_BYTES]; /* bearer tokens */
    size_t ntokens;
    uint8_t (*basic)[SHA256_BYTES]; /* "user:password" */
    size_t nbasic;
    bool want_basic; /* the 401 asks for basic rather than a bearer token */
};

/* Each non-empty line of path that is not a comment, as a digest. */
static int
auth_load(const char *path, const char *what, bool colon, uint8_t (**out)[SHA256_BYTES], size_t *n,
          spate_error *err)
{
    char *text = xmalloc(AUTH_FILE_MAX), *save = NULL;
    int rc;

    if ((rc = secret_file_read(path, text, AUTH_FILE_MAX, err)) != 0) {
        free(text);
        return spate_error_wrap(err, "%s", what);
    }
    for (char *line = strtok_r(text, "\r\n", &save); line != NULL;
         line = strtok_r(NULL, "\r\n", &save)) {
        if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
            continue;
        if (colon && strchr(line, ':') == NULL) {
            rc = spate_error_set(err, SPATE_ECONFIG,
                                 "%s '%s': a line is not user:password (line %zu of them)", what,
                                 path, *n + 1);
            break;
        }
        *out = xrealloc(*out, (*n + 1) * sizeof **out);
        sha256(line, strlen(line), (*out)[(*n)++]);
    }
    explicit_bzero(text, AUTH_FILE_MAX);
    free(text);
    if (rc == 0 && *n == 0)
        rc = spate_error_set(err, SPATE_ECONFIG, "%s '%s' holds no %s", what, path,
                             colon ? "user:password line" : "token");
    return rc;
}

int
rest_auth_new(const struct config *conf, struct rest_auth **out, spate_error *err)
{
    const char *tokens = NULL, *basic = NULL;
    struct rest_auth *a;
    int rc = 0;

    *out = NULL;
    config_get_string(conf, CFG(REST_AUTHENTICATION_TOKEN_FILE), &tokens, NULL);
    config_get_string(conf, CFG(REST_AUTHENTICATION_CREDENTIALS_FILE), &basic, NULL);
    if ((tokens == NULL || !*tokens) && (basic == NULL || !*basic))
        return 0;
    a = xcalloc(1, sizeof *a);
    if (tokens != NULL && *tokens)
        rc = auth_load(tokens, "rest.authentication.token-file", false, &a->tokens, &a->ntokens,
                       err);
    if (rc == 0 && basic != NULL && *basic) {
        rc = auth_load(basic, "rest.authentication.credentials-file", true, &a->basic, &a->nbasic,
                       err);
        a->want_basic = a->ntokens == 0;
    }
    if (rc != 0) {
        rest_auth_free(a);
        return rc;
    }
    SPATE_LOG_INFO(REST_LOG, "REST authentication on: %zu bearer token%s, %zu basic credential%s",
                   a->ntokens, a->ntokens == 1 ? "" : "s", a->nbasic, a->nbasic == 1 ? "" : "s");
    *out = a;
    return 0;
}

void
rest_auth_free(struct rest_auth *a)
{
    if (a == NULL)
        return;
    free(a->tokens);
    free(a->basic);
    free(a);
}

static bool
auth_known(uint8_t (*set)[SHA256_BYTES], size_t n, const char *given, size_t len)
{
    uint8_t d[SHA256_BYTES];
    int found = 0;

    sha256(given, len, d);
    for (size_t i = 0; i < n; i++)
        found |= sha256_equal(set[i], d);
    return found != 0;
}

bool
rest_auth_valid(const struct rest_auth *a, const char *h, const char **why)
{
    if (h == NULL) {
        *why = "no credentials";
        return false;
    }
    if (strncasecmp(h, "Bearer ", 7) == 0) {
        const char *t = h + 7 + strspn(h + 7, " ");

        *why = "unknown bearer token";
        return a->ntokens > 0 && auth_known(a->tokens, a->ntokens, t, strlen(t));
    }
    if (strncasecmp(h, "Basic ", 6) == 0) {
        const char *b64 = h + 6 + strspn(h + 6, " ");
        size_t len = strlen(b64);
        unsigned char *raw;
        int n;
        bool ok;

        *why = "unknown user or wrong password";
        if (a->nbasic == 0 || len == 0 || len % 4 != 0 || len > 4096)
            return false;
        raw = xmalloc(len);
        n = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)len);
        if (n < 0) {
            free(raw);
            *why = "malformed basic credentials";
            return false;
        }
        /* EVP_DecodeBlock counts the padding's zero bytes. */
        n -= (int)(len >= 1 && b64[len - 1] == '=') + (int)(len >= 2 && b64[len - 2] == '=');
        ok = auth_known(a->basic, a->nbasic, (const char *)raw, (size_t)n);
        explicit_bzero(raw, len);
        free(raw);
        return ok;
    }
    *why = "an unknown authorization scheme";
    return false;
}

void
rest_peer(struct MHD_Connection *c, char *buf, size_t cap)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

    snprintf(buf, cap, "?");
    if (ci != NULL && ci->client_addr != NULL && ci->client_addr->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)ci->client_addr;
        char ip[INET_ADDRSTRLEN];

        inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof ip);
        snprintf(buf, cap, "%s:%d", ip, ntohs(sin->sin_port));
    }
}

bool
rest_auth_check(const struct rest_auth *a, struct log_ratelimit *rl, struct MHD_Connection *c,
                const char *method, const char *url, enum MHD_Result *ret)
{
    struct MHD_Response *r;
    char peer[64], *text;
    const char *why;
    json_t *body;

    if (a == NULL || strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
        strcmp(method, "OPTIONS") == 0)
        return true;
    if (rest_auth_valid(a, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"), &why))
        return true;
    rest_peer(c, peer, sizeof peer);
    SPATE_LOG_LIMITED(rl, LOG_LEVEL_WARN, REST_LOG,
                      "refused %s %s from %s: %s (rest.authentication)", method, url, peer, why);
    body = json_pack("{s:[s]}", "errors",
                     "Unauthorized: this request needs a valid bearer token or basic "
                     "credentials (rest.authentication)");
    text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json; charset=UTF-8");
    MHD_add_response_header(r, "WWW-Authenticate",
                            a->want_basic ? "Basic realm=\"spate\"" : "Bearer realm=\"spate\"");
    *ret = MHD_queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
    MHD_destroy_response(r);
    return false;
}
