/* The text file sink of a job that takes checkpoints: exactly once, by two-
 * phase commit (Flink's FileSink). The output path is a folder; subtask s
 * writes ".part-s-n.inprogress"; a checkpoint closes it into
 * ".part-s-n.pending" (pre-commit, recorded in the snapshot) and the
 * checkpoint's completion renames it to "part-s-n" (commit). A restore
 * commits what its checkpoint had pre-committed and deletes this subtask's
 * uncommitted files, which the replay writes again. At the end of bounded
 * input the last file is committed at once. The state is union list state
 * whose elements name their writer subtask, so that a job resumed at
 * another parallelism commits every pre-committed file under its writer's
 * name and numbers new files past every restored writer's. Task thread
 * only. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/util.h"
#include "streaming/keyed_backend.h"
#include "streaming/types.h"

struct pending_file {
    int64_t checkpoint_id;
    uint32_t part;
};

struct file_sink {
    FILE *f;       /* the in-progress file, NULL until a record comes */
    uint32_t part; /* its number; the next file's when f is NULL */
    struct pending_file *pending;
    size_t npending, cap;
    char *line;
    size_t line_cap;
};

/* The file `part` of writer subtask `writer`, in state (NULL: committed). */
static char *
writer_part_name(const struct stream_operator *op, int writer, uint32_t part, const char *state)
{
    if (state == NULL)
        return xasprintf("%s/part-%d-%u", op->config->path, writer, part);
    return xasprintf("%s/.part-%d-%u.%s", op->config->path, writer, part, state);
}

static char *
part_name(const struct stream_operator *op, uint32_t part, const char *state)
{
    return writer_part_name(op, op->ctx.subtask, part, state);
}

static int
fs_open(struct stream_operator *op, spate_error *err)
{
    struct file_sink *s;

    if (mkdir(op->config->path, 0755) != 0 && errno != EEXIST)
        return spate_error_set(err, -errno, "cannot make output folder '%s': %s", op->config->path,
                               strerror(errno));
    s = xcalloc(1, sizeof *s);
    s->line_cap = 4096;
    s->line = xmalloc(s->line_cap);
    op->impl = s;
    return 0;
}

static void
fs_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct file_sink *s = op->impl;
    int n;

    UNUSED(meta);
    if (s->f == NULL) {
        char *name = part_name(op, s->part, "inprogress");

        s->f = fopen(name, "we");
        if (s->f == NULL) {
            spate_ctx_fail(&op->ctx, "cannot open output file '%s': %s", name, strerror(errno));
            free(name);
            return;
        }
        free(name);
        setvbuf(s->f, NULL, _IOFBF, 1 << 20);
    }
    n = types_format(op->config->in_type, rec, s->line, s->line_cap);
    if ((size_t)n >= s->line_cap) {
        s->line_cap = (size_t)n + 1;
        s->line = xrealloc(s->line, s->line_cap);
        n = types_format(op->config->in_type, rec, s->line, s->line_cap);
    }
    fwrite(s->line, 1, (size_t)n, s->f);
    fputc('\n', s->f);
}

/* Closes the in-progress file into state ("pending" or committed). */
static int
fs_close_file(struct stream_operator *op, const char *state)
{
    struct file_sink *s = op->impl;
    char *from, *to;
    int rc = 0;

    if (s->f == NULL)
        return 0;
    if (fclose(s->f) != 0)
        rc = -errno;
    s->f = NULL;
    from = part_name(op, s->part, "inprogress");
    to = part_name(op, s->part, state);
    if (rc == 0 && rename(from, to) != 0)
        rc = -errno;
    if (rc != 0)
        spate_ctx_fail(&op->ctx, "cannot close output file '%s': %s", from, strerror(-rc));
    free(from);
    free(to);
    s->part++;
    return rc;
}

static void
fs_commit(struct stream_operator *op, int writer, uint32_t part)
{
    char *from = writer_part_name(op, writer, part, "pending");
    char *to = writer_part_name(op, writer, part, NULL);

    /* Idempotent: a commit repeated after a restore finds it done. */
    if (rename(from, to) != 0 && errno != ENOENT)
        spate_ctx_fail(&op->ctx, "cannot commit output file '%s': %s", from, strerror(errno));
    free(from);
    free(to);
}

static void
fs_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct file_sink *s = op->impl;
    uint32_t n;

    if (s->f != NULL) {
        uint32_t part = s->part;

        if (fs_close_file(op, "pending") == 0) {
            xgrow((void **)&s->pending, &s->cap, s->npending + 1, sizeof *s->pending);
            s->pending[s->npending++] = (struct pending_file){ checkpoint_id, part };
        }
    }
    /* u32 writer subtask, u32 next part, u32 pending, then per pending
     * file i64 id, u32 part. */
    {
        uint32_t writer = (uint32_t)op->ctx.subtask;
        size_t len;
        uint8_t *e;

        n = (uint32_t)s->npending;
        len = 12 + (size_t)n * 12;
        e = xmalloc(len);
        memcpy(e, &writer, 4);
        memcpy(e + 4, &s->part, 4);
        memcpy(e + 8, &n, 4);
        for (uint32_t i = 0; i < n; i++) {
            memcpy(e + 12 + i * 12, &s->pending[i].checkpoint_id, 8);
            memcpy(e + 20 + i * 12, &s->pending[i].part, 4);
        }
        op_state_add(out, e, len);
        free(e);
    }
}

static void
fs_checkpoint_complete(struct stream_operator *op, int64_t checkpoint_id)
{
    struct file_sink *s = op->impl;
    size_t kept = 0;

    for (size_t i = 0; i < s->npending; i++) {
        if (s->pending[i].checkpoint_id <= checkpoint_id)
            fs_commit(op, op->ctx.subtask, s->pending[i].part);
        else
            s->pending[kept++] = s->pending[i];
    }
    s->npending = kept;
}

/* Deletes this subtask's hidden files that no checkpoint pre-committed:
 * what the failed attempt wrote after its last checkpoint. */
static void
fs_delete_uncommitted(struct stream_operator *op)
{
    DIR *d = opendir(op->config->path);
    char prefix[32];
    struct dirent *de;

    if (d == NULL)
        return;
    snprintf(prefix, sizeof prefix, ".part-%d-", op->ctx.subtask);
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
            char *path = xasprintf("%s/%s", op->config->path, de->d_name);

            unlink(path);
            free(path);
        }
    }
    closedir(d);
}

/* One element per writer subtask of the restored checkpoint; every subtask
 * gets them all (union state). */
static int
fs_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct file_sink *s = op->impl;
    uint32_t writer, part, n;

    if (len < 12)
        return spate_error_set(err, SPATE_EPROTO, "malformed file sink state");
    memcpy(&writer, bytes, 4);
    memcpy(&part, bytes + 4, 4);
    memcpy(&n, bytes + 8, 4);
    if (len != 12 + (size_t)n * 12 || writer > INT32_MAX)
        return spate_error_set(err, SPATE_EPROTO, "malformed file sink state");
    /* The restored checkpoint completed: what it pre-committed is
     * committed (by every subtask that has the element: renames are
     * idempotent). */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t p;

        memcpy(&p, bytes + 20 + i * 12, 4);
        fs_commit(op, (int)writer, p);
    }
    /* The writer's own leftovers go once its pre-committed files are
     * committed; a subtask of the same index writes on with new files. */
    if ((int)writer == op->ctx.subtask)
        fs_delete_uncommitted(op);
    /* New files past every restored writer's: no name a writer of this
     * index used before is written again. */
    if (part > s->part)
        s->part = part;
    s->npending = 0;
    return 0;
}

/* Bounded input ended: nothing will be replayed, commit the rest. */
static void
fs_end_input(struct stream_operator *op)
{
    struct file_sink *s = op->impl;

    fs_checkpoint_complete(op, INT64_MAX);
    fs_close_file(op, NULL);
    UNUSED(s);
}

static void
fs_close(struct stream_operator *op)
{
    struct file_sink *s = op->impl;

    if (s == NULL)
        return;
    if (s->f != NULL)
        fclose(s->f); /* stays in progress: uncommitted */
    free(s->pending);
    free(s->line);
    free(s);
    op->impl = NULL;
}

const struct operator_vtable file_sink_exactly_once_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = fs_open,
    .process = fs_process,
    .end_input = fs_end_input,
    .close = fs_close,
    .snapshot_state = fs_snapshot,
    .restore_state = fs_restore,
    .checkpoint_complete = fs_checkpoint_complete,
    .own_state_union = true,
};
