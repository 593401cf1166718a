/* The state backend of a TaskManager's tasks (Flink's StateBackend):
 * which keyed state backend an operator instance gets, hashmap (the heap,
 * heap_keyed_backend.h) or rocksdb (rocksdb_keyed_backend.h, over the
 * RocksDB plugin), and the settings it is made with, read from the
 * configuration once. Any thread. */
#ifndef SPATE_STATE_STATE_BACKEND_H
#define SPATE_STATE_STATE_BACKEND_H

#include <stddef.h>

#include "core/config.h"
#include "state/shared_resources.h"
#include "state/keyed_state_backend.h"

enum state_backend_type {
    STATE_BACKEND_HASHMAP, /* config_options.h's order: "hashmap|rocksdb" */
    STATE_BACKEND_ROCKSDB,
};

struct state_backend_options {
    enum state_backend_type type;
    /* RocksDB: where working folders go (state.backend.rocksdb.localdir,
     * else the first of io.tmp.dirs), its block cache and write buffers. */
    char localdir[4096];
    size_t block_cache_bytes;
    size_t write_buffer_bytes;
    /* RocksDB checkpoints upload only new files
     * (execution.checkpointing.incremental). */
    bool incremental;
    /* state.backend.rocksdb.compaction.style: UNIVERSAL, else LEVEL. */
    bool universal_compaction;
    /* state.backend.rocksdb.timer-service.factory: ROCKSDB, else HEAP. */
    bool timers_in_rocksdb;
    /* Bit i: rocksdb_native_metrics[i] is reported
     * (state.backend.rocksdb.metrics.<name>: true). */
    uint32_t native_metrics;
    /* Managed memory (state.backend.rocksdb.memory.managed): the RocksDB
     * instances of a slot share one block cache and write buffer manager
     * of managed_bytes (taskmanager.memory.managed.size over the slots),
     * the ratios state.backend.rocksdb.memory.*'s. */
    bool memory_managed;
    size_t managed_bytes;
    double write_buffer_ratio, high_prio_pool_ratio;
    /* The slot's resources, which hold that memory (the TaskExecutor's,
     * one per slot; NULL: each instance has managed_bytes of its own). */
    struct shared_resources *slot_resources;
};

/* The options of conf (NULL: the defaults); an unknown backend type is a
 * configuration error naming the key and the types there are. Plain data:
 * copied as it is. */
int state_backend_options_from_config(const struct config *conf, struct state_backend_options *o,
                                      spate_error *err);

/* A keyed state backend of o's type (NULL: the heap) for config's
 * operator instance; name says which in a working folder's name and in
 * errors. Freed by its table's dispose, then free(). */
int state_backend_create(const struct state_backend_options *o,
                         const struct keyed_backend_config *config, const char *name,
                         struct keyed_state_backend **out, spate_error *err);

/* The heap backend inside b: b itself when it is the heap backend, the
 * one inside a RocksDB backend (its operator state, and its timers unless
 * they are in RocksDB). */
struct heap_keyed_backend *state_backend_heap(struct keyed_state_backend *b);
/* Whether b's timers are the heap backend's (state_backend_heap), so that
 * operators may call the heap's timer calls inline; else only through
 * b's table. */
bool state_backend_timers_on_heap(struct keyed_state_backend *b);

#endif
