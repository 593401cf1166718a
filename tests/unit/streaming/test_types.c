/* Unit tests of src/streaming/types.c: layouts, round trips, malformed
 * bytes, readable forms and key bytes. */
#include <criterion/criterion.h>
#include <string.h>

#include "streaming/types.h"

struct word_count {
    spate_str word;
    int64_t count;
};

static const struct spate_type *
word_count_type(void)
{
    static struct spate_type *t;
    const struct spate_type *fields[] = { spate_type_string(), spate_type_int64() };

    if (t == NULL)
        t = types_new_tuple(2, fields);
    return t;
}

Test(types, tuple_layout_is_the_c_struct)
{
    const struct spate_type *t = word_count_type();

    cr_assert_eq(t->size, sizeof(struct word_count));
    cr_assert_eq(spate_type_field_offset(t, 0), offsetof(struct word_count, word));
    cr_assert_eq(spate_type_field_offset(t, 1), offsetof(struct word_count, count));
}

Test(types, round_trips)
{
    const struct spate_type *t = word_count_type();
    struct word_count in = { { "hello", 5 }, 42 }, out;
    uint8_t buf[64];
    size_t n = types_serialize(t, &in, buf, sizeof buf);
    int64_t i = -7, j;
    double d = 2.5, e;
    spate_str s = { "abc", 3 }, s2;

    cr_assert_eq(n, 1 + 5 + 8);
    cr_assert_eq(types_deserialize(t, buf, n, &out), 0);
    cr_assert_eq(out.word.len, 5);
    cr_assert_eq(memcmp(out.word.data, "hello", 5), 0);
    cr_assert_eq(out.count, 42);

    n = types_serialize(spate_type_int64(), &i, buf, sizeof buf);
    cr_assert_eq(types_deserialize(spate_type_int64(), buf, n, &j), 0);
    cr_assert_eq(j, -7);
    n = types_serialize(spate_type_double(), &d, buf, sizeof buf);
    cr_assert_eq(types_deserialize(spate_type_double(), buf, n, &e), 0);
    cr_assert_eq(e, 2.5);
    /* A top-level string is its bytes: no length. */
    n = types_serialize(spate_type_string(), &s, buf, sizeof buf);
    cr_assert_eq(n, 3);
    cr_assert_eq(types_deserialize(spate_type_string(), buf, n, &s2), 0);
    cr_assert_eq(s2.len, 3);
}

Test(types, short_buffer_reports_the_size_it_needs)
{
    const struct spate_type *t = word_count_type();
    char word[300];
    struct word_count in = { { word, sizeof word }, 1 };
    uint8_t small[16];
    uint8_t big[400];

    memset(word, 'w', sizeof word);
    cr_assert_eq(types_serialize(t, &in, small, sizeof small), 2 + 300 + 8);
    cr_assert_eq(types_serialize(t, &in, big, sizeof big), 2 + 300 + 8);
}

Test(types, malformed_bytes_are_refused)
{
    const struct spate_type *t = word_count_type();
    struct word_count out;
    uint8_t bad_len[] = { 0x7f, 'a', 'b' };              /* says 127 bytes follow */
    uint8_t unterminated[] = { 0xff, 0xff, 0xff, 0xff }; /* LEB128 without end */
    uint8_t extra[] = { 1, 'a', 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    int64_t i;

    cr_assert_eq(types_deserialize(t, bad_len, sizeof bad_len, &out), SPATE_EPROTO);
    cr_assert_eq(types_deserialize(t, unterminated, sizeof unterminated, &out), SPATE_EPROTO);
    cr_assert_eq(types_deserialize(t, extra, sizeof extra, &out), SPATE_EPROTO);
    cr_assert_eq(types_deserialize(spate_type_int64(), extra, 3, &i), SPATE_EPROTO);
    cr_assert_eq(types_deserialize(t, NULL, 0, &out), SPATE_EPROTO);
}

Test(types, readable_forms)
{
    const struct spate_type *t = word_count_type();
    struct word_count wc = { { "hi", 2 }, 3 };
    char buf[64];
    double d = 0.1;
    int64_t i = -12;

    types_format(t, &wc, buf, sizeof buf);
    cr_assert_str_eq(buf, "(hi,3)");
    types_format(spate_type_double(), &d, buf, sizeof buf);
    cr_assert_str_eq(buf, "0.1");
    types_format(spate_type_int64(), &i, buf, sizeof buf);
    cr_assert_str_eq(buf, "-12");
    cr_assert_eq(types_format(t, &wc, buf, 3), 6); /* like snprintf: the full length */
    types_describe(t, buf, sizeof buf);
    cr_assert_str_eq(buf, "(string,int64)");
}

Test(types, key_bytes_are_views_when_possible)
{
    spate_str s = { "key", 3 };
    int64_t i = 5;
    uint8_t scratch[8];
    spate_bytes b = types_key_bytes(spate_type_string(), &s, scratch, sizeof scratch);
    const struct spate_type *t = word_count_type();
    struct word_count wc = { { "longer than eight", 17 }, 1 };

    cr_assert_eq(b.data, s.data);
    cr_assert_eq(b.len, 3);
    b = types_key_bytes(spate_type_int64(), &i, scratch, sizeof scratch);
    cr_assert_eq(b.data, &i);
    /* A tuple key that does not fit is never cut: the caller gets its size. */
    b = types_key_bytes(t, &wc, scratch, sizeof scratch);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 1 + 17 + 8);
}

static size_t
point_ser(const void *rec, uint8_t *out, size_t cap)
{
    const int32_t *p = rec;

    if (cap >= 2) {
        out[0] = (uint8_t)p[0];
        out[1] = (uint8_t)p[1];
    }
    return 2;
}

static int
point_de(const uint8_t *b, size_t len, void *rec)
{
    int32_t *p = rec;

    if (len != 2)
        return -1;
    p[0] = b[0];
    p[1] = b[1];
    return 0;
}

Test(types, custom_types_inside_tuples)
{
    spate_type_def def = { "point", 1, 8, point_ser, point_de, NULL };
    struct spate_type *pt = types_new_custom(&def);
    const struct spate_type *fields[] = { pt, spate_type_string() };
    struct spate_type *t = types_new_tuple(2, fields);
    struct {
        int32_t p[2];
        spate_str s;
    } in = { { 3, 4 }, { "z", 1 } }, out;
    uint8_t buf[64];
    size_t n = types_serialize(t, &in, buf, sizeof buf);

    cr_assert_eq(n, 1 + 2 + 1);
    cr_assert_eq(types_deserialize(t, buf, n, &out), 0);
    cr_assert_eq(out.p[0], 3);
    cr_assert_eq(out.p[1], 4);
    cr_assert_eq(out.s.len, 1);
    types_free(t);
    types_free(pt);
}

/* A SQL row: field 0 the NULL bitmap, the fields after it; it travels as
 * any tuple and reads NULL where its bit is set. */
struct sql_row {
    uint64_t nulls;
    int64_t id;
    spate_str name;
    double score;
};

Test(types, sql_rows_carry_their_nulls)
{
    const struct spate_type *fields[] = { spate_type_int64(), spate_type_string(),
                                          spate_type_double() };
    struct spate_type *t = types_new_row(3, fields);
    struct sql_row r = { 1u << 1, 7, { NULL, 0 }, 2.5 }, back;
    uint8_t buf[64];
    char text[64];
    size_t n;

    cr_assert(t->nullable);
    cr_assert_eq(t->nfields, 4);
    cr_assert_eq(t->size, sizeof(struct sql_row));
    cr_assert_eq(t->offsets[2], offsetof(struct sql_row, name));
    types_format(t, &r, text, sizeof text);
    cr_assert_str_eq(text, "(7,NULL,2.5)");
    n = types_serialize(t, &r, buf, sizeof buf);
    cr_assert_eq(types_deserialize(t, buf, n, &back), 0);
    cr_assert(types_row_is_null(&back, 2));
    cr_assert(!types_row_is_null(&back, 1));
    cr_assert_eq(back.id, 7);
    {
        const struct spate_type *all[] = { spate_type_int64(), spate_type_int64(),
                                           spate_type_string(), spate_type_double() };
        struct spate_type *tuple = types_new_tuple(4, all);

        /* The same layout, but a tuple is no row. */
        cr_assert(!types_same(t, tuple));
        types_free(tuple);
    }
    types_free(t);
}

/* A tuple of one string among numbers is read and written by types.c's
 * one_string shape, and by the codec specialised for it (types_codec_of):
 * both must give the same bytes as the loop over the leaves, and accept
 * and refuse the same inputs (each one cut short, each byte changed),
 * reading the same record. */
static void
same_as_the_leaf_loop(const struct spate_type *t, const void *rec)
{
    struct spate_type loop = *t;
    uint8_t a[512], b[512], in[512];
    uint8_t ra[256] __attribute__((aligned(16))), rb[256] __attribute__((aligned(16)));
    size_t n;

    struct types_codec codec = types_codec_of(t);

    cr_assert(t->one_string);
    /* Fixed runs of 0, 8 or 16 bytes: one of the specialised pairs. */
    cr_assert(codec.serialize != types_serialize && codec.deserialize != types_deserialize);
    loop.one_string = false;
    n = types_serialize(t, rec, a, sizeof a);
    cr_assert_eq(codec.serialize(t, rec, b, sizeof b), n);
    cr_assert_eq(memcmp(a, b, n), 0);
    cr_assert_eq(codec.serialize(t, rec, b, n - 1), n);
    cr_assert_eq(n, types_serialize(&loop, rec, b, sizeof b));
    cr_assert_eq(n, types_serialized_size(t, rec));
    cr_assert_eq(n, types_serialized_size(&loop, rec));
    cr_assert_eq(memcmp(a, b, n), 0);
    cr_assert_eq(types_serialize(t, rec, b, n - 1), n); /* too small: the size it needs */
    for (size_t cut = 0; cut <= n; cut++) {
        for (size_t flip = 0; flip <= cut; flip++) {
            int rc;

            memcpy(in, a, cut);
            if (flip < cut)
                in[flip] ^= 0x80;
            memset(ra, 0, sizeof ra);
            memset(rb, 0, sizeof rb);
            rc = types_deserialize(t, in, cut, ra);
            cr_assert_eq(rc, types_deserialize(&loop, in, cut, rb), "cut %zu flip %zu", cut, flip);
            if (rc == 0)
                cr_assert_eq(memcmp(ra, rb, t->size), 0, "cut %zu flip %zu", cut, flip);
            memset(ra, 0, sizeof ra);
            cr_assert_eq(codec.deserialize(t, in, cut, ra), rc, "codec: cut %zu flip %zu", cut,
                         flip);
            if (rc == 0)
                cr_assert_eq(memcmp(ra, rb, t->size), 0, "codec: cut %zu flip %zu", cut, flip);
        }
    }
    cr_assert_eq(types_deserialize(t, a, n, ra), 0);
    cr_assert_eq(types_serialize(t, ra, b, sizeof b), n);
    cr_assert_eq(memcmp(a, b, n), 0);
}

Test(types, one_string_tuples_match_the_leaf_loop)
{
    const struct spate_type *ids[] = { spate_type_int64(), spate_type_double() };
    struct spate_type *pair = types_new_tuple(2, ids);
    const struct spate_type *f1[] = { spate_type_int64(), spate_type_string() };
    const struct spate_type *f2[] = { pair, spate_type_string(), spate_type_int64(),
                                      spate_type_double() };
    const struct spate_type *f3[] = { spate_type_string(), spate_type_string() };
    const struct spate_type *f4[] = { spate_type_string(), spate_type_double() };
    const struct spate_type *row_fields[] = { spate_type_int64(), spate_type_string(),
                                              spate_type_double() };
    struct spate_type *last = types_new_tuple(2, f1), *middle = types_new_tuple(4, f2);
    struct spate_type *two = types_new_tuple(2, f3), *word = types_new_tuple(2, f4);
    struct spate_type *row = types_new_row(3, row_fields);
    char long_word[200];
    struct {
        int64_t id;
        spate_str s;
    } r1 = { -5, { "tail", 4 } };
    struct {
        int64_t a;
        double b;
        spate_str s;
        int64_t c;
        double d;
    } r2 = { 1, 2.5, { long_word, sizeof long_word }, -3, 4.25 };
    struct {
        spate_str s;
        double d;
    } r4 = { { "", 0 }, 1.5 };
    struct sql_row r5 = { 2, 7, { "x", 1 }, 0.5 };
    spate_str s = { "plain", 5 };

    memset(long_word, 'q', sizeof long_word); /* a two-byte length */
    same_as_the_leaf_loop(last, &r1);
    same_as_the_leaf_loop(middle, &r2);
    same_as_the_leaf_loop(word, &r4);
    same_as_the_leaf_loop(row, &r5);
    same_as_the_leaf_loop(word_count_type(), &(struct word_count){ { "hello", 5 }, 9 });
    same_as_the_leaf_loop(word_count_type(),
                          &(struct word_count){ { long_word, sizeof long_word }, -1 });
    same_as_the_leaf_loop(spate_type_string(), &s);
    cr_assert_not(two->one_string);
    types_free(last);
    types_free(middle);
    types_free(two);
    types_free(word);
    types_free(row);
    types_free(pair);
}

Test(types, no_bytes_read_only_as_an_empty_string)
{
    spate_str s = { "x", 1 };
    struct word_count wc;

    cr_assert_eq(types_deserialize(spate_type_string(), NULL, 0, &s), 0);
    cr_assert_eq(s.len, 0);
    cr_assert_not_null(s.data);
    cr_assert_eq(types_deserialize(word_count_type(), NULL, 0, &wc), SPATE_EPROTO);
}

/* An empty string is no bytes: asking its size with no buffer writes
 * nothing (UBSan's "zero offset to a null pointer" once, when a collection
 * source held one empty string). */
Test(types, an_empty_string_asks_no_room)
{
    spate_str empty = { "", 0 };

    cr_assert_eq(types_serialize(spate_type_string(), &empty, NULL, 0), 0);
}
