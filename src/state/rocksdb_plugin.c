/* The RocksDB plugin (rocksdb_plugin.h) over Debian's librocksdb C API:
 * built as libspate_rocksdb.so and loaded by state_backend.c only when
 * state.backend.type is rocksdb. Writes skip the write-ahead log, as
 * Flink's RocksDB backend does: checkpoints make state durable, and a
 * working folder is never reopened after a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include <spate/error.h>

#include "state/rocksdb_plugin.h"
#include "state/rocksdb_shared_resources.h"

/* A memtable's bloom filter: this share of its write buffer (RocksDB's
 * default write buffer when none is set). */
#define MEMTABLE_BLOOM_RATIO 0.02
#define DEFAULT_WRITE_BUFFER (64 * 1024 * 1024)

/* Sorted runs that set off a universal compaction (RocksDB's default: 4). */
#define RDB_UNIVERSAL_RUNS 16

/* RocksDB counts into its thread-local perf context by default (perf
 * level "enable count"): every key comparison of a memtable's skip list
 * adds to user_key_comparison_count through a thread_local with a
 * dynamic initializer, two TLS lookups beside the comparison's own. No
 * one reads those counts here: the calling thread's perf level is set to
 * "disable" (thread-local too, so each call sets it for its thread: one
 * store beside the tens of comparisons a call makes). */
static inline void
perf_off(void)
{
    rocksdb_set_perf_level(rocksdb_disable);
}

struct rdb {
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_options_t **cf_opts;
    rocksdb_column_family_handle_t **cfs;
    int ncf;
    rocksdb_mergeoperator_t *append;
    rocksdb_block_based_table_options_t *table;
    rocksdb_cache_t *cache;
    rocksdb_readoptions_t *ro;
    rocksdb_writeoptions_t *wo;
    /* The batch of every put, cleared and reused: rocksdb_put_cf makes and
     * frees a batch per call. */
    rocksdb_writebatch_t *batch;
    rocksdb_pinnableslice_t *last; /* the last get's value */
};

struct rdb_iter {
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    char *lo, *hi;
};

/* RocksDB's error (malloc'd) as a spate code and a message naming what. */
static int
rdb_error(char *e, const char *what, char *errbuf, size_t errlen)
{
    int code = strstr(e, "No space left") != NULL || strstr(e, "NoSpace") != NULL ? SPATE_ENOSPC
                                                                                  : SPATE_EIO;

    snprintf(errbuf, errlen, "RocksDB %s: %s", what, e);
    rocksdb_free(e);
    return code;
}

/* ---- the append merge operator (list state) ---- */

static char *
append_full(void *state, const char *key, size_t klen, const char *existing, size_t elen,
            const char *const *ops, const size_t *oplens, int nops, unsigned char *ok, size_t *len)
{
    size_t n = existing != NULL ? elen : 0;
    char *out, *at;

    (void)state;
    (void)key;
    (void)klen;
    for (int i = 0; i < nops; i++)
        n += oplens[i];
    if ((out = malloc(n ? n : 1)) == NULL) {
        *ok = 0;
        return NULL;
    }
    at = out;
    if (existing != NULL && elen) {
        memcpy(at, existing, elen);
        at += elen;
    }
    for (int i = 0; i < nops; i++) {
        memcpy(at, ops[i], oplens[i]);
        at += oplens[i];
    }
    *ok = 1;
    *len = n;
    return out;
}

static char *
append_partial(void *state, const char *key, size_t klen, const char *const *ops,
               const size_t *oplens, int nops, unsigned char *ok, size_t *len)
{
    return append_full(state, key, klen, NULL, 0, ops, oplens, nops, ok, len);
}

static void
append_delete(void *state, const char *value, size_t len)
{
    (void)state;
    (void)len;
    free((char *)value);
}

static void
append_destroy(void *state)
{
    (void)state;
}

static const char *
append_name(void *state)
{
    (void)state;
    return "spate-append";
}

/* ---- the database ---- */

static void
rdb_close(struct rdb *d)
{
    if (d == NULL)
        return;
    if (d->last != NULL)
        rocksdb_pinnableslice_destroy(d->last);
    for (int i = 0; d->cfs != NULL && i < d->ncf; i++)
        if (d->cfs[i] != NULL)
            rocksdb_column_family_handle_destroy(d->cfs[i]);
    if (d->db != NULL)
        rocksdb_close(d->db);
    for (int i = 0; d->cf_opts != NULL && i < d->ncf; i++)
        if (d->cf_opts[i] != NULL && d->cf_opts[i] != d->opts)
            rocksdb_options_destroy(d->cf_opts[i]);
    if (d->opts != NULL)
        rocksdb_options_destroy(d->opts);
    /* The options held the operator and the table options: theirs now. */
    if (d->table != NULL)
        rocksdb_block_based_options_destroy(d->table);
    if (d->cache != NULL)
        rocksdb_cache_destroy(d->cache);
    if (d->ro != NULL)
        rocksdb_readoptions_destroy(d->ro);
    if (d->wo != NULL)
        rocksdb_writeoptions_destroy(d->wo);
    if (d->batch != NULL)
        rocksdb_writebatch_destroy(d->batch);
    free(d->cfs);
    free(d->cf_opts);
    free(d);
}

static int
rdb_open(const char *dir, int ncf, const char *const *names, const struct rdb_options *o,
         struct rdb **out, char *errbuf, size_t errlen)
{
    struct rdb *d = calloc(1, sizeof *d);
    const char **all = calloc((size_t)ncf + 1, sizeof *all);
    const rocksdb_options_t **allopts = calloc((size_t)ncf + 1, sizeof *allopts);
    struct rdb_memory_usage u;
    size_t arena, wb = o->write_buffer_bytes ? o->write_buffer_bytes : DEFAULT_WRITE_BUFFER;
    double bloom_ratio = MEMTABLE_BLOOM_RATIO;
    char *e = NULL;
    int rc = 0;

    *out = NULL;
    if (d == NULL || all == NULL || allopts == NULL) {
        snprintf(errbuf, errlen, "RocksDB open of '%s': out of memory", dir);
        rc = SPATE_ENOMEM;
        goto out;
    }
    d->ncf = ncf;
    d->cfs = calloc((size_t)ncf + 1, sizeof *d->cfs);
    d->cf_opts = calloc((size_t)ncf + 1, sizeof *d->cf_opts);
    d->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(d->opts, 1);
    rocksdb_options_set_create_missing_column_families(d->opts, 1);
    /* Flink's defaults: no info log files beside the state, few of them. */
    rocksdb_options_set_info_log_level(d->opts, 4 /* HEADER_LEVEL: nothing */);
    rocksdb_options_set_keep_log_file_num(d->opts, 1);
    rocksdb_options_set_max_background_jobs(d->opts, 2);
    /* One writer, the task thread: no concurrent memtable inserts, no
     * spinning for a write group. */
    rocksdb_options_set_allow_concurrent_memtable_write(d->opts, 0);
    rocksdb_options_set_enable_write_thread_adaptive_yield(d->opts, 0);
    d->table = rocksdb_block_based_options_create();
    if (o->shared != NULL) {
        /* The slot's cache, its memtables charged to it; index and filter
         * blocks in its high-priority pool (Flink's managed memory). */
        if ((d->cache = rdb_shared_resources_cache(o->shared)) == NULL) {
            snprintf(errbuf, errlen, "RocksDB open of '%s': out of memory", dir);
            rc = SPATE_ENOMEM;
            goto out;
        }
        rocksdb_block_based_options_set_block_cache(d->table, d->cache);
        rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(d->table,
                                                                                         1);
        rdb_shared_resources_attach(o->shared, d->opts);
        /* A memtable takes memory an arena block at a time, each charged
         * to the cache whole: blocks small beside the manager's limit, so
         * that the memtables of many column families stay within it
         * (RocksDB's default, an eighth of the write buffer, flushes
         * without end once the blocks pass the limit). */
        rdb_shared_resources_usage(o->shared, &u.cache_usage, &u.cache_capacity, &u.memtables,
                                   &u.memtable_limit);
        arena = u.memtable_limit / 64;
        if (arena < 64 * 1024)
            arena = 64 * 1024;
        if (o->write_buffer_bytes && arena > o->write_buffer_bytes / 8)
            arena = o->write_buffer_bytes / 8;
        rocksdb_options_set_arena_block_size(d->opts, arena);
        /* A memtable's filter is made with it, whole, and charged to the
         * manager: at most an arena block, so that the filters of many
         * column families stay within the slot's memory. */
        if ((double)arena / (double)wb < bloom_ratio)
            bloom_ratio = (double)arena / (double)wb;
    } else if (o->block_cache_bytes) {
        d->cache = rocksdb_cache_create_lru(o->block_cache_bytes);
        rocksdb_block_based_options_set_block_cache(d->table, d->cache);
    }
    /* A bloom filter per table: a read of a key that a table lacks (most
     * reads, most tables) skips it without a block read. */
    rocksdb_block_based_options_set_filter_policy(d->table, rocksdb_filterpolicy_create_bloom(10));
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(d->table, 1);
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(d->table, 1);
    rocksdb_options_set_block_based_table_factory(d->opts, d->table);
    if (o->write_buffer_bytes)
        rocksdb_options_set_write_buffer_size(d->opts, o->write_buffer_bytes);
    if (o->universal_compaction) {
        /* Each incremental checkpoint flushes a sorted run of what
         * changed; RocksDB's default merges runs once 4 are there, so that
         * nearly every checkpoint uploads again the run the last merge
         * grew (state_bench: 6.4x the changed bytes). Merged 16 at a
         * time, a checkpoint uploads its flush alone between merges
         * (2.6x). Writes slow down only far past that many runs: a
         * checkpoint's flush (FlushOptions' allow_write_stall false, which
         * the C API cannot set) waits until it would not stall writes, so
         * with slow-down at 48 runs, the flushes of a checkpoint a second
         * during the load's large merge piled runs up to it and the task
         * waited for the merge (7 and 16 s at 4 GB, large_state_bench). */
        rocksdb_options_set_compaction_style(d->opts, rocksdb_universal_compaction);
        rocksdb_options_set_level0_file_num_compaction_trigger(d->opts, RDB_UNIVERSAL_RUNS);
        rocksdb_options_set_level0_slowdown_writes_trigger(d->opts, 16 * RDB_UNIVERSAL_RUNS);
        rocksdb_options_set_level0_stop_writes_trigger(d->opts, 32 * RDB_UNIVERSAL_RUNS);
    }
    all[0] = "default";
    allopts[0] = d->opts;
    for (int i = 0; i < ncf; i++) {
        bool append = o->append != NULL && o->append[i];
        bool bloom = o->memtable_bloom != NULL && o->memtable_bloom[i];

        d->cf_opts[i] = append || bloom ? rocksdb_options_create_copy(d->opts) : d->opts;
        if (append)
            rocksdb_options_set_merge_operator(
                d->cf_opts[i],
                rocksdb_mergeoperator_create(NULL, append_destroy, append_full, append_partial,
                                             append_delete, append_name));
        if (bloom) {
            /* A get searches the active memtable, then the immutable
             * ones, then the tables: a key most memtables lack cost a
             * skip list search in each. The filter takes bloom_ratio of
             * the write buffer from its arena (at 2 %, about 20 bits a
             * key for 100-byte entries). */
            rocksdb_options_set_memtable_whole_key_filtering(d->cf_opts[i], 1);
            rocksdb_options_set_memtable_prefix_bloom_size_ratio(d->cf_opts[i], bloom_ratio);
        }
        all[i + 1] = names[i];
        allopts[i + 1] = d->cf_opts[i];
    }
    {
        rocksdb_column_family_handle_t **h = calloc((size_t)ncf + 2, sizeof *h);

        d->db = rocksdb_open_column_families(d->opts, dir, ncf + 1, all, allopts, h, &e);
        if (e != NULL) {
            free(h);
            rc = rdb_error(e, "open", errbuf, errlen);
            goto out;
        }
        rocksdb_column_family_handle_destroy(h[0]);
        for (int i = 0; i < ncf; i++)
            d->cfs[i] = h[i + 1];
        free(h);
    }
    d->ro = rocksdb_readoptions_create();
    d->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(d->wo, 1);
    d->batch = rocksdb_writebatch_create();
    *out = d;
    d = NULL;
out:
    rdb_close(d);
    free(all);
    free(allopts);
    return rc;
}

static int
rdb_get(struct rdb *d, int cf, const void *k, size_t klen, const uint8_t **v, size_t *vlen,
        char *errbuf, size_t errlen)
{
    char *e = NULL;
    const char *p;

    perf_off();
    if (d->last != NULL) {
        rocksdb_pinnableslice_destroy(d->last);
        d->last = NULL;
    }
    d->last = rocksdb_get_pinned_cf(d->db, d->ro, d->cfs[cf], k, klen, &e);
    if (e != NULL)
        return rdb_error(e, "get", errbuf, errlen);
    if (d->last == NULL)
        return SPATE_ENOENT;
    p = rocksdb_pinnableslice_value(d->last, vlen);
    *v = (const uint8_t *)p;
    return 0;
}

static int
rdb_put(struct rdb *d, int cf, const void *k, size_t klen, const void *v, size_t vlen, char *errbuf,
        size_t errlen)
{
    char *e = NULL;

    perf_off();
    rocksdb_writebatch_clear(d->batch);
    rocksdb_writebatch_put_cf(d->batch, d->cfs[cf], k, klen, v, vlen);
    rocksdb_write(d->db, d->wo, d->batch, &e);
    return e != NULL ? rdb_error(e, "put", errbuf, errlen) : 0;
}

static int
rdb_merge(struct rdb *d, int cf, const void *k, size_t klen, const void *v, size_t vlen,
          char *errbuf, size_t errlen)
{
    char *e = NULL;

    perf_off();
    rocksdb_merge_cf(d->db, d->wo, d->cfs[cf], k, klen, v, vlen, &e);
    return e != NULL ? rdb_error(e, "merge", errbuf, errlen) : 0;
}

static int
rdb_remove(struct rdb *d, int cf, const void *k, size_t klen, char *errbuf, size_t errlen)
{
    char *e = NULL;

    perf_off();
    rocksdb_delete_cf(d->db, d->wo, d->cfs[cf], k, klen, &e);
    return e != NULL ? rdb_error(e, "delete", errbuf, errlen) : 0;
}

static int
rdb_remove_range(struct rdb *d, int cf, const void *lo, size_t lolen, const void *hi, size_t hilen,
                 char *errbuf, size_t errlen)
{
    char *e = NULL;

    rocksdb_delete_range_cf(d->db, d->wo, d->cfs[cf], lo, lolen, hi, hilen, &e);
    return e != NULL ? rdb_error(e, "delete range", errbuf, errlen) : 0;
}

static struct rdb_snapshot *
rdb_snapshot(struct rdb *d)
{
    return (struct rdb_snapshot *)rocksdb_create_snapshot(d->db);
}

static void
rdb_snapshot_release(struct rdb *d, struct rdb_snapshot *s)
{
    if (s != NULL)
        rocksdb_release_snapshot(d->db, (const rocksdb_snapshot_t *)s);
}

static char *
copy_bytes(const void *p, size_t n)
{
    char *c = malloc(n ? n : 1);

    if (c != NULL && n)
        memcpy(c, p, n);
    return c;
}

static struct rdb_iter *
rdb_iter(struct rdb *d, int cf, struct rdb_snapshot *s, const void *lo, size_t lolen,
         const void *hi, size_t hilen)
{
    struct rdb_iter *it = calloc(1, sizeof *it);

    if (it == NULL)
        return NULL;
    perf_off();
    it->lo = copy_bytes(lo, lolen);
    it->hi = copy_bytes(hi, hilen);
    it->ro = rocksdb_readoptions_create();
    if (s != NULL)
        rocksdb_readoptions_set_snapshot(it->ro, (const rocksdb_snapshot_t *)s);
    rocksdb_readoptions_set_iterate_lower_bound(it->ro, it->lo, lolen);
    rocksdb_readoptions_set_iterate_upper_bound(it->ro, it->hi, hilen);
    /* A snapshot's walk reads each block once: keep them out of the cache. */
    if (s != NULL)
        rocksdb_readoptions_set_fill_cache(it->ro, 0);
    it->it = rocksdb_create_iterator_cf(d->db, it->ro, d->cfs[cf]);
    rocksdb_iter_seek(it->it, it->lo, lolen);
    return it;
}

static bool
rdb_iter_valid(struct rdb_iter *it)
{
    return rocksdb_iter_valid(it->it) != 0;
}

static void
rdb_iter_next(struct rdb_iter *it)
{
    rocksdb_iter_next(it->it);
}

static const uint8_t *
rdb_iter_key(struct rdb_iter *it, size_t *len)
{
    return (const uint8_t *)rocksdb_iter_key(it->it, len);
}

static const uint8_t *
rdb_iter_value(struct rdb_iter *it, size_t *len)
{
    return (const uint8_t *)rocksdb_iter_value(it->it, len);
}

static int
rdb_iter_status(struct rdb_iter *it, char *errbuf, size_t errlen)
{
    char *e = NULL;

    rocksdb_iter_get_error(it->it, &e);
    return e != NULL ? rdb_error(e, "iteration", errbuf, errlen) : 0;
}

static void
rdb_iter_free(struct rdb_iter *it)
{
    if (it == NULL)
        return;
    rocksdb_iter_destroy(it->it);
    rocksdb_readoptions_destroy(it->ro);
    free(it->lo);
    free(it->hi);
    free(it);
}

static int
rdb_checkpoint(struct rdb *d, const char *dir, char *errbuf, size_t errlen)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_checkpoint_t *cp;
    char *e = NULL;

    rocksdb_flushoptions_set_wait(fo, 1);
    for (int i = 0; i < d->ncf && e == NULL; i++)
        rocksdb_flush_cf(d->db, fo, d->cfs[i], &e);
    rocksdb_flushoptions_destroy(fo);
    if (e != NULL)
        return rdb_error(e, "flush", errbuf, errlen);
    if ((cp = rocksdb_checkpoint_object_create(d->db, &e)) == NULL || e != NULL)
        return rdb_error(e, "checkpoint", errbuf, errlen);
    /* log_size_for_flush 0: RocksDB flushes too (nothing is left to). */
    rocksdb_checkpoint_create(cp, dir, 0, &e);
    rocksdb_checkpoint_object_destroy(cp);
    return e != NULL ? rdb_error(e, "checkpoint", errbuf, errlen) : 0;
}

static bool
rdb_property(struct rdb *d, const char *name, uint64_t *out)
{
    uint64_t v;

    *out = 0;
    for (int i = 0; i < d->ncf; i++) {
        if (rocksdb_property_int_cf(d->db, d->cfs[i], name, &v) != 0)
            return false;
        *out += v;
    }
    return true;
}

static void
rdb_shared_usage(struct rdb_shared_resources *r, struct rdb_memory_usage *out)
{
    rdb_shared_resources_usage(r, &out->cache_usage, &out->cache_capacity, &out->memtables,
                               &out->memtable_limit);
}

static const struct rocksdb_plugin rdb_plugin = {
    .abi_version = ROCKSDB_ABI_VERSION,
    .shared_new = rdb_shared_resources_new,
    .shared_free = rdb_shared_resources_free,
    .shared_usage = rdb_shared_usage,
    .open = rdb_open,
    .close = rdb_close,
    .get = rdb_get,
    .put = rdb_put,
    .merge = rdb_merge,
    .remove = rdb_remove,
    .remove_range = rdb_remove_range,
    .snapshot = rdb_snapshot,
    .snapshot_release = rdb_snapshot_release,
    .iter = rdb_iter,
    .iter_valid = rdb_iter_valid,
    .iter_next = rdb_iter_next,
    .iter_key = rdb_iter_key,
    .iter_value = rdb_iter_value,
    .iter_status = rdb_iter_status,
    .iter_free = rdb_iter_free,
    .checkpoint = rdb_checkpoint,
    .property = rdb_property,
};

/* The plugin's one export (rocksdb_plugin.h's ROCKSDB_PLUGIN_SYMBOL). */
__attribute__((visibility("default"))) const struct rocksdb_plugin *
spate_state_rocksdb_plugin(void);

const struct rocksdb_plugin *
spate_state_rocksdb_plugin(void)
{
    return &rdb_plugin;
}
