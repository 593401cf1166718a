/* The text file source (Flink's readTextFile over FileInputFormat): the
 * lines of splits that the JobMaster's assigner (file_splits.h) hands out
 * one at a time (task_info.next_split), each split's lines those that start
 * inside it; its checkpointed state is the splits in progress. Task thread
 * only. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connectors/connectors_int.h"
#include "connectors/line_reader.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/operator.h"

static int
file_open(struct stream_operator *op, spate_error *err)
{
    UNUSED(err);
    op->impl = line_reader_new();
    return 0;
}

/* Reads the split at `at` from its position on (taking its path). */
static int
file_split_open(struct line_reader *l, struct split_at *at, spate_error *err)
{
    int rc;

    if (l->fd >= 0)
        close(l->fd);
    free(l->path);
    l->path = at->path;
    if ((l->fd = open(l->path, O_RDONLY | O_CLOEXEC)) < 0 ||
        lseek(l->fd, (off_t)at->pos, SEEK_SET) < 0) {
        rc = spate_error_set(err, -errno, "cannot read input file '%s' at %llu: %s", l->path,
                             (unsigned long long)at->pos, spate_strerror(-errno));
        return rc;
    }
    l->pos = at->pos;
    l->split_end = at->split_end;
    l->skip_first = at->skip_first;
    l->len = 0;
    l->eof = false;
    l->in_split = true;
    return 0;
}

/* Starts the next split with lines in it: a restored one, else one from
 * the JobMaster's assigner; 1 when there are no more. A split owns the
 * lines that start in [start, start + length): reading begins one byte
 * early and drops everything up to the first newline, which belongs to
 * the split before (Hadoop's line splits). */
static int
file_next_split(struct stream_operator *op, struct line_reader *l, spate_error *err)
{
    struct split_at at;
    uint64_t start = 0, length = 0;
    int rc;

    if (l->nrestored > 0)
        return file_split_open(l, &l->restored[--l->nrestored], err);
    if (op->task->next_split == NULL)
        return spate_error_set(err, SPATE_ESTATE, "no input split provider for '%s'",
                               op->ctx.task_name);
    do {
        rc = op->task->next_split(op->task->split_data, op->index, &at.path, &start, &length, err);
        if (rc != 0)
            return rc;
        if (length == 0)
            free(at.path);
    } while (length == 0);
    at.skip_first = start > 0;
    at.pos = start > 0 ? start - 1 : 0;
    at.split_end = start + length - 1;
    return file_split_open(l, &at, err);
}

static void
file_snapshot_split(struct byte_buf *out, const struct split_at *at)
{
    uint32_t plen = (uint32_t)strlen(at->path);
    size_t n = 1 + 8 + 8 + 1 + 4 + plen;
    uint8_t *e = xmalloc(n);

    e[0] = 1;
    memcpy(e + 1, &at->pos, 8);
    memcpy(e + 9, &at->split_end, 8);
    e[17] = at->skip_first;
    memcpy(e + 18, &plen, 4);
    memcpy(e + 22, at->path, plen);
    op_state_add(out, e, n);
    free(e);
}

/* Checkpoints: an element per split in progress or restored and not
 * started (the bytes read but not yet emitted are read again): u8 1, u64
 * position, u64 split end, u8 skip first, u32 path length, path; or one
 * element u8 0 when there is none (between splits: the JobMaster's
 * assigner has the rest). On rescaling the elements spread over the new
 * subtasks. */
static void
file_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct line_reader *l = op->impl;
    uint8_t none = 0;

    UNUSED(checkpoint_id);
    if (l->in_split)
        file_snapshot_split(out,
                            &(struct split_at){ l->path, l->pos, l->split_end, l->skip_first });
    for (size_t i = 0; i < l->nrestored; i++)
        file_snapshot_split(out, &l->restored[i]);
    if (!l->in_split && l->nrestored == 0)
        op_state_add(out, &none, 1);
}

/* One element of the state: a split to read before asking for new ones. */
static int
file_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct line_reader *l = op->impl;
    struct split_at *at;
    uint32_t plen;

    if (len == 1 && bytes[0] == 0)
        return 0;
    if (len < 22 || bytes[0] != 1 || (memcpy(&plen, bytes + 18, 4), len != 22 + (size_t)plen))
        return spate_error_set(err, SPATE_EPROTO,
                               "malformed file source state: an element of %zu bytes", len);
    xgrow((void **)&l->restored, &l->restored_cap, l->nrestored + 1, sizeof *l->restored);
    at = &l->restored[l->nrestored++];
    memcpy(&at->pos, bytes + 1, 8);
    memcpy(&at->split_end, bytes + 9, 8);
    at->skip_first = bytes[17] != 0;
    at->path = xstrndup((const char *)bytes + 22, plen);
    return 0;
}

static enum source_status
file_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct line_reader *l = op->impl;

    if (!l->in_split && file_next_split(op, l, err) != 0)
        return SOURCE_END; /* no more splits, or err says why */
    if (line_reader_emit(op, l, budget, l->eof) > 0 || !l->in_split)
        return SOURCE_MORE;
    if (l->eof) {
        l->in_split = false;
        return SOURCE_MORE;
    }
    if (line_reader_fill(l, err, "an input file") < 0)
        return SOURCE_END;
    return SOURCE_MORE;
}

const struct operator_vtable file_source_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = file_open,
    .close = line_reader_close,
    .poll = file_poll,
    .snapshot_state = file_snapshot,
    .restore_state = file_restore,
};
