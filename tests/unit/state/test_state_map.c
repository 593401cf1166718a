/* Unit tests of src/state/state_map.c, against a naive model. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "state/state_map.h"

Test(state_map, put_get_replace_remove)
{
    struct state_map m;
    struct state_entry *e;

    state_map_init(&m);
    cr_assert_null(state_map_get(&m, 1, "a", 1));
    state_map_put(&m, 1, "a", 1, "one", 3);
    state_map_put(&m, 2, "b", 1, "two", 3);
    e = state_map_get(&m, 1, "a", 1);
    cr_assert_not_null(e);
    cr_assert_eq(e->value_len, 3);
    cr_assert_eq(memcmp(state_entry_value(e), "one", 3), 0);
    state_map_put(&m, 1, "a", 1, "uno!", 4);
    e = state_map_get(&m, 1, "a", 1);
    cr_assert_eq(memcmp(state_entry_value(e), "uno!", 4), 0);
    cr_assert_eq(m.count, 2);
    /* Same hash, other key: both live. */
    state_map_put(&m, 1, "c", 1, "", 0);
    cr_assert_not_null(state_map_get(&m, 1, "c", 1));
    cr_assert_eq(state_map_remove(&m, 1, "a", 1), 1);
    cr_assert_eq(state_map_remove(&m, 1, "a", 1), 0);
    cr_assert_null(state_map_get(&m, 1, "a", 1));
    cr_assert_not_null(state_map_get(&m, 1, "c", 1));
    state_map_release(&m);
}

/* state_map_get_inline finds exactly the entries of its shape: the key,
 * and a value of that length, both in the slot. */
Test(state_map, get_inline_finds_the_entries_of_its_shape)
{
    struct state_map m;
    uint8_t key[32], other[32];
    struct state_entry *e;

    state_map_init(&m);
    memset(key, 7, sizeof key);
    memcpy(other, key, sizeof other);
    other[31] = 8;
    cr_assert_null(state_map_get_inline(&m, 5, key, 32, 16));
    state_map_put(&m, 5, key, 32, "0123456789abcdef", 16);
    state_map_put(&m, 5, other, 32, "fedcba9876543210", 16); /* same hash */
    e = state_map_get_inline(&m, 5, key, 32, 16);
    cr_assert_eq(e, state_map_get(&m, 5, key, 32));
    cr_assert_eq(memcmp(e->u.bytes + 32, "0123456789abcdef", 16), 0);
    e = state_map_get_inline(&m, 5, other, 32, 16);
    cr_assert_eq(memcmp(e->u.bytes + 32, "fedcba9876543210", 16), 0);
    /* Another value length, another key length, another hash: none. */
    cr_assert_null(state_map_get_inline(&m, 5, key, 32, 8));
    cr_assert_null(state_map_get_inline(&m, 5, key, 31, 16));
    cr_assert_null(state_map_get_inline(&m, 6, key, 32, 16));
    state_map_put(&m, 5, key, 32, "01234567", 8);
    cr_assert_null(state_map_get_inline(&m, 5, key, 32, 16));
    cr_assert_not_null(state_map_get_inline(&m, 5, key, 32, 8));
    state_map_release(&m);
}

/* state_map_get_inline_key8 along probe chains: keys whose hashes share
 * home slots and tags (so a probe passes entries of its tag that are not
 * its key, and entries of other tags), each found as state_map_get finds
 * it; an absent key is not, whether its probe ends at an empty slot or
 * passes entries of its tag. */
Test(state_map, get_inline_key8_follows_probe_chains)
{
    uint64_t lens = state_map_inline_lens(32, 16);
    struct state_map m;

    state_map_init(&m);
    for (uint64_t k = 0; k < 300; k++) {
        uint8_t ckey[32] = { 8 }, value[16];
        /* Three tags, few home slots: long chains of mixed tags. */
        uint64_t hash = (k % 3) << 57 | (k % 5) << 32;

        memcpy(ckey + 4, &k, 8);
        memset(value, (int)k, sizeof value);
        state_map_put(&m, hash, ckey, 32, value, 16);
    }
    for (uint64_t k = 0; k < 400; k++) {
        uint8_t ckey[32] = { 8 };
        uint64_t hash = (k % 3) << 57 | (k % 5) << 32;
        struct state_entry *e = state_map_get_inline_key8(&m, hash, k, lens);

        memcpy(ckey + 4, &k, 8);
        if (k >= 300) {
            cr_assert_null(e, "key %llu is absent", (unsigned long long)k);
            continue;
        }
        cr_assert_not_null(e, "key %llu", (unsigned long long)k);
        cr_assert_eq(e, state_map_get(&m, hash, ckey, 32), "key %llu", (unsigned long long)k);
        cr_assert_eq(e->u.bytes[32], (uint8_t)k, "key %llu's value", (unsigned long long)k);
        cr_assert_eq(state_map_get_inline(&m, hash, ckey, 32, 16), e, "key %llu",
                     (unsigned long long)k);
    }
    state_map_release(&m);
}

static int
count_entries(struct state_entry *e, void *data)
{
    (void)e;
    (*(int *)data)++;
    return 0;
}

Test(state_map, many_keys_of_one_key_group_with_removals)
{
    struct state_map m;
    char key[32];
    int n = 0;

    state_map_init(&m);
    /* All hashes share their low 7 bits, as keys of one key group do. */
    for (int i = 0; i < 20000; i++) {
        uint64_t h = ((uint64_t)i * 0x9E3779B97F4A7C15ULL) << 7 | 5;

        snprintf(key, sizeof key, "k%d", i);
        state_map_put(&m, h, key, strlen(key), &i, sizeof i);
    }
    for (int i = 0; i < 20000; i += 2) {
        uint64_t h = ((uint64_t)i * 0x9E3779B97F4A7C15ULL) << 7 | 5;

        snprintf(key, sizeof key, "k%d", i);
        cr_assert_eq(state_map_remove(&m, h, key, strlen(key)), 1);
    }
    for (int i = 0; i < 20000; i++) {
        uint64_t h = ((uint64_t)i * 0x9E3779B97F4A7C15ULL) << 7 | 5;
        struct state_entry *e;

        snprintf(key, sizeof key, "k%d", i);
        e = state_map_get(&m, h, key, strlen(key));
        if (i % 2 == 0) {
            cr_assert_null(e, "k%d survived its removal", i);
        } else {
            int v;

            cr_assert_not_null(e, "k%d lost", i);
            memcpy(&v, state_entry_value(e), sizeof v); /* values are unaligned */
            cr_assert_eq(v, i);
        }
    }
    state_map_foreach(&m, count_entries, &n);
    cr_assert_eq(n, 10000);
    cr_assert_eq(m.count, 10000);
    state_map_release(&m);
}

/* Interleaved puts and removes of colliding keys against a model: every
 * live key is found with its value, no removed one, and each cluster stays
 * sorted by home slot (Robin Hood order) through growth and removals. */
Test(state_map, random_puts_and_removes_keep_robin_hood_order)
{
    enum { KEYS = 3000 };
    static int value[KEYS]; /* -1: absent */
    struct state_map m;
    uint64_t x = 88172645463325252ULL;

    state_map_init(&m);
    for (int k = 0; k < KEYS; k++)
        value[k] = -1;
    for (int step = 0; step < 200000; step++) {
        int k, v = step;
        uint64_t h;
        char key[16];

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        k = (int)(x % KEYS);
        /* Few distinct hashes over many keys: long clusters, equal homes. */
        h = ((uint64_t)(k % 700) * 0x9E3779B97F4A7C15ULL) << 7 | 3;
        snprintf(key, sizeof key, "k%d", k);
        if ((x >> 40) % 3 == 0) {
            cr_assert_eq(state_map_remove(&m, h, key, strlen(key)), value[k] >= 0);
            value[k] = -1;
        } else {
            state_map_put(&m, h, key, strlen(key), &v, sizeof v);
            value[k] = v;
        }
    }
    for (int k = 0; k < KEYS; k++) {
        uint64_t h = ((uint64_t)(k % 700) * 0x9E3779B97F4A7C15ULL) << 7 | 3;
        char key[16];
        struct state_entry *e;

        snprintf(key, sizeof key, "k%d", k);
        e = state_map_get(&m, h, key, strlen(key));
        if (value[k] < 0) {
            cr_assert_null(e, "k%d survived its removal", k);
        } else {
            int v;

            cr_assert_not_null(e, "k%d lost", k);
            memcpy(&v, state_entry_value(e), sizeof v);
            cr_assert_eq(v, value[k]);
        }
    }
    /* Along a cluster homes do not go back: each entry is at most one slot
     * farther from its home than the one before it. */
    for (size_t i = 0; i <= m.mask; i++) {
        size_t j = (i + 1) & m.mask, di, dj;

        if (!state_entry_used(&m.slots[i]) || !state_entry_used(&m.slots[j]))
            continue;
        di = (i - state_map_home_slot(m.slots[i].hash, m.mask)) & m.mask;
        dj = (j - state_map_home_slot(m.slots[j].hash, m.mask)) & m.mask;
        cr_assert_leq(dj, di + 1, "slot %zu at distance %zu after one at %zu", j, dj, di);
    }
    state_map_release(&m);
}

/* state_map_remove_if over long clusters, some wrapping past the table's
 * end: every entry it is told to remove goes, asked about once; every other
 * stays where lookups find it. */
static bool
remove_odd(const struct state_entry *e, void *data)
{
    int *asked = data, v;

    memcpy(&v, state_entry_value(e), sizeof v);
    if (v % 2 == 0)
        return false;
    asked[v]++;
    return true;
}

/* Most keys' homes in the last 16 slots, whatever the table's size (the
 * home slot is (h >> 32) & mask): one cluster wraps past the
 * end; a quarter spread. */
static uint64_t
remove_if_hash(int k)
{
    if (k % 4 == 0)
        return ((uint64_t)k * 0x9E3779B97F4A7C15ULL) << 7 | 3;
    return (uint64_t)(0xFFFFFFFFu - (uint32_t)(k % 16)) << 32;
}

Test(state_map, remove_if_takes_exactly_what_it_is_told)
{
    enum { KEYS = 2000 };
    static int asked[KEYS];
    struct state_map m;

    state_map_init(&m);
    for (int k = 0; k < KEYS; k++) {
        uint64_t h = remove_if_hash(k);
        char key[16];

        snprintf(key, sizeof key, "k%d", k);
        state_map_put(&m, h, key, strlen(key), &k, sizeof k);
    }
    cr_assert_eq(state_map_remove_if(&m, remove_odd, asked), KEYS / 2);
    cr_assert_eq(m.count, KEYS / 2);
    for (int k = 0; k < KEYS; k++) {
        uint64_t h = remove_if_hash(k);
        char key[16];
        struct state_entry *e;

        snprintf(key, sizeof key, "k%d", k);
        e = state_map_get(&m, h, key, strlen(key));
        if (k % 2) {
            cr_assert_null(e, "k%d survived", k);
            cr_assert_eq(asked[k], 1, "k%d asked about %d times", k, asked[k]);
        } else {
            cr_assert_not_null(e, "k%d lost", k);
        }
    }
    state_map_release(&m);
}

/* Values grow in place (list state appends): the bytes already there stay,
 * whether the entry moves from its slot to the heap or back. */
Test(state_map, values_keep_their_bytes_across_the_inline_limit)
{
    struct state_map m;
    struct state_entry *e;
    uint8_t big[200];

    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7 + 1);
    state_map_init(&m);
    for (size_t len = 1; len <= sizeof big; len++) {
        e = state_map_put(&m, 42, "key", 3, NULL, len);
        state_entry_value(e)[len - 1] = big[len - 1]; /* append one byte */
        cr_assert_eq(memcmp(state_entry_value(e), big, len), 0, "at %zu bytes", len);
        cr_assert_eq(memcmp(state_entry_key(e), "key", 3), 0);
    }
    for (size_t len = sizeof big; len >= 1; len--) {
        e = state_map_put(&m, 42, "key", 3, NULL, len);
        cr_assert_eq(memcmp(state_entry_value(e), big, len), 0, "shrunk to %zu bytes", len);
    }
    cr_assert_eq(state_map_remove(&m, 42, "key", 3), 1);
    cr_assert_eq(m.count, 0);
    state_map_release(&m);
}

static int
sum_values(struct state_entry *e, void *data)
{
    int v;

    memcpy(&v, state_entry_value(e), sizeof v);
    *(long *)data += v;
    return 0;
}

/* A frozen view keeps what the map held at the freeze, whatever the map
 * does afterwards (puts, in-place changes, removals, growth); the map's own
 * contents are unaffected by the view's release. */
Test(state_map, frozen_views_are_copy_on_write)
{
    struct state_map m, tmp;
    struct state_map_view v1, v2;
    char key[16];
    long sum = 0;

    state_map_init(&m);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        state_map_put(&m, (uint64_t)i * 0x9E3779B97F4A7C15ULL, key, strlen(key), &i, sizeof i);
    }
    state_map_freeze(&m, &v1);
    cr_assert(m.shared);
    for (int i = 0; i < 100; i++) {
        struct state_entry *e;
        int big = 1000 + i;

        snprintf(key, sizeof key, "k%d", i);
        e = state_map_get_mut(&m, (uint64_t)i * 0x9E3779B97F4A7C15ULL, key, strlen(key));
        cr_assert_not_null(e);
        memcpy(state_entry_value(e), &big, sizeof big);
    }
    for (int i = 100; i < 1000; i++) { /* grows the live table */
        snprintf(key, sizeof key, "k%d", i);
        state_map_put(&m, (uint64_t)i * 0x9E3779B97F4A7C15ULL, key, strlen(key), &i, sizeof i);
    }
    state_map_freeze(&m, &v2);
    state_map_remove(&m, 0, "k0", 2);
    cr_assert_eq(v1.count, 100);
    /* The first view still sums 0..99. */
    tmp = (struct state_map){ .slots = v1.slots, .mask = v1.mask, .count = v1.count };
    state_map_foreach(&tmp, sum_values, &sum);
    cr_assert_eq(sum, 99 * 100 / 2);
    sum = 0;
    tmp = (struct state_map){ .slots = v2.slots, .mask = v2.mask, .count = v2.count };
    state_map_foreach(&tmp, sum_values, &sum);
    cr_assert_eq(sum, (1000 + 1099) * 100 / 2 + (100 + 999) * 900 / 2);
    state_map_view_release(&v1);
    state_map_view_release(&v2);
    cr_assert_eq(m.count, 999);
    state_map_release(&m);
}

/* Values of 96 bytes live in heap blocks: value i holds i in every one of
 * its 24 ints. */
#define BIG 24

static void
big_put(struct state_map *m, int k, int v, size_t ints)
{
    char key[16];
    int val[BIG];

    for (int j = 0; j < BIG; j++)
        val[j] = v;
    snprintf(key, sizeof key, "key%d", k);
    state_map_put(m, (uint64_t)(k + 1) * 0x9E3779B97F4A7C15ULL, key, strlen(key), val,
                  ints * sizeof(int));
}

/* The sum of the first ints of a view's values, each checked to be whole. */
static long
view_sum(const struct state_map_view *v)
{
    long sum = 0;

    for (size_t i = 0; v->slots != NULL && i <= v->mask; i++) {
        const struct state_entry *e = &v->slots[i];
        int val[BIG];

        if (!state_entry_used(e))
            continue;
        memcpy(val, state_entry_value(e), e->value_len);
        for (size_t j = 1; j < e->value_len / sizeof(int); j++)
            cr_assert_eq(val[j], val[0], "a torn value");
        sum += val[0];
    }
    return sum;
}

/* Blocks are shared between a view's table and the live one until their
 * entry changes: in-place changes, replacements, resizes across the inline
 * limit, removals and growth leave the views' values as they were frozen;
 * a freeze while an older view still reads detaches it; the map and the
 * views go in any order (ASan checks that nothing leaks or is freed twice). */
Test(state_map, heap_blocks_are_copied_per_entry_on_write)
{
    for (int order = 0; order < 2; order++) {
        struct state_map m;
        struct state_map_view v1, v2;
        long want1 = 0, want2 = 0;

        state_map_init(&m);
        for (int i = 0; i < 500; i++) {
            big_put(&m, i, i, BIG);
            want1 += i;
        }
        state_map_freeze(&m, &v1);
        for (int i = 0; i < 500; i += 2) { /* in place */
            char key[16];
            struct state_entry *e;
            int val[BIG];

            snprintf(key, sizeof key, "key%d", i);
            e = state_map_get_mut(&m, (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL, key, strlen(key));
            cr_assert_not_null(e);
            for (int j = 0; j < BIG; j++)
                val[j] = 7 * i;
            memcpy(state_entry_value(e), val, sizeof val);
        }
        for (int i = 1; i < 100; i += 2) /* into the slot */
            big_put(&m, i, -i, 2);
        for (int i = 101; i < 200; i += 2) { /* removed */
            char key[16];

            snprintf(key, sizeof key, "key%d", i);
            cr_assert_eq(
                state_map_remove(&m, (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL, key, strlen(key)),
                1);
        }
        for (int i = 500; i < 3000; i++) /* grows */
            big_put(&m, i, i, BIG);
        for (int i = 0; i < 3000; i++) {
            if (i >= 101 && i < 200 && i % 2)
                continue;
            want2 += i < 500 && i % 2 == 0 ? 7 * i : i < 100 && i % 2 ? -i : i;
        }
        /* An older view still reads: the freeze detaches its base. */
        state_map_freeze(&m, &v2);
        big_put(&m, 0, 1, BIG);
        cr_assert_eq(view_sum(&v1), want1);
        cr_assert_eq(view_sum(&v2), want2);
        if (order == 0) {
            state_map_view_release(&v1);
            big_put(&m, 2, 1, BIG);
            state_map_view_release(&v2);
            big_put(&m, 4, 1, BIG);
            state_map_freeze(&m, &v1); /* settles */
            cr_assert_eq(view_sum(&v1), want2 + 1 - 0 + 1 - 14 + 1 - 28);
            state_map_view_release(&v1);
            state_map_release(&m);
        } else {
            state_map_release(&m); /* before the views */
            cr_assert_eq(view_sum(&v2), want2);
            state_map_view_release(&v2);
            cr_assert_eq(view_sum(&v1), want1);
            state_map_view_release(&v1);
        }
    }
}

/* The snapshot lets go while the live table still copies blocks: once the
 * retired list fills, the map settles and the remaining keys change in
 * place, every change kept (ASan checks no block is read after its free). */
Test(state_map, blocks_change_in_place_once_the_snapshot_let_go)
{
    struct state_map m;
    struct state_map_view v;

    state_map_init(&m);
    for (int i = 0; i < 1000; i++)
        big_put(&m, i, i, BIG);
    for (int round = 0; round < 3; round++) {
        long want = 0;

        state_map_freeze(&m, &v);
        for (int i = 0; i < 1000; i++) {
            char key[16];
            struct state_entry *e;
            int val[BIG];

            if (i == 100)
                state_map_view_release(&v); /* the snapshot is written */
            snprintf(key, sizeof key, "key%d", i);
            e = state_map_get_mut(&m, (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL, key, strlen(key));
            cr_assert_not_null(e);
            memcpy(val, state_entry_value(e), sizeof val);
            for (int j = 0; j < BIG; j++)
                val[j] += 1;
            memcpy(state_entry_value(e), val, sizeof val);
        }
        state_map_freeze(&m, &v);
        for (int i = 0; i < 1000; i++)
            want += i + round + 1;
        cr_assert_eq(view_sum(&v), want, "round %d", round);
        state_map_view_release(&v);
    }
    state_map_release(&m);
}

/* A map whose changes after a freeze were all in its slots (values that
 * fit) settles with nothing retired and no spare blocks. */
Test(state_map, a_settle_with_nothing_retired)
{
    struct state_map m;
    struct state_map_view v;

    state_map_init(&m);
    for (int i = 0; i < 10; i++)
        big_put(&m, i, i, 2);
    state_map_freeze(&m, &v);
    big_put(&m, 0, 5, 2); /* copies the slots, retires nothing */
    cr_assert_not_null(m.base);
    cr_assert_eq(m.nretired, 0);
    state_map_view_release(&v);
    state_map_freeze(&m, &v); /* settles */
    cr_assert_null(m.base);
    cr_assert_eq(view_sum(&v), 5 + 45);
    state_map_view_release(&v);
    state_map_release(&m);
}

/* The tags' address the map keeps for its lookups is its table's: after
 * the table grows, and after a change copies a table a view shares. */
Test(state_map, keeps_the_tags_of_its_own_table)
{
    struct state_map m;
    struct state_map_view v;
    char key[16];

    state_map_init(&m);
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "k%d", i);
        state_map_put(&m, (uint64_t)i * 0x9E3779B97F4A7C15ULL, key, strlen(key), &i, sizeof i);
        cr_assert_eq(m.tags, state_map_tags(m.slots, m.mask), "after put %d", i);
    }
    state_map_freeze(&m, &v);
    cr_assert_not_null(state_map_get_mut(&m, 0, "k0", 2));
    cr_assert_neq(m.slots, v.slots, "a change copied the shared table");
    cr_assert_eq(m.tags, state_map_tags(m.slots, m.mask));
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "k%d", i);
        cr_assert_not_null(
            state_map_get(&m, (uint64_t)i * 0x9E3779B97F4A7C15ULL, key, strlen(key)));
    }
    state_map_view_release(&v);
    state_map_release(&m);
}
