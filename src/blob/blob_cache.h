/* The BlobCache (Flink's): a TaskManager's local copies of blobs, fetched
 * from the JobManager's BlobServer on first use, verified against their
 * SHA-256 key, and removed when their last user releases them. Any thread
 * (task threads fetch); a mutex guards the table and is never held during
 * a download: the first caller downloads, the others wait for it. */
#ifndef SPATE_BLOB_BLOB_CACHE_H
#define SPATE_BLOB_BLOB_CACHE_H

#include <stdint.h>

#include <spate/error.h>

#include "core/sha256.h"
#include "core/tls.h"

struct blob_cache;

/* dir: where the copies go (created if missing). secret: NULL or the
 * cluster's security.rpc.secret; tls: security.ssl.internal (borrowed) or
 * NULL. */
struct blob_cache *blob_cache_new(const char *dir, const char *secret, struct tls_context *tls,
                                  int64_t max_size_bytes);
/* Every blob must have been released. */
void blob_cache_free(struct blob_cache *c);

/* The local path of key (valid until released), fetching it from the
 * BlobServer at server ("host:port") unless it is here. Errors: the server
 * cannot be reached or does not have it, a blob above the size limit, bytes
 * that do not match the key. */
int blob_cache_get(struct blob_cache *c, const char *server, const uint8_t key[SHA256_BYTES],
                   const char **path, spate_error *err);
void blob_cache_release(struct blob_cache *c, const uint8_t key[SHA256_BYTES]);

#endif
