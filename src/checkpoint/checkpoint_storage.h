/* Where checkpoints and savepoints live (Flink's CheckpointStorage and
 * CheckpointStorageAccess): pointers (local paths and `file:` URIs today:
 * `file:///x`, `file://localhost/x`, `file:/x` and plain paths; relative ones
 * resolved against a caller's base or refused; other hosts and unknown
 * schemes refused, named; an object store is another implementation of the
 * table below), a job's checkpoint locations `<state.checkpoints.dir>/<job
 * id>/chk-<n>/` (made, listed, disposed of), savepoint locations
 * `<target>/savepoint-<6 hex of the job id>-<12 random hex>/`, the file a
 * task writes a checkpoint's state to, `_metadata` written atomically and
 * read back through any pointer, savepoint disposal. Used by the JobManager's
 * CheckpointCoordinator and Dispatcher, the task's snapshot writer, the CLI
 * and REST. Every call that touches storage blocks; any thread (a storage is
 * not changed after checkpoint_storage_new). */
#ifndef SPATE_CHECKPOINT_CHECKPOINT_STORAGE_H
#define SPATE_CHECKPOINT_CHECKPOINT_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/id.h"
#include "proto/checkpoint.pb-c.h"

/* A checkpoint folder: chk-<id>. */
#define CHECKPOINT_STORAGE_CHK_PREFIX "chk-"
/* The files incremental checkpoints share: <job>/shared. */
#define CHECKPOINT_STORAGE_SHARED_DIR "shared"
/* A savepoint folder: savepoint-<6 hex of the job id>-<12 random hex>. */
#define CHECKPOINT_STORAGE_SAVEPOINT_PREFIX "savepoint-"

/* One implementation, for the pointers of one URI scheme. Locations and
 * pointers given to it are in its own form (for `file`, absolute paths
 * without the scheme: checkpoint_storage_path made them so). Strings
 * returned are malloc'd. */
struct checkpoint_storage_ops {
    const char *scheme;
    /* A folder or `_metadata` pointer -> the `_metadata` it names. */
    int (*resolve)(const char *pointer, char **metadata, spate_error *err);
    /* Makes the location dir/name (its parents too). */
    int (*init_location)(const char *dir, const char *name, char **location, spate_error *err);
    /* The file a subtask writes its state of a checkpoint to. */
    char *(*state_file)(const char *location, const spate_id *vertex, int subtask);
    /* `_metadata` in location, atomically: it is either whole or absent. */
    int (*write_metadata)(const char *location, const Checkpoint__CheckpointMetadata *md,
                          char **metadata, spate_error *err);
    int (*read_metadata)(const char *metadata, Checkpoint__CheckpointMetadata **md,
                         spate_error *err);
    /* Removes a location and everything in it (a missing one is fine). */
    int (*dispose_location)(const char *location, spate_error *err);
    /* Removes dir when nothing is left in it (the job's folder). */
    void (*remove_if_empty)(const char *dir);
    /* The ids of the chk-<n> locations in dir, ascending (*ids malloc'd). */
    int (*list_checkpoints)(const char *dir, uint64_t **ids, size_t *n, spate_error *err);
    /* A savepoint's state files named by its `_metadata` inside its
     * folder, the `_metadata`, then the folder when empty; nothing else. */
    int (*dispose_savepoint)(const char *metadata, spate_error *err);
};

/* ---- pointers --------------------------------------------------------------------- */

/* A pointer as the path its storage uses: "file:///x", "file://localhost/x"
 * and "file:/x" are "/x"; a plain path is itself, trailing slashes cut.
 * A relative path (also "file:x") is resolved against base, or refused
 * when base is NULL (the JobManager resolves no client's folders). Errors
 * (SPATE_EINVAL, naming the pointer): empty; a `file:` URI naming another
 * host; a scheme no storage implements ("s3", "hdfs", ...), named. *path
 * is malloc'd. */
int checkpoint_storage_path(const char *pointer, const char *base, char **path, spate_error *err);

/* The `_metadata` a pointer (a checkpoint's or savepoint's folder, or its
 * `_metadata`) names, as the storage's path (malloc'd). */
int checkpoint_storage_resolve(const char *pointer, char **metadata, spate_error *err);
/* Resolves and reads a pointer's `_metadata` (checkpoint_metadata_read's
 * checks); *metadata (may be NULL) is its path. */
int checkpoint_storage_read(const char *pointer, Checkpoint__CheckpointMetadata **md,
                            char **metadata, spate_error *err);
/* Disposes of a savepoint (Flink's disposeSavepoint): the state files its
 * `_metadata` names inside its folder, the `_metadata`, the folder when
 * nothing else is left in it. A `_metadata` that cannot be read deletes
 * nothing. */
int checkpoint_storage_dispose_savepoint(const char *pointer, spate_error *err);

/* A savepoint's location under target (a pointer): target/savepoint-<6
 * hex of job>-<12 random hex>, made. */
int checkpoint_storage_init_savepoint(const char *target, const spate_id *job, char **location,
                                      spate_error *err);

/* ---- locations (both processes) --------------------------------------------------- */

/* The file subtask `subtask` of vertex `vertex` writes its state of the
 * checkpoint at location to (the trigger's target location):
 * <location>/<vertex id>-<subtask>.state. */
int checkpoint_storage_state_file(const char *location, const spate_id *vertex, int subtask,
                                  char **path, spate_error *err);
/* The folder where a checkpoint at location (chk-<n> of a job) puts the
 * files later checkpoints share: the job's shared/ (Flink's
 * CheckpointedStateScope.SHARED), malloc'd; NULL when location is no
 * storage's. */
char *checkpoint_storage_shared_dir(const char *location);
/* Writes `_metadata` in location atomically (paths of state files inside
 * it stored relative); *metadata (may be NULL) is its path. */
int checkpoint_storage_write_metadata(const char *location,
                                      const Checkpoint__CheckpointMetadata *md, char **metadata,
                                      spate_error *err);
/* Removes a location (an aborted checkpoint, a discarded one). */
int checkpoint_storage_dispose_location(const char *location, spate_error *err);

/* ---- a job's checkpoints ---------------------------------------------------------- */

/* The checkpoint storage of one job: <checkpoints_dir>/<job id>. */
struct checkpoint_storage;

/* checkpoints_dir is a pointer (an absolute path or a `file:` URI). */
int checkpoint_storage_new(const char *checkpoints_dir, const spate_id *job,
                           struct checkpoint_storage **out, spate_error *err);
void checkpoint_storage_free(struct checkpoint_storage *s);
/* The job's folder (borrowed, as long as s). */
const char *checkpoint_storage_job_dir(const struct checkpoint_storage *s);

/* Makes chk-<id> in the job's folder (and the folder). */
int checkpoint_storage_init_checkpoint(const struct checkpoint_storage *s, uint64_t id,
                                       char **location, spate_error *err);
/* The ids of the job's chk-<n> folders, ascending. */
int checkpoint_storage_list(const struct checkpoint_storage *s, uint64_t **ids, size_t *n,
                            spate_error *err);
/* Removes chk-<id> (subsumed, or discarded at the job's end). */
int checkpoint_storage_dispose_checkpoint(const struct checkpoint_storage *s, uint64_t id,
                                          spate_error *err);
/* Removes the job's folder when nothing else is left in it. */
void checkpoint_storage_dispose_job(const struct checkpoint_storage *s);

#endif
