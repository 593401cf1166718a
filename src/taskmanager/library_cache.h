/* The TaskManager's job libraries (Flink's LibraryCacheManager): one private
 * copy per job, loaded RTLD_LOCAL by the first of the job's tasks to need it
 * and closed when the job's last task here has ended. Task threads acquire
 * and release; a mutex guards the table (never held while loading: a job's
 * first task loads, the others wait on the entry's condition). */
#ifndef SPATE_TASKMANAGER_LIBRARY_CACHE_H
#define SPATE_TASKMANAGER_LIBRARY_CACHE_H

#include <stdint.h>

#include "core/id.h"
#include "streaming/user_code.h"

struct library_cache;

/* copy_dir: where per-job copies go (created if missing). */
struct library_cache *library_cache_new(const char *copy_dir);
/* Every library must have been released. */
void library_cache_free(struct library_cache *c);

/* The job's library, loading path (checked against sha256) on first use. */
int library_cache_acquire(struct library_cache *c, const spate_id *job, const char *path,
                          const uint8_t sha256[32], const struct job_library **out,
                          spate_error *err);
void library_cache_release(struct library_cache *c, const spate_id *job);

#endif
