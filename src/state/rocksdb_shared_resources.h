/* A slot's RocksDB memory (Flink's RocksDBSharedResources): one LRU block
 * cache with a high-priority pool for index and filter blocks, and a write
 * buffer manager that charges every memtable to that cache, so that the
 * databases of one slot, and their column families, stay together within
 * the slot's managed memory. Librocksdb's C API has neither the pool ratio
 * nor the write buffer manager: rocksdb_shared_resources.cc makes them
 * over its C++ API (the same -dev package), for rocksdb_plugin.c only.
 * Any thread; the cache and the manager count their own references. */
#ifndef SPATE_STATE_ROCKSDB_SHARED_RESOURCES_H
#define SPATE_STATE_ROCKSDB_SHARED_RESOURCES_H

#include <stddef.h>

#include <rocksdb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdb_shared_resources;

/* Resources for total_bytes of memory, as Flink divides it
 * (RocksDBMemoryControllerUtils): the cache gets (3 - r) / 3 of it and
 * the memtables 2r / 3, r the write buffer ratio, within the cache (a
 * memtable's arena may pass its share by a block before a flush frees
 * it). NULL when out of memory. */
struct rdb_shared_resources *rdb_shared_resources_new(size_t total_bytes, double write_buffer_ratio,
                                                      double high_prio_pool_ratio);
/* Drops the caller's reference: databases opened with them keep theirs. */
void rdb_shared_resources_free(struct rdb_shared_resources *r);
/* A reference to the cache, for a table's options (destroyed by the
 * caller). */
rocksdb_cache_t *rdb_shared_resources_cache(struct rdb_shared_resources *r);
/* Charges the memtables of databases opened with o to r. */
void rdb_shared_resources_attach(struct rdb_shared_resources *r, rocksdb_options_t *o);
/* What r holds now: the cache's usage (memtables' reservations included)
 * and capacity, the memtables' memory and the manager's limit. */
void rdb_shared_resources_usage(struct rdb_shared_resources *r, size_t *cache_usage,
                                size_t *cache_capacity, size_t *memtables, size_t *memtable_limit);

#ifdef __cplusplus
}
#endif

#endif
