/* Record types (types.h). Serialized form: int64 and double as their 8
 * little-endian bytes; a string as its bytes, preceded by a LEB128 length
 * unless it is the last field of the record (the record's frame gives its
 * end); a tuple as its fields in order; a plain user type as its bytes; other
 * user types through their callbacks, with a length unless last. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/util.h"
#include "streaming/types.h"

static struct type_leaf leaf_int64 = { TYPE_INT64, 0, true, NULL };
static struct type_leaf leaf_double = { TYPE_DOUBLE, 0, true, NULL };
static struct type_leaf leaf_string = { TYPE_STRING, 0, true, NULL };

static const struct spate_type type_int64 = { .kind = TYPE_INT64,
                                              .name = "int64",
                                              .version = 1,
                                              .size = 8,
                                              .align = 8,
                                              .plain = true,
                                              .leaves = &leaf_int64,
                                              .nleaves = 1 };
static const struct spate_type type_double = { .kind = TYPE_DOUBLE,
                                               .name = "double",
                                               .version = 1,
                                               .size = 8,
                                               .align = 8,
                                               .plain = true,
                                               .leaves = &leaf_double,
                                               .nleaves = 1 };
static const struct spate_type type_string = { .kind = TYPE_STRING,
                                               .name = "string",
                                               .version = 1,
                                               .size = sizeof(spate_str),
                                               .align = _Alignof(spate_str),
                                               .plain = false,
                                               .leaves = &leaf_string,
                                               .nleaves = 1,
                                               .one_string = true,
                                               .str1 = { .str_last = true } };

const spate_type *
spate_type_int64(void)
{
    return &type_int64;
}

const spate_type *
spate_type_double(void)
{
    return &type_double;
}

const spate_type *
spate_type_string(void)
{
    return &type_string;
}

size_t
spate_type_size(const spate_type *type)
{
    return type->size;
}

size_t
spate_type_field_offset(const spate_type *tuple, int i)
{
    SPATE_ASSERT(tuple->kind == TYPE_TUPLE && i >= 0 && i < tuple->nfields);
    return tuple->offsets[i];
}

/* Appends t's leaves, at base offset, to out. */
static void
flatten(const struct spate_type *t, uint32_t base, struct type_leaf **out, int *n)
{
    if (t->kind == TYPE_TUPLE) {
        for (int i = 0; i < t->nfields; i++)
            flatten(t->fields[i], base + (uint32_t)t->offsets[i], out, n);
        return;
    }
    *out = xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
    (*out)[*n] = (struct type_leaf){ t->kind, base, false, t->kind == TYPE_CUSTOM ? t : NULL };
    (*n)++;
}

/* The serialized size of a leaf whose size never changes, or 0. */
static size_t
leaf_fixed_size(const struct type_leaf *l)
{
    if (l->kind == TYPE_INT64 || l->kind == TYPE_DOUBLE)
        return 8;
    if (l->kind == TYPE_CUSTOM && l->custom->plain)
        return l->custom->size;
    return 0;
}

/* Whether leaves [from, to) are fixed-size and contiguous in memory; their
 * first offset and total size. */
static bool
fixed_run(const struct spate_type *t, int from, int to, uint32_t *off, uint32_t *len)
{
    *off = from < to ? t->leaves[from].offset : 0;
    *len = 0;
    for (int i = from; i < to; i++) {
        size_t n = leaf_fixed_size(&t->leaves[i]);

        if (n == 0 || t->leaves[i].offset != *off + *len)
            return false;
        *len += (uint32_t)n;
    }
    return true;
}

/* Sets t->one_string when t has that shape (types.h). */
static void
find_one_string(struct spate_type *t)
{
    struct type_one_string *s = &t->str1;
    int at = -1;

    for (int i = 0; i < t->nleaves; i++) {
        if (t->leaves[i].kind != TYPE_STRING)
            continue;
        if (at >= 0)
            return;
        at = i;
    }
    if (at < 0 || !fixed_run(t, 0, at, &s->pre_off, &s->pre_len) ||
        !fixed_run(t, at + 1, t->nleaves, &s->post_off, &s->post_len))
        return;
    s->str_off = t->leaves[at].offset;
    s->str_last = t->leaves[at].last;
    t->one_string = true;
}

struct spate_type *
types_new_tuple(int n, const struct spate_type *const *fields)
{
    struct spate_type *t = xcalloc(1, sizeof *t);
    size_t off = 0, align = 1;

    t->kind = TYPE_TUPLE;
    t->name = "tuple";
    t->version = 1;
    t->nfields = n;
    t->fields = xcalloc((size_t)n, sizeof *t->fields);
    t->offsets = xcalloc((size_t)n, sizeof *t->offsets);
    t->plain = true;
    for (int i = 0; i < n; i++) {
        const struct spate_type *f = fields[i];
        size_t at = (off + f->align - 1) / f->align * f->align;

        /* Padding would make the in-memory bytes differ from the wire. */
        if (at != off || !f->plain)
            t->plain = false;
        off = at;
        t->fields[i] = f;
        t->offsets[i] = off;
        off += f->size;
        align = MAX(align, f->align);
    }
    t->align = align;
    t->size = (off + align - 1) / align * align;
    if (t->size != off)
        t->plain = false; /* tail padding */
    flatten(t, 0, &t->leaves, &t->nleaves);
    t->leaves[t->nleaves - 1].last = true;
    find_one_string(t);
    return t;
}

struct spate_type *
types_new_row(int n, const struct spate_type *const *fields)
{
    const struct spate_type *all[TYPES_ROW_MAX_FIELDS + 1];
    struct spate_type *t;

    SPATE_ASSERT(n >= 1 && n <= TYPES_ROW_MAX_FIELDS);
    all[0] = &type_int64;
    for (int i = 0; i < n; i++)
        all[i + 1] = fields[i];
    t = types_new_tuple(n + 1, all);
    t->name = "row";
    t->nullable = true;
    return t;
}

struct spate_type *
types_new_custom(const spate_type_def *def)
{
    struct spate_type *t = xcalloc(1, sizeof *t);

    t->kind = TYPE_CUSTOM;
    t->name = xstrdup(def->name ? def->name : "custom");
    t->version = def->version;
    t->size = def->size;
    t->align = def->size >= 8 ? 8 : def->size >= 4 ? 4 : def->size >= 2 ? 2 : 1;
    t->plain = def->serialize == NULL;
    t->serialize = def->serialize;
    t->deserialize = def->deserialize;
    t->format = def->format;
    t->leaves = xcalloc(1, sizeof *t->leaves);
    t->leaves[0] = (struct type_leaf){ TYPE_CUSTOM, 0, true, t };
    t->nleaves = 1;
    return t;
}

void
types_free(struct spate_type *t)
{
    if (t == NULL || t == &type_int64 || t == &type_double || t == &type_string)
        return;
    if (t->kind == TYPE_CUSTOM)
        free((char *)t->name);
    free(t->fields);
    free(t->offsets);
    free(t->leaves);
    free(t);
}

/* ---- serialization ---- */

static size_t
leb128_size(uint64_t v)
{
    size_t n = 1;

    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t
leb128_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* Reads a LEB128 value of at most 10 bytes; 0 when malformed or cut short. */
static SPATE_INLINE size_t
leb128_get(const uint8_t *in, size_t len, uint64_t *v)
{
    uint64_t x = 0;

    if (likely(len > 0 && in[0] < 0x80)) {
        *v = in[0];
        return 1;
    }
    for (size_t i = 0; i < len && i < 10; i++) {
        x |= (uint64_t)(in[i] & 0x7f) << (7 * i);
        if (!(in[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    return 0;
}

/* Serialized size and bytes of one leaf value; a last value has no length
 * prefix. */
static inline size_t
ser_leaf(const struct type_leaf *l, const uint8_t *rec, uint8_t *out, size_t cap)
{
    const void *v = rec + l->offset;

    switch (l->kind) {
    case TYPE_INT64:
    case TYPE_DOUBLE:
        if (cap >= 8)
            memcpy(out, v, 8);
        return 8;
    case TYPE_STRING: {
        const spate_str *s = v;
        size_t hdr = l->last ? 0 : leb128_size(s->len);

        if (hdr + s->len <= cap) {
            if (!l->last)
                leb128_put(out, s->len);
            if (s->len)
                memcpy(out + hdr, s->data, s->len);
        }
        return hdr + s->len;
    }
    case TYPE_CUSTOM: {
        const struct spate_type *t = l->custom;
        size_t n, hdr;

        if (t->plain) {
            if (t->size <= cap)
                memcpy(out, v, t->size);
            return t->size;
        }
        if (l->last)
            return t->serialize(v, out, cap);
        /* The length goes first: ask for it, then write behind it. */
        n = t->serialize(v, NULL, 0);
        hdr = leb128_size(n);
        if (hdr + n <= cap) {
            leb128_put(out, n);
            t->serialize(v, out + hdr, n);
        }
        return hdr + n;
    }
    case TYPE_TUPLE:
        break;
    }
    return 0;
}

/* types_serialize of a one_string type. */
static inline size_t
ser_one_string(const struct type_one_string *s, const uint8_t *rec, uint8_t *out, size_t cap)
{
    const spate_str *str = (const spate_str *)(rec + s->str_off);
    size_t hdr = s->str_last ? 0 : leb128_size(str->len);
    size_t n = s->pre_len + hdr + str->len + s->post_len;

    if (n > cap || n == 0) /* n == 0: one empty string, and out may be NULL */
        return n;
    /* Inline copies (no call) for the short runs and words of most. */
    bytes_copy(out, rec + s->pre_off, s->pre_len);
    out += s->pre_len;
    if (hdr != 0)
        out += leb128_put(out, str->len);
    bytes_copy(out, str->data, str->len);
    bytes_copy(out + str->len, rec + s->post_off, s->post_len);
    return n;
}

size_t
types_serialize(const struct spate_type *t, const void *rec, uint8_t *out, size_t cap)
{
    size_t used = 0;

    if (t->one_string)
        return ser_one_string(&t->str1, rec, out, cap);

    if (t->plain && t->kind != TYPE_CUSTOM) {
        /* The bytes are the record (fixed-size fields, no padding). */
        if (cap >= t->size)
            memcpy(out, rec, t->size);
        return t->size;
    }
    for (int i = 0; i < t->nleaves; i++) {
        size_t room = used < cap ? cap - used : 0;

        used += ser_leaf(&t->leaves[i], rec, room ? out + used : NULL, room);
    }
    return used;
}

/* The serialized size of one leaf value. */
static size_t
leaf_size(const struct type_leaf *l, const uint8_t *rec)
{
    const void *v = rec + l->offset;
    size_t n;

    switch (l->kind) {
    case TYPE_INT64:
    case TYPE_DOUBLE:
        return 8;
    case TYPE_STRING:
        n = ((const spate_str *)v)->len;
        return (l->last ? 0 : leb128_size(n)) + n;
    case TYPE_CUSTOM:
        if (l->custom->plain)
            return l->custom->size;
        n = l->custom->serialize(v, NULL, 0);
        return (l->last ? 0 : leb128_size(n)) + n;
    case TYPE_TUPLE:
        break;
    }
    return 0;
}

size_t
types_serialized_size(const struct spate_type *t, const void *rec)
{
    size_t used = 0;

    if (t->plain)
        return t->size;
    if (t->one_string) {
        size_t n = ((const spate_str *)((const uint8_t *)rec + t->str1.str_off))->len;

        return t->str1.pre_len + (t->str1.str_last ? 0 : leb128_size(n)) + n + t->str1.post_len;
    }
    for (int i = 0; i < t->nleaves; i++)
        used += leaf_size(&t->leaves[i], rec);
    return used;
}

size_t
types_serialized_offset(const struct spate_type *t, const void *rec, size_t field_offset)
{
    size_t used = 0;

    for (int i = 0; i < t->nleaves && t->leaves[i].offset != field_offset; i++)
        used += leaf_size(&t->leaves[i], rec);
    return used;
}

size_t
types_serialized_tail(const struct spate_type *t, size_t field_offset)
{
    size_t tail = 0;
    int i = t->nleaves - 1;

    for (; i >= 0; i--) {
        size_t n = leaf_fixed_size(&t->leaves[i]);

        if (n == 0)
            return 0;
        tail += n;
        if (t->leaves[i].offset == field_offset)
            return tail;
    }
    return 0;
}

/* Reads one leaf value; returns the bytes it used, or SPATE_EPROTO when malformed. */
static inline ssize_t
de_leaf(const struct type_leaf *l, const uint8_t *in, size_t len, uint8_t *rec)
{
    void *v = rec + l->offset;
    uint64_t n = len;
    size_t hdr = 0;

    switch (l->kind) {
    case TYPE_INT64:
    case TYPE_DOUBLE:
        if (len < 8 || (l->last && len != 8))
            return SPATE_EPROTO;
        memcpy(v, in, 8);
        return 8;
    case TYPE_STRING:
        if (!l->last) {
            hdr = leb128_get(in, len, &n);
            if (hdr == 0 || n > len - hdr)
                return SPATE_EPROTO;
        }
        ((spate_str *)v)->data = (const char *)in + hdr;
        ((spate_str *)v)->len = (size_t)n;
        return (ssize_t)(hdr + n);
    case TYPE_CUSTOM:
        if (l->custom->plain) {
            if (len < l->custom->size || (l->last && len != l->custom->size))
                return SPATE_EPROTO;
            memcpy(v, in, l->custom->size);
            return (ssize_t)l->custom->size;
        }
        if (!l->last) {
            hdr = leb128_get(in, len, &n);
            if (hdr == 0 || n > len - hdr)
                return SPATE_EPROTO;
        }
        if (l->custom->deserialize(in + hdr, (size_t)n, v) != 0)
            return SPATE_EPROTO;
        return (ssize_t)(hdr + n);
    case TYPE_TUPLE:
        break;
    }
    return SPATE_EPROTO;
}

/* types_deserialize of a one_string type. */
static inline int
de_one_string(const struct type_one_string *s, const uint8_t *in, size_t len, uint8_t *rec)
{
    spate_str *str = (spate_str *)(rec + s->str_off);
    uint64_t n;
    size_t hdr = 0, rest;

    if (len < s->pre_len + s->post_len)
        return SPATE_EPROTO;
    rest = len - s->pre_len - s->post_len; /* the string and its length */
    n = rest;
    if (!s->str_last && ((hdr = leb128_get(in + s->pre_len, rest, &n)) == 0 || n != rest - hdr))
        return SPATE_EPROTO;
    bytes_copy(rec + s->pre_off, in, s->pre_len);
    str->data = (const char *)in + s->pre_len + hdr;
    str->len = (size_t)n;
    bytes_copy(rec + s->post_off, in + len - s->post_len, s->post_len);
    return 0;
}

int
types_deserialize(const struct spate_type *t, const uint8_t *bytes, size_t len, void *rec)
{
    static const uint8_t empty[1];
    size_t used = 0;

    if (likely(t->one_string)) {
        spate_str *str = (spate_str *)((uint8_t *)rec + t->str1.str_off);

        if (likely(bytes != NULL))
            return de_one_string(&t->str1, bytes, len, rec);
        /* No bytes: only an empty string alone reads. */
        if (len != 0 || t->str1.pre_len + t->str1.post_len != 0 || !t->str1.str_last)
            return SPATE_EPROTO;
        *str = (spate_str){ (const char *)empty, 0 };
        return 0;
    }
    if (bytes == NULL) {
        if (len != 0)
            return SPATE_EPROTO;
        bytes = empty;
    }
    if (t->plain && t->kind != TYPE_CUSTOM) {
        if (len != t->size)
            return SPATE_EPROTO;
        memcpy(rec, bytes, len);
        return 0;
    }
    for (int i = 0; i < t->nleaves; i++) {
        ssize_t got = de_leaf(&t->leaves[i], bytes + used, len - used, rec);

        if (got < 0)
            return SPATE_EPROTO;
        used += (size_t)got;
    }
    return used == len ? 0 : SPATE_EPROTO;
}

/* ---- serializers specialised per type ---- */

/* A one_string type whose fixed runs before and after its string are PRE
 * and POST bytes (0, 8 or 16): copies of constant size, one move each, and a
 * length of one byte read and written without a loop. POST is 0 exactly
 * when the string is last (no length prefix). */
/* len < min, where min may be the constant 0 (no warning that it never is). */
static inline bool
shorter_than(size_t len, size_t min)
{
    return len < min;
}

#define ONE_STRING_CODEC(PRE, POST)                                                          \
    static size_t ser_one_string_##PRE##_##POST(const struct spate_type *t, const void *rec, \
                                                uint8_t *out, size_t cap)                    \
    {                                                                                        \
        const struct type_one_string *s = &t->str1;                                          \
        const uint8_t *r = rec;                                                              \
        const spate_str *str = (const spate_str *)(r + s->str_off);                          \
        size_t len = str->len;                                                               \
        size_t hdr = (POST) == 0 ? 0 : len < 0x80 ? 1 : leb128_size(len);                    \
        size_t n = (PRE) + hdr + len + (POST);                                               \
                                                                                             \
        if (n > cap)                                                                         \
            return n;                                                                        \
        memcpy(out, r + s->pre_off, (PRE));                                                  \
        out += (PRE);                                                                        \
        if (hdr == 1)                                                                        \
            *out = (uint8_t)len;                                                             \
        else if (hdr > 1)                                                                    \
            leb128_put(out, len);                                                            \
        out += hdr;                                                                          \
        bytes_copy(out, str->data, len);                                                     \
        memcpy(out + len, r + s->post_off, (POST));                                          \
        return n;                                                                            \
    }                                                                                        \
                                                                                             \
    static int de_one_string_##PRE##_##POST(const struct spate_type *t, const uint8_t *in,   \
                                            size_t len, void *rec)                           \
    {                                                                                        \
        const struct type_one_string *s = &t->str1;                                          \
        uint8_t *r = rec;                                                                    \
        spate_str *str = (spate_str *)(r + s->str_off);                                      \
        size_t hdr = 0, rest;                                                                \
        uint64_t n;                                                                          \
                                                                                             \
        if (unlikely(in == NULL || shorter_than(len, (PRE) + (POST))))                       \
            return types_deserialize(t, in, len, rec); /* reads or says why not */           \
        rest = len - (PRE) - (POST);                                                         \
        n = rest;                                                                            \
        if ((POST) != 0) {                                                                   \
            if (likely(rest > 0 && in[PRE] < 0x80)) {                                        \
                n = in[PRE];                                                                 \
                hdr = 1;                                                                     \
            } else if ((hdr = leb128_get(in + (PRE), rest, &n)) == 0) {                      \
                return SPATE_EPROTO;                                                         \
            }                                                                                \
            if (n != rest - hdr)                                                             \
                return SPATE_EPROTO;                                                         \
        }                                                                                    \
        memcpy(r + s->pre_off, in, (PRE));                                                   \
        str->data = (const char *)in + (PRE) + hdr;                                          \
        str->len = (size_t)n;                                                                \
        memcpy(r + s->post_off, in + len - (POST), (POST));                                  \
        return 0;                                                                            \
    }

ONE_STRING_CODEC(0, 0)
ONE_STRING_CODEC(0, 8)
ONE_STRING_CODEC(0, 16)
ONE_STRING_CODEC(8, 0)
ONE_STRING_CODEC(8, 8)
ONE_STRING_CODEC(8, 16)
ONE_STRING_CODEC(16, 0)
ONE_STRING_CODEC(16, 8)
ONE_STRING_CODEC(16, 16)

#define ONE_STRING_PAIR(PRE, POST)                                  \
    {                                                               \
        ser_one_string_##PRE##_##POST, de_one_string_##PRE##_##POST \
    }

/* By the fixed runs' lengths over 8: 0, 1 or 2. */
static const struct types_codec one_string_codecs[3][3] = {
    { ONE_STRING_PAIR(0, 0), ONE_STRING_PAIR(0, 8), ONE_STRING_PAIR(0, 16) },
    { ONE_STRING_PAIR(8, 0), ONE_STRING_PAIR(8, 8), ONE_STRING_PAIR(8, 16) },
    { ONE_STRING_PAIR(16, 0), ONE_STRING_PAIR(16, 8), ONE_STRING_PAIR(16, 16) },
};

struct types_codec
types_codec_of(const struct spate_type *t)
{
    const struct type_one_string *s = &t->str1;

    if (t->one_string && s->pre_len <= 16 && s->pre_len % 8 == 0 && s->post_len <= 16 &&
        s->post_len % 8 == 0 && (s->post_len == 0) == s->str_last)
        return one_string_codecs[s->pre_len / 8][s->post_len / 8];
    return (struct types_codec){ types_serialize, types_deserialize };
}

/* ---- readable form ---- */

static int
fmt_double(double d, char *buf, size_t cap)
{
    char tmp[64];

    /* Shortest form that reads back as the same double. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d || isnan(d))
            break;
    }
    return snprintf(buf, cap, "%s", tmp);
}

int
types_format(const struct spate_type *t, const void *rec, char *buf, size_t cap)
{
    switch (t->kind) {
    case TYPE_INT64:
        return snprintf(buf, cap, "%" PRId64, *(const int64_t *)rec);
    case TYPE_DOUBLE:
        return fmt_double(*(const double *)rec, buf, cap);
    case TYPE_STRING: {
        const spate_str *s = rec;

        if (s->len < cap) {
            memcpy(buf, s->data, s->len);
            buf[s->len] = '\0';
        } else if (cap > 0) {
            memcpy(buf, s->data, cap - 1);
            buf[cap - 1] = '\0';
        }
        return (int)s->len;
    }
    case TYPE_TUPLE: {
        size_t used = 0;
        int first = t->nullable ? 1 : 0;

        for (int i = first; i <= t->nfields; i++) {
            size_t room = used < cap ? cap - used : 0;
            char *at = used < cap ? buf + used : NULL;
            int n;

            if (i == t->nfields) {
                n = snprintf(at, room, ")");
            } else {
                n = snprintf(at, room, i == first ? "(" : ",");
                used += (size_t)n;
                room = used < cap ? cap - used : 0;
                at = used < cap ? buf + used : NULL;
                if (t->nullable && types_row_is_null(rec, i))
                    n = snprintf(at, room, "NULL");
                else
                    n = types_format(t->fields[i], (const uint8_t *)rec + t->offsets[i], at, room);
            }
            used += (size_t)(n > 0 ? n : 0);
        }
        return (int)used;
    }
    case TYPE_CUSTOM:
        if (t->format)
            return t->format(rec, buf, cap);
        return snprintf(buf, cap, "%s@%p", t->name, rec);
    }
    return 0;
}

spate_bytes
types_key_bytes(const struct spate_type *t, const void *rec, void *scratch, size_t cap)
{
    spate_bytes b;

    switch (t->kind) {
    case TYPE_INT64:
    case TYPE_DOUBLE:
        b.data = rec;
        b.len = 8;
        return b;
    case TYPE_STRING:
        b.data = ((const spate_str *)rec)->data;
        b.len = ((const spate_str *)rec)->len;
        return b;
    default:
        if (t->plain) {
            b.data = rec;
            b.len = t->size;
            return b;
        }
        /* Never cut a key: distinct keys with a common prefix would merge. */
        b.len = types_serialize(t, rec, scratch, cap);
        b.data = b.len <= cap ? scratch : NULL;
        return b;
    }
}

bool
types_keyable(const struct spate_type *t)
{
    return t->kind != TYPE_CUSTOM || t->plain || t->serialize != NULL;
}

int
types_describe(const struct spate_type *t, char *buf, size_t cap)
{
    size_t used;

    if (t->kind != TYPE_TUPLE)
        return snprintf(buf, cap, "%s", t->name);
    used = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < t->nfields; i++) {
        if (i > 0 && used < cap)
            used += (size_t)snprintf(buf + used, cap - used, ",");
        if (used < cap)
            used += (size_t)types_describe(t->fields[i], buf + used, cap - used);
    }
    if (used < cap)
        used += (size_t)snprintf(buf + used, cap - used, ")");
    return (int)used;
}

bool
types_same(const struct spate_type *a, const struct spate_type *b)
{
    if (a == b)
        return true;
    if (a->kind != b->kind || a->size != b->size)
        return false;
    if (a->kind == TYPE_TUPLE) {
        if (a->nfields != b->nfields || a->nullable != b->nullable)
            return false;
        for (int i = 0; i < a->nfields; i++)
            if (!types_same(a->fields[i], b->fields[i]))
                return false;
        return true;
    }
    if (a->kind == TYPE_CUSTOM)
        return strcmp(a->name, b->name) == 0 && a->version == b->version &&
               a->serialize == b->serialize && a->deserialize == b->deserialize;
    return true;
}
