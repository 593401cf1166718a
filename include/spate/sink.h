/* spate's Sink API (Flink's SinkV2 TwoPhaseCommittingSink), for job authors
 * and for the built-in sinks: a sink is a writer and a committer.
 *
 * The SinkWriter runs in each subtask: it takes the records, and at each
 * checkpoint barrier (prepare_commit) makes what it wrote since the last
 * one ready to commit without making it visible (a closed hidden file, a
 * flushed open transaction) and hands spate the committables that name it.
 * spate keeps them in the operator's checkpointed state.
 *
 * The Committer runs in the same subtask: once the checkpoint completes,
 * spate gives it each committable of that checkpoint (and of earlier ones
 * not committed yet); it makes it visible (renames the file, commits the
 * transaction). A commit must be idempotent: after a failure spate gives
 * again committables that may have been committed already. It answers
 * committed, retry later (the committable is given again at the next
 * checkpoint's completion) or failed (the task fails; err says why).
 *
 * Recovery: a subtask restored from a checkpoint or savepoint first commits
 * the committables that checkpoint holds (it completed), then creates its
 * writer, which aborts what earlier attempts left that no checkpoint
 * captured (spate_sink_context_restored, spate_sink_context_attempt say
 * which case it is): Flink's abortLingeringTransactions.
 *
 * Committables are bytes the sink defines. Every call comes from the task's
 * thread. See docs/api.md, "Sources and sinks". */
#ifndef SPATE_SINK_H
#define SPATE_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>
#include <spate/export.h>
#include <spate/spate.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spate_sink_context spate_sink_context;

SPATE_API int spate_sink_context_subtask(const spate_sink_context *ctx);
SPATE_API int spate_sink_context_parallelism(const spate_sink_context *ctx);
/* 0 on the job's first run of the subtask, counting restarts. */
SPATE_API int spate_sink_context_attempt(const spate_sink_context *ctx);
/* Whether the subtask restored a checkpoint or savepoint (its committables
 * are committed before the writer is created). */
SPATE_API bool spate_sink_context_restored(const spate_sink_context *ctx);
/* A job's sink: the parameters given with spate_params on the sink's
 * stream (NULL when none; *len set). */
SPATE_API const void *spate_sink_context_params(const spate_sink_context *ctx, size_t *len);
/* prepare_commit: one committable (copied) for the checkpoint. */
SPATE_API void spate_sink_context_save_committable(spate_sink_context *ctx, const void *bytes,
                                                   size_t len);
/* snapshot_state: the writer's own state (copied), one element or more
 * (Flink's StatefulSinkWriter). */
SPATE_API void spate_sink_context_save_writer_state(spate_sink_context *ctx, const void *bytes,
                                                    size_t len);
/* In the writer's create after a restore: the writer states of every
 * writer subtask of the restored checkpoint (union: each subtask gets them
 * all, whatever the parallelisms), element i of n; NULL past the last. */
SPATE_API size_t spate_sink_context_writer_states(const spate_sink_context *ctx);
SPATE_API const void *spate_sink_context_writer_state(const spate_sink_context *ctx, size_t i,
                                                      size_t *len);

/* The checkpoint id prepare_commit gets at the end of bounded input: what
 * it prepares is committed at once. */
#define SPATE_END_OF_INPUT INT64_MAX

typedef struct spate_sink_writer {
    /* A writer for the subtask of ctx, created after the restored
     * committables were committed: it aborts the leftovers of earlier
     * attempts. config is the sink's configuration (NULL for a job's
     * sink). NULL with err set on failure. */
    void *(*create)(spate_sink_context *ctx, const void *config, spate_error *err);
    /* One record of the stream's type, with its timestamp or
     * SPATE_NO_TIMESTAMP. -1 with err set on failure (the task fails). */
    int (*write)(void *writer, const void *record, int64_t timestamp_ms, spate_error *err);
    /* A barrier of checkpoint_id (or SPATE_END_OF_INPUT): everything
     * written so far is made ready to commit, its committables given with
     * spate_sink_context_save_committable (none when nothing was written).
     * -1 with err set on failure. */
    int (*prepare_commit)(void *writer, int64_t checkpoint_id, spate_sink_context *ctx,
                          spate_error *err);
    /* After prepare_commit at a barrier: the writer's own state, through
     * spate_sink_context_save_writer_state. May be NULL: a writer without
     * state. */
    void (*snapshot_state)(void *writer, int64_t checkpoint_id, spate_sink_context *ctx);
    /* Closes the writer; what it has not prepared stays uncommitted. */
    void (*close)(void *writer);
} spate_sink_writer;

/* Flink's CommitRequest outcomes. */
typedef enum spate_commit_result {
    SPATE_COMMIT_OK,          /* committed (or found committed) */
    SPATE_COMMIT_RETRY_LATER, /* a passing fault: given again at the next completion */
    SPATE_COMMIT_FAILED,      /* err says why; the task fails */
} spate_commit_result;

typedef struct spate_committer {
    /* May be NULL: the committer then has no object of its own. */
    void *(*create)(spate_sink_context *ctx, const void *config, spate_error *err);
    /* Makes one committable visible; idempotent. */
    spate_commit_result (*commit)(void *committer, const void *committable, size_t len,
                                  spate_error *err);
    /* May be NULL. */
    void (*close)(void *committer);
} spate_committer;

/* A two-phase-commit sink (Flink's TwoPhaseCommittingSink). A job's sink is
 * a static const spate_committing_sink in the job library. */
typedef struct spate_committing_sink {
    const spate_sink_writer *writer;
    const spate_committer *committer;
} spate_committing_sink;

/* Writes the stream to sink (Flink's sinkTo), exactly once with
 * checkpoints; its writer and committer get the sink's spate_params. */
SPATE_API spate_stream *spate_sink_committing(spate_stream *in, const spate_committing_sink *sink);

#ifdef __cplusplus
}
#endif

#endif
