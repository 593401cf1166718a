/* The whole interface between spate and a connector plugin library
 * (libspate_<name>.so, loaded by connector_factory.c when a job names the
 * connector): plain C, no spate type crosses it, so a plugin links its own
 * client library and libc only. A source is a split reader (Flink's
 * SplitReader: the plugin fetches the records of its splits and snapshots
 * their positions; the engine's named_source.c turns bytes into records,
 * keeps the splits in operator state and emits); a sink is a writer and a
 * committer (SinkV2's SinkWriter and Committer: committables made at each
 * barrier, committed when the checkpoint completes, recovered on restore;
 * the engine's named_sink.c serializes the records and keeps the
 * committables in operator state). Every call of one reader or writer comes
 * from its task thread. */
#ifndef SPATE_CONNECTORS_CONNECTOR_PLUGIN_H
#define SPATE_CONNECTORS_CONNECTOR_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONNECTOR_ABI_VERSION 4
/* The plugin's entry point: const struct connector_plugin *fn(void). */
#define CONNECTOR_PLUGIN_SYMBOL "spate_connector_plugin"

enum connector_log_level { CONNECTOR_LOG_ERROR, CONNECTOR_LOG_WARN, CONNECTOR_LOG_INFO };

/* What a reader or writer is made for: one subtask of one operator. */
struct connector_context {
    /* Every option the job gave the connector: key, value, key, value, ...
     * (2 * noptions strings); the plugin rejects a key it does not know. */
    const char *const *options;
    size_t noptions;
    const char *operator_name;
    int subtask;
    int parallelism;
    int attempt; /* 0 on the first run, counting restarts */
    bool checkpointing;
    /* Logs one line (the plugin's own and its client library's). */
    void (*log)(void *log_arg, enum connector_log_level level, const char *msg);
    void *log_arg;
};

/* A record a reader fetched; its bytes stay valid until the next fetch. */
struct connector_record {
    const void *key; /* NULL: none */
    size_t key_len;
    const void *value; /* NULL: none (a tombstone) */
    size_t value_len;
    int64_t timestamp_ms; /* INT64_MIN: none */
    const char *split;    /* its split, for messages: "topic 'in' partition 2" */
    int64_t position;     /* its place in the split: an offset */
    uint32_t split_id;    /* the reader's small number for its split (per-split watermarks) */
};

/* Hands the engine one element of state (a split, a committable). */
typedef void connector_add_fn(void *arg, const void *bytes, size_t len);
typedef void connector_emit_fn(void *arg, const struct connector_record *rec);

enum connector_fetch {
    CONNECTOR_FETCH_MORE,    /* call fetch again */
    CONNECTOR_FETCH_WAITING, /* nothing now: call again after *wait_ms */
    CONNECTOR_FETCH_END,     /* bounded: every split is done */
};

struct connector_source_ops {
    /* Checks the options as open would, reaching no service: the
     * JobManager calls it when a job is submitted (subtask 0 of the
     * source's parallelism, attempt 0), so that a bad option refuses the
     * submission instead of failing the tasks. 0, or -1 with err set.
     * May be NULL. */
    int (*check)(const struct connector_context *ctx, char *err, size_t errlen);
    /* A reader, or NULL with err set (a bad option, an unreachable
     * service). Fetches nothing before start. */
    void *(*open)(const struct connector_context *ctx, char *err, size_t errlen);
    /* A split the subtask's restored state holds, before start: union
     * state, every subtask gets every split of the checkpoint and keeps
     * those it owns. 0, or -1 with err set. */
    int (*add_split)(void *reader, const void *split, size_t len, char *err, size_t errlen);
    /* Before the first fetch: restored says whether the job resumed from a
     * checkpoint or savepoint (splits it does not name then are new ones,
     * read from their start); otherwise the reader starts as its options
     * say. 0, or -1 with err set. */
    int (*start)(void *reader, bool restored, char *err, size_t errlen);
    /* Calls emit for at most max records; -1 with err set on failure. */
    int (*fetch)(void *reader, int max, connector_emit_fn *emit, void *arg, int *wait_ms,
                 enum connector_fetch *status, char *err, size_t errlen);
    /* The splits and their positions after the last record fetched. */
    void (*snapshot)(void *reader, int64_t checkpoint_id, connector_add_fn *add, void *arg);
    /* Checkpoint checkpoint_id completed (offsets go back to the group). */
    void (*checkpoint_complete)(void *reader, int64_t checkpoint_id);
    void (*close)(void *reader);
    /* A file descriptor that turns readable when records arrive, asked
     * once after start: a WAITING reader's task wakes on it at once
     * instead of at *wait_ms (which still bounds the wait). The reader
     * owns it and empties it in fetch. -1, or NULL: *wait_ms only. */
    int (*wait_fd)(void *reader);
};

struct connector_sink_ops {
    /* Checks the options as open would, reaching no service: the
     * JobManager calls it when a job is submitted (subtask 0 of the
     * sink's parallelism, attempt 0), so that a bad option refuses the
     * submission instead of failing the tasks. 0, or -1 with err set.
     * May be NULL. */
    int (*check)(const struct connector_context *ctx, char *err, size_t errlen);
    void *(*open)(const struct connector_context *ctx, char *err, size_t errlen);
    /* A committable of the restored state, before any write: committed if
     * its checkpoint had completed, else aborted. 0, or -1 with err set. */
    int (*recover)(void *writer, const void *committable, size_t len, char *err, size_t errlen);
    /* One record (value NULL: a tombstone, an upsert sink's delete of
     * key); -1 with err set on failure. */
    int (*write)(void *writer, const void *key, size_t key_len, const void *value, size_t value_len,
                 int64_t timestamp_ms, char *err, size_t errlen);
    /* A barrier of checkpoint_id: everything written so far is flushed and
     * made ready to commit; its committables go to add. -1 with err set. */
    int (*prepare_commit)(void *writer, int64_t checkpoint_id, connector_add_fn *add, void *arg,
                          char *err, size_t errlen);
    /* Checkpoint checkpoint_id completed: commits what was prepared for it
     * and before. -1 with err set. */
    int (*commit)(void *writer, int64_t checkpoint_id, char *err, size_t errlen);
    /* The input ended: flushes and commits everything. -1 with err set. */
    int (*finish)(void *writer, char *err, size_t errlen);
    void (*close)(void *writer);
};

struct connector_plugin {
    int abi_version; /* CONNECTOR_ABI_VERSION */
    const char *name;
    const struct connector_source_ops *source; /* NULL: no source */
    const struct connector_sink_ops *sink;     /* NULL: no sink */
};

typedef const struct connector_plugin *(*connector_plugin_entry_fn)(void);

#endif
