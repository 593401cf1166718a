/* The collection source (Flink's fromCollection): records given to the job,
 * serialized in its configuration; subtask i of n emits every n-th. Its
 * position (records seen, byte offset) is its checkpointed state. Task
 * thread only. */
#include <stdlib.h>
#include <string.h>

#include "connectors/connectors_int.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"
#include "streaming/types.h"
#include "streaming/watermark_generator.h"

struct collection_impl {
    const struct collection_source_config *conf;
    const uint8_t *at, *end;
    uint64_t index;
    void *rec;
};

static int
collection_open(struct stream_operator *op, spate_error *err)
{
    struct collection_impl *c = xcalloc(1, sizeof *c);

    UNUSED(err);
    c->conf = op->conf;
    c->at = c->conf->records;
    c->end = c->conf->records + c->conf->records_len;
    c->rec = operator_out_storage(c->conf->type);
    op->impl = c;
    return 0;
}

static enum source_status
collection_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct collection_impl *c = op->impl;
    struct source_run run;
    const char *corrupt = NULL;

    source_run_begin(&run, op);
    while (budget-- > 0 && c->at < c->end) {
        uint32_t len;

        memcpy(&len, c->at, 4);
        if (len > (size_t)(c->end - c->at - 4)) {
            corrupt = "data";
            break;
        }
        /* Subtask i of n takes every n-th record. */
        if (c->index++ % (uint64_t)op->ctx.parallelism == (uint64_t)op->ctx.subtask) {
            if (types_deserialize(c->conf->type, c->at + 4, len, c->rec) != 0) {
                corrupt = "record";
                break;
            }
            source_run_emit(&run, c->rec);
        }
        c->at += 4 + len;
    }
    source_run_end(&run);
    if (corrupt != NULL) {
        spate_error_set(err, SPATE_EPROTO, "corrupt collection source %s", corrupt);
        return SOURCE_END;
    }
    return c->at < c->end ? SOURCE_MORE : SOURCE_END;
}

/* Checkpoints: u64 records seen, u64 byte offset. */
static void
collection_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct collection_impl *c = op->impl;
    uint64_t off = (uint64_t)(c->at - c->conf->records);

    uint8_t e[16];

    UNUSED(checkpoint_id);
    memcpy(e, &c->index, 8);
    memcpy(e + 8, &off, 8);
    op_state_add(out, e, sizeof e);
}

static int
collection_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct collection_impl *c = op->impl;
    uint64_t off;

    if (len != 16)
        return spate_error_set(err, SPATE_EPROTO, "malformed collection source state");
    memcpy(&c->index, bytes, 8);
    memcpy(&off, bytes + 8, 8);
    if (off > c->conf->records_len)
        return spate_error_set(err, SPATE_EPROTO, "collection source state past its end");
    c->at = c->conf->records + off;
    return 0;
}

static void
collection_close(struct stream_operator *op)
{
    struct collection_impl *c = op->impl;

    if (c != NULL)
        free(c->rec);
    free(op->impl);
    op->impl = NULL;
}

const struct operator_vtable collection_source_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = collection_open,
    .close = collection_close,
    .poll = collection_poll,
    .snapshot_state = collection_snapshot,
    .restore_state = collection_restore,
};
