/* The RocksDB keyed state backend (Flink's RocksDBKeyedStateBackend):
 * keyed_state_backend.h's table over a RocksDB database in a working
 * folder of its own (the RocksDB plugin, rocksdb_plugin.h), for state
 * larger than memory. Flink's layout: a column family per keyed state;
 * an entry's key is its key group (2 bytes, big-endian, so that a key
 * group's entries lie together), then the heap backend's composite key
 * ([u32 key length][key][u32 namespace length][namespace][map key]); its
 * value the heap backend's (an 8-byte write time first with a TTL, list
 * elements framed and appended by a merge). Map state iterates a prefix.
 * Operator and broadcast state stay on the heap, in a heap backend
 * inside, and so do the timers by default (Flink's HEAP timer service
 * factory); with ROCKSDB they are entries of two column families of
 * their own (rocksdb_timers.c).
 * Snapshots are the canonical state file of the heap backend (a full
 * snapshot: a RocksDB snapshot taken on the task thread, walked key group
 * by key group on the snapshot thread), so that either backend restores
 * the other's checkpoints and savepoints, at any parallelism. With
 * incremental checkpoints (rocksdb_incremental.c) a checkpoint is the
 * database's files instead, which only this backend restores. Task thread
 * only, but for a snapshot's asynchronous part. */
#ifndef SPATE_STATE_ROCKSDB_KEYED_BACKEND_H
#define SPATE_STATE_ROCKSDB_KEYED_BACKEND_H

#include "state/rocksdb_plugin.h"
#include "state/state_backend.h"

/* A RocksDB backend for config's states, in a fresh working folder under
 * o->localdir (removed by dispose); the plugin is loaded on first use. */
int rocksdb_keyed_backend_create(const struct state_backend_options *o,
                                 const struct keyed_backend_config *config, const char *name,
                                 struct keyed_state_backend **out, spate_error *err);

/* The heap backend inside b (a RocksDB backend): its operator state, and
 * its timers unless they are in RocksDB. */
struct heap_keyed_backend *rocksdb_keyed_backend_heap(struct keyed_state_backend *b);
/* Whether b keeps its timers in RocksDB
 * (state.backend.rocksdb.timer-service.factory: ROCKSDB). */
bool rocksdb_keyed_backend_timers_in_rocksdb(struct keyed_state_backend *b);

/* What the managed memory that b uses holds now, shared with the other
 * backends of its slot; false when b's memory is not managed. */
bool rocksdb_keyed_backend_memory(struct keyed_state_backend *b, struct rdb_memory_usage *out);
/* Flink's RocksDB native metrics (RocksDBNativeMetricOptions), each
 * reported when state.backend.rocksdb.metrics.<name> is true: RocksDB's
 * property rocksdb.<name>. */
#define ROCKSDB_NATIVE_METRIC_COUNT 26
extern const char *const rocksdb_native_metrics[ROCKSDB_NATIVE_METRIC_COUNT];
/* Native metric i of b's database: summed over its column families (Flink
 * reports one per column family), the database's or the block cache's own
 * for those that are not a column family's; false when RocksDB has none. */
bool rocksdb_keyed_backend_native_metric(struct keyed_state_backend *b, int i, uint64_t *out);
/* RocksDB's integer property name of b's database, summed over its
 * states (e.g. rocksdb.cur-size-all-mem-tables); false when none. */
bool rocksdb_keyed_backend_property(struct keyed_state_backend *b, const char *name, uint64_t *out);

#endif
