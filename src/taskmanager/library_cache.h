/* The TaskManager's job libraries (Flink's LibraryCacheManager): the first of
 * a job's tasks fetches the library from the BlobServer through the BlobCache
 * (verified by SHA-256) and loads a private copy RTLD_LOCAL under
 * blob.storage.directory (else io.tmp.dirs); the job's last task here closes
 * it and drops the blob. A failed fetch or load is forgotten once its last
 * waiter leaves, so that the job's next deployment (from a new leader, say)
 * tries again. Task threads acquire and release; a mutex guards the table
 * (never held while loading: the others wait). */
#ifndef SPATE_TASKMANAGER_LIBRARY_CACHE_H
#define SPATE_TASKMANAGER_LIBRARY_CACHE_H

#include <stdint.h>

#include "blob/blob_cache.h"
#include "core/config.h"
#include "core/id.h"
#include "core/tls.h"
#include "streaming/user_code.h"

struct library_cache;

/* Fetched blobs and per-job copies go into a folder of this process's
 * under base ("spate-libraries-<id>", tmp_dir.h: removed when the cache is
 * freed, swept after a kill); secret, tls and max_blob_bytes as for the
 * BlobCache. */
int library_cache_new(const char *base, const char *secret, struct tls_context *tls,
                      int64_t max_blob_bytes, struct library_cache **out, spate_error *err);
/* One from the configuration: its folder in blob.storage.directory (else
 * the first of io.tmp.dirs), security.rpc.secret, blob.max-size; tls is the
 * process's security.ssl.internal (or NULL). */
int library_cache_from_config(const struct config *conf, struct tls_context *tls,
                              struct library_cache **out, spate_error *err);
/* Every library must have been released. */
void library_cache_free(struct library_cache *c);

/* The job's library: on first use, blob sha256 fetched from blob_server
 * ("host:port") and loaded. */
int library_cache_acquire(struct library_cache *c, const spate_id *job, const char *blob_server,
                          const uint8_t sha256[32], const struct job_library **out,
                          spate_error *err);
void library_cache_release(struct library_cache *c, const spate_id *job);

#endif
