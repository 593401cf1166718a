/* Unit tests of the keyed state backends through their table
 * (state/keyed_state_backend.h), with no operator: the same tests build
 * twice, test_state_keyed_backend_heap and, with TEST_ROCKSDB,
 * test_state_keyed_backend_rocksdb, and with TEST_ROCKSDB_TIMERS besides,
 * test_state_keyed_backend_rocksdb_timers (its timers in RocksDB: the
 * other backend of the cross-backend tests is the heap's then). States
 * scoped by key and namespace,
 * each kind of state, TTL expiry (with a test clock), timers fired in
 * order once per key and time, a snapshot unchanged by later writes, a
 * state file written and read back by other subtasks (rescaling) and by
 * the other backend, refused by name when truncated or of other types.
 * The heap's own: its inline per-record path, its TTL clean-up, and the
 * memory a key costs. Values are int64, through a serializer of the
 * test's own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/key_group.h"
#include "state/heap_keyed_backend.h"
#include "state/rocksdb_keyed_backend.h"
#include "state/shared_resources.h"
#include "state/state_backend.h"
#include "state/state_file.h"

#if defined TEST_ROCKSDB_TIMERS
#define SUITE               keyed_backend_rocksdb_timers
#define LIST_ADD_MAY_BE_NEW true
#elif defined TEST_ROCKSDB
#define SUITE               keyed_backend_rocksdb
#define LIST_ADD_MAY_BE_NEW true
#else
#define SUITE               keyed_backend_heap
#define LIST_ADD_MAY_BE_NEW false
#endif

/* ---- int64 values: their bytes are the value ---- */

static size_t
i64_size(const void *type, const void *value)
{
    (void)type;
    (void)value;
    return 8;
}

static size_t
i64_write(const void *type, const void *value, uint8_t *out, size_t cap)
{
    (void)type;
    if (cap >= 8)
        memcpy(out, value, 8);
    return 8;
}

static int
i64_read(const void *type, const uint8_t *bytes, size_t len, void *value)
{
    (void)type;
    if (len != 8)
        return -1;
    memcpy(value, bytes, 8);
    return 0;
}

static const struct state_serializer i64_ser = { i64_size, i64_write, i64_read };

static const struct state_type i64 = { &i64_ser, NULL, "int64", 1, 8, 8, true };

static struct state_descriptor
desc(const char *name, enum state_kind kind, int64_t ttl_ms)
{
    return (struct state_descriptor){
        .name = name, .kind = kind, .scope = SCOPE_KEYED, .ttl_ms = ttl_ms, .value = i64
    };
}

static void
sum_reduce(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)acc + *(const int64_t *)in;
}

static void
count_create(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    *(int64_t *)acc = 0;
}

static void
count_add(spate_ctx *ctx, const void *in, void *acc)
{
    (void)ctx;
    (void)in;
    ++*(int64_t *)acc;
}

static void
count_result(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)acc * 10;
}

/* The backend under test's options (NULL: the heap), or the other's. */
static const struct state_backend_options *
backend_options(bool other)
{
    static struct state_backend_options o;
    const char *tmp = getenv("TMPDIR");
    bool rocksdb = false;

#ifdef TEST_ROCKSDB
    rocksdb = true;
#endif
    if (rocksdb == other)
        return NULL;
    cr_assert_eq(state_backend_options_from_config(NULL, &o, NULL), 0);
    o.type = STATE_BACKEND_ROCKSDB;
#ifdef TEST_ROCKSDB_TIMERS
    o.timers_in_rocksdb = true;
#endif
    snprintf(o.localdir, sizeof o.localdir, "%s", tmp != NULL && *tmp ? tmp : "/tmp");
    return &o;
}

/* A snapshot whole and canonical (a savepoint's). */
static const struct keyed_snapshot_request full_request = { 1, NULL };

/* The clock fixture_init gives backends (NULL: the wall clock). */
static int64_t (*fixture_clock)(void);

/* A backend of one subtask of parallelism p over the given states. */
struct fixture {
    struct keyed_state_backend *kb;
    struct state_key_context key;
    int64_t key_bytes;
    uint64_t wake_ns;
};

static void
fixture_init_of(struct fixture *f, const struct state_descriptor *states, int n, int p, int subtask,
                bool other)
{
    struct keyed_backend_config c = { .states = states,
                                      .nstates = n,
                                      .key = &f->key,
                                      .max_parallelism = 128,
                                      .parallelism = p,
                                      .subtask = subtask,
                                      .wake_ns = &f->wake_ns,
                                      .owner = f,
                                      .now_ms = fixture_clock };
    spate_error err = { 0 };

    memset(f, 0, sizeof *f);
    cr_assert_eq(state_backend_create(backend_options(other), &c, "test", &f->kb, &err), 0, "%s",
                 err.message);
}

static void
fixture_init(struct fixture *f, const struct state_descriptor *states, int n, int p, int subtask)
{
    fixture_init_of(f, states, n, p, subtask, false);
}

static void
fixture_free(struct fixture *f)
{
    f->kb->ops->dispose(f->kb);
    free(f->kb);
    f->kb = NULL;
}

/* Makes key k (and namespace ns, or none) current. */
static void
set_key(struct fixture *f, int64_t k, const void *ns, size_t ns_len)
{
    f->key_bytes = k;
    keyed_set_key(&f->key, (spate_bytes){ &f->key_bytes, 8 }, key_group_hash(&f->key_bytes, 8), ns,
                  ns_len);
}

static struct spate_state *
state(struct fixture *f, const char *name)
{
    struct spate_state *st = f->kb->ops->state(f->kb, name);

    cr_assert_not_null(st, "state '%s'", name);
    return st;
}

Test(SUITE, the_rocksdb_settings_come_from_the_configuration_and_bad_ones_are_named)
{
    struct config *conf = config_new();
    struct state_backend_options o;
    spate_error err = { 0 };

    cr_assert_eq(state_backend_options_from_config(conf, &o, &err), 0, "%s", err.message);
    cr_assert(!o.incremental && !o.universal_compaction && !o.timers_in_rocksdb,
              "full checkpoints, leveled, heap timers: defaults");
    config_set(conf, "state.backend.incremental", "true", "test"); /* the older key */
    config_set(conf, "state.backend.rocksdb.compaction.style", "UNIVERSAL", "test");
    config_set(conf, "state.backend.rocksdb.timer-service.factory", "ROCKSDB", "test");
    cr_assert_eq(state_backend_options_from_config(conf, &o, &err), 0, "%s", err.message);
    cr_assert(o.incremental && o.universal_compaction && o.timers_in_rocksdb);
    config_set(conf, "state.backend.rocksdb.timer-service.factory", "DISK", "test");
    cr_assert_neq(state_backend_options_from_config(conf, &o, &err), 0);
    cr_assert(strstr(err.message, "state.backend.rocksdb.timer-service.factory") != NULL, "%s",
              err.message);
    config_set(conf, "state.backend.rocksdb.timer-service.factory", "HEAP", "test");
    /* Flink's native metrics: each its own key, off unless set. */
    cr_assert_eq(o.native_metrics, 0, "no native metric by default");
    config_set(conf, "state.backend.rocksdb.metrics.estimate-num-keys", "true", "test");
    config_set(conf, "state.backend.rocksdb.metrics.block-cache-usage", "true", "test");
    config_set(conf, "state.backend.rocksdb.metrics.num-snapshots", "false", "test");
    cr_assert_eq(state_backend_options_from_config(conf, &o, &err), 0, "%s", err.message);
    for (int i = 0; i < ROCKSDB_NATIVE_METRIC_COUNT; i++)
        cr_assert_eq((o.native_metrics >> i) & 1,
                     strcmp(rocksdb_native_metrics[i], "estimate-num-keys") == 0 ||
                         strcmp(rocksdb_native_metrics[i], "block-cache-usage") == 0,
                     "%s", rocksdb_native_metrics[i]);
    config_set(conf, "state.backend.rocksdb.metrics.compaction-pending", "maybe", "test");
    cr_assert_neq(state_backend_options_from_config(conf, &o, &err), 0);
    cr_assert(strstr(err.message, "state.backend.rocksdb.metrics.compaction-pending") != NULL, "%s",
              err.message);
    config_set(conf, "state.backend.rocksdb.metrics.compaction-pending", "false", "test");
    config_set(conf, "state.backend.rocksdb.compaction.style", "TIERED", "test");
    cr_assert_neq(state_backend_options_from_config(conf, &o, &err), 0);
    cr_assert(strstr(err.message, "state.backend.rocksdb.compaction.style") != NULL, "%s",
              err.message);
    config_free(conf);
}

Test(SUITE, a_bad_parallelism_is_an_error_not_a_backend)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct keyed_state_backend *b = NULL;
    struct state_key_context key = { 0 };
    uint64_t wake = 0;
    struct keyed_backend_config c = { .states = &d,
                                      .nstates = 1,
                                      .key = &key,
                                      .max_parallelism = 4,
                                      .parallelism = 8,
                                      .wake_ns = &wake };
    spate_error err = { 0 };

    cr_assert_neq(state_backend_create(backend_options(false), &c, "test", &b, &err), 0);
    cr_assert_null(b);
    cr_assert(strstr(err.message, "parallelism") != NULL, "%s", err.message);
}

Test(SUITE, each_kind_of_state_is_scoped_to_its_key_and_namespace)
{
    struct state_descriptor d[] = { desc("v", STATE_VALUE, 0), desc("l", STATE_LIST, 0),
                                    desc("m", STATE_MAP, 0), desc("r", STATE_REDUCING, 0),
                                    desc("a", STATE_AGGREGATING, 0) };
    const struct keyed_state_backend_ops *ops;
    struct fixture f;
    int64_t ns1 = 1, ns2 = 2, v, k2, sum;
    spate_iter it;

    d[2].key = i64;
    d[3].reduce = sum_reduce;
    d[4].agg = (spate_aggregate){ NULL, NULL, count_create, count_add, count_result, NULL };
    fixture_init(&f, d, 5, 1, 0);
    ops = f.kb->ops;
    cr_assert_null(ops->state(f.kb, "nope"));
    for (int64_t k = 0; k < 50; k++) {
        set_key(&f, k, &ns1, 8);
        v = k * 3;
        ops->value_update(state(&f, "v"), &v);
        for (int64_t i = 0; i <= k % 4; i++) {
            int64_t e = k + i;

            bool fresh = ops->add(state(&f, "l"), 0, &e);

            /* RocksDB appends without reading: "may be new" every time. */
            cr_assert(i == 0 ? fresh : fresh == LIST_ADD_MAY_BE_NEW,
                      "key %lld: a list is new at its first element only", (long long)k);
            ops->add(state(&f, "r"), 0, &e);
            ops->add(state(&f, "a"), 0, &e);
        }
        k2 = k + 1000;
        ops->map_put(state(&f, "m"), &k, &k2);
    }
    for (int64_t k = 49; k >= 0; k--) {
        int64_t n = 0, first;

        set_key(&f, k, &ns2, 8);
        cr_assert(!ops->value_get(state(&f, "v"), &v), "another namespace holds nothing");
        set_key(&f, k, &ns1, 8);
        cr_assert(ops->value_get(state(&f, "v"), &v));
        cr_assert_eq(v, k * 3);
        ops->list_iter(state(&f, "l"), &it);
        while (ops->list_next(&it, &first, NULL))
            cr_assert_eq(first, k + n++);
        cr_assert_eq(n, k % 4 + 1);
        cr_assert(ops->value_get(state(&f, "r"), &sum));
        cr_assert_eq(sum, (k % 4 + 1) * k + (k % 4) * (k % 4 + 1) / 2);
        cr_assert(ops->value_get(state(&f, "a"), &v));
        cr_assert_eq(v, (k % 4 + 1) * 10, "the aggregate's result");
        cr_assert(ops->map_get(state(&f, "m"), &k, &k2));
        cr_assert_eq(k2, k + 1000);
        cr_assert(!ops->map_get(state(&f, "m"), &(int64_t){ k + 1 }, &k2));
        cr_assert(ops->map_remove(state(&f, "m"), &k));
        cr_assert(!ops->map_get(state(&f, "m"), &k, &k2));
        ops->clear(state(&f, "v"));
        cr_assert(!ops->exists(state(&f, "v")));
        cr_assert(ops->exists(state(&f, "l")));
    }
    fixture_free(&f);
}

#ifndef TEST_ROCKSDB
Test(SUITE, the_inline_path_changes_a_value_where_it_is_stored)
{
    struct state_descriptor d = desc("count", STATE_VALUE, 0);
    struct fixture f;
    struct heap_state *st;
    int64_t one = 1, got;

    fixture_init(&f, &d, 1, 2, 1);
    st = heap_state_of(state(&f, "count"));
    cr_assert(st->in_place, "a plain value without TTL is kept in place");
    set_key(&f, 77, NULL, 0);
    cr_assert_null(keyed_value_in_place(st), "no value yet");
    f.kb->ops->value_update(&st->base, &one);
    for (int i = 0; i < 9; i++)
        ++*(int64_t *)keyed_value_in_place(st);
    cr_assert(f.kb->ops->value_get(&st->base, &got));
    cr_assert_eq(got, 10);
    fixture_free(&f);
}
#endif

static int64_t fake_now;

static int64_t
fake_clock(void)
{
    return fake_now;
}

Test(SUITE, ttl_expires_values_and_cleans_up)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 50);
    struct fixture f;
    struct spate_state *st;
    int64_t v = 42, got;

    fixture_clock = fake_clock;
    fixture_init(&f, &d, 1, 1, 0);
    fixture_clock = NULL;
    st = state(&f, "v");
    fake_now = 1000;
    for (int64_t k = 0; k < 100; k++) {
        set_key(&f, k, NULL, 0);
        f.kb->ops->value_update(st, &v);
    }
    fake_now = 1049;
    set_key(&f, 7, NULL, 0);
    cr_assert(f.kb->ops->value_get(st, &got), "alive before its TTL");
    cr_assert_eq(got, 42);
    fake_now = 1050;
    cr_assert(!f.kb->ops->value_get(st, &got), "gone at its TTL");
    /* Clean-up reaches the other expired entries as state is used. */
    for (int i = 0; i < 2000; i++)
        f.kb->ops->value_get(st, &got);
#ifndef TEST_ROCKSDB
    {
        struct heap_state *hs = heap_state_of(st);
        size_t live = 0;

        for (uint32_t g = 0; g <= hs->maps.range.end - hs->maps.range.start; g++)
            live += hs->maps.maps[g].count;
        cr_assert_eq(live, 0, "%zu expired entries left", live);
    }
#endif
    fixture_free(&f);
}

Test(SUITE, ttl_expires_lists_and_map_entries_and_a_write_renews_it)
{
    struct state_descriptor d[] = { desc("l", STATE_LIST, 50), desc("m", STATE_MAP, 50) };
    struct fixture f;
    int64_t e, k, v, n = 0;
    spate_iter it;

    d[1].key = i64;
    fixture_clock = fake_clock;
    fixture_init(&f, d, 2, 1, 0);
    fixture_clock = NULL;
    fake_now = 5000;
    set_key(&f, 3, NULL, 0);
    for (e = 0; e < 3; e++)
        f.kb->ops->add(state(&f, "l"), 0, &e);
    k = 1, v = 10;
    f.kb->ops->map_put(state(&f, "m"), &k, &v);
    fake_now = 5040;
    k = 2, v = 20;
    f.kb->ops->map_put(state(&f, "m"), &k, &v);
    e = 3;
    f.kb->ops->add(state(&f, "l"), 0, &e); /* renews the list's time */
    fake_now = 5060;
    f.kb->ops->list_iter(state(&f, "l"), &it);
    while (f.kb->ops->list_next(&it, &e, NULL))
        cr_assert_eq(e, n++);
    cr_assert_eq(n, 4, "the list lives on from its last write, %lld elements", (long long)n);
    cr_assert(!f.kb->ops->map_get(state(&f, "m"), &(int64_t){ 1 }, &v), "entry 1 expired");
    cr_assert(f.kb->ops->map_get(state(&f, "m"), &(int64_t){ 2 }, &v));
    cr_assert_eq(v, 20);
    memset(&it, 0, sizeof it);
    it.st = state(&f, "m");
    n = 0;
    while (f.kb->ops->map_next(&it, &k, &v)) {
        cr_assert_eq(k, 2, "only the live entry iterates");
        n++;
    }
    cr_assert_eq(n, 1);
    fake_now = 5100;
    cr_assert(!f.kb->ops->exists(state(&f, "l")), "the list expired");
    fixture_free(&f);
}

/* ---- timers ---- */

struct fired {
    int64_t key[64], ts[64];
    int n;
};

static struct fired fired;

static void
record_fire(void *owner, const struct timer *t)
{
    struct fixture *f = owner;
    int64_t k;

    cr_assert_eq(f->key.key.len, 8, "the timer's key is current");
    memcpy(&k, f->key.key.data, 8);
    cr_assert_lt(fired.n, 64);
    fired.key[fired.n] = k;
    fired.ts[fired.n++] = t->timestamp;
}

Test(SUITE, timers_fire_in_order_once_per_key_and_time)
{
    struct fixture f;
    const struct keyed_state_backend_ops *ops;

    fixture_init(&f, NULL, 0, 1, 0);
    ops = f.kb->ops;
    for (int64_t k = 0; k < 5; k++) {
        set_key(&f, k, NULL, 0);
        ops->register_timer(f.kb, true, 100 - k);
        ops->register_timer(f.kb, true, 100 - k); /* the same: once */
        ops->register_timer(f.kb, true, 200);
    }
    set_key(&f, 3, NULL, 0);
    ops->delete_timer(f.kb, true, 200);
    memset(&fired, 0, sizeof fired);
    ops->advance(f.kb, true, 99, record_fire);
    cr_assert_eq(fired.n, 4, "the four timers due by 99, not %d", fired.n);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(fired.ts[i], 96 + i);
        cr_assert_eq(fired.key[i], 4 - i);
    }
    ops->advance(f.kb, true, 1000, record_fire);
    cr_assert_eq(fired.n, 9, "then 100 and the four left at 200, not %d", fired.n - 4);
    for (int i = 5; i < 9; i++)
        cr_assert_neq(fired.key[i], 3, "key 3's deleted timer fired");
    ops->advance(f.kb, true, 2000, record_fire);
    cr_assert_eq(fired.n, 9, "a timer fires once");
    fixture_free(&f);
}

/* Timers of many keys at scattered times, more per key group than
 * RocksDB's cache holds: each fires once, in timestamp order, deleted ones
 * never, and one registered while timers fire fires too. */
static struct {
    int64_t last, n, late;
    bool ordered;
} order;

static void
order_fire(void *owner, const struct timer *t)
{
    struct fixture *f = owner;
    int64_t k;

    memcpy(&k, f->key.key.data, 8);
    cr_assert_eq(t->timestamp % 1000, k % 1000, "a timer fires with its key");
    order.ordered &= t->timestamp >= order.last;
    order.last = t->timestamp;
    order.n++;
    if (t->timestamp >= 2000000)
        order.late++;
    else if (k == 3)
        f->kb->ops->register_timer(f->kb, true, 2000000 + 3); /* later, from inside fire */
}

Test(SUITE, timers_beyond_any_cache_fire_in_order_and_deleted_ones_never)
{
    const int64_t keys = 5000, per_key = 6;
    struct fixture f;
    int64_t deleted = 0;

    fixture_init(&f, NULL, 0, 1, 0);
    for (int64_t i = 0; i < per_key; i++)
        for (int64_t k = 0; k < keys; k++) {
            /* scattered: timestamp ≡ key (mod 1000) */
            int64_t ts = ((k * 7919 + i * 104729) % 1000) * 1000 + k % 1000;

            set_key(&f, k, NULL, 0);
            f.kb->ops->register_timer(f.kb, true, ts);
            if ((k + i) % 3 == 0) {
                f.kb->ops->delete_timer(f.kb, true, ts);
                deleted++;
            }
        }
    memset(&order, 0, sizeof order);
    order.ordered = true;
    order.last = INT64_MIN;
    for (int64_t wm = 0; wm <= 1000000; wm += 50000)
        f.kb->ops->advance(f.kb, true, wm, order_fire);
    cr_assert(order.ordered, "timers fired out of timestamp order");
    cr_assert_eq(order.n, keys * per_key - deleted, "%lld of %lld timers fired", (long long)order.n,
                 (long long)(keys * per_key - deleted));
    f.kb->ops->advance(f.kb, true, INT64_MAX, order_fire);
    cr_assert_eq(order.late, 1, "the timer registered from a fire, once: %lld",
                 (long long)order.late);
    fixture_free(&f);
}

/* ---- snapshots ---- */

/* ---- the state file ---- */

struct written {
    char dir[64], path[96];
    Checkpoint__OperatorSubtaskState st;
    Checkpoint__KeyedStateHandle *keyed[1];
};

/* Writes snapshot s of f's backend as a state file into a fresh folder. */
static void
write_snapshot(struct fixture *f, struct keyed_state_snapshot *s, struct written *out)
{
    struct state_file_writer w;
    spate_error err = { 0 };

    strcpy(out->dir, "/tmp/spate-state-test-XXXXXX");
    cr_assert_not_null(mkdtemp(out->dir));
    snprintf(out->path, sizeof out->path, "%s/0.state", out->dir);
    cr_assert_eq(state_file_create(&w, out->path, &err), 0, "%s", err.message);
    checkpoint__operator_subtask_state__init(&out->st);
    out->keyed[0] = f->kb->ops->snapshot_write(s, &w, out->path);
    out->st.keyed = out->keyed;
    out->st.n_keyed = 1;
    out->st.states = f->kb->ops->snapshot_metas(s, &out->st.n_states);
    cr_assert_eq(state_file_finish(&w, out->path, &err), 0, "%s", err.message);
}

/* 1000 keys of "v" (value k * 7) and a timer at k for every 10th key,
 * from one subtask of this backend (or the other), written as a state
 * file. */
static void
write_file_of(struct written *out, bool other)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct keyed_state_snapshot *s;
    struct fixture f;

    fixture_init_of(&f, &d, 1, 1, 0, other);
    for (int64_t k = 0; k < 1000; k++) {
        int64_t v = k * 7;

        set_key(&f, k, NULL, 0);
        f.kb->ops->value_update(state(&f, "v"), &v);
        if (k % 10 == 0)
            f.kb->ops->register_timer(f.kb, true, k);
    }
    s = f.kb->ops->snapshot(f.kb, &full_request);
    write_snapshot(&f, s, out);
    f.kb->ops->snapshot_release(s);
    fixture_free(&f);
}

static void
write_file(struct written *out)
{
    write_file_of(out, false);
}

static void
written_free(struct written *wr)
{
    for (size_t i = 0; i < wr->st.n_states; i++) {
        free(wr->st.states[i]->name);
        free(wr->st.states[i]->type_name);
        free(wr->st.states[i]->key_type_name);
        free(wr->st.states[i]);
    }
    free(wr->st.states);
    free(wr->keyed[0]->path);
    free(wr->keyed[0]->offsets);
    free(wr->keyed[0]);
    unlink(wr->path);
    rmdir(wr->dir);
}

Test(SUITE, a_state_file_restores_each_new_subtask_its_key_groups)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct written wr;
    struct fixture f[2];
    int found = 0, timers = 0;

    write_file(&wr);
    for (int sub = 0; sub < 2; sub++) {
        struct state_file_reader r = { 0 };
        spate_error err = { 0 };

        fixture_init(&f[sub], &d, 1, 2, sub);
        cr_assert_eq(f[sub].kb->ops->restore(f[sub].kb, &wr.st, "op", &r, &err), 0, "%s",
                     err.message);
        state_file_reader_release(&r);
        memset(&fired, 0, sizeof fired);
        f[sub].kb->ops->advance(f[sub].kb, true, 1000, record_fire);
        for (int i = 0; i < fired.n; i++)
            cr_assert_eq(fired.key[i], fired.ts[i], "a timer comes back with its key");
        timers += fired.n;
    }
    cr_assert_eq(timers, 100, "every timer restored once, not %d", timers);
    for (int64_t k = 0; k < 1000; k++) {
        uint32_t kg = key_group_of_key(&k, 8, 128);
        int sub = kg < 64 ? 0 : 1;
        int64_t v;

        set_key(&f[sub], k, NULL, 0);
        cr_assert(f[sub].kb->ops->value_get(state(&f[sub], "v"), &v), "key %lld in subtask %d",
                  (long long)k, sub);
        cr_assert_eq(v, k * 7);
        set_key(&f[1 - sub], k, NULL, 0);
        found += f[1 - sub].kb->ops->value_get(state(&f[1 - sub], "v"), &v);
    }
    cr_assert_eq(found, 0, "%d keys restored into the other subtask", found);
    fixture_free(&f[0]);
    fixture_free(&f[1]);
    written_free(&wr);
}

Test(SUITE, a_snapshot_stays_as_taken_and_restores_what_it_took)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct state_file_reader r = { 0 };
    struct keyed_state_snapshot *s;
    spate_error err = { 0 };
    struct fixture f, g;
    struct spate_state *st;
    struct written wr;
    int64_t v, got;

    fixture_init(&f, &d, 1, 1, 0);
    st = state(&f, "v");
    for (int64_t k = 0; k < 1000; k++) {
        set_key(&f, k, NULL, 0);
        v = k;
        f.kb->ops->value_update(st, &v);
        if (k % 20 == 0)
            f.kb->ops->register_timer(f.kb, true, k);
    }
    s = f.kb->ops->snapshot(f.kb, &full_request);
    /* Writes after the synchronous part change the live state only. */
    for (int64_t k = 0; k < 1000; k++) {
        set_key(&f, k, NULL, 0);
        v = -1;
        f.kb->ops->value_update(st, &v);
    }
    set_key(&f, 5, NULL, 0);
    f.kb->ops->register_timer(f.kb, true, 5000);
    write_snapshot(&f, s, &wr);
    f.kb->ops->snapshot_release(s);
    fixture_init(&g, &d, 1, 1, 0);
    cr_assert_eq(g.kb->ops->restore(g.kb, &wr.st, "op", &r, &err), 0, "%s", err.message);
    state_file_reader_release(&r);
    for (int64_t k = 0; k < 1000; k++) {
        set_key(&g, k, NULL, 0);
        cr_assert(g.kb->ops->value_get(state(&g, "v"), &got), "key %lld restored", (long long)k);
        cr_assert_eq(got, k, "key %lld: the value when the snapshot was taken", (long long)k);
        set_key(&f, k, NULL, 0);
        cr_assert(f.kb->ops->value_get(st, &got));
        cr_assert_eq(got, -1, "the live value");
    }
    memset(&fired, 0, sizeof fired);
    g.kb->ops->advance(g.kb, true, 10000, record_fire);
    cr_assert_eq(fired.n, 50, "the 50 timers restored, not %d", fired.n);
    for (int i = 0; i < fired.n; i++) {
        cr_assert_eq(fired.ts[i], i * 20, "in timestamp order");
        cr_assert_eq(fired.key[i], i * 20, "with their keys");
    }
    fixture_free(&f);
    fixture_free(&g);
    written_free(&wr);
}

/* Every kind of state, in namespaces, for keys 0..49 (each_kind's data). */
static void
fill_every_kind(struct fixture *f)
{
    int64_t ns1 = 1, v, k2;

    for (int64_t k = 0; k < 50; k++) {
        set_key(f, k, &ns1, 8);
        v = k * 3;
        f->kb->ops->value_update(state(f, "v"), &v);
        for (int64_t i = 0; i <= k % 4; i++) {
            int64_t e = k + i;

            f->kb->ops->add(state(f, "l"), 0, &e);
            f->kb->ops->add(state(f, "r"), 0, &e);
            f->kb->ops->add(state(f, "a"), 0, &e);
        }
        for (int64_t m = 0; m < 3; m++) {
            int64_t mk = k * 100 + m;

            k2 = mk + 1000;
            f->kb->ops->map_put(state(f, "m"), &mk, &k2);
        }
    }
}

static void
check_every_kind(struct fixture *f)
{
    int64_t ns1 = 1, ns2 = 2, v, k2, sum;
    spate_iter it;

    for (int64_t k = 0; k < 50; k++) {
        int64_t n = 0, first, seen = 0;

        set_key(f, k, &ns2, 8);
        cr_assert(!f->kb->ops->value_get(state(f, "v"), &v), "another namespace holds nothing");
        set_key(f, k, &ns1, 8);
        cr_assert(f->kb->ops->value_get(state(f, "v"), &v), "key %lld's value", (long long)k);
        cr_assert_eq(v, k * 3);
        f->kb->ops->list_iter(state(f, "l"), &it);
        while (f->kb->ops->list_next(&it, &first, NULL))
            cr_assert_eq(first, k + n++);
        cr_assert_eq(n, k % 4 + 1);
        cr_assert(f->kb->ops->value_get(state(f, "r"), &sum));
        cr_assert_eq(sum, (k % 4 + 1) * k + (k % 4) * (k % 4 + 1) / 2);
        cr_assert(f->kb->ops->value_get(state(f, "a"), &v));
        cr_assert_eq(v, (k % 4 + 1) * 10, "the aggregate's result");
        for (int64_t m = 0; m < 3; m++) {
            int64_t mk = k * 100 + m;

            cr_assert(f->kb->ops->map_get(state(f, "m"), &mk, &k2), "map key %lld", (long long)mk);
            cr_assert_eq(k2, mk + 1000);
        }
        memset(&it, 0, sizeof it);
        it.st = state(f, "m");
        while (f->kb->ops->map_next(&it, &k2, &v)) {
            cr_assert_eq(k2 / 100, k, "a map entry of another key");
            cr_assert_eq(v, k2 + 1000);
            seen++;
        }
        cr_assert_eq(seen, 3, "key %lld iterates its 3 map entries, not %lld", (long long)k,
                     (long long)seen);
    }
}

/* Each way: what one backend wrote, the other restores (a savepoint taken
 * on the heap resumes on RocksDB and back). */
Test(SUITE, every_kind_of_state_moves_between_the_backends_through_a_state_file)
{
    struct state_descriptor d[] = { desc("v", STATE_VALUE, 0), desc("l", STATE_LIST, 0),
                                    desc("m", STATE_MAP, 0), desc("r", STATE_REDUCING, 0),
                                    desc("a", STATE_AGGREGATING, 0) };

    d[2].key = i64;
    d[3].reduce = sum_reduce;
    d[4].agg = (spate_aggregate){ NULL, NULL, count_create, count_add, count_result, NULL };
    for (int way = 0; way < 2; way++) {
        struct state_file_reader r = { 0 };
        struct keyed_state_snapshot *s;
        spate_error err = { 0 };
        struct fixture f, g;
        struct written wr;

        fixture_init_of(&f, d, 5, 1, 0, way == 1);
        fill_every_kind(&f);
        check_every_kind(&f);
        s = f.kb->ops->snapshot(f.kb, &full_request);
        write_snapshot(&f, s, &wr);
        f.kb->ops->snapshot_release(s);
        fixture_free(&f);
        fixture_init_of(&g, d, 5, 1, 0, way == 0);
        cr_assert_eq(g.kb->ops->restore(g.kb, &wr.st, "op", &r, &err), 0, "%s", err.message);
        state_file_reader_release(&r);
        check_every_kind(&g);
        fixture_free(&g);
        written_free(&wr);
    }
}

Test(SUITE, a_state_file_that_cannot_be_made_is_an_error_naming_it)
{
    char dir[] = "/tmp/spate-state-test-XXXXXX";
    struct state_file_writer w;
    spate_error err = { 0 };

    cr_assert_not_null(mkdtemp(dir));
    /* A folder where the file should be: open(2) fails with EISDIR. */
    cr_assert_neq(state_file_create(&w, dir, &err), 0);
    cr_assert(strstr(err.message, dir) != NULL && strstr(err.message, "directory") != NULL, "%s",
              err.message);
    rmdir(dir);
}

/* A checkpoint's file cut short or gone: the restore fails, naming it. */
Test(SUITE, a_truncated_or_missing_state_file_is_an_error_naming_it)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);

    for (int missing = 0; missing < 2; missing++) {
        struct state_file_reader r = { 0 };
        spate_error err = { 0 };
        struct written wr;
        struct fixture f;

        write_file(&wr);
        if (missing)
            cr_assert_eq(unlink(wr.path), 0);
        else
            cr_assert_eq(
                truncate(wr.path, (off_t)(wr.keyed[0]->offsets[0] + wr.keyed[0]->length / 2)), 0);
        fixture_init(&f, &d, 1, 1, 0);
        cr_assert_neq(f.kb->ops->restore(f.kb, &wr.st, "op", &r, &err), 0);
        cr_assert(strstr(err.message, wr.path) != NULL &&
                      (missing || strstr(err.message, "truncated") != NULL),
                  "%s", err.message);
        state_file_reader_release(&r);
        fixture_free(&f);
        written_free(&wr);
    }
}

Test(SUITE, a_state_of_another_kind_or_type_is_not_restored)
{
    struct state_descriptor list = desc("v", STATE_LIST, 0), other = desc("v", STATE_VALUE, 0);
    struct written wr;

    write_file(&wr);
    other.value.name = "int64-as-something-else";
    for (int i = 0; i < 2; i++) {
        struct state_file_reader r = { 0 };
        spate_error err = { 0 };
        struct fixture f;

        fixture_init(&f, i == 0 ? &list : &other, 1, 1, 0);
        cr_assert_neq(f.kb->ops->restore(f.kb, &wr.st, "op", &r, &err), 0);
        cr_assert(strstr(err.message, "state 'v' of operator 'op' was written as value state "
                                      "of int64 version 1 and is now") != NULL,
                  "%s", err.message);
        cr_assert(strstr(err.message, i == 0
                                          ? "now list state of int64"
                                          : "now value state of int64-as-something-else") != NULL,
                  "%s", err.message);
        state_file_reader_release(&r);
        fixture_free(&f);
    }
    written_free(&wr);
}

/* ---- memory (the heap's: RocksDB keeps its state on disk) ---- */

#ifndef TEST_ROCKSDB

static long
rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%ld %ld", &pages, &rss), 2);
    fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

Test(SUITE, a_million_keys_of_value_state_cost_at_most_200_bytes_each, .timeout = 120)
{
    struct state_descriptor d = desc("count", STATE_VALUE, 0);
    struct fixture f;
    struct spate_state *st;
    long before, after;
    const int64_t keys = 1000000;

    fixture_init(&f, &d, 1, 1, 0);
    st = state(&f, "count");
    before = rss_kb();
    /* Every key twice: a running count per key. */
    for (int round = 0; round < 2; round++) {
        for (int64_t k = 0; k < keys; k++) {
            int64_t n = 0;

            set_key(&f, k, NULL, 0);
            f.kb->ops->value_get(st, &n);
            n++;
            f.kb->ops->value_update(st, &n);
        }
    }
    after = rss_kb();
    for (int64_t k = 0; k < keys; k += 997) {
        int64_t n = 0;

        set_key(&f, k, NULL, 0);
        cr_assert(f.kb->ops->value_get(st, &n));
        cr_assert_eq(n, 2, "key %lld counted %lld", (long long)k, (long long)n);
    }
    fprintf(stderr, "1M keys of ValueState<int64>: %ld bytes of RSS per key\n",
            (after - before) * 1024 / keys);
#if defined(__SANITIZE_ADDRESS__)
#define SPATE_MEASURES_MEMORY 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SPATE_MEASURES_MEMORY 0
#endif
#endif
#ifndef SPATE_MEASURES_MEMORY
#define SPATE_MEASURES_MEMORY 1
#endif
    /* Sanitizers pad every allocation: the figure means something only
     * without them. */
    if (SPATE_MEASURES_MEMORY)
        cr_assert_leq((after - before) * 1024 / keys, 200, "%ld bytes per key",
                      (after - before) * 1024 / keys);
    fixture_free(&f);
}
#endif

#ifdef TEST_ROCKSDB
/* ---- incremental checkpoints (RocksDB's own) ---- */

/* A job's checkpoint folder as the storage lays it out: <job>/chk-<n>/
 * with the state files, <job>/shared/ with the shared SST files. */
struct inc_job {
    char dir[64], shared[96];
};

struct inc_written {
    char path[160];
    Checkpoint__OperatorSubtaskState st;
    Checkpoint__KeyedStateHandle *keyed[2];
};

static void
inc_job_init(struct inc_job *j)
{
    strcpy(j->dir, "/tmp/spate-inc-test-XXXXXX");
    cr_assert_not_null(mkdtemp(j->dir));
    snprintf(j->shared, sizeof j->shared, "%s/shared", j->dir);
}

static void
inc_job_free(struct inc_job *j)
{
    spate_error err = { 0 };

    fs_remove_tree(j->dir, &err);
}

static struct fixture *
inc_fixture_compacted(struct fixture *f, const struct state_descriptor *d, int n, int p,
                      int subtask, bool universal)
{
    struct state_backend_options o = *backend_options(false);
    struct keyed_backend_config c = { .states = d,
                                      .nstates = n,
                                      .key = &f->key,
                                      .max_parallelism = 128,
                                      .parallelism = p,
                                      .subtask = subtask,
                                      .wake_ns = &f->wake_ns,
                                      .owner = f };
    spate_error err = { 0 };

    o.incremental = true;
    o.universal_compaction = universal;
    memset(f, 0, sizeof *f);
    cr_assert_eq(state_backend_create(&o, &c, "test", &f->kb, &err), 0, "%s", err.message);
    return f;
}

static struct fixture *
inc_fixture(struct fixture *f, const struct state_descriptor *d, int n, int p, int subtask)
{
    return inc_fixture_compacted(f, d, n, p, subtask, false);
}

/* Checkpoint id of f's backend, incremental, into j's chk-<id>, as
 * subtask sub; its handle in out (appended to out->st's keyed handles). */
static Checkpoint__KeyedStateHandle *
inc_checkpoint(struct fixture *f, struct inc_job *j, int64_t id, int sub, struct inc_written *out)
{
    const struct keyed_snapshot_request req = { id, j->shared };
    struct keyed_state_snapshot *s = f->kb->ops->snapshot(f->kb, &req);
    struct state_file_writer w;
    spate_error err = { 0 };
    Checkpoint__KeyedStateHandle *h;
    char chk[128];

    snprintf(chk, sizeof chk, "%s/chk-%lld", j->dir, (long long)id);
    cr_assert_eq(fs_mkdirs(chk, &err), 0, "%s", err.message);
    snprintf(out->path, sizeof out->path, "%s/%d.state", chk, sub);
    cr_assert_eq(state_file_create(&w, out->path, &err), 0, "%s", err.message);
    h = f->kb->ops->snapshot_write(s, &w, out->path);
    if (out->st.n_keyed == 0) {
        checkpoint__operator_subtask_state__init(&out->st);
        out->st.keyed = out->keyed;
        out->st.states = f->kb->ops->snapshot_metas(s, &out->st.n_states);
    }
    out->keyed[out->st.n_keyed++] = h;
    cr_assert_eq(state_file_finish(&w, out->path, &err), 0, "%s", err.message);
    f->kb->ops->snapshot_release(s);
    return h;
}

static void
inc_written_free(struct inc_written *wr)
{
    for (size_t i = 0; i < wr->st.n_states; i++) {
        free(wr->st.states[i]->name);
        free(wr->st.states[i]->type_name);
        free(wr->st.states[i]->key_type_name);
        free(wr->st.states[i]);
    }
    free(wr->st.states);
    for (size_t k = 0; k < wr->st.n_keyed; k++) {
        Checkpoint__KeyedStateHandle *h = wr->keyed[k];

        for (size_t i = 0; i < h->n_files; i++) {
            free(h->files[i]->name);
            free(h->files[i]->path);
            free(h->files[i]);
        }
        free(h->files);
        free(h->path);
        free(h->offsets);
        free(h);
    }
    memset(wr, 0, sizeof *wr);
}

/* Keys 0..n-1 of "v", each its own value. */
static void
fill_values(struct fixture *f, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        set_key(f, k, NULL, 0);
        f->kb->ops->value_update(state(f, "v"), &k);
    }
}

static int
inc_restore(struct fixture *g, const struct inc_written *wr, spate_error *err)
{
    struct state_file_reader r = { 0 };
    int rc = g->kb->ops->restore(g->kb, &wr->st, "op", &r, err);

    state_file_reader_release(&r);
    return rc;
}

/* The shared files of h and their bytes. */
static size_t
shared_files(const Checkpoint__KeyedStateHandle *h, uint64_t *bytes)
{
    size_t n = 0;

    *bytes = 0;
    for (size_t i = 0; i < h->n_files; i++)
        if (h->files[i]->shared) {
            n++;
            *bytes += h->files[i]->size;
        }
    return n;
}

static bool
references(const Checkpoint__KeyedStateHandle *h, const char *path)
{
    for (size_t i = 0; i < h->n_files; i++)
        if (strcmp(h->files[i]->path, path) == 0)
            return true;
    return false;
}

static const struct state_descriptor *
every_kind(struct state_descriptor d[5])
{
    d[0] = desc("v", STATE_VALUE, 0);
    d[1] = desc("l", STATE_LIST, 0);
    d[2] = desc("m", STATE_MAP, 0);
    d[3] = desc("r", STATE_REDUCING, 0);
    d[4] = desc("a", STATE_AGGREGATING, 0);
    d[2].key = i64;
    d[3].reduce = sum_reduce;
    d[4].agg = (spate_aggregate){ NULL, NULL, count_create, count_add, count_result, NULL };
    return d;
}

Test(SUITE, an_incremental_checkpoint_restores_every_kind_of_state_and_the_timers)
{
    struct state_descriptor d[5];
    struct inc_written wr = { 0 };
    spate_error err = { 0 };
    struct fixture f, g;
    struct inc_job j;
    Checkpoint__KeyedStateHandle *h;
    uint64_t bytes;

    inc_job_init(&j);
    inc_fixture(&f, every_kind(d), 5, 1, 0);
    fill_every_kind(&f);
    set_key(&f, 7, NULL, 0);
    f.kb->ops->register_timer(f.kb, true, 77);
    h = inc_checkpoint(&f, &j, 1, 0, &wr);
    cr_assert_gt(shared_files(h, &bytes), 0, "the SST files are shared");
    for (size_t i = 0; i < h->n_files; i++)
        cr_assert(strncmp(h->files[i]->path, h->files[i]->shared ? j.shared : h->path,
                          strlen(h->files[i]->shared ? j.shared : j.dir)) == 0,
                  "'%s' where it belongs", h->files[i]->path);
    fixture_free(&f);
    inc_fixture(&g, d, 5, 1, 0);
    cr_assert_eq(inc_restore(&g, &wr, &err), 0, "%s", err.message);
    check_every_kind(&g);
    memset(&fired, 0, sizeof fired);
    g.kb->ops->advance(g.kb, true, 100, record_fire);
    cr_assert_eq(fired.n, 1, "the timer restored");
    cr_assert_eq(fired.key[0], 7);
    fixture_free(&g);
    inc_written_free(&wr);
    inc_job_free(&j);
}

/* 20 000 keys, then 1 % of them changed: the second checkpoint references
 * the first one's files and uploads only what is new, and restores the
 * changed values. */
Test(SUITE, an_incremental_checkpoint_uploads_only_files_new_since_the_last_completed_one)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct inc_written w1 = { 0 }, w2 = { 0 };
    uint64_t bytes1, bytes2 = 0, reused = 0;
    spate_error err = { 0 };
    struct fixture f, g;
    struct inc_job j;
    Checkpoint__KeyedStateHandle *h1, *h2;

    inc_job_init(&j);
    inc_fixture(&f, &d, 1, 1, 0);
    fill_values(&f, 20000);
    h1 = inc_checkpoint(&f, &j, 1, 0, &w1);
    shared_files(h1, &bytes1);
    f.kb->ops->checkpoint_complete(f.kb, 1);
    for (int64_t k = 0; k < 20000; k += 100) {
        int64_t v = -k;

        set_key(&f, k, NULL, 0);
        f.kb->ops->value_update(state(&f, "v"), &v);
    }
    h2 = inc_checkpoint(&f, &j, 2, 0, &w2);
    for (size_t i = 0; i < h2->n_files; i++) {
        if (!h2->files[i]->shared)
            continue;
        if (references(h1, h2->files[i]->path))
            reused += h2->files[i]->size;
        else
            bytes2 += h2->files[i]->size;
    }
    cr_assert_eq(reused, bytes1, "every file of checkpoint 1 is referenced, not copied again");
    cr_assert_lt(bytes2 * 10, bytes1, "checkpoint 2 uploaded %llu bytes, checkpoint 1 %llu",
                 (unsigned long long)bytes2, (unsigned long long)bytes1);
    fixture_free(&f);
    inc_fixture(&g, &d, 1, 1, 0);
    cr_assert_eq(inc_restore(&g, &w2, &err), 0, "%s", err.message);
    for (int64_t k = 0; k < 20000; k++) {
        int64_t v;

        set_key(&g, k, NULL, 0);
        cr_assert(g.kb->ops->value_get(state(&g, "v"), &v), "key %lld", (long long)k);
        cr_assert_eq(v, k % 100 == 0 ? -k : k, "key %lld", (long long)k);
    }
    fixture_free(&g);
    inc_written_free(&w1);
    inc_written_free(&w2);
    inc_job_free(&j);
}

/* Waits (30 s at most) until f's RocksDB runs and plans no compaction. */
static void
compactions_done(struct fixture *f)
{
    uint64_t running = 1, pending = 1;

    for (int i = 0; i < 3000; i++) {
        cr_assert(
            rocksdb_keyed_backend_property(f->kb, "rocksdb.num-running-compactions", &running));
        cr_assert(rocksdb_keyed_backend_property(f->kb, "rocksdb.compaction-pending", &pending));
        if (running == 0 && pending == 0)
            return;
        usleep(10000);
    }
    cr_assert_fail("RocksDB still compacts after 30 s (%llu running, %llu pending)",
                   (unsigned long long)running, (unsigned long long)pending);
}

/* With universal compaction a checkpoint's flush is a sorted run of what
 * changed, merged with others only once 16 are there: until then each
 * checkpoint uploads its own run alone and references every file of the
 * last (RocksDB's default, 4 runs, rewrote the growing run nearly every
 * checkpoint). */
Test(SUITE, universal_compaction_leaves_the_last_checkpoints_files_to_reference)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct inc_written w[2];
    Checkpoint__KeyedStateHandle *prev, *h;
    uint64_t bytes;
    struct fixture f;
    struct inc_job j;

    memset(w, 0, sizeof w);
    inc_job_init(&j);
    inc_fixture_compacted(&f, &d, 1, 1, 0, true);
    fill_values(&f, 20000);
    prev = inc_checkpoint(&f, &j, 1, 0, &w[1]);
    f.kb->ops->checkpoint_complete(f.kb, 1);
    for (int64_t id = 2; id <= 14; id++) {
        size_t fresh = 0;

        for (int64_t k = id; k < 20000; k += 400) {
            int64_t v = -id;

            set_key(&f, k, NULL, 0);
            f.kb->ops->value_update(state(&f, "v"), &v);
        }
        h = inc_checkpoint(&f, &j, id, 0, &w[id % 2]);
        for (size_t i = 0; i < prev->n_files; i++)
            cr_assert(!prev->files[i]->shared || references(h, prev->files[i]->path),
                      "checkpoint %lld references '%s' of checkpoint %lld", (long long)id,
                      prev->files[i]->name, (long long)id - 1);
        for (size_t i = 0; i < h->n_files; i++)
            fresh += h->files[i]->shared && !references(prev, h->files[i]->path);
        cr_assert_eq(fresh, 1, "checkpoint %lld uploads its flush alone, not %zu files",
                     (long long)id, fresh);
        f.kb->ops->checkpoint_complete(f.kb, id);
        inc_written_free(&w[(id + 1) % 2]);
        prev = h;
        compactions_done(&f);
    }
    cr_assert_eq(shared_files(prev, &bytes), 14, "one run per checkpoint");
    fixture_free(&f);
    inc_written_free(&w[0]);
    inc_written_free(&w[1]);
    inc_job_free(&j);
}

/* A checkpoint not (yet) completed is never referenced: its files may go. */
Test(SUITE, an_incremental_checkpoint_references_no_file_of_one_not_completed)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct inc_written w1 = { 0 }, w2 = { 0 };
    struct fixture f;
    struct inc_job j;
    Checkpoint__KeyedStateHandle *h1, *h2;

    inc_job_init(&j);
    inc_fixture(&f, &d, 1, 1, 0);
    fill_values(&f, 1000);
    h1 = inc_checkpoint(&f, &j, 1, 0, &w1);
    h2 = inc_checkpoint(&f, &j, 2, 0, &w2);
    for (size_t i = 0; i < h2->n_files; i++)
        cr_assert(!references(h1, h2->files[i]->path), "'%s' of checkpoint 1 referenced",
                  h2->files[i]->path);
    fixture_free(&f);
    inc_written_free(&w1);
    inc_written_free(&w2);
    inc_job_free(&j);
}

/* Rescaling: two subtasks' databases into one (each opened aside, its
 * key groups copied), and one into two (clipped to each one's key
 * groups). */
Test(SUITE, incremental_checkpoints_restore_at_another_parallelism_by_key_groups)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);
    struct inc_written two = { 0 }, one = { 0 };
    spate_error err = { 0 };
    struct fixture f[2], g, h[2];
    struct inc_job j;
    int timers = 0;

    inc_job_init(&j);
    for (int sub = 0; sub < 2; sub++) {
        inc_fixture(&f[sub], &d, 1, 2, sub);
        for (int64_t k = 0; k < 2000; k++) {
            uint32_t kg = key_group_of_key(&k, 8, 128);

            if ((kg < 64 ? 0 : 1) != sub)
                continue;
            set_key(&f[sub], k, NULL, 0);
            f[sub].kb->ops->value_update(state(&f[sub], "v"), &k);
            if (k % 40 == 0)
                f[sub].kb->ops->register_timer(f[sub].kb, true, k);
        }
        inc_checkpoint(&f[sub], &j, 1, sub, &two);
        fixture_free(&f[sub]);
    }
    inc_fixture(&g, &d, 1, 1, 0);
    cr_assert_eq(inc_restore(&g, &two, &err), 0, "%s", err.message);
    for (int64_t k = 0; k < 2000; k++) {
        int64_t v;

        set_key(&g, k, NULL, 0);
        cr_assert(g.kb->ops->value_get(state(&g, "v"), &v), "key %lld", (long long)k);
        cr_assert_eq(v, k);
    }
    inc_checkpoint(&g, &j, 2, 0, &one);
    fixture_free(&g);
    for (int sub = 0; sub < 2; sub++) {
        int found = 0;

        inc_fixture(&h[sub], &d, 1, 2, sub);
        cr_assert_eq(inc_restore(&h[sub], &one, &err), 0, "%s", err.message);
        for (int64_t k = 0; k < 2000; k++) {
            uint32_t kg = key_group_of_key(&k, 8, 128);
            int64_t v;

            set_key(&h[sub], k, NULL, 0);
            if (h[sub].kb->ops->value_get(state(&h[sub], "v"), &v)) {
                cr_assert_eq(kg < 64 ? 0 : 1, sub, "key %lld restored outside its key groups",
                             (long long)k);
                found++;
            }
        }
        cr_assert_gt(found, 900, "subtask %d has its keys (%d)", sub, found);
        memset(&fired, 0, sizeof fired);
        h[sub].kb->ops->advance(h[sub].kb, true, 2000, record_fire);
        for (int i = 0; i < fired.n; i++)
            cr_assert_eq(key_group_of_key(&fired.key[i], 8, 128) < 64 ? 0 : 1, sub,
                         "key %lld's timer restored outside its key groups",
                         (long long)fired.key[i]);
        timers += fired.n;
        fixture_free(&h[sub]);
    }
    cr_assert_eq(timers, 50, "every timer restored once (p2 → p1 → p2), not %d", timers);
    inc_written_free(&two);
    inc_written_free(&one);
    inc_job_free(&j);
}

/* A shared SST file that is gone or cut short: the restore fails, naming
 * it; so does the heap backend, which cannot read RocksDB's files. */
Test(SUITE, an_incremental_checkpoint_with_a_missing_or_truncated_file_fails_naming_it)
{
    struct state_descriptor d = desc("v", STATE_VALUE, 0);

    for (int missing = 0; missing < 2; missing++) {
        struct inc_written wr = { 0 };
        spate_error err = { 0 };
        struct fixture f, g;
        struct inc_job j;
        Checkpoint__KeyedStateHandle *h;
        const char *victim = NULL;

        inc_job_init(&j);
        inc_fixture(&f, &d, 1, 1, 0);
        for (int64_t k = 0; k < 1000; k++) {
            set_key(&f, k, NULL, 0);
            f.kb->ops->value_update(state(&f, "v"), &k);
        }
        h = inc_checkpoint(&f, &j, 1, 0, &wr);
        fixture_free(&f);
        for (size_t i = 0; i < h->n_files && victim == NULL; i++)
            if (h->files[i]->shared)
                victim = h->files[i]->path;
        cr_assert_not_null(victim);
        if (missing)
            cr_assert_eq(unlink(victim), 0);
        else
            cr_assert_eq(truncate(victim, 10), 0);
        inc_fixture(&g, &d, 1, 1, 0);
        cr_assert_neq(inc_restore(&g, &wr, &err), 0);
        cr_assert(strstr(err.message, victim) != NULL, "the error names '%s': %s", victim,
                  err.message);
        fixture_free(&g);
        fixture_init_of(&g, &d, 1, 1, 0, true);
        cr_assert_neq(inc_restore(&g, &wr, &err), 0);
        cr_assert(strstr(err.message, "incremental") != NULL, "the heap refuses: %s", err.message);
        fixture_free(&g);
        inc_written_free(&wr);
        inc_job_free(&j);
    }
}
#endif

#ifdef TEST_ROCKSDB
/* ---- managed memory (RocksDB's own) ---- */

#define MEM_BACKENDS 3
/* Sanitized, half the keys and of the budget: the same flushes and
 * evictions in the suite's time. */
#ifdef SPATE_DEBUG
#define MEM_KEYS   20000
#define MEM_BUDGET (4u << 20)
#else
#define MEM_KEYS   40000
#define MEM_BUDGET (8u << 20)
#endif

/* The most that memory held while MEM_BACKENDS backends of one slot wrote
 * MEM_KEYS keys to each of two states, then read one state back. */
struct mem_peak {
    size_t cache, memtables, memtable_limit, cache_capacity;
    uint64_t memtable_property; /* rocksdb.cur-size-all-mem-tables, summed */
};

static void
mem_sample(struct fixture *f, int n, bool managed, struct mem_peak *p)
{
    struct rdb_memory_usage u;
    uint64_t sum = 0, v;

    for (int i = 0; i < n; i++) {
        cr_assert(rocksdb_keyed_backend_property(f[i].kb, "rocksdb.cur-size-all-mem-tables", &v));
        sum += v;
    }
    if (sum > p->memtable_property)
        p->memtable_property = sum;
    if (!managed) {
        cr_assert(!rocksdb_keyed_backend_memory(f[0].kb, &u), "unmanaged: no slot memory");
        return;
    }
    cr_assert(rocksdb_keyed_backend_memory(f[0].kb, &u));
    for (int i = 1; i < n; i++) {
        struct rdb_memory_usage other;

        cr_assert(rocksdb_keyed_backend_memory(f[i].kb, &other));
        cr_assert_eq(other.cache_capacity, u.cache_capacity, "one cache for the slot");
        cr_assert_eq(other.memtable_limit, u.memtable_limit, "one write buffer manager");
    }
    p->cache = u.cache_usage > p->cache ? u.cache_usage : p->cache;
    p->memtables = u.memtables > p->memtables ? u.memtables : p->memtables;
    p->cache_capacity = u.cache_capacity;
    p->memtable_limit = u.memtable_limit;
}

static struct mem_peak
mem_run(bool managed, size_t slot_bytes)
{
    struct state_descriptor d[] = { desc("v", STATE_VALUE, 0), desc("w", STATE_VALUE, 0) };
    struct state_backend_options o = *backend_options(false);
    struct shared_resources slot;
    struct fixture f[MEM_BACKENDS];
    struct mem_peak p = { 0 };
    spate_error err = { 0 };

    shared_resources_init(&slot);
    o.memory_managed = managed;
    o.managed_bytes = slot_bytes;
    o.slot_resources = &slot;
    for (int i = 0; i < MEM_BACKENDS; i++) {
        struct keyed_backend_config c = { .states = d,
                                          .nstates = 2,
                                          .key = &f[i].key,
                                          .max_parallelism = 128,
                                          .parallelism = 1,
                                          .wake_ns = &f[i].wake_ns,
                                          .owner = &f[i] };

        memset(&f[i], 0, sizeof f[i]);
        cr_assert_eq(state_backend_create(&o, &c, "mem", &f[i].kb, &err), 0, "%s", err.message);
    }
    for (int64_t k = 0; k < MEM_KEYS; k++) {
        for (int i = 0; i < MEM_BACKENDS; i++) {
            set_key(&f[i], k * MEM_BACKENDS + i, NULL, 0);
            f[i].kb->ops->value_update(state(&f[i], "v"), &k);
            f[i].kb->ops->value_update(state(&f[i], "w"), &k);
        }
        if (k % 5000 == 0)
            mem_sample(f, MEM_BACKENDS, managed, &p);
    }
    for (int64_t k = 0; k < MEM_KEYS; k++) {
        for (int i = 0; i < MEM_BACKENDS; i++) {
            int64_t v = -1;

            set_key(&f[i], k * MEM_BACKENDS + i, NULL, 0);
            cr_assert(f[i].kb->ops->value_get(state(&f[i], "v"), &v));
            cr_assert_eq(v, k, "nothing lost to the bound");
        }
        if (k % 5000 == 0)
            mem_sample(f, MEM_BACKENDS, managed, &p);
    }
    mem_sample(f, MEM_BACKENDS, managed, &p);
    for (int i = 0; i < MEM_BACKENDS; i++)
        fixture_free(&f[i]);
    cr_assert_eq(slot.users, 0, "the last backend released the slot's memory");
    cr_assert_null(slot.resource);
    shared_resources_release(&slot);
    return p;
}

/* Flink's managed memory: the slot's databases and their column families
 * write and read within one budget, where the same job with a cache and
 * write buffers per database passes it several times over. */
Test(SUITE, a_slots_databases_stay_within_its_managed_memory, .timeout = 240)
{
    const size_t budget = MEM_BUDGET;
    struct mem_peak m = mem_run(true, budget), u;

    printf("managed %zu bytes: cache peak %zu of %zu, memtables peak %zu of %zu "
           "(property %llu)\n",
           budget, m.cache, m.cache_capacity, m.memtables, m.memtable_limit,
           (unsigned long long)m.memtable_property);
    cr_assert_eq(m.cache_capacity, budget * 5 / 6, "(3 - 0.5) / 3 of the budget: %zu",
                 m.cache_capacity);
    cr_assert(m.memtable_limit > 0 && m.memtable_limit <= budget / 3, "2 * 0.5 / 3: %zu",
              m.memtable_limit);
    cr_assert(m.memtables > 0 && m.cache > 0, "the run used the slot's memory");
    cr_assert_leq(m.cache, budget, "the cache, memtables charged, within the budget");
    cr_assert_leq(m.memtable_property, m.cache_capacity, "the memtables within the cache");
    u = mem_run(false, budget);
    printf("unmanaged: memtables peak %llu\n", (unsigned long long)u.memtable_property);
    cr_assert_gt(u.memtable_property, budget, "unmanaged, the same job passes the budget");
}

static bool
native_metric(struct fixture *f, const char *name, uint64_t *v)
{
    for (int i = 0; i < ROCKSDB_NATIVE_METRIC_COUNT; i++)
        if (strcmp(rocksdb_native_metrics[i], name) == 0)
            return rocksdb_keyed_backend_native_metric(f->kb, i, v);
    cr_assert_fail("no native metric '%s'", name);
    return false;
}

/* Flink's native metrics read what RocksDB holds: a column family's
 * summed over the states, the block cache's once (every column family
 * reports the slot's one cache). */
Test(SUITE, the_native_metrics_read_the_database_and_its_block_cache)
{
    struct state_descriptor d[2] = { desc("v", STATE_VALUE, 0), desc("w", STATE_VALUE, 0) };
    struct rdb_memory_usage u;
    uint64_t keys, mem, capacity, v;
    struct fixture f;

    fixture_init(&f, d, 2, 1, 0);
    for (int i = 0; i < ROCKSDB_NATIVE_METRIC_COUNT; i++)
        cr_assert(rocksdb_keyed_backend_native_metric(f.kb, i, &v), "RocksDB has rocksdb.%s",
                  rocksdb_native_metrics[i]);
    for (int64_t k = 0; k < 1000; k++) {
        set_key(&f, k, NULL, 0);
        f.kb->ops->value_update(state(&f, "v"), &k);
        f.kb->ops->value_update(state(&f, "w"), &k);
    }
    cr_assert(native_metric(&f, "estimate-num-keys", &keys));
    cr_assert_eq(keys, 2000, "the entries of both states: %llu", (unsigned long long)keys);
    cr_assert(native_metric(&f, "cur-size-all-mem-tables", &mem));
    cr_assert(rocksdb_keyed_backend_property(f.kb, "rocksdb.cur-size-all-mem-tables", &v));
    cr_assert_eq(mem, v);
    cr_assert(rocksdb_keyed_backend_memory(f.kb, &u), "the slot's managed memory");
    cr_assert(native_metric(&f, "block-cache-capacity", &capacity));
    cr_assert_eq(capacity, u.cache_capacity, "the one cache's capacity, not a sum: %llu",
                 (unsigned long long)capacity);
    fixture_free(&f);
}
#endif
