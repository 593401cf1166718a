/* The BlobServer (Flink's): the JobManager's store of job libraries, keyed by
 * SHA-256 (hashed as they are copied or moved in), with a size limit per blob
 * (blob.max-size) and a reference count per key (a submitted job holds one
 * until it and its archive entry are gone; the last reference removes the
 * file). TaskManagers fetch blobs over its TCP port (blob.server.port;
 * blob_int.h), a thread per connection. Any thread may put, ref and unref: a
 * mutex guards the table.
 *
 * With high availability it also keeps each job's library in the HA blob
 * store (Flink's FileSystemBlobStore): <ha_dir>/job_<job id>/blob_p-<key>,
 * where ha_dir is <high-availability.storageDir>/<cluster-id>/blob. The next
 * leader's BlobServer, which never saw the upload, restores a recovered job's
 * library from there on the first fetch: one restore at a time, on the
 * fetch's thread and without the mutex, while other fetches of the key wait.
 * A missing or corrupt copy answers the fetch with an error naming the file
 * and why, which the task fails with: the job's exceptions show it, its
 * restart strategy decides, the JobManager stays. The Dispatcher copies a
 * submitted job's library there before it stores the job graph (a failed copy
 * refuses the submission) and removes the job's folder in its clean-up of a
 * globally terminal job, with the job graph, before the result is marked
 * clean. A JobManager that loses leadership drops only its local references:
 * the HA copy stays for the next leader. */
#ifndef SPATE_BLOB_BLOB_SERVER_H
#define SPATE_BLOB_BLOB_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/config.h"
#include "core/id.h"
#include "core/sha256.h"
#include "core/tls.h"

struct blob_server;

struct blob_server_options {
    const char *storage_dir; /* a folder of its own is made inside */
    char storage_buf[512];   /* storage_dir when it is io.tmp.dirs' first */
    const char *bind_host;
    const char *port;            /* a port or range; "0": ephemeral */
    const char *advertised_host; /* what TaskManagers connect to */
    int64_t max_size_bytes;
    const char *secret;      /* security.rpc.secret, or NULL */
    struct tls_context *tls; /* security.ssl.internal (borrowed), or NULL */
    const char *ha_dir;      /* the HA blob store's folder, or NULL: none */
    /* cluster.connections.*; 0: the defaults (1024, 128, 10 s) */
    int max_connections;
    int max_handshaking;
    int64_t handshake_timeout_ms;
};

/* Reads blob.storage.directory (else io.tmp.dirs), blob.server.port,
 * blob.max-size and security.rpc.secret. */
int blob_server_options_from_config(const struct config *conf, struct blob_server_options *o,
                                    spate_error *err);
int blob_server_start(const struct blob_server_options *o, struct blob_server **out,
                      spate_error *err);
/* "host:port" for TaskManagers; valid until stop. */
const char *blob_server_address(const struct blob_server *bs);
/* The store's folder; uploads placed beside it can be moved in. */
const char *blob_server_dir(const struct blob_server *bs);

/* Stores the file at path under its SHA-256 (moving it when move is set,
 * else copying) and takes a reference for the caller. Errors: a file above
 * the size limit, I/O. */
int blob_server_put_file(struct blob_server *bs, const char *path, bool move,
                         uint8_t key[SHA256_BYTES], spate_error *err);
/* Another reference on a stored key; SPATE_ENOENT when it is not stored. */
int blob_server_ref(struct blob_server *bs, const uint8_t key[SHA256_BYTES], spate_error *err);
/* Drops a reference; the last one removes the blob. */
void blob_server_unref(struct blob_server *bs, const uint8_t key[SHA256_BYTES]);
/* Where the stored key's file is on this host (restored from the HA blob
 * store first if need be), for a caller that holds a reference on it (the
 * JobMaster loading a job library for its sources' split enumerators).
 * SPATE_ENOENT when it is not stored. */
int blob_server_local_path(struct blob_server *bs, const uint8_t key[SHA256_BYTES], char *out,
                           size_t cap, spate_error *err);
/* ---- the HA blob store (with ha_dir; else these do nothing) ---------------------- */

/* Copies the stored blob key into job's folder of the HA blob store
 * (a temporary name, synced, renamed); the Dispatcher calls it before it
 * stores the job's graph. Blocks on file I/O: not on an RPC loop. Errors:
 * the key is not stored here, I/O (naming the file). */
int blob_server_persist_job_blob(struct blob_server *bs, const spate_id *job,
                                 const uint8_t key[SHA256_BYTES], spate_error *err);
/* A reference on key for job (the Dispatcher's, for a job it runs): as
 * blob_server_ref, but with an HA blob store a key that is not stored here
 * (a job another leader took) gets an entry without its file; the first
 * fetch restores the file from job's folder of the HA blob store (size
 * and SHA-256 checked), and a fetch that cannot is answered with an error
 * naming the file and why. No I/O. */
int blob_server_ref_job(struct blob_server *bs, const spate_id *job,
                        const uint8_t key[SHA256_BYTES], spate_error *err);
/* job reached a globally terminal state: its folder of the HA blob store
 * goes (Flink's global clean-up; a missing one is fine). Blocks. */
int blob_server_cleanup_job(struct blob_server *bs, const spate_id *job, spate_error *err);
/* Whether the file of key is here (tests: a recovered job's blob is
 * restored at its first fetch). */
bool blob_server_has_file(struct blob_server *bs, const uint8_t key[SHA256_BYTES]);

/* Blobs stored (tests and the REST overview). */
int blob_server_count(struct blob_server *bs);

/* Closes the port, waits for the transfers, removes the store; NULL is fine. */
void blob_server_stop(struct blob_server *bs);

#endif
