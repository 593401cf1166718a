/* The exchange output (streaming/exchange_output.h): a hash exchange's fast
 * paths (plain records by an 8-byte key; records of their own lengths by a
 * string key), straight into the room of its channels' buffers, write the same
 * bytes to the same channels as its general path through reserve and
 * commit, with timestamps and without, also where the room runs out; and
 * what it writes reads back as each record once, on the channel of its
 * key group, with its key's hash and time. The room is the record writer's
 * in form: a per-channel buffer that reserve starts anew when a record does
 * not fit. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/key_group.h"
#include "streaming/exchange_output.h"
#include "streaming/stream_element.h"
#include "streaming/stream_graph.h"
#include "streaming/types.h"

#define CHANNELS 3
#define ROOM     200 /* bytes per buffer: a few records, then a new one */

/* Each channel: the bytes of its finished buffers, then of its current one
 * (room), in order. */
struct sink {
    struct rw_channel room[CHANNELS];
    uint8_t *bufs[CHANNELS][4096];
    int nbufs[CHANNELS];
    uint8_t out[CHANNELS][1 << 16];
    size_t out_len[CHANNELS];
    uint8_t *reserved;
    uint32_t reserved_channel;
    int nch; /* the exchange's channels: CHANNELS or fewer */
};

static void
finish(struct sink *s, uint32_t ch)
{
    struct rw_channel *c = &s->room[ch];
    const uint8_t *start;
    size_t n;

    if (c->pos == NULL)
        return;
    start = s->bufs[ch][s->nbufs[ch] - 1];
    n = (size_t)(c->pos - start);
    cr_assert_leq(s->out_len[ch] + n, sizeof s->out[ch]);
    memcpy(s->out[ch] + s->out_len[ch], start, n);
    s->out_len[ch] += n;
    c->pos = c->end = NULL;
}

static void
fresh(struct sink *s, uint32_t ch)
{
    uint8_t *b = xcalloc(1, ROOM);

    cr_assert_lt(s->nbufs[ch], 4096);
    s->bufs[ch][s->nbufs[ch]++] = b;
    s->room[ch].pos = b;
    s->room[ch].end = b + ROOM;
}

/* The record writer's reserve: a new buffer when the record does not fit. */
static uint8_t *
sink_reserve(void *arg, uint32_t ch, uint32_t len, spate_error *err)
{
    struct sink *s = arg;
    struct rw_channel *c = &s->room[ch];

    (void)err;
    cr_assert_lt(len + 4, ROOM);
    if (c->pos == NULL || (size_t)(c->end - c->pos) < len + 4) {
        finish(s, ch);
        fresh(s, ch);
    }
    s->reserved = c->pos;
    s->reserved_channel = ch;
    return c->pos + 4;
}

static int
sink_commit(void *arg, uint32_t len, spate_error *err)
{
    struct sink *s = arg;

    (void)err;
    memcpy(s->reserved, &len, 4);
    s->room[s->reserved_channel].pos = s->reserved + 4 + len;
    return 0;
}

static const struct exchange_sink_ops sink_ops = { sink_reserve, sink_commit };

static void
sink_done(struct sink *s)
{
    for (uint32_t ch = 0; ch < CHANNELS; ch++) {
        finish(s, ch);
        for (int i = 0; i < s->nbufs[ch]; i++)
            free(s->bufs[ch][i]);
    }
}

struct rec {
    int64_t key, value, time;
};

/* How records go into the exchange: one collect each without room (every
 * record through reserve and commit), with room (its fast path), or in
 * runs (collect_run) of 1 to 64 records, with room. */
enum path { GENERAL, FAST, RUNS };

#define STRIDE 48 /* a run's records this far apart: more than their size */

/* Runs n records of nfields int64 each (the first three a struct rec)
 * through an exchange of nch channels by the path given, timed (by field
 * 2) or not, into s. */
static void
through(struct sink *s, const int64_t *recs, int nfields, int n, bool timed, enum path path,
        int nch, uint64_t *records)
{
    struct config *conf = config_new();
    spate_env *env = env_new(conf, NULL);
    const spate_type *f[] = { spate_type_int64(), spate_type_int64(), spate_type_int64(),
                              spate_type_int64(), spate_type_int64() };
    const spate_type *t = spate_type_tuple(env, nfields, f);
    struct jg_edge edge = { 0 };
    struct exchange_output x = { 0 };
    static uint8_t run[64 * STRIDE];
    int64_t ts[64];

    memset(s, 0, sizeof *s);
    s->nch = nch;
    edge.partitioner = SHIP_HASH;
    edge.key.kind = KEY_FIELD;
    edge.key.field = 0;
    exchange_output_init(&x, &edge, t, nch, 128, 0, &sink_ops, s, NULL);
    if (path != GENERAL)
        exchange_output_set_room(&x, s->room);
    cr_assert_eq(x.keyed8, path != GENERAL, "the fast path is %s", path != GENERAL ? "off" : "on");
    cr_assert_eq(x.base.collect_run != NULL, path != GENERAL, "runs are %s taken",
                 path != GENERAL ? "not" : "");
    for (int i = 0, len = 1; i < n; i += len, len = (len * 13 + 5) % 64 + 1) {
        if (path != RUNS) {
            struct record_meta m = { timed ? recs[i * nfields + 2] : RECORD_NO_TIMESTAMP, 0,
                                     false };

            x.base.collect(&x.base, recs + i * nfields, &m);
            len = 1;
            continue;
        }
        len = MIN(len, n - i);
        /* Between the records, bytes that must not travel. */
        memset(run, 0xab, sizeof run);
        for (int k = 0; k < len; k++) {
            memcpy(run + k * STRIDE, recs + (i + k) * nfields, (size_t)nfields * 8);
            ts[k] = recs[(i + k) * nfields + 2];
        }
        x.base.collect_run(&x.base, run, STRIDE, timed ? ts : NULL, len);
    }
    cr_assert_eq(x.error.code, 0, "%s", x.error.message);
    *records = x.records;
    exchange_output_release(&x);
    sink_done(s);
    env_free(env);
    config_free(conf);
}

/* Reads each channel's elements back: every record once, on the channel of
 * its key's key group, with its key's hash and, when timed, its time. */
static void
check_elements(const struct sink *s, const struct rec *recs, int n, bool timed)
{
    int seen[1000] = { 0 };

    for (uint32_t ch = 0; ch < CHANNELS; ch++) {
        for (size_t at = 0; at < s->out_len[ch];) {
            struct element e;
            struct rec r;
            uint32_t len;
            uint64_t hash;

            memcpy(&len, s->out[ch] + at, 4);
            cr_assert_eq(element_read(s->out[ch] + at + 4, len, &e), 0);
            cr_assert_eq(e.kind, ELEMENT_RECORD);
            cr_assert_eq(e.body_len, sizeof r);
            memcpy(&r, e.body, sizeof r);
            cr_assert(r.value >= 0 && r.value < n);
            cr_assert_eq(memcmp(&r, &recs[r.value], sizeof r), 0);
            seen[r.value]++;
            hash = key_group_hash(&r.key, 8);
            cr_assert(e.meta.has_key_hash);
            cr_assert_eq(e.meta.key_hash, hash);
            cr_assert_eq(e.meta.timestamp, timed ? r.time : RECORD_NO_TIMESTAMP);
            cr_assert_eq(
                key_group_operator_index(key_group_of_hash(hash, 128), 128, (uint32_t)s->nch), ch,
                "record %lld on channel %u", (long long)r.value, ch);
            at += 4 + len;
        }
    }
    for (int i = 0; i < n; i++)
        cr_assert_eq(seen[i], 1, "record %d %d times", i, seen[i]);
}

/* The path given writes the bytes the general one writes, records of
 * nfields int64 (3 or 5) into nch channels; with no_time, every
 * thirteenth record has none (RECORD_NO_TIMESTAMP) though the others do. */
static void
same_bytes(bool timed, enum path path, int nfields, int nch, bool no_time)
{
    static struct sink fast, general;
    static int64_t recs[1000 * 5];
    uint64_t n_fast, n_general;
    size_t total = 0, untimed = 0;

    for (int i = 0; i < 1000; i++) {
        int64_t *r = recs + i * nfields;

        r[0] = (int64_t)(i * 7919 % 101);
        r[1] = i;
        r[2] = no_time && i % 13 == 5 ? RECORD_NO_TIMESTAMP : 1000 + i / 3;
        untimed += timed && r[2] == RECORD_NO_TIMESTAMP;
        for (int k = 3; k < nfields; k++)
            r[k] = -i * k;
    }
    through(&general, recs, nfields, 1000, timed, GENERAL, nch, &n_general);
    through(&fast, recs, nfields, 1000, timed, path, nch, &n_fast);
    cr_assert_eq(n_general, 1000);
    cr_assert_eq(n_fast, 1000, "every record counted once");
    for (int ch = 0; ch < CHANNELS; ch++) {
        cr_assert_eq(fast.out_len[ch], general.out_len[ch], "channel %d: %zu bytes, not %zu", ch,
                     fast.out_len[ch], general.out_len[ch]);
        cr_assert_eq(memcmp(fast.out[ch], general.out[ch], general.out_len[ch]), 0, "channel %d",
                     ch);
        cr_assert_eq(general.out_len[ch] > 0, ch < nch, "every channel has records");
        total += general.out_len[ch];
    }
    /* Each record once, with its header: length, tag, (time), key hash. */
    cr_assert_eq(total, 1000 * (4 + ELEMENT_KEYED_HEADER + (size_t)nfields * 8) +
                            (timed ? 8 : 0) * (1000 - untimed));
    if (nfields == 3)
        check_elements(&general, (const struct rec *)recs, 1000, timed);
}

/* ---- records of their own lengths by a string key (a word and its count) ---- */

struct word_rec {
    spate_str word;
    int64_t value;
};

/* The other order: the word last in the serialized form, no length. */
struct count_word_rec {
    int64_t value;
    spate_str word;
};

#define NWORDS 600

/* Runs the words through an exchange keyed by the string, with room or
 * without, timed or not, into s; its collect into *collect. */
static void
words_through(struct sink *s, const void *recs, bool count_first, bool timed, bool with_room,
              uint64_t *records,
              void (**collect)(struct output *, const void *, const struct record_meta *))
{
    struct config *conf = config_new();
    spate_env *env = env_new(conf, NULL);
    const spate_type *f[] = { spate_type_string(), spate_type_int64() };
    const spate_type *f2[] = { spate_type_int64(), spate_type_string() };
    const spate_type *t = spate_type_tuple(env, 2, count_first ? f2 : f);
    size_t size = count_first ? sizeof(struct count_word_rec) : sizeof(struct word_rec);
    struct jg_edge edge = { 0 };
    struct exchange_output x = { 0 };

    memset(s, 0, sizeof *s);
    s->nch = CHANNELS;
    edge.partitioner = SHIP_HASH;
    edge.key.kind = KEY_FIELD;
    edge.key.field = count_first;
    exchange_output_init(&x, &edge, t, CHANNELS, 128, 0, &sink_ops, s, NULL);
    if (with_room)
        exchange_output_set_room(&x, s->room);
    cr_assert_not(x.keyed8);
    cr_assert_eq(x.word8, with_room, "the word's own path is %s", with_room ? "off" : "on");
    *collect = x.base.collect;
    for (int i = 0; i < NWORDS; i++) {
        struct record_meta m = { timed ? 5000 + i : RECORD_NO_TIMESTAMP, 0, false };

        x.base.collect(&x.base, (const uint8_t *)recs + (size_t)i * size, &m);
    }
    cr_assert_eq(x.error.code, 0, "%s", x.error.message);
    *records = x.records;
    exchange_output_release(&x);
    sink_done(s);
    env_free(env);
    config_free(conf);
}

static void
same_bytes_words(bool timed, bool count_first)
{
    static struct sink fast, general;
    static char text[NWORDS][64], big[160];
    struct word_rec recs[NWORDS];
    struct count_word_rec recs2[NWORDS];
    uint64_t n_fast, n_general;
    void (*fast_collect)(struct output *, const void *, const struct record_meta *);
    void (*general_collect)(struct output *, const void *, const struct record_meta *);

    /* Short words, and every fifth one of 0 to 150 bytes: some fill most
     * of a buffer's room, some need a two-byte length. */
    for (int i = 0; i < (int)sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    for (int i = 0; i < NWORDS; i++) {
        snprintf(text[i], sizeof text[i], "w%d", i % 97);
        /* Counts of eight bytes that all matter. */
        recs[i] = (struct word_rec){ { text[i], strlen(text[i]) },
                                     (int64_t)((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL) };
        if (i % 5 == 0)
            recs[i].word = (spate_str){ big + i % 7, (size_t)(i * 37 % 151) };
        recs2[i] = (struct count_word_rec){ recs[i].value, recs[i].word };
    }
    words_through(&general, count_first ? (const void *)recs2 : recs, count_first, timed, false,
                  &n_general, &general_collect);
    words_through(&fast, count_first ? (const void *)recs2 : recs, count_first, timed, true,
                  &n_fast, &fast_collect);
    cr_assert(fast_collect != general_collect, "the string key's own path is taken");
    cr_assert_eq(n_general, NWORDS);
    cr_assert_eq(n_fast, NWORDS, "every record counted once");
    for (int ch = 0; ch < CHANNELS; ch++) {
        cr_assert_eq(fast.out_len[ch], general.out_len[ch], "channel %d: %zu bytes, not %zu", ch,
                     fast.out_len[ch], general.out_len[ch]);
        cr_assert_eq(memcmp(fast.out[ch], general.out[ch], general.out_len[ch]), 0, "channel %d",
                     ch);
        cr_assert_gt(general.out_len[ch], 0, "every channel has records");
    }
}

Test(exchange_output, a_string_keys_path_writes_what_the_general_one_writes_with_timestamps)
{
    same_bytes_words(true, false);
    same_bytes_words(true, true);
}

Test(exchange_output, a_string_keys_path_writes_what_the_general_one_writes_without_timestamps)
{
    same_bytes_words(false, false);
    same_bytes_words(false, true);
}

Test(exchange_output, the_fast_path_writes_what_the_general_one_writes_with_timestamps)
{
    same_bytes(true, FAST, 3, CHANNELS, false);
}

Test(exchange_output, the_fast_path_writes_what_the_general_one_writes_without_timestamps)
{
    same_bytes(false, FAST, 3, CHANNELS, false);
}

Test(exchange_output, runs_write_what_the_general_path_writes_with_timestamps)
{
    same_bytes(true, RUNS, 3, CHANNELS, false);
}

Test(exchange_output, runs_write_what_the_general_path_writes_without_timestamps)
{
    same_bytes(false, RUNS, 3, CHANNELS, false);
}

Test(exchange_output, runs_into_one_channel_write_what_the_general_path_writes)
{
    same_bytes(true, RUNS, 3, 1, false);
    same_bytes(false, RUNS, 3, 1, false);
}

Test(exchange_output, runs_of_records_of_other_sizes_write_what_the_general_path_writes)
{
    same_bytes(true, RUNS, 5, CHANNELS, false);
    same_bytes(true, RUNS, 5, 1, false);
    same_bytes(false, RUNS, 5, CHANNELS, false);
}

Test(exchange_output, a_timed_runs_record_without_a_timestamp_travels_without_one)
{
    same_bytes(true, RUNS, 3, CHANNELS, true);
    same_bytes(true, RUNS, 3, 1, true);
    same_bytes(true, FAST, 3, CHANNELS, true);
}
