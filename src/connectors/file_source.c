/* The text file source (Flink's FileSource over TextLineInputFormat) on the
 * Source API: its enumerator, on the JobMaster, cuts the files at the path
 * into splits (file_splits.h) and hands them out one at a time to whichever
 * reader asks, so fast readers take more; its reader reads each split's
 * lines, those that start inside it, and checkpoints the splits it has not
 * finished with their positions. Enumerator: the JobMaster's thread;
 * reader: its task's. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <spate/source.h>

#include "connectors/connectors_int.h"
#include "connectors/file_splits.h"
#include "connectors/line_reader.h"
#include "core/alloc.h"
#include "core/util.h"
#include "streaming/connector_config.h"

/* A split as the enumerator assigns it: u8 2, u64 start, u64 length, u32
 * path length, path. As a reader checkpoints it (split_at): u8 1, u64
 * position, u64 split end, u8 skip first, u32 path length, path. */
enum { SPLIT_AT = 1, SPLIT_ASSIGNED = 2 };

static size_t
split_encode(uint8_t **out, const struct file_split *s)
{
    uint32_t plen = (uint32_t)strlen(s->path);
    size_t n = 1 + 8 + 8 + 4 + plen;
    uint8_t *e = xmalloc(n);

    e[0] = SPLIT_ASSIGNED;
    memcpy(e + 1, &s->start, 8);
    memcpy(e + 9, &s->length, 8);
    memcpy(e + 17, &plen, 4);
    memcpy(e + 21, s->path, plen);
    *out = e;
    return n;
}

/* 0 with s set (its path borrowed from bytes, plen long), or -1. */
static int
split_decode(const uint8_t *bytes, size_t len, struct file_split *s, uint32_t *plen)
{
    if (len < 21 || bytes[0] != SPLIT_ASSIGNED)
        return -1;
    memcpy(&s->start, bytes + 1, 8);
    memcpy(&s->length, bytes + 9, 8);
    memcpy(plen, bytes + 17, 4);
    if (len != 21 + (size_t)*plen)
        return -1;
    s->path = (char *)bytes + 21;
    return 0;
}

/* ---- the enumerator ---- */

struct file_enumerator {
    spate_split_enumerator_context *ctx;
    struct split_assigner a;
};

/* The state: each split not assigned, in the order it goes out, as a u32
 * length and the split. */
static int
fe_restore(struct file_enumerator *e, const uint8_t *p, size_t len, spate_error *err)
{
    size_t cap = 0;

    while (len > 0) {
        struct file_split s;
        uint32_t n, plen;

        if (len < 4 || (memcpy(&n, p, 4), len - 4 < n) || split_decode(p + 4, n, &s, &plen) != 0)
            return spate_error_set(err, SPATE_EPROTO,
                                   "malformed file source enumerator state at %zu bytes from "
                                   "its end",
                                   len);
        s.path = xstrndup(s.path, plen);
        xgrow((void **)&e->a.splits, &cap, e->a.count + 1, sizeof *e->a.splits);
        e->a.splits[e->a.count++] = s;
        p += 4 + n;
        len -= 4 + n;
    }
    return 0;
}

static void *
fe_create(spate_split_enumerator_context *ctx, const void *config, const void *state,
          size_t state_len, spate_error *err)
{
    const struct file_source_config *c = config;
    struct file_enumerator *e = xcalloc(1, sizeof *e);
    int rc;

    e->ctx = ctx;
    if (state != NULL)
        rc = fe_restore(e, state, state_len, err);
    else
        rc = split_assigner_init(&e->a, c->path, c->split_size,
                                 spate_enumerator_context_parallelism(ctx), err);
    if (rc != 0) {
        split_assigner_release(&e->a);
        free(e);
        return NULL;
    }
    return e;
}

static void
fe_handle_split_request(void *enumerator, int subtask)
{
    struct file_enumerator *e = enumerator;
    const struct file_split *s = split_assigner_next(&e->a);
    uint8_t *bytes;
    size_t n;

    if (s == NULL) {
        spate_enumerator_context_signal_no_more_splits(e->ctx, subtask);
        return;
    }
    n = split_encode(&bytes, s);
    spate_enumerator_context_assign_split(e->ctx, subtask, bytes, n);
    free(bytes);
}

static void
fe_add_split_back(void *enumerator, int subtask, const void *split, size_t len)
{
    struct file_enumerator *e = enumerator;
    struct file_split s;
    uint32_t plen;
    char *path;

    UNUSED(subtask);
    if (split_decode(split, len, &s, &plen) != 0)
        return; /* not one of ours: never assigned */
    path = xstrndup(s.path, plen);
    s.path = path;
    split_assigner_add_back(&e->a, &s);
    free(path);
}

static void
fe_save(struct file_enumerator *e, const struct file_split *s)
{
    uint8_t *bytes;
    uint32_t n = (uint32_t)split_encode(&bytes, s);

    spate_enumerator_context_save_state(e->ctx, &n, 4);
    spate_enumerator_context_save_state(e->ctx, bytes, n);
    free(bytes);
}

static void
fe_snapshot(void *enumerator, spate_split_enumerator_context *ctx)
{
    struct file_enumerator *e = enumerator;

    UNUSED(ctx);
    /* In the order they would be handed out: given back ones first. */
    for (size_t k = e->a.nreturned; k-- > 0;)
        fe_save(e, &e->a.splits[e->a.returned[k]]);
    for (size_t k = e->a.next; k < e->a.count; k++)
        fe_save(e, &e->a.splits[k]);
}

static void
fe_close(void *enumerator)
{
    struct file_enumerator *e = enumerator;

    split_assigner_release(&e->a);
    free(e);
}

static const spate_split_enumerator file_enumerator = {
    .create = fe_create,
    .handle_split_request = fe_handle_split_request,
    .add_split_back = fe_add_split_back,
    .snapshot_state = fe_snapshot,
    .close = fe_close,
};

/* ---- the reader ---- */

struct file_reader {
    spate_source_reader_context *ctx;
    struct line_reader *l; /* its restored: the splits to read, last first */
    bool no_more;
};

static void *
fr_create(spate_source_reader_context *ctx, const void *config, spate_error *err)
{
    struct file_reader *r = xcalloc(1, sizeof *r);

    UNUSED(config);
    UNUSED(err);
    r->ctx = ctx;
    r->l = line_reader_new();
    return r;
}

static void
fr_close(void *reader)
{
    struct file_reader *r = reader;

    line_reader_free(r->l);
    free(r);
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
    l->off = l->len = 0;
    l->eof = false;
    l->in_split = true;
    return 0;
}

static void
file_save_split(spate_source_reader_context *ctx, const struct split_at *at)
{
    uint32_t plen = (uint32_t)strlen(at->path);
    size_t n = 1 + 8 + 8 + 1 + 4 + plen;
    uint8_t *e = xmalloc(n);

    e[0] = SPLIT_AT;
    memcpy(e + 1, &at->pos, 8);
    memcpy(e + 9, &at->split_end, 8);
    e[17] = at->skip_first;
    memcpy(e + 18, &plen, 4);
    memcpy(e + 22, at->path, plen);
    spate_reader_context_save_split(ctx, e, n);
    free(e);
}

/* Checkpoints: an element per split in progress or not started (the
 * bytes read but not yet emitted are read again), in its SPLIT_AT form;
 * or one element u8 0 when there is none (between splits: the enumerator
 * has the rest). On rescaling the elements spread over the new subtasks. */
static void
fr_snapshot(void *reader, int64_t checkpoint_id, spate_source_reader_context *ctx)
{
    struct file_reader *r = reader;
    struct line_reader *l = r->l;
    uint8_t none = 0;

    UNUSED(checkpoint_id);
    if (l->in_split)
        file_save_split(ctx, &(struct split_at){ l->path, l->pos, l->split_end, l->skip_first });
    for (size_t i = 0; i < l->nrestored; i++)
        file_save_split(ctx, &l->restored[i]);
    if (!l->in_split && l->nrestored == 0)
        spate_reader_context_save_split(ctx, &none, 1);
}

/* A split to read: assigned (from its start: reading begins one byte
 * early and drops everything up to the first newline, which belongs to the
 * split before, as Hadoop's line splits do), or of the reader's state
 * (where it was). */
static int
fr_add_split(void *reader, const void *split, size_t len, spate_error *err)
{
    struct file_reader *r = reader;
    struct line_reader *l = r->l;
    const uint8_t *bytes = split;
    struct split_at at;
    struct file_split s;
    uint32_t plen;

    if (len == 1 && bytes[0] == 0)
        return 0;
    if (split_decode(bytes, len, &s, &plen) == 0) {
        if (s.length == 0)
            return 0;
        at.path = xstrndup(s.path, plen);
        at.skip_first = s.start > 0;
        at.pos = s.start > 0 ? s.start - 1 : 0;
        at.split_end = s.start + s.length - 1;
    } else if (len >= 22 && bytes[0] == SPLIT_AT &&
               (memcpy(&plen, bytes + 18, 4), len == 22 + (size_t)plen)) {
        memcpy(&at.pos, bytes + 1, 8);
        memcpy(&at.split_end, bytes + 9, 8);
        at.skip_first = bytes[17] != 0;
        at.path = xstrndup((const char *)bytes + 22, plen);
    } else {
        return spate_error_set(err, SPATE_EPROTO, "malformed file source split of %zu bytes", len);
    }
    xgrow((void **)&l->restored, &l->restored_cap, l->nrestored + 1, sizeof *l->restored);
    l->restored[l->nrestored++] = at;
    return 0;
}

static void
fr_no_more_splits(void *reader)
{
    ((struct file_reader *)reader)->no_more = true;
}

static spate_input_status
fr_poll_next(void *reader, spate_reader_output *out, int budget, spate_error *err)
{
    struct file_reader *r = reader;
    struct line_reader *l = r->l;

    if (!l->in_split) {
        if (l->nrestored > 0) {
            if (file_split_open(l, &l->restored[--l->nrestored], err) != 0)
                return SPATE_INPUT_ERROR;
        } else if (r->no_more) {
            return SPATE_INPUT_END_OF_INPUT;
        } else {
            spate_reader_context_request_split(r->ctx);
            return SPATE_INPUT_NOTHING_AVAILABLE;
        }
    }
    if (line_reader_emit(out, l, budget, l->eof) > 0 || !l->in_split)
        return SPATE_INPUT_MORE_AVAILABLE;
    if (l->eof) {
        l->in_split = false;
        return SPATE_INPUT_MORE_AVAILABLE;
    }
    if (line_reader_fill(l, err, "an input file") < 0)
        return SPATE_INPUT_ERROR;
    return SPATE_INPUT_MORE_AVAILABLE;
}

static const spate_source_reader file_reader = {
    .create = fr_create,
    .add_split = fr_add_split,
    .no_more_splits = fr_no_more_splits,
    .poll_next = fr_poll_next,
    .snapshot_state = fr_snapshot,
    .close = fr_close,
};

const spate_source file_source = { &file_enumerator, &file_reader };
