/* The keyed state backend interface (Flink's KeyedStateBackend with its
 * InternalTimerService): the states an operator instance declares, scoped
 * by the current key and namespace, its timers, and their snapshots by key
 * group. A backend is a table of functions (keyed_state_backend_ops); the
 * heap backend (heap_keyed_backend.h) is the first, and exports an inline
 * path for the per-record calls besides. Task thread only, but for a
 * snapshot's asynchronous part, which runs on the snapshot thread. */
#ifndef SPATE_STATE_KEYED_STATE_BACKEND_H
#define SPATE_STATE_KEYED_STATE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/spate.h>

#include "proto/checkpoint.pb-c.h"

/* A state's kind (Flink's StateDescriptor.Type). Written into checkpoints
 * (StateMeta.kind): the numbers never change. */
enum state_kind {
    STATE_VALUE,
    STATE_LIST,
    STATE_MAP,
    STATE_REDUCING,
    STATE_AGGREGATING,
};

/* Flink's word for a kind ("value", "list", ...), or "unknown" for a
 * number no spate wrote. */
static inline const char *
state_kind_name(int kind)
{
    static const char *const names[] = { "value", "list", "map", "reducing", "aggregating" };

    return kind >= 0 && kind < (int)(sizeof names / sizeof names[0]) ? names[kind] : "unknown";
}

enum state_scope {
    SCOPE_KEYED,
    SCOPE_OPERATOR, /* list state per instance, split on rescale */
    SCOPE_UNION,    /* list state per instance, unioned on rescale */
    SCOPE_BROADCAST,
};

/* How a backend turns a state's values (or a map state's keys) into bytes
 * and back (Flink's TypeSerializer); type is the serializer's own. */
struct state_serializer {
    size_t (*size)(const void *type, const void *value);
    /* Writes at most cap bytes; returns the serialized size. */
    size_t (*write)(const void *type, const void *value, uint8_t *out, size_t cap);
    /* 0, or -1 when the bytes are malformed. */
    int (*read)(const void *type, const uint8_t *bytes, size_t len, void *value);
};

/* A state's value (or key) type as the backend sees it. */
struct state_type {
    const struct state_serializer *ser; /* NULL: none (a map state's key only) */
    const void *type;
    const char *name; /* checked against a checkpoint's on restore */
    int version;
    uint32_t size, align; /* in memory */
    bool plain;           /* the serialized bytes are the value in memory */
};

/* A state to create (Flink's StateDescriptor). The strings and functions
 * are borrowed for the backend's life. */
struct state_descriptor {
    const char *name;
    enum state_kind kind;
    enum state_scope scope;
    bool timestamped; /* list: each element keeps its timestamp (window buffers) */
    int64_t ttl_ms;   /* 0: none; else processing time since the last write */
    struct state_type value;
    struct state_type key; /* map state */
    spate_reduce_fn reduce;
    spate_aggregate agg;
};

/* The current key and namespace (Flink's InternalKeyContext plus the
 * current namespace), which the caller owns and sets before state calls:
 * the key's bytes, its hash (core/key_group.h: its low bits are the key
 * group), and the namespace (a window), or none (ns_len 0). */
struct state_key_context {
    spate_bytes key;
    uint64_t key_hash;
    const void *ns;
    size_t ns_len;
};

/* Makes key (bytes and hash) and namespace current for state and timers. */
static inline void
keyed_set_key(struct state_key_context *k, spate_bytes key, uint64_t hash, const void *ns,
              size_t ns_len)
{
    k->key = key;
    k->key_hash = hash;
    k->ns = ns;
    k->ns_len = ns_len;
}

struct keyed_state_backend;

/* One state of a backend (spate.h's spate_state): each backend's states
 * begin with this. */
struct spate_state {
    struct keyed_state_backend *backend;
    struct state_descriptor desc;
};

/* A live timer, as fire gets it. */
struct timer {
    int64_t timestamp;
    uint64_t key_hash;
    uint32_t key_len, ns_len;
    bool event_time;
    uint8_t data[]; /* key bytes, then namespace bytes */
};

/* A timer is due; its key and namespace are current. */
typedef void (*keyed_timer_fire_fn)(void *owner, const struct timer *t);

/* What a backend is made for: one operator instance. */
struct keyed_backend_config {
    const struct state_descriptor *states; /* copied */
    int nstates;
    struct state_key_context *key; /* the current key: the caller's */
    spate_ctx *user_ctx;           /* what reduce and aggregate functions get */
    int max_parallelism, parallelism, subtask;
    /* Processing-time timers: the earliest wake-up is set here
     * (CLOCK_MONOTONIC ns; 0: none), for the task to call
     * on_processing_time then. */
    uint64_t *wake_ns;
    void *owner; /* what timers' fire gets */
    /* Processing time for TTL, in ms (NULL: the wall clock; tests put in
     * their own). */
    int64_t (*now_ms)(void);
    /* A state call failed where it cannot return an error (RocksDB's disk
     * full): the task fails with message (NULL: the message is logged). */
    void (*fail)(spate_ctx *ctx, const char *message);
};

/* Serialized bytes, growing. */
struct byte_buf {
    uint8_t *data;
    size_t len, cap;
};

void byte_buf_put(struct byte_buf *b, const void *p, size_t n);

/* What a snapshot is for. */
struct keyed_snapshot_request {
    int64_t checkpoint_id;
    /* Where an incremental checkpoint puts the files later checkpoints
     * share (the job's shared folder); NULL: a savepoint, canonical and
     * whole (a job may move to the other backend across it). */
    const char *shared_dir;
};

struct keyed_state_snapshot;
struct state_file_reader;
struct state_file_writer;

struct keyed_state_backend_ops {
    const char *name;
    /* The state named name (NULL when not declared). */
    struct spate_state *(*state)(struct keyed_state_backend *b, const char *name);

    /* Of the current key and namespace. Value, reducing and aggregating
     * states: */
    bool (*value_get)(struct spate_state *st, void *out);
    void (*value_update)(struct spate_state *st, const void *value);
    /* Reducing and aggregating states: the stored value itself, an
     * aggregate's accumulator rather than its result (Flink's
     * InternalAppendingState.getInternal; value_update is its
     * updateInternal). Merging windows move accumulators with it. */
    bool (*value_get_internal)(struct spate_state *st, void *out);
    /* List, reducing and aggregating states: adds (merges) value, with its
     * timestamp in timestamped lists; true when the key and namespace had
     * no value (a window new for the key), or, for a list that a backend
     * appends to without reading it (RocksDB's), when it may have had
     * none: callers register timers with it, deduplicated anyway. */
    bool (*add)(struct spate_state *st, int64_t timestamp, const void *value);
    void (*clear)(struct spate_state *st);
    bool (*exists)(struct spate_state *st);
    /* Lists: iteration (spate_iter's list fields), and evictors' retain,
     * which keeps the elements whose keep[i] is set. */
    void (*list_iter)(struct spate_state *st, spate_iter *it);
    bool (*list_next)(spate_iter *it, void *out, int64_t *timestamp);
    void (*list_retain)(struct spate_state *st, const bool *keep, size_t count);
    /* Map states. */
    bool (*map_get)(struct spate_state *st, const void *key, void *value);
    void (*map_put)(struct spate_state *st, const void *key, const void *value);
    bool (*map_remove)(struct spate_state *st, const void *key);
    bool (*map_next)(spate_iter *it, void *key, void *value);

    /* Timers of the current key and namespace, one per timestamp. */
    void (*register_timer)(struct keyed_state_backend *b, bool event_time, int64_t timestamp);
    void (*delete_timer)(struct keyed_state_backend *b, bool event_time, int64_t timestamp);
    /* Fires, in timestamp order, the timers due at time (event time: the
     * watermark; processing time: the wall clock in ms). */
    void (*advance)(struct keyed_state_backend *b, bool event_time, int64_t time,
                    keyed_timer_fire_fn fire);
    /* The wake-up came (now: monotonic ns): fires what is due by the wall
     * clock and sets the next wake-up. */
    void (*on_processing_time)(struct keyed_state_backend *b, uint64_t now,
                               keyed_timer_fire_fn fire);

    /* Snapshots (state/state_file.h has the file): the synchronous part
     * freezes the state (task thread, between records); the rest runs on
     * the snapshot thread. snapshot_write writes the keyed states key
     * group by key group, letting go of each once written, and returns
     * the section's handle (path: the file's, for the handle);
     * snapshot_write_operator adds the operator and broadcast states to h,
     * an element per entry; snapshot_metas describes the keyed states for
     * the acknowledgement; snapshot_release frees it, written or not.
     * checkpoint_complete (NULL: nothing to do) says that checkpoint id
     * completed (task thread): an incremental backend's next checkpoint
     * may reference the files it uploaded. */
    struct keyed_state_snapshot *(*snapshot)(struct keyed_state_backend *b,
                                             const struct keyed_snapshot_request *req);
    Checkpoint__KeyedStateHandle *(*snapshot_write)(struct keyed_state_snapshot *s,
                                                    struct state_file_writer *w, const char *path);
    void (*snapshot_write_operator)(struct keyed_state_snapshot *s, struct state_file_writer *w,
                                    Checkpoint__OperatorStateHandle *h);
    Checkpoint__StateMeta **(*snapshot_metas)(const struct keyed_state_snapshot *s, size_t *n);
    void (*snapshot_release)(struct keyed_state_snapshot *s);
    void (*checkpoint_complete)(struct keyed_state_backend *b, int64_t checkpoint_id);
    /* Restore (task thread, before any record): the key groups of the
     * backend's range that st's keyed handles hold, checked against the
     * declared states (op_name for the errors); and one element of an
     * operator or broadcast state (false: malformed). */
    int (*restore)(struct keyed_state_backend *b, const Checkpoint__OperatorSubtaskState *st,
                   const char *op_name, struct state_file_reader *r, spate_error *err);
    bool (*restore_element)(struct spate_state *st, const uint8_t *bytes, size_t len);
    void (*dispose)(struct keyed_state_backend *b);
};

/* A backend: each backend's struct begins with this. */
struct keyed_state_backend {
    const struct keyed_state_backend_ops *ops;
    spate_ctx *user_ctx; /* the config's */
    /* The broadcast side is being processed: broadcast state is writable
     * (the caller sets it; the state calls' callers check it). */
    bool broadcast_writable;
};

#endif
