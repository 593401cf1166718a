/* state_bench: what a checkpoint of RocksDB keyed state writes, full against
 * incremental (execution.checkpointing.incremental), on a state where a
 * small share of the keys changes per interval: the keyed state backend
 * itself (no cluster), one ValueState of STATE_BENCH_KEYS keys (8-byte key,
 * 96-byte value). Each interval changes STATE_BENCH_CHANGE_PCT % of the
 * keys, then takes both checkpoints of the same state, their order
 * alternating (the full one, the baseline, is a savepoint's canonical
 * file), and records the bytes each wrote and its time (synchronous plus
 * asynchronous part); at the end each is restored into a fresh backend and
 * checked (every key changed, every 16th key). Stderr says what it does; the last line is a JSON object.
 *
 *   keys, value_bytes, state_bytes       the state: keys x (8 + 96)
 *   load_keys_per_s, load_cpu_us_per_key its loading, a put per key
 *   first_incremental_bytes              the first checkpoint: everything
 *   warmup_incremental_bytes             the interval after it, apart: its
 *                                        flush sets off the compactions of
 *                                        the load, which rewrite it all
 *   changed_bytes_per_interval           keys changed x (8 + 96)
 *   full_bytes_per_checkpoint_p50        the canonical state file
 *   incremental_bytes_per_checkpoint_*   new SST files + MANIFEST, CURRENT,
 *                                        OPTIONS + the state file (timers);
 *                                        p50, mean and max: a compaction
 *                                        rewrites files, which the next
 *                                        checkpoint uploads
 *   incremental_over_changed_p50/mean    their ratio to the changed bytes
 *   load_rewrite_interval                the first interval that uploaded
 *                                        half the state or more: the
 *                                        load's compaction (0: the warm-up,
 *                                        -1: none, no steady figures)
 *   steady_bytes_per_checkpoint_*,       the intervals after it, the
 *   steady_over_changed_p50/mean         steady state
 *   full_ms_p50/p99, incremental_ms_*    checkpoint durations
 *   restore_ms_full, restore_ms_incremental
 *
 * Knobs: STATE_BENCH_KEYS (2,000,000), STATE_BENCH_INTERVALS (40),
 * STATE_BENCH_CHANGE_PCT (1), STATE_BENCH_COMPACTION (LEVEL, or UNIVERSAL:
 * state.backend.rocksdb.compaction.style), STATE_BENCH_FILES=1 (stderr
 * names each checkpoint's new shared files and their sizes). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_engine.h"
#include "core/clock.h"
#include "core/fs.h"
#include "core/key_group.h"
#include "state/state_backend.h"
#include "state/state_file.h"

#define VALUE_BYTES 96

/* STATE_BENCH_COMPACTION=UNIVERSAL: RocksDB's universal compaction. */
static bool universal;

struct value {
    uint8_t b[VALUE_BYTES];
};

static size_t
v_size(const void *type, const void *value)
{
    (void)type;
    (void)value;
    return VALUE_BYTES;
}

static size_t
v_write(const void *type, const void *value, uint8_t *out, size_t cap)
{
    (void)type;
    if (cap >= VALUE_BYTES)
        memcpy(out, value, VALUE_BYTES);
    return VALUE_BYTES;
}

static int
v_read(const void *type, const uint8_t *bytes, size_t len, void *value)
{
    (void)type;
    if (len != VALUE_BYTES)
        return -1;
    memcpy(value, bytes, VALUE_BYTES);
    return 0;
}

static const struct state_serializer v_ser = { v_size, v_write, v_read };
static const struct state_descriptor state_desc = {
    .name = "v",
    .kind = STATE_VALUE,
    .scope = SCOPE_KEYED,
    .value = { &v_ser, NULL, "bytes96", 1, VALUE_BYTES, 8, true },
};

struct backend {
    struct keyed_state_backend *kb;
    struct state_key_context key;
    int64_t key_bytes;
    uint64_t wake_ns;
};

static void
backend_init(struct backend *b, const char *localdir)
{
    struct state_backend_options o;
    struct keyed_backend_config c = { .states = &state_desc,
                                      .nstates = 1,
                                      .key = &b->key,
                                      .max_parallelism = 128,
                                      .parallelism = 1,
                                      .wake_ns = &b->wake_ns };
    spate_error err = { 0 };

    memset(b, 0, sizeof *b);
    if (state_backend_options_from_config(NULL, &o, &err) != 0)
        bench_fail("options: %s", err.message);
    o.type = STATE_BACKEND_ROCKSDB;
    o.incremental = true;
    o.universal_compaction = universal;
    snprintf(o.localdir, sizeof o.localdir, "%s", localdir);
    if (state_backend_create(&o, &c, "bench", &b->kb, &err) != 0)
        bench_fail("a RocksDB backend: %s", err.message);
}

static void
backend_free(struct backend *b)
{
    b->kb->ops->dispose(b->kb);
    free(b->kb);
}

static void
set_key(struct backend *b, int64_t k)
{
    b->key_bytes = k;
    keyed_set_key(&b->key, (spate_bytes){ &b->key_bytes, 8 }, key_group_hash(&b->key_bytes, 8),
                  NULL, 0);
}

/* Key k's value in version ver: pseudo-random bytes of both, so that
 * RocksDB's compression finds no pattern to shrink (a state's values
 * rarely repeat themselves). */
static void
value_of(int64_t k, uint32_t ver, struct value *v)
{
    uint64_t x = ((uint64_t)k * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ver << 32 | 0x5bd1e995u);

    for (size_t i = 0; i < VALUE_BYTES; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(v->b + i, &x, 8);
    }
}

static uint64_t
file_size(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* A checkpoint written: its handle and what it cost. */
struct taken {
    char path[512];
    Checkpoint__OperatorSubtaskState st;
    Checkpoint__KeyedStateHandle *keyed[1];
    double ms;
};

static void
taken_release(struct taken *t)
{
    Checkpoint__KeyedStateHandle *h = t->keyed[0];

    for (size_t i = 0; i < t->st.n_states; i++) {
        free(t->st.states[i]->name);
        free(t->st.states[i]->type_name);
        free(t->st.states[i]->key_type_name);
        free(t->st.states[i]);
    }
    free(t->st.states);
    for (size_t i = 0; h != NULL && i < h->n_files; i++) {
        free(h->files[i]->name);
        free(h->files[i]->path);
        free(h->files[i]);
    }
    if (h != NULL) {
        free(h->files);
        free(h->path);
        free(h->offsets);
        free(h);
    }
    memset(t, 0, sizeof *t);
}

/* Checkpoint id of b into dir/chk-<id>/ (shared: the job's shared folder;
 * NULL: whole and canonical). */
static void
take(struct backend *b, const char *dir, const char *shared, int64_t id, struct taken *t)
{
    const struct keyed_snapshot_request req = { id, shared };
    struct keyed_state_snapshot *s;
    struct state_file_writer w;
    spate_error err = { 0 };
    char chk[480];
    uint64_t t0 = clock_mono_ns();

    snprintf(chk, sizeof chk, "%s/chk-%lld", dir, (long long)id);
    if (fs_mkdirs(chk, &err) != 0)
        bench_fail("%s", err.message);
    snprintf(t->path, sizeof t->path, "%s/%s.state", chk, shared ? "inc" : "full");
    s = b->kb->ops->snapshot(b->kb, &req);
    if (state_file_create(&w, t->path, &err) != 0)
        bench_fail("%s", err.message);
    checkpoint__operator_subtask_state__init(&t->st);
    t->keyed[0] = b->kb->ops->snapshot_write(s, &w, t->path);
    t->st.keyed = t->keyed;
    t->st.n_keyed = 1;
    t->st.states = b->kb->ops->snapshot_metas(s, &t->st.n_states);
    if (state_file_finish(&w, t->path, &err) != 0)
        bench_fail("checkpoint %lld: %s", (long long)id, err.message);
    b->kb->ops->snapshot_release(s);
    t->ms = (double)(clock_mono_ns() - t0) / 1e6;
}

/* What an incremental checkpoint wrote: the state file, its private
 * files, and the shared files no earlier checkpoint uploaded (seen holds
 * those, and gets t's). */
static uint64_t
written(const struct taken *t, json_t *seen)
{
    const Checkpoint__KeyedStateHandle *h = t->keyed[0];
    uint64_t n = file_size(t->path);

    for (size_t i = 0; i < h->n_files; i++) {
        if (h->files[i]->shared && json_object_get(seen, h->files[i]->path) != NULL)
            continue;
        n += h->files[i]->size;
        if (h->files[i]->shared) {
            json_object_set_new(seen, h->files[i]->path, json_true());
            if (getenv("STATE_BENCH_FILES") != NULL)
                fprintf(stderr, "state_bench:   new %s, %.2f MB\n", h->files[i]->name,
                        (double)h->files[i]->size / 1e6);
        }
    }
    return n;
}

/* Restores t into a fresh backend, checks the values of every key changed
 * and of every 16th key against version[], and returns the milliseconds
 * the restore took. */
static double
restore_and_check(const struct taken *t, const char *localdir, const uint32_t *version,
                  int64_t keys)
{
    struct state_file_reader r = { 0 };
    spate_error err = { 0 };
    struct backend b;
    struct value got, want;
    uint64_t t0;
    double ms;

    backend_init(&b, localdir);
    t0 = clock_mono_ns();
    if (b.kb->ops->restore(b.kb, &t->st, "bench", &r, &err) != 0)
        bench_fail("restore of '%s': %s", t->path, err.message);
    ms = (double)(clock_mono_ns() - t0) / 1e6;
    state_file_reader_release(&r);
    for (int64_t k = 0; k < keys; k++) {
        if (version[k] == 0 && k % 16 != 0)
            continue;
        set_key(&b, k);
        value_of(k, version[k], &want);
        if (!b.kb->ops->value_get(b.kb->ops->state(b.kb, "v"), &got) ||
            memcmp(&got, &want, sizeof got) != 0)
            bench_fail("restore of '%s': key %lld is not its version %u", t->path, (long long)k,
                       version[k]);
    }
    backend_free(&b);
    return ms;
}

static uint64_t
cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long
env_long(const char *name, long dflt)
{
    const char *v = getenv(name);

    return v != NULL && *v ? strtol(v, NULL, 10) : dflt;
}

int
main(void)
{
    int64_t keys = env_long("STATE_BENCH_KEYS", 2000000);
    int intervals = (int)env_long("STATE_BENCH_INTERVALS", 40);
    long pct = env_long("STATE_BENCH_CHANGE_PCT", 1);
    int64_t changed = keys * pct / 100;
    const char *tmp = getenv("TMPDIR");
    char dir[256], localdir[300], shared[300];
    uint32_t *version = calloc((size_t)keys, sizeof *version);
    double *full_b = calloc((size_t)intervals, sizeof(double));
    double *inc_b = calloc((size_t)intervals, sizeof(double));
    double *full_ms = calloc((size_t)intervals, sizeof(double));
    double *inc_ms = calloc((size_t)intervals, sizeof(double));
    int rewrite = -1; /* the interval that rewrote the load (0: the warm-up) */
    double inc_mean = 0, inc_max = 0, first_b, warmup_b = 0, load_s, load_cpu_us, restore_full,
           restore_inc;
    struct taken full = { 0 }, inc = { 0 }, first = { 0 };
    json_t *seen = json_object(), *out;
    uint64_t rng = 0x9e3779b97f4a7c15ull, t0, cpu0;
    struct backend b;
    struct value v;

    universal = getenv("STATE_BENCH_COMPACTION") != NULL &&
                strcmp(getenv("STATE_BENCH_COMPACTION"), "UNIVERSAL") == 0;
    if (keys < 100 || intervals < 1 || pct < 1 || pct > 100 || version == NULL)
        bench_fail("STATE_BENCH_KEYS >= 100, STATE_BENCH_INTERVALS >= 1, "
                   "STATE_BENCH_CHANGE_PCT 1-100");
    snprintf(dir, sizeof dir, "%s/spate-state-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL)
        bench_fail("cannot make a folder under '%s'", dir);
    snprintf(localdir, sizeof localdir, "%s/local", dir);
    snprintf(shared, sizeof shared, "%s/shared", dir);
    fprintf(stderr,
            "state_bench: %lld keys of %d bytes, %ld %% changed per interval, %d "
            "intervals, in %s\n",
            (long long)keys, VALUE_BYTES, pct, intervals, dir);

    backend_init(&b, localdir);
    t0 = clock_mono_ns();
    cpu0 = cpu_ns();
    for (int64_t k = 0; k < keys; k++) {
        set_key(&b, k);
        value_of(k, 0, &v);
        b.kb->ops->value_update(b.kb->ops->state(b.kb, "v"), &v);
    }
    load_s = (double)(clock_mono_ns() - t0) / 1e9;
    /* The process's CPU (RocksDB's flushes included): on a loaded machine
     * the wall clock says more about the neighbours. */
    load_cpu_us = (double)(cpu_ns() - cpu0) / 1e3 / (double)keys;
    fprintf(stderr, "state_bench: loaded in %.1f s (%.0f keys/s, %.2f us of CPU per key)\n", load_s,
            (double)keys / load_s, load_cpu_us);
    /* The first incremental checkpoint uploads everything. */
    take(&b, dir, shared, 1, &first);
    first_b = (double)written(&first, seen);
    fprintf(stderr, "state_bench: first incremental checkpoint: %.1f MB in %.0f ms\n",
            first_b / 1e6, first.ms);
    b.kb->ops->checkpoint_complete(b.kb, 1);

    /* Interval 0 is a warm-up, reported apart: its checkpoint's flush is
     * the one that sets off the compactions of the load, which rewrite
     * about everything. */
    for (int i = -1; i < intervals; i++) {
        int64_t id = 4 + 2 * i;
        int at = i < 0 ? 0 : i;
        char old[512];

        /* changed distinct-enough keys: a random walk over the key space */
        for (int64_t c = 0; c < changed; c++) {
            int64_t k;

            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            k = (int64_t)((rng >> 17) % (uint64_t)keys);
            version[k]++;
            set_key(&b, k);
            value_of(k, version[k], &v);
            b.kb->ops->value_update(b.kb->ops->state(b.kb, "v"), &v);
        }
        if (full.path[0] != '\0') {
            /* the previous full file: only the last is restored */
            snprintf(old, sizeof old, "%s", full.path);
            *strrchr(old, '/') = '\0';
            bench_remove_tree(old);
            taken_release(&full);
        }
        taken_release(&inc);
        for (int o = 0; o < 2; o++) {
            if ((o == 0) == (at % 2 == 0)) {
                take(&b, dir, NULL, id, &full);
                full_b[at] = (double)file_size(full.path);
                full_ms[at] = full.ms;
            } else {
                take(&b, dir, shared, id + 1, &inc);
                inc_b[at] = (double)written(&inc, seen);
                inc_ms[at] = inc.ms;
                b.kb->ops->checkpoint_complete(b.kb, id + 1);
            }
        }
        fprintf(stderr,
                "state_bench: interval %d%s: %lld keys changed (%.2f MB): full %.1f MB in %.0f "
                "ms, incremental %.2f MB in %.0f ms\n",
                i + 1, i < 0 ? " (warm-up)" : "", (long long)changed,
                (double)changed * (8 + VALUE_BYTES) / 1e6, full_b[at] / 1e6, full_ms[at],
                inc_b[at] / 1e6, inc_ms[at]);
        if (i < 0) {
            warmup_b = inc_b[0];
            if (warmup_b * 2 >= (double)(keys * (8 + VALUE_BYTES)))
                rewrite = 0;
            continue;
        }
        inc_mean += inc_b[i] / intervals;
        inc_max = inc_b[i] > inc_max ? inc_b[i] : inc_max;
        /* The load's own compaction rewrites about all of it, once. */
        if (rewrite < 0 && inc_b[i] * 2 >= (double)(keys * (8 + VALUE_BYTES)))
            rewrite = i + 1;
    }
    backend_free(&b);
    restore_full = restore_and_check(&full, localdir, version, keys);
    restore_inc = restore_and_check(&inc, localdir, version, keys);
    fprintf(stderr, "state_bench: restored and checked: full %.0f ms, incremental %.0f ms\n",
            restore_full, restore_inc);

    out = json_object();
    json_object_set_new(out, "benchmark", json_string("state_bench"));
    json_object_set_new(out, "backend", json_string("rocksdb"));
    json_object_set_new(out, "compaction", json_string(universal ? "UNIVERSAL" : "LEVEL"));
    json_object_set_new(out, "keys", json_integer((json_int_t)keys));
    json_object_set_new(out, "value_bytes", json_integer(VALUE_BYTES));
    json_object_set_new(out, "state_bytes", json_integer((json_int_t)(keys * (8 + VALUE_BYTES))));
    json_object_set_new(out, "intervals", json_integer(intervals));
    json_object_set_new(out, "changed_pct", json_integer(pct));
    json_object_set_new(out, "changed_bytes_per_interval",
                        json_integer((json_int_t)(changed * (8 + VALUE_BYTES))));
    json_object_set_new(out, "load_keys_per_s", json_real((double)keys / load_s));
    json_object_set_new(out, "load_cpu_us_per_key", json_real(load_cpu_us));
    json_object_set_new(out, "first_incremental_bytes", json_real(first_b));
    json_object_set_new(out, "warmup_incremental_bytes", json_real(warmup_b));
    json_object_set_new(out, "full_bytes_per_checkpoint_p50",
                        json_real(bench_median(full_b, intervals)));
    json_object_set_new(out, "incremental_bytes_per_checkpoint_p50",
                        json_real(bench_median(inc_b, intervals)));
    json_object_set_new(out, "incremental_bytes_per_checkpoint_mean", json_real(inc_mean));
    json_object_set_new(out, "incremental_bytes_per_checkpoint_max", json_real(inc_max));
    json_object_set_new(
        out, "incremental_over_changed_p50",
        json_real(bench_median(inc_b, intervals) / (double)(changed * (8 + VALUE_BYTES))));
    json_object_set_new(out, "incremental_over_changed_mean",
                        json_real(inc_mean / (double)(changed * (8 + VALUE_BYTES))));
    json_object_set_new(out, "load_rewrite_interval", json_integer(rewrite));
    json_object_set_new(out, "steady_intervals",
                        json_integer(rewrite < 0 ? 0 : intervals - rewrite));
    if (rewrite >= 0 && rewrite < intervals) {
        double *st = inc_b + rewrite, mean = 0, max = 0;
        int n = intervals - rewrite;

        for (int i = 0; i < n; i++) {
            mean += st[i] / n;
            max = st[i] > max ? st[i] : max;
        }
        json_object_set_new(out, "steady_bytes_per_checkpoint_p50", json_real(bench_median(st, n)));
        json_object_set_new(out, "steady_bytes_per_checkpoint_mean", json_real(mean));
        json_object_set_new(out, "steady_bytes_per_checkpoint_max", json_real(max));
        json_object_set_new(out, "steady_over_changed_p50",
                            json_real(bench_median(st, n) / (double)(changed * (8 + VALUE_BYTES))));
        json_object_set_new(out, "steady_over_changed_mean",
                            json_real(mean / (double)(changed * (8 + VALUE_BYTES))));
    }
    json_object_set_new(out, "full_ms_p50", json_real(bench_median(full_ms, intervals)));
    json_object_set_new(out, "full_ms_p99", json_real(bench_percentile(full_ms, intervals, 99)));
    json_object_set_new(out, "incremental_ms_p50", json_real(bench_median(inc_ms, intervals)));
    json_object_set_new(out, "incremental_ms_p99",
                        json_real(bench_percentile(inc_ms, intervals, 99)));
    json_object_set_new(out, "restore_ms_full", json_real(restore_full));
    json_object_set_new(out, "restore_ms_incremental", json_real(restore_inc));
    taken_release(&full);
    taken_release(&inc);
    taken_release(&first);
    bench_remove_tree(dir);
    json_dumpf(out, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(out);
    json_decref(seen);
    free(version);
    free(full_b);
    free(inc_b);
    free(full_ms);
    free(inc_ms);
    return 0;
}
