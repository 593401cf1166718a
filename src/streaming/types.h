/* Record types (spate_type): the built-in int64, double and string, tuples of
 * types, and user types; their in-memory layout, serialized form, readable
 * form and key bytes. Types are immutable once built: any thread may use
 * them. Built-ins are static; tuples and user types belong to their
 * environment (job graph building) or to the task that decoded them. */
#ifndef SPATE_STREAMING_TYPES_H
#define SPATE_STREAMING_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/spate.h>

enum type_kind {
    TYPE_INT64,
    TYPE_DOUBLE,
    TYPE_STRING,
    TYPE_TUPLE,
    TYPE_CUSTOM,
};

struct spate_type {
    enum type_kind kind;
    const char *name; /* stable: recorded with state and checkpoints */
    int version;
    size_t size;  /* in memory */
    size_t align; /* in memory */
    /* The serialized form is the in-memory bytes: no pointers inside. */
    bool plain;
    /* TYPE_TUPLE */
    /* A SQL row (types_new_row): field 0 is an int64 whose bit i-1 says
     * field i is NULL (its value then zero); serialized as any tuple. */
    bool nullable;
    int nfields;
    const struct spate_type **fields;
    size_t *offsets;
    /* TYPE_CUSTOM */
    spate_serialize_fn serialize;
    spate_deserialize_fn deserialize;
    spate_format_fn format;
    /* The serialized form as a flat list of leaf values (a tuple's nested
     * fields in order), so that records are written and read by one loop
     * rather than a recursion per field. */
    struct type_leaf *leaves;
    int nleaves;
    /* A tuple of one string among fixed-size leaves (numbers, plain user
     * types), those before it and those after it each contiguous in memory
     * (a word and its count, a row with one string): serialized by three
     * copies and no loop. Made with the type, once. */
    bool one_string;
    struct type_one_string {
        uint32_t pre_off, pre_len; /* the fixed leaves before the string */
        uint32_t str_off;
        uint32_t post_off, post_len; /* those after it */
        bool str_last;               /* no length prefix */
    } str1;
};

struct type_leaf {
    enum type_kind kind; /* never TYPE_TUPLE */
    uint32_t offset;     /* in the record */
    bool last;           /* the record's last value: no length prefix */
    const struct spate_type *custom;
};

/* Serializes rec into out (cap bytes); returns the length, or the length it
 * needs when that exceeds cap. */
size_t types_serialize(const struct spate_type *t, const void *rec, uint8_t *out, size_t cap);
/* The length types_serialize will give, without writing. */
size_t types_serialized_size(const struct spate_type *t, const void *rec);
/* Where the value at field_offset (a leaf: number, string or user type)
 * starts in rec's serialized form. */
size_t types_serialized_offset(const struct spate_type *t, const void *rec, size_t field_offset);
/* Reads len bytes into rec (t->size bytes of storage); strings point into
 * bytes. 0, or SPATE_EPROTO when the bytes are malformed. */
/* How far from the end of any serialized record the value at field_offset
 * (a leaf) starts, when that leaf and every one after it have a fixed size
 * (numbers, plain user types); 0 when they do not. */
size_t types_serialized_tail(const struct spate_type *t, size_t field_offset);
int types_deserialize(const struct spate_type *t, const uint8_t *bytes, size_t len, void *rec);
/* types_serialize and types_deserialize specialised for one type, chosen
 * once by whoever reads or writes many of its records (an exchange, a task's
 * input, a keyed sum's state): for a tuple of one string among fixed runs of
 * 0, 8 or 16 bytes (a word and its count), copies of constant size and no
 * branch on the type; else the general functions. Same contracts as those. */
typedef size_t (*types_serialize_fn)(const struct spate_type *t, const void *rec, uint8_t *out,
                                     size_t cap);
typedef int (*types_deserialize_fn)(const struct spate_type *t, const uint8_t *bytes, size_t len,
                                    void *rec);
struct types_codec {
    types_serialize_fn serialize;
    types_deserialize_fn deserialize;
};
struct types_codec types_codec_of(const struct spate_type *t);
/* Writes the readable form (Flink's: tuples as "(a,b)"), like snprintf. */
int types_format(const struct spate_type *t, const void *rec, char *buf, size_t cap);
/* The key bytes of a whole record: a view into rec when it can be (strings,
 * numbers), else its serialized form in scratch; when that needs more than
 * cap bytes, data is NULL and len is what it needs. */
spate_bytes types_key_bytes(const struct spate_type *t, const void *rec, void *scratch, size_t cap);
/* Whether records of t can be keys by value (no user type without plain bytes). */
bool types_keyable(const struct spate_type *t);

/* A tuple type of the given fields (allocated; free with types_free). */
struct spate_type *types_new_tuple(int n, const struct spate_type *const *fields);
/* A SQL row of n nullable fields: a tuple of n + 1, the NULL bitmap first
 * (at most 63 fields). */
struct spate_type *types_new_row(int n, const struct spate_type *const *fields);
#define TYPES_ROW_MAX_FIELDS 63

/* Whether field i (1-based, as in the tuple) of a row record is NULL. */
static inline bool
types_row_is_null(const void *rec, int i)
{
    return (*(const uint64_t *)rec >> (i - 1)) & 1;
}

struct spate_type *types_new_custom(const spate_type_def *def);
/* Frees a type made by types_new_*; built-ins are ignored. */
void types_free(struct spate_type *t);
/* Whether a and b describe the same records. */
bool types_same(const struct spate_type *a, const struct spate_type *b);
/* One line that names the type, e.g. "(string,int64)". */
int types_describe(const struct spate_type *t, char *buf, size_t cap);

#endif
