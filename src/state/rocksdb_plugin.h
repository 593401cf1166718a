/* The RocksDB plugin's ABI: the few calls of a RocksDB database that the
 * RocksDB keyed state backend (rocksdb_keyed_backend.h) makes, as a table
 * of functions that rocksdb_plugin.c (libspate_rocksdb.so, loaded with
 * dlopen when state.backend.type is rocksdb) fills in over Debian's
 * librocksdb C API. A database is one working folder with a column family
 * per state; it belongs to one task thread, but for snapshots and their
 * iterators, which another thread may read.
 *
 * The plugin links only libc and librocksdb: nothing of libspate, so the
 * ABI below is plain C. Codes are spate's (SPATE_ENOENT: no such key;
 * SPATE_ENOSPC: the disk is full; SPATE_EIO otherwise); messages go into
 * errbuf, naming what failed and RocksDB's reason. */
#ifndef SPATE_STATE_ROCKSDB_PLUGIN_H
#define SPATE_STATE_ROCKSDB_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROCKSDB_ABI_VERSION   4
#define ROCKSDB_PLUGIN_SYMBOL "spate_state_rocksdb_plugin"
#define ROCKSDB_PLUGIN_FILE   "libspate_rocksdb.so"

struct rdb;
struct rdb_snapshot;
struct rdb_iter;
struct rdb_shared_resources; /* a slot's memory (rocksdb_shared_resources.h) */

/* What a slot's memory holds now (bytes). */
struct rdb_memory_usage {
    size_t cache_usage, cache_capacity; /* the block cache, memtables' reservations included */
    size_t memtables, memtable_limit;   /* the write buffer manager's */
};

struct rdb_options {
    /* Column families whose merge appends the operand's bytes to the
     * value's (list state: an element is appended without a read). */
    const bool *append;
    /* The slot's memory, shared with its other databases (NULL: a block
     * cache of the database's own, block_cache_bytes). */
    struct rdb_shared_resources *shared;
    size_t block_cache_bytes;  /* 0: RocksDB's default */
    size_t write_buffer_bytes; /* per column family; 0: RocksDB's default */
    /* Universal (tiered) compaction instead of leveled: files merged with
     * files of their size, so an incremental checkpoint uploads little
     * beyond what changed (leveled compaction rewrites all of L1 each time
     * L0 spills into it), for reads over more sorted runs. */
    bool universal_compaction;
    /* Column families read by point lookups (keyed state, not the
     * timers'): their memtables keep a bloom filter of whole keys, so
     * that a get of a key a memtable lacks skips its skip list search
     * (NULL: none). */
    const bool *memtable_bloom;
};

struct rocksdb_plugin {
    int abi_version;
    /* A slot's memory of total_bytes (rocksdb_shared_resources.h): NULL
     * when out of memory; freed when the last database using it closes
     * and shared_free dropped the maker's reference. */
    struct rdb_shared_resources *(*shared_new)(size_t total_bytes, double write_buffer_ratio,
                                               double high_prio_pool_ratio);
    void (*shared_free)(struct rdb_shared_resources *r);
    void (*shared_usage)(struct rdb_shared_resources *r, struct rdb_memory_usage *out);
    /* Opens the database in dir, made when absent (or empty), with a
     * column family per name (made when missing): a restore opens the
     * files of an incremental checkpoint put into dir. */
    int (*open)(const char *dir, int ncf, const char *const *names, const struct rdb_options *o,
                struct rdb **out, char *errbuf, size_t errlen);
    void (*close)(struct rdb *db);
    /* 0 with *v and *vlen set (valid until the next get on db), or
     * SPATE_ENOENT. */
    int (*get)(struct rdb *db, int cf, const void *k, size_t klen, const uint8_t **v, size_t *vlen,
               char *errbuf, size_t errlen);
    int (*put)(struct rdb *db, int cf, const void *k, size_t klen, const void *v, size_t vlen,
               char *errbuf, size_t errlen);
    /* An append column family's merge: v goes behind the value's bytes. */
    int (*merge)(struct rdb *db, int cf, const void *k, size_t klen, const void *v, size_t vlen,
                 char *errbuf, size_t errlen);
    int (*remove)(struct rdb *db, int cf, const void *k, size_t klen, char *errbuf, size_t errlen);
    /* Removes the keys in [lo, hi). */
    int (*remove_range)(struct rdb *db, int cf, const void *lo, size_t lolen, const void *hi,
                        size_t hilen, char *errbuf, size_t errlen);
    /* The database as it is now, for reads from any thread until released
     * (before the database closes). */
    struct rdb_snapshot *(*snapshot)(struct rdb *db);
    void (*snapshot_release)(struct rdb *db, struct rdb_snapshot *s);
    /* The keys of cf in [lo, hi) in order, as of s (NULL: now), starting
     * at the first; the bounds are copied. */
    struct rdb_iter *(*iter)(struct rdb *db, int cf, struct rdb_snapshot *s, const void *lo,
                             size_t lolen, const void *hi, size_t hilen);
    bool (*iter_valid)(struct rdb_iter *it);
    void (*iter_next)(struct rdb_iter *it);
    /* The current entry's key and value, valid until the iterator moves. */
    const uint8_t *(*iter_key)(struct rdb_iter *it, size_t *len);
    const uint8_t *(*iter_value)(struct rdb_iter *it, size_t *len);
    /* After the iterator became invalid: 0, or why it stopped early. */
    int (*iter_status)(struct rdb_iter *it, char *errbuf, size_t errlen);
    void (*iter_free)(struct rdb_iter *it);
    /* Flushes every column family's memtable (writes skip the log: the
     * files must hold everything), then makes dir (absent) a RocksDB
     * checkpoint of the database: hard links to its SST files, copies of
     * its MANIFEST, CURRENT and OPTIONS. */
    int (*checkpoint)(struct rdb *db, const char *dir, char *errbuf, size_t errlen);
    /* RocksDB's integer property name (e.g. rocksdb.cur-size-all-mem-tables)
     * summed over the column families; false when RocksDB has none. */
    bool (*property)(struct rdb *db, const char *name, uint64_t *out);
};

typedef const struct rocksdb_plugin *(*rocksdb_plugin_entry_fn)(void);

#endif
