/* spate's Source API (Flink's FLIP-27 sources), for job authors and for the
 * built-in sources: a source is a split enumerator and a source reader.
 *
 * The SplitEnumerator runs on the JobMaster, one per source operator: it
 * discovers the splits (the units of work: a file range, a partition, a
 * residue of an index space), assigns them to reader subtasks when they
 * register and when they ask, takes back the splits of a failed reader
 * (addSplitsBack) and checkpoints what it has not assigned yet.
 *
 * The SourceReader runs in each subtask: it gets its splits from the
 * enumerator (or from its restored state), polls them and emits records
 * through a ReaderOutput with a timestamp and the split they came from
 * (per-split watermarks with idleness come from the source's watermark
 * strategy), and snapshots each unfinished split with its position.
 *
 * Splits and states are bytes the source defines (its serializer); spate
 * stores them in checkpoints and carries them between the JobMaster and the
 * tasks. Every call of one enumerator comes from the JobMaster's thread,
 * every call of one reader from its task's thread; neither blocks for long.
 * See docs/api.md, "Sources and sinks". */
#ifndef SPATE_SOURCE_H
#define SPATE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>
#include <spate/export.h>
#include <spate/spate.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the split enumerator (on the JobMaster) ----------------------------- */

typedef struct spate_split_enumerator_context spate_split_enumerator_context;

/* The reader subtasks of the source. */
SPATE_API int spate_enumerator_context_parallelism(const spate_split_enumerator_context *ctx);
/* A job's source: the parameters given with spate_params (NULL when none;
 * *len set), valid while the enumerator lives. */
SPATE_API const void *spate_enumerator_context_params(const spate_split_enumerator_context *ctx,
                                                      size_t *len);
/* Assigns a split (copied) to a reader subtask; it gets it with its next
 * request. spate tracks the assignment: if the reader fails before a
 * checkpoint captured the split in its state, the split comes back through
 * add_splits_back. */
SPATE_API void spate_enumerator_context_assign_split(spate_split_enumerator_context *ctx,
                                                     int subtask, const void *split, size_t len);
/* The subtask gets no more splits: a bounded source's reader ends once its
 * splits are done. */
SPATE_API void spate_enumerator_context_signal_no_more_splits(spate_split_enumerator_context *ctx,
                                                              int subtask);
/* snapshot_state: appends bytes to the enumerator's state. */
SPATE_API void spate_enumerator_context_save_state(spate_split_enumerator_context *ctx,
                                                   const void *bytes, size_t len);

typedef struct spate_split_enumerator {
    /* A new enumerator: from state (what snapshot_state saved, of a
     * restored checkpoint or savepoint) or, when state is NULL, a fresh
     * start. config is the source's configuration (spate_source_config).
     * NULL with err set on failure (a path that cannot be read). */
    void *(*create)(spate_split_enumerator_context *ctx, const void *config, const void *state,
                    size_t state_len, spate_error *err);
    /* A reader subtask started (or restarted). May be NULL. */
    void (*add_reader)(void *enumerator, int subtask);
    /* A reader asked for a split (spate_reader_context_request_split). */
    void (*handle_split_request)(void *enumerator, int subtask);
    /* A split assigned to subtask since the checkpoint being restored,
     * which the restarting reader will not have: assign it again. */
    void (*add_split_back)(void *enumerator, int subtask, const void *split, size_t len);
    /* The splits not assigned yet, and whatever else a restore needs,
     * through spate_enumerator_context_save_state. */
    void (*snapshot_state)(void *enumerator, spate_split_enumerator_context *ctx);
    void (*close)(void *enumerator);
} spate_split_enumerator;

/* ---- the source reader (in each subtask) ---------------------------------- */

typedef struct spate_source_reader_context spate_source_reader_context;
typedef struct spate_reader_output spate_reader_output;

SPATE_API int spate_reader_context_subtask(const spate_source_reader_context *ctx);
SPATE_API int spate_reader_context_parallelism(const spate_source_reader_context *ctx);
/* A job's source: the parameters given with spate_params, as for the
 * enumerator. */
SPATE_API const void *spate_reader_context_params(const spate_source_reader_context *ctx,
                                                  size_t *len);
/* Asks the enumerator for splits (Flink's sendSplitRequest): before the
 * next poll_next, the reader gets add_split for each split assigned to it
 * and no_more_splits once the enumerator said so. */
SPATE_API void spate_reader_context_request_split(spate_source_reader_context *ctx);
/* snapshot_state: one unfinished split with its position. */
SPATE_API void spate_reader_context_save_split(spate_source_reader_context *ctx, const void *split,
                                               size_t len);

/* Emits a record of the source's type (copied downstream before it
 * returns) read from the reader's split number `split` (the reader's own
 * small number, for per-split watermarks), with timestamp_ms or
 * SPATE_NO_TIMESTAMP (the watermark strategy's timestamp function then
 * gives it one). */
SPATE_API void spate_reader_output_collect(spate_reader_output *out, uint32_t split,
                                           const void *record, int64_t timestamp_ms);

typedef enum spate_input_status {
    SPATE_INPUT_MORE_AVAILABLE,    /* call poll_next again */
    SPATE_INPUT_NOTHING_AVAILABLE, /* nothing now: called again shortly, or when splits come */
    SPATE_INPUT_END_OF_INPUT,      /* no more splits will come and every one is done */
    SPATE_INPUT_ERROR,             /* err says what failed; the task fails */
} spate_input_status;

typedef struct spate_source_reader {
    /* A reader for the subtask of ctx. NULL with err set on failure. */
    void *(*create)(spate_source_reader_context *ctx, const void *config, spate_error *err);
    /* A split: one the enumerator assigned, or one of the reader's restored
     * state (before the first poll; on rescaling, spread over the new
     * subtasks). -1 with err set when its bytes are malformed. */
    int (*add_split)(void *reader, const void *split, size_t len, spate_error *err);
    /* The enumerator assigns no more splits to this reader. May be NULL. */
    void (*no_more_splits)(void *reader);
    /* Emits at most budget records through out. */
    spate_input_status (*poll_next)(void *reader, spate_reader_output *out, int budget,
                                    spate_error *err);
    /* Each unfinished split and its position after the last record
     * emitted, through spate_reader_context_save_split. */
    void (*snapshot_state)(void *reader, int64_t checkpoint_id, spate_source_reader_context *ctx);
    /* Checkpoint checkpoint_id completed. May be NULL. */
    void (*checkpoint_complete)(void *reader, int64_t checkpoint_id);
    void (*close)(void *reader);
} spate_source_reader;

/* A source: its enumerator and its reader (Flink's Source). A job's
 * source is a static const spate_source in the job library: the JobMaster
 * loads the library to run its enumerator. */
typedef struct spate_source {
    const spate_split_enumerator *enumerator;
    const spate_source_reader *reader;
} spate_source;

/* A stream of type read by source (Flink's env.fromSource), with its
 * parameters given by spate_params on the stream returned; event time
 * from spate_source_with_watermarks. config is NULL for a job's source
 * (the built-in ones get theirs). */
SPATE_API spate_stream *spate_source_from(spate_env *env, const spate_source *source,
                                          const spate_type *type);

#ifdef __cplusplus
}
#endif

#endif
