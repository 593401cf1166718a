/* The operator of the Sink API's sinks (Flink's SinkWriterOperator and
 * CommitterOperator in one): runs a spate_committing_sink
 * (include/spate/sink.h) in its subtask. Records go to the writer; at each
 * barrier the writer prepares its committables, which join those not
 * committed yet, and all of them are the operator's state; a checkpoint's
 * completion hands the committer those of it and of earlier checkpoints.
 *
 * The state is union list state: an element is a committable with its
 * writer subtask and checkpoint, or an element of a writer's own state
 * with its writer subtask. A restored subtask commits the committables
 * whose writer folds onto it (writer mod parallelism: each exactly once
 * however the job was rescaled), then creates its writer with every
 * writer's state, which aborts what earlier attempts left. The file sink's
 * state before the Sink API (one element per writer listing its pending
 * files and its next part) is turned into its committables and writer
 * state (file_sink_upgrade_state). Task thread only. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spate/sink.h>

#include "connectors/connectors_int.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/connector_config.h"

/* An element of the state: "SNK2", u32 writer subtask, i64 checkpoint id,
 * then a committable's bytes; or "SNKW", u32 writer subtask, then a
 * writer state's bytes. */
#define SINK_STATE_MAGIC         0x324b4e53u
#define SINK_STATE_HEADER        16
#define SINK_WRITER_STATE_MAGIC  0x574b4e53u
#define SINK_WRITER_STATE_HEADER 8
/* The checkpoint id of a restored committable: any completion commits it. */
#define SINK_RESTORED 0
/* The end of input: how often a commit that asks to be retried is tried. */
#define SINK_END_TRIES   50
#define SINK_END_WAIT_NS (100 * 1000000L)

struct committable {
    int64_t checkpoint_id;
    uint32_t writer;
    uint8_t *bytes;
    size_t len;
};

struct spate_sink_context {
    struct stream_operator *op;
    struct sink_op *s;
    int64_t preparing;     /* the checkpoint of the prepare_commit running */
    struct byte_buf *snap; /* during the writer's snapshot_state */
};

struct sink_op {
    const spate_committing_sink *sink;
    const void *config;
    void *writer; /* NULL until the restored committables are committed */
    void *committer;
    bool restored;
    bool failed; /* the writer's create failed: nothing more runs */
    spate_sink_context ctx;
    struct committable *pending; /* prepared, not committed */
    size_t npending, cap;
    struct committable *states; /* restored writer states, until the writer is made */
    size_t nstates, states_cap;
};

/* ---- the context ---- */

int
spate_sink_context_subtask(const spate_sink_context *ctx)
{
    return ctx->op->task->subtask;
}

int
spate_sink_context_parallelism(const spate_sink_context *ctx)
{
    return ctx->op->task->parallelism;
}

int
spate_sink_context_attempt(const spate_sink_context *ctx)
{
    return ctx->op->task->attempt;
}

bool
spate_sink_context_restored(const spate_sink_context *ctx)
{
    return ctx->s->restored;
}

const void *
spate_sink_context_params(const spate_sink_context *ctx, size_t *len)
{
    *len = ctx->op->config->params_len;
    return ctx->op->config->params;
}

static void
list_add(struct committable **list, size_t *n, size_t *cap, int64_t checkpoint_id, uint32_t writer,
         const void *bytes, size_t len)
{
    struct committable *c;

    xgrow((void **)list, cap, *n + 1, sizeof **list);
    c = &(*list)[(*n)++];
    *c = (struct committable){ checkpoint_id, writer, xmalloc(len ? len : 1), len };
    memcpy(c->bytes, bytes, len);
}

static void
list_free(struct committable *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i].bytes);
    free(list);
}

void
spate_sink_context_save_committable(spate_sink_context *ctx, const void *bytes, size_t len)
{
    struct sink_op *s = ctx->s;

    list_add(&s->pending, &s->npending, &s->cap, ctx->preparing, (uint32_t)ctx->op->task->subtask,
             bytes, len);
}

static void
state_add(struct byte_buf *out, uint32_t magic, uint32_t writer, const int64_t *checkpoint_id,
          const void *bytes, size_t len)
{
    size_t header = checkpoint_id ? SINK_STATE_HEADER : SINK_WRITER_STATE_HEADER;
    uint8_t *e = xmalloc(header + len);

    memcpy(e, &magic, 4);
    memcpy(e + 4, &writer, 4);
    if (checkpoint_id != NULL)
        memcpy(e + 8, checkpoint_id, 8);
    memcpy(e + header, bytes, len);
    op_state_add(out, e, header + len);
    free(e);
}

void
spate_sink_context_save_writer_state(spate_sink_context *ctx, const void *bytes, size_t len)
{
    if (ctx->snap != NULL)
        state_add(ctx->snap, SINK_WRITER_STATE_MAGIC, (uint32_t)ctx->op->task->subtask, NULL, bytes,
                  len);
}

size_t
spate_sink_context_writer_states(const spate_sink_context *ctx)
{
    return ctx->s->nstates;
}

const void *
spate_sink_context_writer_state(const spate_sink_context *ctx, size_t i, size_t *len)
{
    if (i >= ctx->s->nstates) {
        *len = 0;
        return NULL;
    }
    *len = ctx->s->states[i].len;
    return ctx->s->states[i].bytes;
}

struct stream_operator *
sink_context_operator(spate_sink_context *ctx)
{
    return ctx->op;
}

void *
sink_context_committer(spate_sink_context *ctx)
{
    return ctx->s->committer;
}

/* ---- the operator ---- */

const spate_committing_sink *
sink_operator_sink(const struct operator_settings *settings, const void **config)
{
    *config = settings->conf;
    switch (settings->kind) {
    case OP_SINK_FILE:
        return &file_sink;
    case OP_SINK_CONNECTOR:
        return &named_sink;
    case OP_SINK_API:
        *config = NULL;
        return ((const struct api_sink_config *)settings->conf)->sink;
    default:
        return NULL;
    }
}

static void
fail(struct stream_operator *op, spate_error *err, const char *what)
{
    if (err->code != 0)
        spate_ctx_fail(&op->ctx, "%s", err->message);
    else
        spate_ctx_fail(&op->ctx, "the sink of '%s' failed to %s", op->ctx.task_name, what);
}

/* Commits the pending committables of checkpoints up to checkpoint_id;
 * those that ask to be retried stay. false when a commit failed (the task
 * then fails). */
static bool
commit_upto(struct stream_operator *op, int64_t checkpoint_id)
{
    struct sink_op *s = op->impl;
    size_t kept = 0;
    bool ok = true;

    for (size_t i = 0; i < s->npending; i++) {
        struct committable *c = &s->pending[i];
        spate_error err = { 0 };
        spate_commit_result r = SPATE_COMMIT_RETRY_LATER;

        if (ok && c->checkpoint_id <= checkpoint_id)
            r = s->sink->committer->commit(s->committer, c->bytes, c->len, &err);
        if (r == SPATE_COMMIT_FAILED) {
            fail(op, &err, "commit");
            ok = false;
        }
        if (r == SPATE_COMMIT_OK)
            free(c->bytes);
        else
            s->pending[kept++] = *c;
    }
    s->npending = kept;
    return ok;
}

/* The writer, once the restored committables are committed (the restore
 * gave them all before the first record, barrier or end of input). false
 * when it cannot be made (the task fails). */
static bool
writer_ready(struct stream_operator *op)
{
    struct sink_op *s = op->impl;
    spate_error err;

    if (s->writer != NULL)
        return true; /* every record passes here: no 512-byte error to clear */
    spate_error_clear(&err);
    if (s->failed || op->ctx.failure != NULL || !commit_upto(op, SINK_RESTORED))
        return false;
    s->writer = s->sink->writer->create(&s->ctx, s->config, &err);
    list_free(s->states, s->nstates);
    s->states = NULL;
    s->nstates = 0;
    if (s->writer == NULL) {
        s->failed = true;
        fail(op, &err, "start its writer");
        return false;
    }
    return true;
}

static int
sk_open(struct stream_operator *op, spate_error *err)
{
    struct sink_op *s = xcalloc(1, sizeof *s);

    op->impl = s;
    s->ctx.op = op;
    s->ctx.s = s;
    if ((s->sink = sink_operator_sink(op->config, &s->config)) == NULL)
        return spate_error_set(err, SPATE_EINVAL, "operator '%s' is not a sink", op->ctx.task_name);
    if (s->sink->committer->create != NULL &&
        (s->committer = s->sink->committer->create(&s->ctx, s->config, err)) == NULL)
        return err->code ? err->code : SPATE_EINVAL;
    return 0;
}

static void
sk_close(struct stream_operator *op)
{
    struct sink_op *s = op->impl;

    if (s == NULL)
        return;
    if (s->writer != NULL)
        s->sink->writer->close(s->writer);
    if (s->committer != NULL && s->sink->committer->close != NULL)
        s->sink->committer->close(s->committer);
    list_free(s->pending, s->npending);
    list_free(s->states, s->nstates);
    free(s);
    op->impl = NULL;
}

static void
sk_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct sink_op *s = op->impl;
    spate_error err;

    if (op->ctx.failure != NULL || !writer_ready(op))
        return;
    spate_error_clear(&err); /* per record: the code and an empty message, not 512 bytes */
    if (s->sink->writer->write(s->writer, rec, meta->timestamp, &err) != 0)
        fail(op, &err, "write a record");
}

static bool
prepare(struct stream_operator *op, int64_t checkpoint_id)
{
    struct sink_op *s = op->impl;
    spate_error err = { 0 };

    if (op->ctx.failure != NULL || !writer_ready(op))
        return false;
    s->ctx.preparing = checkpoint_id;
    if (s->sink->writer->prepare_commit(s->writer, checkpoint_id, &s->ctx, &err) != 0) {
        fail(op, &err, "prepare its commit");
        return false;
    }
    return true;
}

static void
sk_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct sink_op *s = op->impl;

    if (!prepare(op, checkpoint_id))
        return;
    for (size_t i = 0; i < s->npending; i++) {
        const struct committable *c = &s->pending[i];

        state_add(out, SINK_STATE_MAGIC, c->writer, &c->checkpoint_id, c->bytes, c->len);
    }
    if (s->sink->writer->snapshot_state != NULL) {
        s->ctx.snap = out;
        s->sink->writer->snapshot_state(s->writer, checkpoint_id, &s->ctx);
        s->ctx.snap = NULL;
    }
}

static void
restored_committable(void *arg, uint32_t writer, const void *bytes, size_t len)
{
    struct stream_operator *op = arg;
    struct sink_op *s = op->impl;

    if (writer % (uint32_t)op->task->parallelism == (uint32_t)op->task->subtask)
        list_add(&s->pending, &s->npending, &s->cap, SINK_RESTORED, writer, bytes, len);
}

static void
restored_writer_state(void *arg, uint32_t writer, const void *bytes, size_t len)
{
    struct stream_operator *op = arg;
    struct sink_op *s = op->impl;

    list_add(&s->states, &s->nstates, &s->states_cap, SINK_RESTORED, writer, bytes, len);
}

static const struct sink_restore restore_to = { restored_committable, restored_writer_state };

/* One element of the union state: every subtask gets them all. */
static int
sk_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct sink_op *s = op->impl;
    uint32_t magic = 0, writer;

    s->restored = true;
    if (len >= 4)
        memcpy(&magic, bytes, 4);
    if (magic == SINK_STATE_MAGIC && len >= SINK_STATE_HEADER) {
        memcpy(&writer, bytes + 4, 4);
        restored_committable(op, writer, bytes + SINK_STATE_HEADER, len - SINK_STATE_HEADER);
        return 0;
    }
    if (magic == SINK_WRITER_STATE_MAGIC && len >= SINK_WRITER_STATE_HEADER) {
        memcpy(&writer, bytes + 4, 4);
        restored_writer_state(op, writer, bytes + SINK_WRITER_STATE_HEADER,
                              len - SINK_WRITER_STATE_HEADER);
        return 0;
    }
    if (op->config->kind == OP_SINK_FILE)
        return file_sink_upgrade_state(bytes, len, &restore_to, op, err);
    if (op->config->kind == OP_SINK_CONNECTOR) {
        named_sink_upgrade_state(bytes, len, &restore_to, op, (uint32_t)op->task->subtask);
        return 0;
    }
    return spate_error_set(err, SPATE_EPROTO,
                           "the state of sink '%s' is not a Sink API sink's: an element of %zu "
                           "bytes without its header",
                           op->ctx.task_name, len);
}

static void
sk_checkpoint_complete(struct stream_operator *op, int64_t checkpoint_id)
{
    if (op->ctx.failure == NULL && writer_ready(op))
        commit_upto(op, checkpoint_id);
}

/* Bounded input ended: no checkpoint follows (until tasks wait for a final
 * one, Flink's FLIP-147), so what is left is prepared and committed now;
 * a commit asked to be retried is tried again for a while. */
static void
sk_end_input(struct stream_operator *op)
{
    struct sink_op *s = op->impl;

    if (!prepare(op, SPATE_END_OF_INPUT))
        return;
    for (int tries = 0; commit_upto(op, SPATE_END_OF_INPUT) && s->npending > 0; tries++) {
        struct timespec wait = { 0, SINK_END_WAIT_NS };

        if (tries == SINK_END_TRIES) {
            spate_ctx_fail(&op->ctx,
                           "the sink of '%s' cannot commit at the end of its input: its "
                           "committer still asks to retry later after %d tries",
                           op->ctx.task_name, SINK_END_TRIES);
            return;
        }
        nanosleep(&wait, NULL);
    }
}

const struct operator_vtable sink_operator_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = sk_open,
    .close = sk_close,
    .process = sk_process,
    .end_input = sk_end_input,
    .snapshot_state = sk_snapshot,
    .restore_state = sk_restore,
    .checkpoint_complete = sk_checkpoint_complete,
    .own_state_union = true,
};
