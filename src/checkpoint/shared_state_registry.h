/* The shared files of a job's retained checkpoints (Flink's
 * SharedStateRegistry): incremental RocksDB checkpoints reference SST files
 * in the job's shared/ folder that earlier checkpoints uploaded; the
 * registry counts, per file, the retained checkpoints that reference it, so
 * that a subsumed checkpoint deletes only the files no retained checkpoint
 * uses. A file that a checkpoint uploaded but no completed checkpoint
 * references (an aborted checkpoint, a TaskManager killed mid-upload) is
 * removed by a sweep when no checkpoint is in progress (a restore). The
 * JobMaster's CheckpointCoordinator owns it and calls it from its worker
 * threads: lock guards every count, and deletions happen under it, so that
 * a file is never deleted while a checkpoint registering it is checked. */
#ifndef SPATE_CHECKPOINT_SHARED_STATE_REGISTRY_H
#define SPATE_CHECKPOINT_SHARED_STATE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "proto/checkpoint.pb-c.h"

struct shared_state_registry;

struct shared_state_registry *shared_state_registry_new(void);
void shared_state_registry_free(struct shared_state_registry *r);

/* Registers checkpoint id (completed, retained) with the shared files md
 * names. Each file new to the registry must exist: a checkpoint that
 * references a file an earlier subsumption deleted (a task that had not
 * yet heard of the newer completed checkpoint) is refused, SPATE_ENOENT
 * naming the file, and nothing is registered. An id registered already is
 * left as it is. */
int shared_state_registry_register(struct shared_state_registry *r, uint64_t id,
                                   const Checkpoint__CheckpointMetadata *md, spate_error *err);
bool shared_state_registry_contains(struct shared_state_registry *r, uint64_t id);
/* Checkpoint id is no longer retained (subsumed, or discarded): its
 * references go, and the files no registered checkpoint references any
 * longer are deleted. Returns how many were. An unknown id: 0. */
size_t shared_state_registry_unregister(struct shared_state_registry *r, uint64_t id);
/* A checkpoint that will not complete (aborted, refused): the shared
 * files st names that no registered checkpoint references are deleted
 * (its own uploads: a task references only the files of completed
 * checkpoints). Returns how many were. */
size_t shared_state_registry_discard(struct shared_state_registry *r,
                                     const Checkpoint__OperatorSubtaskState *st);
/* How many registered checkpoints reference the file at path. */
int shared_state_registry_refs(struct shared_state_registry *r, const char *path);
/* Deletes the files of dir (a job's shared folder) that no registered
 * checkpoint references: what aborted checkpoints and uploads cut short
 * left. Only while no checkpoint is in progress (their uploads are not
 * registered yet). Returns how many were deleted. */
size_t shared_state_registry_sweep(struct shared_state_registry *r, const char *dir);

#endif
