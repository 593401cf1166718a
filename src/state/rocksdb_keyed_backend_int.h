/* What the RocksDB keyed state backend's files share (rocksdb_keyed_backend.c,
 * its state calls and full snapshots; rocksdb_incremental.c, its
 * incremental checkpoints and their restore): the backend, its states, a
 * snapshot. Task thread only, but for a snapshot's asynchronous part and
 * the uploaded files (rdb_incremental), which the snapshot thread adds to. */
#ifndef SPATE_STATE_ROCKSDB_KEYED_BACKEND_INT_H
#define SPATE_STATE_ROCKSDB_KEYED_BACKEND_INT_H

#include <pthread.h>

#include "core/tmp_dir.h"
#include "state/heap_keyed_backend.h"
#include "state/rocksdb_plugin.h"
#include "state/state_backend.h"
#include "state/state_file.h"

#define KG_BYTES 2 /* an entry key's key group, big-endian */

/* A file of a RocksDB checkpoint as checkpoint storage has it. */
struct rdb_file {
    char *name; /* in the database's folder */
    char *path; /* in checkpoint storage */
    uint64_t size;
};

/* The files one checkpoint uploaded or referenced (shared ones). */
struct rdb_file_set {
    int64_t checkpoint_id;
    struct rdb_file *files;
    size_t n;
};

/* The shared files of incremental checkpoints (Flink's uploadedSstFiles):
 * a checkpoint references the files of the last completed one, which the
 * completed checkpoint store keeps while a retained checkpoint uses them;
 * those of checkpoints not (yet) completed are never referenced. lock
 * guards pending and confirmed: the snapshot thread adds to pending, the
 * task thread confirms and takes copies. */
struct rdb_incremental {
    pthread_mutex_t lock;
    struct rdb_file_set *pending;
    size_t npending;
    struct rdb_file_set confirmed; /* checkpoint_id -1: none */
};

struct rocksdb_keyed_backend;

/* Timers in RocksDB (state.backend.rocksdb.timer-service.factory: ROCKSDB;
 * Flink's RocksDBPriorityQueueSetFactory): a column family per time
 * domain, Flink's "_timer_state/event_user-timers" and
 * "_timer_state/processing_user-timers", whose entry keys order the
 * timers by (key group, timestamp, key, namespace):
 * [key group: 2 bytes big-endian][timestamp: 8 bytes big-endian, sign bit
 * flipped][u32 key length, big-endian][key][namespace]; the value is the
 * key's hash (u64). Each key group keeps its first timers in memory
 * (Flink's RocksDBCachingPriorityQueueSet), and the key groups are a heap
 * ordered by their first timer's timestamp (Flink's
 * KeyGroupPartitionedPriorityQueue), so that the next timer is found
 * without reading RocksDB. */
#define RDB_TIMER_CF_EVENT      "_timer_state/event_user-timers"
#define RDB_TIMER_CF_PROCESSING "_timer_state/processing_user-timers"
#define RDB_TIMER_CACHE         128 /* Flink's default cache size per key group */

/* A timer's entry key and its key's hash. */
struct rdb_timer_entry {
    uint8_t *key;
    uint32_t len;
    uint64_t hash;
};

/* One key group's timers: the first n in order (the smallest entry
 * keys), all of them when all is set. n is 0 only when all is set. */
struct rdb_timer_group {
    struct rdb_timer_entry *cache; /* RDB_TIMER_CACHE + 1 */
    uint32_t n;
    bool all;
};

/* The timers of one time domain. */
struct rdb_timer_queue {
    int cf;
    bool event_time;
    uint32_t ngroups;               /* the backend's key groups */
    struct rdb_timer_group *groups; /* [key group - range.start] */
    uint32_t *heap;                 /* groups by their first timer's timestamp */
    uint32_t *pos;                  /* [group]: its place in heap */
};

/* A state of the RocksDB backend. */
struct rocksdb_state {
    struct spate_state base;
    struct rocksdb_keyed_backend *b;
    int cf;                   /* keyed state: its column family */
    struct spate_state *heap; /* operator and broadcast state: the heap's */
    void *tmp, *tmp2;         /* values of the type, for reduce and aggregate */
    struct byte_buf ser;      /* a value being serialized (a list element framed) */
    struct byte_buf read;     /* a list being iterated; a map's entries */
};

struct rocksdb_keyed_backend {
    struct keyed_state_backend base;
    /* Operator and broadcast state, the timers, and the declarations that
     * a restore checks the checkpoint's states against. */
    struct heap_keyed_backend heap;
    const struct rocksdb_plugin *p;
    struct rdb *db;
    /* The working folder (its ".lock" held: core/tmp_dir.h), and the
     * database's folder in it, "db"; restores and RocksDB checkpoints go
     * beside that. */
    struct tmp_dir work;
    char *dir;
    struct rocksdb_state *states;
    int nstates;
    struct state_key_context *key; /* the current key: the owner's */
    uint32_t max_parallelism, kg_mask;
    struct key_group_range range;
    struct byte_buf k; /* the entry key being read or written */
    struct byte_buf v; /* the value being written */
    int64_t (*now_ms)(void);
    void (*fail)(spate_ctx *ctx, const char *message);
    char errbuf[512];
    struct state_backend_options opts; /* what it was made with */
    /* Managed memory: the slot's (opts.slot_resources') or, without a
     * slot, the backend's own (NULL: not managed). */
    struct rdb_shared_resources *shared;
    struct rdb_incremental inc;
    int ncf; /* the keyed states', then the two timer column families */
    /* Timers in RocksDB (opts.timers_in_rocksdb; else the heap's):
     * [0] processing time, [1] event time. */
    struct rdb_timer_queue timers[2];
    struct timer *fired; /* the timer being fired */
    size_t fired_cap;
};

/* A snapshot's synchronous part: a RocksDB snapshot (full), or a RocksDB
 * checkpoint in a folder of hard links (incremental), and the heap
 * backend's (its operator state and timers). */
struct rdb_snapshot_state {
    struct keyed_backend_snapshot heap;
    struct rocksdb_keyed_backend *b;
    struct rdb_snapshot *snap; /* full */
    /* incremental */
    int64_t checkpoint_id;
    char *shared;             /* the job's shared folder */
    char *local;              /* the RocksDB checkpoint's folder */
    struct rdb_file_set base; /* files it may reference */
    char error[512];          /* the RocksDB checkpoint failed: why */
};

/* rocksdb_keyed_backend.c: a RocksDB call failed (rc, the message in
 * errbuf): the task fails. */
void rdb_failed(struct rocksdb_keyed_backend *b, int rc);
/* Opens (makes) a database of b's keyed states in dir (message in
 * b->errbuf). */
int rdb_open_states(struct rocksdb_keyed_backend *b, const char *dir, struct rdb **out);

/* rocksdb_timers.c: the timers in RocksDB, when b keeps them there (the
 * calls are keyed_state_backend_ops'). */
void rdb_timers_init(struct rocksdb_keyed_backend *b, int cf_processing, int cf_event);
void rdb_timers_release(struct rocksdb_keyed_backend *b);
void rdb_timers_register(struct rocksdb_keyed_backend *b, bool event_time, int64_t timestamp);
void rdb_timers_delete(struct rocksdb_keyed_backend *b, bool event_time, int64_t timestamp);
void rdb_timers_advance(struct rocksdb_keyed_backend *b, bool event_time, int64_t time,
                        keyed_timer_fire_fn fire);
void rdb_timers_on_processing_time(struct rocksdb_keyed_backend *b, uint64_t now,
                                   keyed_timer_fire_fn fire);
/* A full snapshot's timers of key group kg, as of snap, in the heap
 * backend's form (timer_service_snapshot's) into out; false when RocksDB
 * failed (in errbuf). Snapshot thread. */
bool rdb_timers_snapshot_key_group(struct rocksdb_keyed_backend *b, struct rdb_snapshot *snap,
                                   uint32_t kg, struct byte_buf *out, char *errbuf, size_t errlen);
/* After a restore: the timers where b keeps them. Those a state file
 * gave the heap move into RocksDB when b keeps them there; those an
 * incremental checkpoint's timer column families hold move onto the heap
 * when b keeps them there; the caches are filled. */
int rdb_timers_restored(struct rocksdb_keyed_backend *b, spate_error *err);

/* rocksdb_incremental.c */
void rdb_incremental_init(struct rdb_incremental *inc);
void rdb_incremental_release(struct rdb_incremental *inc);
void rdb_file_set_release(struct rdb_file_set *fs);
/* The synchronous part (task thread): the RocksDB checkpoint of s->b's
 * database, and the files it may reference (s->error on failure). */
void rdb_incremental_take(struct rdb_snapshot_state *s, const struct keyed_snapshot_request *req);
/* The asynchronous part: the files of s's RocksDB checkpoint into
 * checkpoint storage: new SST files copied once into the job's shared
 * folder, the others into a folder beside the state file path; as
 * h->files; false with errbuf set when one failed. */
bool rdb_incremental_upload(struct rdb_snapshot_state *s, const char *path,
                            Checkpoint__KeyedStateHandle *h, char *errbuf, size_t errlen);
/* Removes s's RocksDB checkpoint folder. */
void rdb_incremental_discard(struct rdb_snapshot_state *s);
/* Frees what rdb_incremental_take made (nothing when it did not run). */
void rdb_incremental_snapshot_release(struct rdb_snapshot_state *s);
void rdb_incremental_complete(struct rocksdb_keyed_backend *b, int64_t checkpoint_id);
/* Restores the database from the handles of st that hold files (an
 * incremental checkpoint), before the timers and operator state: one
 * handle of the backend's own key groups is opened as it is; otherwise
 * (rescaling) each handle's database is opened aside and the entries of
 * the backend's key groups copied in. */
int rdb_incremental_restore(struct rocksdb_keyed_backend *b,
                            const Checkpoint__OperatorSubtaskState *st, spate_error *err);

#endif
