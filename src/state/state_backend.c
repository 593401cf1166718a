/* The state backend of a TaskManager's tasks (state_backend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config_options.h"
#include "core/tmp_dir.h"
#include "state/heap_keyed_backend.h"
#include "state/rocksdb_keyed_backend.h"
#include "state/state_backend.h"

/* state.backend.rocksdb.metrics.<name> of each native metric (Flink's
 * RocksDBNativeMetricOptions: false unless set). */
static int
native_metrics_from_config(const struct config *conf, uint32_t *out, spate_error *err)
{
    _Static_assert(ROCKSDB_NATIVE_METRIC_COUNT <= 32, "a bit per metric");
    *out = 0;
    for (int i = 0; i < ROCKSDB_NATIVE_METRIC_COUNT; i++) {
        char key[128];
        const char *v;
        bool on;
        int rc;

        snprintf(key, sizeof key, "state.backend.rocksdb.metrics.%s", rocksdb_native_metrics[i]);
        if ((v = config_lookup(conf, key)) == NULL)
            continue;
        if ((rc = config_parse_bool(v, &on, err)) != 0)
            return spate_error_wrap(err, "%s", key);
        if (on)
            *out |= 1u << i;
    }
    return 0;
}

int
state_backend_options_from_config(const struct config *conf, struct state_backend_options *o,
                                  spate_error *err)
{
    struct config *defaults = conf == NULL ? config_new() : NULL;
    const char *dir = NULL;
    uint64_t cache = 0, wb = 0, managed = 0;
    int64_t slots = 1;
    int type = 0, style = 0, timers = 0, rc;

    memset(o, 0, sizeof *o);
    if (conf == NULL)
        conf = defaults;
    if ((rc = config_get_enum(conf, CFG(STATE_BACKEND_TYPE), &type, err)) != 0 ||
        (rc = config_get_memory_bytes(conf, CFG(STATE_BACKEND_ROCKSDB_BLOCK_CACHE_SIZE), &cache,
                                      err)) != 0 ||
        (rc = config_get_memory_bytes(conf, CFG(STATE_BACKEND_ROCKSDB_WRITEBUFFER_SIZE), &wb,
                                      err)) != 0 ||
        (rc = config_get_bool(conf, CFG(EXECUTION_CHECKPOINTING_INCREMENTAL), &o->incremental,
                              err)) != 0 ||
        (rc = config_get_enum(conf, CFG(STATE_BACKEND_ROCKSDB_COMPACTION_STYLE), &style, err)) !=
            0 ||
        (rc = config_get_enum(conf, CFG(STATE_BACKEND_ROCKSDB_TIMER_SERVICE_FACTORY), &timers,
                              err)) != 0 ||
        (rc = config_get_bool(conf, CFG(STATE_BACKEND_ROCKSDB_MEMORY_MANAGED), &o->memory_managed,
                              err)) != 0 ||
        (rc = config_get_memory_bytes(conf, CFG(TASKMANAGER_MEMORY_MANAGED_SIZE), &managed, err)) !=
            0 ||
        (rc = config_get_int(conf, CFG(TASKMANAGER_NUMBER_OF_TASK_SLOTS), &slots, err)) != 0 ||
        (rc = config_get_double(conf, CFG(STATE_BACKEND_ROCKSDB_MEMORY_WRITE_BUFFER_RATIO),
                                &o->write_buffer_ratio, err)) != 0 ||
        (rc = config_get_double(conf, CFG(STATE_BACKEND_ROCKSDB_MEMORY_HIGH_PRIO_POOL_RATIO),
                                &o->high_prio_pool_ratio, err)) != 0)
        goto out;
    /* Flink's MemoryManager: the TaskManager's managed memory in equal
     * parts, one per slot. */
    o->managed_bytes = (size_t)(managed / (uint64_t)(slots > 0 ? slots : 1));
    if ((rc = native_metrics_from_config(conf, &o->native_metrics, err)) != 0)
        goto out;
    o->universal_compaction = style == 1; /* "LEVEL|UNIVERSAL" */
    o->timers_in_rocksdb = timers == 1;   /* "HEAP|ROCKSDB" */
    o->type = (enum state_backend_type)type;
    o->block_cache_bytes = (size_t)cache;
    o->write_buffer_bytes = (size_t)wb;
    if (config_get_string(conf, CFG(STATE_BACKEND_ROCKSDB_LOCALDIR), &dir, NULL) == 0 &&
        dir != NULL && *dir) {
        snprintf(o->localdir, sizeof o->localdir, "%s", dir);
    } else {
        tmp_dir_base(conf, o->localdir, sizeof o->localdir);
    }
out:
    config_free(defaults);
    return rc;
}

int
state_backend_create(const struct state_backend_options *o,
                     const struct keyed_backend_config *config, const char *name,
                     struct keyed_state_backend **out, spate_error *err)
{
    struct heap_keyed_backend *b;
    int rc;

    if (o != NULL && o->type == STATE_BACKEND_ROCKSDB)
        return rocksdb_keyed_backend_create(o, config, name, out, err);
    b = xcalloc(1, sizeof *b);
    if ((rc = heap_keyed_backend_init(b, config, err)) != 0) {
        keyed_backend_release(b);
        free(b);
        *out = NULL;
        return rc;
    }
    *out = &b->base;
    return 0;
}

struct heap_keyed_backend *
state_backend_heap(struct keyed_state_backend *b)
{
    if (b->ops == &heap_keyed_backend_ops)
        return heap_keyed_backend_of(b);
    return rocksdb_keyed_backend_heap(b);
}

bool
state_backend_timers_on_heap(struct keyed_state_backend *b)
{
    return b->ops == &heap_keyed_backend_ops || !rocksdb_keyed_backend_timers_in_rocksdb(b);
}
