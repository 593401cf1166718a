/* The sink of a connector found by name (OP_SINK_CONNECTOR): this operator
 * encodes each record's value (and key, `key.fields`) and hands them to the
 * plugin's writer (connector_plugin.h); at each barrier the writer's
 * committables go into operator state, and the checkpoint's completion
 * commits them; a restored subtask gives the committables of its state
 * back to the writer, which commits or aborts them. SinkV2's SinkWriter
 * and Committer (two-phase commit). Task thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/connector_factory.h"
#include "connectors/connectors_int.h"
#include "connectors/formats.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"

struct named_sink {
    const struct connector_sink_ops *ops;
    void *writer;
    struct record_format format;
    const char **options; /* the plugin's (connector_context_init) */
    int key_field;        /* -1: records without a key */
    struct byte_buf value, key;
    char msg[512];
};

static int
nk_open(struct stream_operator *op, spate_error *err)
{
    const struct named_connector_config *c = op->conf;
    const struct connector_plugin *plugin;
    struct connector_context ctx;
    struct named_sink *s = xcalloc(1, sizeof *s);
    const char *key;
    int rc;

    op->impl = s;
    s->key_field = -1;
    if ((rc = connector_factory_find(c->connector, &plugin, err)) != 0)
        return rc;
    if (plugin->sink == NULL)
        return spate_error_set(err, SPATE_EINVAL, "connector '%s' has no sink", c->connector);
    if ((rc = format_init_value(&s->format, c, c->type, err)) != 0)
        return rc;
    if ((key = named_connector_option(c, "key.fields")) != NULL &&
        (s->key_field = format_field_index(&s->format, key)) < 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': key.fields '%s' names no field of the records "
                               "(a name of fields, or a field number)",
                               c->connector, key);
    s->ops = plugin->sink;
    connector_context_init(&ctx, op, c, &s->options);
    if ((s->writer = s->ops->open(&ctx, s->msg, sizeof s->msg)) == NULL)
        return spate_error_set(err, SPATE_EINVAL, "%s", s->msg);
    return 0;
}

static void
nk_close(struct stream_operator *op)
{
    struct named_sink *s = op->impl;

    if (s == NULL)
        return;
    if (s->writer != NULL)
        s->ops->close(s->writer);
    format_release(&s->format);
    free(s->options);
    free(s->value.data);
    free(s->key.data);
    free(s);
    op->impl = NULL;
}

static void
nk_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct named_sink *s = op->impl;
    const struct spate_type *t = s->format.type;
    const void *key = NULL;
    size_t key_len = 0;

    if (op->ctx.failure != NULL)
        return;
    s->value.len = 0;
    format_encode(&s->format, rec, &s->value);
    if (s->key_field >= 0) {
        const struct spate_type *kt = t->fields[s->key_field];
        const void *at = (const char *)rec + t->offsets[s->key_field];
        struct record_format kf = { .kind = FORMAT_STRING, .type = kt };

        s->key.len = 0;
        format_encode(&kf, at, &s->key);
        key = s->key.data ? s->key.data : (const void *)"";
        key_len = s->key.len;
    }
    if (s->ops->write(s->writer, key, key_len, s->value.data ? s->value.data : (const void *)"",
                      s->value.len,
                      meta->timestamp == RECORD_NO_TIMESTAMP ? INT64_MIN : meta->timestamp, s->msg,
                      sizeof s->msg) != 0)
        spate_ctx_fail(&op->ctx, "%s", s->msg);
}

static void
nk_add(void *arg, const void *bytes, size_t len)
{
    op_state_add(arg, bytes, len);
}

static void
nk_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct named_sink *s = op->impl;

    if (op->ctx.failure != NULL)
        return;
    if (s->ops->prepare_commit(s->writer, checkpoint_id, nk_add, out, s->msg, sizeof s->msg) != 0)
        spate_ctx_fail(&op->ctx, "%s", s->msg);
}

static int
nk_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct named_sink *s = op->impl;

    if (s->ops->recover(s->writer, bytes, len, s->msg, sizeof s->msg) != 0)
        return spate_error_set(err, SPATE_EIO, "%s", s->msg);
    return 0;
}

static void
nk_checkpoint_complete(struct stream_operator *op, int64_t checkpoint_id)
{
    struct named_sink *s = op->impl;

    if (op->ctx.failure == NULL &&
        s->ops->commit(s->writer, checkpoint_id, s->msg, sizeof s->msg) != 0)
        spate_ctx_fail(&op->ctx, "%s", s->msg);
}

static void
nk_end_input(struct stream_operator *op)
{
    struct named_sink *s = op->impl;

    if (op->ctx.failure == NULL && s->ops->finish(s->writer, s->msg, sizeof s->msg) != 0)
        spate_ctx_fail(&op->ctx, "%s", s->msg);
}

const struct operator_vtable named_sink_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = nk_open,
    .close = nk_close,
    .process = nk_process,
    .end_input = nk_end_input,
    .snapshot_state = nk_snapshot,
    .restore_state = nk_restore,
    .checkpoint_complete = nk_checkpoint_complete,
};
