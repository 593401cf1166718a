/* The source of a connector found by name (OP_SOURCE_CONNECTOR): the
 * plugin's split reader (connector_plugin.h) fetches the bytes of its
 * splits; this operator decodes them with the value format into records,
 * emits them through a Source API ReaderOutput (source_operator.h: stamped
 * with the record's timestamp or the source's watermark strategy's,
 * per-split watermarks) and keeps the splits and their positions in union operator
 * state, so that any subtask of a rescaled job finds the splits it owns.
 * Flink's SourceOperator with a SourceReaderBase over a SplitReader. Task
 * thread only. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/connector_factory.h"
#include "connectors/connectors_int.h"
#include "connectors/formats.h"
#include "connectors/source_operator.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"
#include "streaming/watermark_generator.h"

struct named_source {
    const struct connector_source_ops *ops;
    void *reader;
    struct record_format format;
    const char **options; /* the plugin's (connector_context_init) */
    void *rec;            /* the record being emitted (the out type's storage) */
    bool started;
    bool failed; /* emit failed: the fetch's error is in err */
    spate_error *err;
    uint64_t skipped; /* malformed records skipped (json.ignore-parse-errors) */
    /* The records go out as a Source API reader's do: per-split
     * watermarks by the record's split_id. */
    struct spate_reader_output out;
    char msg[512];
};

static void
connector_log(void *arg, enum connector_log_level level, const char *msg)
{
    const char *name = arg;

    if (level == CONNECTOR_LOG_ERROR)
        SPATE_LOG_ERROR("connector", "operator='%s' %s", name, msg);
    else if (level == CONNECTOR_LOG_WARN)
        SPATE_LOG_WARN("connector", "operator='%s' %s", name, msg);
    else
        SPATE_LOG_INFO("connector", "operator='%s' %s", name, msg);
}

const char **
connector_own_options(const struct named_connector_config *c, size_t *n)
{
    const char **own = xcalloc(2 * c->noptions + 1, sizeof *own);

    *n = 0;
    for (size_t i = 0; i < c->noptions; i++)
        if (!format_owns_option(c->options[2 * i])) {
            own[2 * *n] = c->options[2 * i];
            own[2 * *n + 1] = c->options[2 * i + 1];
            (*n)++;
        }
    return own;
}

int
named_connector_check(const struct named_connector_config *c, bool source, const char *name,
                      int parallelism, bool checkpointing, spate_error *err)
{
    const char *what = source ? "source" : "sink";
    const struct connector_plugin *plugin;
    int (*check)(const struct connector_context *, char *, size_t);
    struct connector_context ctx = { 0 };
    struct record_format format;
    char msg[512];
    int rc;

    if (name == NULL)
        name = c->connector;
    if ((rc = connector_factory_find(c->connector, &plugin, err)) != 0)
        return spate_error_wrap(err, "%s '%s'", what, name);
    if (source ? plugin->source == NULL : plugin->sink == NULL)
        return spate_error_set(err, SPATE_EINVAL, "%s '%s': connector '%s' has no %s", what, name,
                               c->connector, what);
    if (source) {
        if ((rc = format_init_value(&format, c, c->type, err)) != 0)
            return spate_error_wrap(err, "source '%s'", name);
        format_release(&format);
    }
    check = source ? plugin->source->check : plugin->sink->check;
    if (check == NULL)
        return 0;
    ctx.options = connector_own_options(c, &ctx.noptions);
    ctx.operator_name = name;
    ctx.parallelism = parallelism;
    ctx.checkpointing = checkpointing;
    rc = check(&ctx, msg, sizeof msg);
    free((void *)ctx.options);
    if (rc != 0)
        return spate_error_set(err, SPATE_EINVAL, "%s '%s': %s", what, name, msg);
    return 0;
}

void
connector_context_init(struct connector_context *ctx, const struct stream_operator *op,
                       const struct named_connector_config *c, const char ***options)
{
    size_t n;
    const char **own = connector_own_options(c, &n);

    *options = own;
    *ctx = (struct connector_context){
        .options = own,
        .noptions = n,
        .operator_name = op->config->name ? op->config->name : c->connector,
        .subtask = op->task->subtask,
        .parallelism = op->task->parallelism,
        .attempt = op->task->attempt,
        .checkpointing = op->task->checkpointing,
        .log = connector_log,
        .log_arg = (void *)(op->config->name ? op->config->name : c->connector),
    };
}

static int
ns_open(struct stream_operator *op, spate_error *err)
{
    const struct named_connector_config *c = op->conf;
    const struct connector_plugin *plugin;
    struct connector_context ctx;
    struct named_source *s = xcalloc(1, sizeof *s);
    int rc;

    op->impl = s;
    if ((rc = connector_factory_find(c->connector, &plugin, err)) != 0)
        return rc;
    if (plugin->source == NULL)
        return spate_error_set(err, SPATE_EINVAL, "connector '%s' has no source", c->connector);
    if ((rc = format_init_value(&s->format, c, c->type, err)) != 0)
        return rc;
    s->ops = plugin->source;
    s->rec = operator_out_storage(c->type);
    connector_context_init(&ctx, op, c, &s->options);
    if ((s->reader = s->ops->open(&ctx, s->msg, sizeof s->msg)) == NULL)
        return spate_error_set(err, SPATE_EINVAL, "%s", s->msg);
    return 0;
}

static void
ns_close(struct stream_operator *op)
{
    struct named_source *s = op->impl;

    if (s == NULL)
        return;
    if (s->reader != NULL)
        s->ops->close(s->reader);
    format_release(&s->format);
    free(s->options);
    source_output_release(&s->out);
    free(s->rec);
    free(s);
    op->impl = NULL;
}

static void
ns_emit(void *arg, const struct connector_record *r)
{
    struct stream_operator *op = arg;
    struct named_source *s = op->impl;
    spate_error derr;

    if (s->failed)
        return;
    spate_error_clear(&derr); /* per record: the code and an empty message, not 512 bytes */
    memset(s->rec, 0, ((const struct spate_type *)s->format.type)->size);
    if (format_decode(&s->format, r->value, r->value_len, s->rec, &derr) != 0) {
        if (s->format.ignore_parse_errors) {
            /* Skipped and counted; logged at 1, 2, 4, 8, ... so that a
             * flood of them does not flood the log. */
            s->skipped++;
            if ((s->skipped & (s->skipped - 1)) == 0)
                SPATE_LOG_WARN("connector",
                               "operator='%s' skipped %" PRIu64 " malformed records, the last "
                               "at %s offset %" PRId64 ": %s",
                               op->config->name ? op->config->name : "", s->skipped, r->split,
                               r->position, derr.message);
            return;
        }
        s->failed = true;
        spate_error_set(s->err, SPATE_EPROTO,
                        "cannot read the record at %s offset %" PRId64
                        " (json.ignore-parse-errors skips it): %s",
                        r->split, r->position, derr.message);
        return;
    }
    source_output_collect(&s->out, r->split_id, s->rec, r->timestamp_ms);
}

static enum source_status
ns_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct named_source *s = op->impl;
    enum connector_fetch status = CONNECTOR_FETCH_MORE;
    int wait_ms = 0, rc;

    if (!s->started) {
        if (s->ops->start(s->reader, op->restored, s->msg, sizeof s->msg) != 0) {
            spate_error_set(err, SPATE_EIO, "%s", s->msg);
            return SOURCE_END;
        }
        s->started = true;
        if (s->ops->wait_fd != NULL)
            op->wait_fd = s->ops->wait_fd(s->reader);
    }
    if (op->stopping)
        return SOURCE_END;
    s->err = err;
    s->failed = false;
    source_output_begin(&s->out, op);
    rc = s->ops->fetch(s->reader, budget, ns_emit, op, &wait_ms, &status, s->msg, sizeof s->msg);
    source_output_end(&s->out);
    if (rc != 0) {
        if (!s->failed)
            spate_error_set(err, SPATE_EIO, "%s", s->msg);
        return SOURCE_END;
    }
    if (s->failed)
        return SOURCE_END;
    if (status == CONNECTOR_FETCH_END)
        return SOURCE_END;
    if (status == CONNECTOR_FETCH_WAITING) {
        op->wait_until_ns = clock_mono_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : 1) * 1000000u;
        return SOURCE_WAITING;
    }
    return SOURCE_MORE;
}

struct add_arg {
    struct byte_buf *out;
};

static void
ns_add(void *arg, const void *bytes, size_t len)
{
    op_state_add(((struct add_arg *)arg)->out, bytes, len);
}

static void
ns_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct named_source *s = op->impl;
    struct add_arg a = { out };

    s->ops->snapshot(s->reader, checkpoint_id, ns_add, &a);
}

static int
ns_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct named_source *s = op->impl;

    if (s->ops->add_split(s->reader, bytes, len, s->msg, sizeof s->msg) != 0)
        return spate_error_set(err, SPATE_EPROTO, "%s", s->msg);
    return 0;
}

static void
ns_checkpoint_complete(struct stream_operator *op, int64_t checkpoint_id)
{
    struct named_source *s = op->impl;

    s->ops->checkpoint_complete(s->reader, checkpoint_id);
}

const struct operator_vtable named_source_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = ns_open,
    .close = ns_close,
    .poll = ns_poll,
    .snapshot_state = ns_snapshot,
    .restore_state = ns_restore,
    .checkpoint_complete = ns_checkpoint_complete,
    .own_state_union = true,
};
