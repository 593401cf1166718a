// A slot's RocksDB memory (rocksdb_shared_resources.h) over librocksdb's
// C++ API: its C API (7.8) makes neither a write buffer manager nor a
// cache with a high-priority pool. The plugin's only C++.
#include <memory>
#include <new>

#include <rocksdb/cache.h>
#include <rocksdb/options.h>
#include <rocksdb/write_buffer_manager.h>

#include "state/rocksdb_shared_resources.h"

// The C API's handles, as librocksdb's db/c.cc defines them (the same
// package's): a C handle holds the C++ object as its only member.
extern "C" {
struct rocksdb_options_t {
    rocksdb::Options rep;
};
struct rocksdb_cache_t {
    std::shared_ptr<rocksdb::Cache> rep;
};
}

struct rdb_shared_resources {
    std::shared_ptr<rocksdb::Cache> cache;
    std::shared_ptr<rocksdb::WriteBufferManager> wbm;
};

extern "C" struct rdb_shared_resources *
rdb_shared_resources_new(size_t total_bytes, double write_buffer_ratio, double high_prio_pool_ratio)
{
    // Flink's RocksDBMemoryControllerUtils: memtables flush at 7/8 of the
    // manager's limit and may pass it by a block, hence a cache above it.
    size_t cache = (size_t)((3 - write_buffer_ratio) * (double)total_bytes / 3);
    size_t wb = (size_t)(2 * (double)total_bytes * write_buffer_ratio / 3);

    try {
        auto *r = new rdb_shared_resources;

        r->cache = rocksdb::NewLRUCache(cache, -1, false, high_prio_pool_ratio);
        r->wbm = std::make_shared<rocksdb::WriteBufferManager>(wb, r->cache);
        return r;
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
}

extern "C" void
rdb_shared_resources_free(struct rdb_shared_resources *r)
{
    delete r;
}

extern "C" rocksdb_cache_t *
rdb_shared_resources_cache(struct rdb_shared_resources *r)
{
    return new (std::nothrow) rocksdb_cache_t{ r->cache };
}

extern "C" void
rdb_shared_resources_attach(struct rdb_shared_resources *r, rocksdb_options_t *o)
{
    o->rep.write_buffer_manager = r->wbm;
}

extern "C" void
rdb_shared_resources_usage(struct rdb_shared_resources *r, size_t *cache_usage,
                           size_t *cache_capacity, size_t *memtables, size_t *memtable_limit)
{
    *cache_usage = r->cache->GetUsage();
    *cache_capacity = r->cache->GetCapacity();
    *memtables = r->wbm->memory_usage();
    *memtable_limit = r->wbm->buffer_size();
}
