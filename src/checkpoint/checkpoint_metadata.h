/* The `_metadata` file of a completed checkpoint or savepoint (Flink's
 * Checkpoints.storeCheckpointMetadata / loadCheckpointMetadata): the magic
 * "SPCK", a 4-byte little-endian format version, the CheckpointMetadata of
 * proto/checkpoint.proto, then the SHA-256 of everything before it. Paths of
 * state files inside the checkpoint's folder are stored relative to it, so a
 * savepoint folder can move; reading resolves them against the folder the
 * file is in. Written by the JobMaster's CheckpointCoordinator, read when a
 * job restores (a restart, a new leader, a savepoint). The file is external
 * input: every check (truncated, bad magic, unknown version, checksum,
 * undecodable, handles that do not fit their operator) names the file and
 * what is wrong; at restore, every state file it names must exist and be long
 * enough. Any thread; calls that touch files block. */
#ifndef SPATE_CHECKPOINT_CHECKPOINT_METADATA_H
#define SPATE_CHECKPOINT_CHECKPOINT_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "proto/checkpoint.pb-c.h"

#define CHECKPOINT_METADATA_FILE    "_metadata"
#define CHECKPOINT_METADATA_MAGIC   "SPCK"
#define CHECKPOINT_METADATA_VERSION 1u
/* Larger files are refused before they are read. */
#define CHECKPOINT_METADATA_MAX_BYTES (256u << 20)

/* The file's bytes for md, whose state file paths under dir are written
 * relative to it (md itself is not changed). *out is malloc'd. */
int checkpoint_metadata_encode(const Checkpoint__CheckpointMetadata *md, const char *dir,
                               uint8_t **out, size_t *len, spate_error *err);
/* Checks and decodes the bytes of the file at path (named in errors; its
 * folder resolves relative state file paths): too short, bad magic, an
 * unknown version, a checksum mismatch, a message that does not decode, ids
 * that are not 16 bytes, key group ranges and subtask indexes that do not
 * fit the operator are each an error. Free with checkpoint_metadata_free. */
int checkpoint_metadata_decode(const uint8_t *data, size_t len, const char *path,
                               Checkpoint__CheckpointMetadata **out, spate_error *err);
void checkpoint_metadata_free(Checkpoint__CheckpointMetadata *md);

/* Writes dir/_metadata: a temporary file, synced, renamed, the folder
 * synced. *path (malloc'd) is the file's path; may be NULL. */
int checkpoint_metadata_write(const Checkpoint__CheckpointMetadata *md, const char *dir,
                              char **path, spate_error *err);
/* Reads and decodes a `_metadata` file, or the one inside a folder. */
int checkpoint_metadata_read(const char *path, Checkpoint__CheckpointMetadata **out,
                             spate_error *err);

/* Before a restore: every state file md names exists and is at least as
 * long as its handles' offsets and lengths say. SPATE_ENOENT names the
 * missing file, its operator and subtask, and the metadata file (path). */
int checkpoint_metadata_check_files(const Checkpoint__CheckpointMetadata *md, const char *path,
                                    spate_error *err);

/* A deep copy (protobuf-c's allocator: free with checkpoint_metadata_free
 * or the message's free_unpacked). */
Checkpoint__CheckpointMetadata *checkpoint_metadata_copy(const Checkpoint__CheckpointMetadata *md);

#endif
