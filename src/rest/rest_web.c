/* The web dashboard at / on the REST port (Flink's StaticFileServerHandler):
 * the files of web/, compiled into the library (web_assets.h), answered to
 * GET and HEAD of a path no REST route takes. Gzipped when the client takes
 * gzip; an ETag with Cache-Control: no-cache, so that a browser asks again
 * on each load and gets 304 while the file is the same; a
 * Content-Security-Policy of the page's own files only. Only the table's
 * paths exist: nothing is read from disk, and a path with a "." or ".."
 * segment or a backslash (libmicrohttpd has decoded %2e%2e, %2f and %5c by
 * now) is refused, saying why. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rest/rest_int.h"
#include "rest/web_assets.h"

/* Whether path has a "." or ".." segment or a backslash: it would leave, or
 * pretend to leave, the web root. */
static bool
rest_web_escapes(const char *path)
{
    if (strchr(path, '\\') != NULL)
        return true;
    for (const char *s = path; *s != '\0'; s++) {
        if (*s == '/' && s[1] == '.' &&
            (s[2] == '/' || s[2] == '\0' || (s[2] == '.' && (s[3] == '/' || s[3] == '\0'))))
            return true;
    }
    return false;
}

const struct web_asset *
rest_web_find(const char *path)
{
    if (path[0] != '/' || rest_web_escapes(path))
        return NULL;
    if (strcmp(path, "/") == 0)
        path = "/index.html";
    for (const struct web_asset *a = web_assets; a->path != NULL; a++) {
        if (strcmp(a->path, path) == 0)
            return a;
    }
    return NULL;
}

bool
rest_web_takes_gzip(const char *accept_encoding)
{
    const char *p = accept_encoding;

    /* "gzip, deflate, br", "br;q=1.0, gzip;q=0.8": gzip, unless its q is 0. */
    while (p != NULL && *p != '\0') {
        size_t n, tok;
        const char *q;

        p += strspn(p, " \t");
        n = strcspn(p, ",");
        tok = strcspn(p, ";, \t");
        if (tok == 4 && strncasecmp(p, "gzip", 4) == 0) {
            q = memmem(p, n, "q=", 2);
            return q == NULL || strtod(q + 2, NULL) > 0;
        }
        p += n + (p[n] == ',');
    }
    return false;
}

bool
rest_web_route(struct MHD_Connection *c, const char *url, const char *method, enum MHD_Result *ret)
{
    const struct web_asset *a;
    const char *etag, *accept;
    struct MHD_Response *r;
    unsigned status = MHD_HTTP_OK;
    bool gzip;

    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return false;
    if (rest_web_escapes(url)) {
        *ret = rest_error(c, MHD_HTTP_NOT_FOUND,
                          "Not found: %s (a '.' or '..' segment would leave the web root)", url);
        return true;
    }
    if ((a = rest_web_find(url)) == NULL)
        return false;
    etag = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    gzip = rest_web_takes_gzip(accept) && a->gzip_len < a->len;
    if (etag != NULL && strstr(etag, a->etag) != NULL) {
        status = MHD_HTTP_NOT_MODIFIED;
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        r = MHD_create_response_from_buffer(gzip ? a->gzip_len : a->len,
                                            (void *)(gzip ? a->gzip : a->data),
                                            MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
        if (gzip)
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, a->etag);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* The page runs its own files only: no inline script, nothing from
     * elsewhere, whatever text (a log, an exception) it shows. */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; object-src 'none'; base-uri 'none'; "
                            "frame-ancestors 'self'");
    *ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return true;
}
