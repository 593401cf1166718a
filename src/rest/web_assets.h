/* The web dashboard's files (web/), compiled in: cmake/web_assets.cmake
 * generates their table at build time, each file raw and gzipped. */
#ifndef SPATE_REST_WEB_ASSETS_H
#define SPATE_REST_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
    const char *path;         /* "/index.html": web/ is the root */
    const char *content_type; /* "text/javascript; charset=utf-8" */
    const char *etag;         /* quoted, from the file's SHA-256 */
    const unsigned char *data;
    size_t len;
    const unsigned char *gzip; /* the same bytes, gzip level 9 */
    size_t gzip_len;
};

/* Every file, ending with one whose path is NULL. */
extern const struct web_asset web_assets[];

#endif
