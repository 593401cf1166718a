/* The sink of a connector found by name (OP_SINK_CONNECTOR) on the Sink API
 * (include/spate/sink.h, run by sink_operator.c): the plugin's writer and
 * committer (connector_plugin.h) behind a spate_committing_sink. Records'
 * values (and keys, `key.fields`) are encoded and handed to the plugin's
 * writer; at each barrier its committables, each behind the checkpoint it
 * was made for, go into the operator's state; a completion commits the
 * plugin's transactions up to that checkpoint; committables restored from
 * a checkpoint go back to the plugin's recover, which commits or aborts
 * them. The plugin's writer commits its own transactions, so the
 * committer and the writer share it: it opens with the committer, before
 * the restore, as the plugin asks. Task thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/changelog_line.h"
#include "connectors/connector_factory.h"
#include "connectors/connectors_int.h"
#include "connectors/formats.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"

struct named_sink {
    const struct connector_sink_ops *ops;
    void *writer; /* the plugin's */
    bool live;    /* the Sink API's writer is made: restored committables are done */
    struct record_format format;
    const char **options;            /* the plugin's (connector_context_init) */
    int key_field;                   /* -1: records without a key */
    struct record_format key_format; /* key.format, of the key field */
    /* Records that are changelog lines (sink.changelog-mode 'upsert'). */
    struct changelog_format changelog;
    bool upsert;
    struct byte_buf value, key;
    char msg[512];
};

static void
nk_free(struct named_sink *s)
{
    if (s->writer != NULL)
        s->ops->close(s->writer);
    format_release(&s->format);
    format_release(&s->key_format);
    changelog_format_release(&s->changelog);
    free(s->options);
    free(s->value.data);
    free(s->key.data);
    free(s);
}

static int
nk_open(struct named_sink *s, struct stream_operator *op, const struct named_connector_config *c,
        spate_error *err)
{
    const struct connector_plugin *plugin;
    struct connector_context ctx;
    const char *key;
    int rc;

    s->key_field = -1;
    if ((rc = connector_factory_find(c->connector, &plugin, err)) != 0)
        return rc;
    if (plugin->sink == NULL)
        return spate_error_set(err, SPATE_EINVAL, "connector '%s' has no sink", c->connector);
    if ((rc = format_init_value(&s->format, c, c->type, err)) != 0)
        return rc;
    if ((rc = changelog_format_init(&s->changelog, c, err)) < 0)
        return rc;
    s->upsert = rc == 1;
    if (s->upsert && c->type->kind != TYPE_STRING)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': an upsert sink writes changelog lines, strings",
                               c->connector);
    if (!s->upsert && (key = named_connector_option(c, "key.fields")) != NULL &&
        (s->key_field = format_field_index(&s->format, key)) < 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "connector '%s': key.fields '%s' names no field of the records "
                               "(a name of fields, or a field number)",
                               c->connector, key);
    if (s->key_field >= 0 &&
        (rc = format_init_key(&s->key_format, c, c->type->fields[s->key_field], err)) != 0)
        return rc;
    s->ops = plugin->sink;
    connector_context_init(&ctx, op, c, &s->options);
    if ((s->writer = s->ops->open(&ctx, s->msg, sizeof s->msg)) == NULL)
        return spate_error_set(err, SPATE_EINVAL, "%s", s->msg);
    return 0;
}

/* The committer: opens the plugin's writer. */
static void *
nc_create(spate_sink_context *ctx, const void *config, spate_error *err)
{
    struct named_sink *s = xcalloc(1, sizeof *s);

    if (nk_open(s, sink_context_operator(ctx), config, err) != 0) {
        nk_free(s);
        return NULL;
    }
    return s;
}

static void
nc_close(void *committer)
{
    nk_free(committer);
}

/* A committable: i64 the checkpoint it was made for, then the plugin's. */
static spate_commit_result
nc_commit(void *committer, const void *committable, size_t len, spate_error *err)
{
    struct named_sink *s = committer;
    int64_t checkpoint_id;
    int rc;

    if (len < 8) {
        spate_error_set(err, SPATE_EPROTO, "connector sink: a committable of %zu bytes", len);
        return SPATE_COMMIT_FAILED;
    }
    memcpy(&checkpoint_id, committable, 8);
    if (s->live)
        rc = s->ops->commit(s->writer, checkpoint_id, s->msg, sizeof s->msg);
    else
        rc = s->ops->recover(s->writer, (const uint8_t *)committable + 8, len - 8, s->msg,
                             sizeof s->msg);
    if (rc == 0)
        return SPATE_COMMIT_OK;
    spate_error_set(err, SPATE_EIO, "%s", s->msg);
    return SPATE_COMMIT_FAILED;
}

/* The writer: the committer's, once the restored committables are done. */
static void *
nw_create(spate_sink_context *ctx, const void *config, spate_error *err)
{
    struct named_sink *s = sink_context_committer(ctx);

    UNUSED(config);
    UNUSED(err);
    s->live = true;
    return s;
}

static void
nw_close(void *writer)
{
    UNUSED(writer); /* the committer closes it */
}

/* A changelog line: its key's row written (+I, +U), or a tombstone (-D),
 * or nothing (-U). */
static int
nw_write_change(struct named_sink *s, const spate_str *line, int64_t timestamp_ms, spate_error *err)
{
    enum changelog_action a;
    int rc;

    s->key.len = 0;
    s->value.len = 0;
    if ((rc = changelog_line_split(&s->changelog, line->data, line->len, &a, &s->key, &s->value,
                                   err)) != 0)
        return rc;
    if (a == CHANGELOG_SKIP)
        return 0;
    if (s->ops->write(s->writer, s->key.data ? s->key.data : (const void *)"", s->key.len,
                      a == CHANGELOG_DELETE ? NULL
                      : s->value.data       ? s->value.data
                                            : (const void *)"",
                      s->value.len, timestamp_ms, s->msg, sizeof s->msg) != 0)
        return spate_error_set(err, SPATE_EIO, "%s", s->msg);
    return 0;
}

static int
nw_write(void *writer, const void *rec, int64_t timestamp_ms, spate_error *err)
{
    struct named_sink *s = writer;
    const struct spate_type *t = s->format.type;
    const void *key = NULL, *value;
    size_t key_len = 0, value_len;

    if (s->upsert)
        return nw_write_change(s, rec, timestamp_ms, err);
    if (s->format.kind != FORMAT_JSON && t->kind == TYPE_STRING) {
        /* A string's raw or string encoding is its bytes: handed over as
         * they are, not copied first (the plugin's write copies them). */
        value = ((const spate_str *)rec)->data;
        value_len = ((const spate_str *)rec)->len;
    } else {
        s->value.len = 0;
        format_encode(&s->format, rec, &s->value);
        value = s->value.data;
        value_len = s->value.len;
    }
    if (s->key_field >= 0) {
        const void *at = (const char *)rec + t->offsets[s->key_field];

        s->key.len = 0;
        format_encode(&s->key_format, at, &s->key);
        key = s->key.data ? s->key.data : (const void *)"";
        key_len = s->key.len;
    }
    if (s->ops->write(s->writer, key, key_len, value ? value : (const void *)"", value_len,
                      timestamp_ms, s->msg, sizeof s->msg) != 0)
        return spate_error_set(err, SPATE_EIO, "%s", s->msg);
    return 0;
}

struct nw_add {
    spate_sink_context *ctx;
    int64_t checkpoint_id;
};

static void
nw_add(void *arg, const void *bytes, size_t len)
{
    struct nw_add *a = arg;
    uint8_t *c = xmalloc(8 + len);

    memcpy(c, &a->checkpoint_id, 8);
    memcpy(c + 8, bytes, len);
    spate_sink_context_save_committable(a->ctx, c, 8 + len);
    free(c);
}

/* A barrier: the plugin's committables; the end of input: the plugin
 * flushes and commits everything itself. */
static int
nw_prepare_commit(void *writer, int64_t checkpoint_id, spate_sink_context *ctx, spate_error *err)
{
    struct named_sink *s = writer;
    struct nw_add a = { ctx, checkpoint_id };
    int rc;

    if (checkpoint_id == SPATE_END_OF_INPUT)
        rc = s->ops->finish(s->writer, s->msg, sizeof s->msg);
    else
        rc = s->ops->prepare_commit(s->writer, checkpoint_id, nw_add, &a, s->msg, sizeof s->msg);
    if (rc != 0)
        return spate_error_set(err, SPATE_EIO, "%s", s->msg);
    return 0;
}

/* The state from before the Sink API: the plugin's committables, each an
 * element of split list state, the subtask's own to recover. */
void
named_sink_upgrade_state(const uint8_t *bytes, size_t len, const struct sink_restore *to, void *arg,
                         uint32_t subtask)
{
    uint8_t *c = xmalloc(8 + len);
    int64_t restored = 0;

    memcpy(c, &restored, 8);
    memcpy(c + 8, bytes, len);
    to->committable(arg, subtask, c, 8 + len);
    free(c);
}

static const spate_sink_writer named_writer = {
    .create = nw_create,
    .write = nw_write,
    .prepare_commit = nw_prepare_commit,
    .close = nw_close,
};

static const spate_committer named_committer = {
    .create = nc_create,
    .commit = nc_commit,
    .close = nc_close,
};

const spate_committing_sink named_sink = { &named_writer, &named_committer };
