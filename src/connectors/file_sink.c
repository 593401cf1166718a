/* The text file sink (Flink's FileSink), with or without checkpoints: the
 * output path is a folder of part files, written by two-phase commit.
 * Subtask s writes ".part-s-n.inprogress"; a checkpoint or savepoint closes
 * it into ".part-s-n.pending" (pre-commit, recorded in the snapshot) and its
 * completion renames it to "part-s-n" (commit). The end of bounded input
 * pre-commits the last file and commits it at once (fs_end_input). Committed
 * files are never written again: a new attempt numbers its files past every
 * part file of its subtask's in the folder and every restored writer's, and
 * deletes only
 * hidden files that no completed checkpoint pre-committed — a restore those
 * of each restored writer once its pre-committed files are committed, a
 * restart without a checkpoint its own writer's. The state is union list
 * state whose elements name their writer subtask, so that a job resumed at
 * another parallelism commits every pre-committed file under its writer's
 * name. Task thread only. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/util.h"
#include "connectors/connectors_int.h"
#include "streaming/connector_config.h"
#include "streaming/operator.h"
#include "streaming/types.h"

/* A pending file's checkpoint_id before a checkpoint took it: pre-committed
 * at the end of input, committed by the next checkpoint that completes. */
#define FS_NEXT_CHECKPOINT 0

struct pending_file {
    int64_t checkpoint_id;
    uint32_t part;
};

struct file_sink {
    FILE *f;       /* the in-progress file, NULL until a record comes */
    uint32_t part; /* its number; the next file's when f is NULL */
    bool restored; /* a restore ran (fs_restore), so its leftovers went */
    bool settled;  /* leftovers of a failed attempt are gone */
    struct pending_file *pending;
    size_t npending, cap;
    char *line;
    size_t line_cap;
};

static inline const struct file_sink_config *
fs_conf(const struct stream_operator *op)
{
    return op->conf;
}

/* The file `part` of writer subtask `writer`, in state (NULL: committed). */
static char *
writer_part_name(const struct stream_operator *op, int writer, uint32_t part, const char *state)
{
    if (state == NULL)
        return xasprintf("%s/part-%d-%u", fs_conf(op)->path, writer, part);
    return xasprintf("%s/.part-%d-%u.%s", fs_conf(op)->path, writer, part, state);
}

static char *
part_name(const struct stream_operator *op, uint32_t part, const char *state)
{
    return writer_part_name(op, op->ctx.subtask, part, state);
}

/* A part file's writer and number: "part-W-N" (committed) or
 * ".part-W-N.STATE" (hidden: in progress or pending). */
static bool
parse_part_name(const char *name, int *writer, uint32_t *part, bool *hidden)
{
    int w, end = -1;
    unsigned n;

    *hidden = name[0] == '.';
    if (*hidden)
        name++;
    if (strncmp(name, "part-", 5) != 0 || name[5] < '0' || name[5] > '9' ||
        sscanf(name, "part-%d-%u%n", &w, &n, &end) != 2 || end < 0 || w < 0)
        return false;
    if (*hidden ? name[end] != '.' : name[end] != '\0')
        return false;
    *writer = w;
    *part = n;
    return true;
}

/* The next part number past every part file of this subtask's in the
 * folder (its name is its own: part-<subtask>-<n>): no committed file,
 * nor a pending one a later restore may commit, is written again. Other
 * writers' files are theirs: counting them, a subtask that opened after
 * another had begun its first file started at 1, and the names of a run
 * hung on which subtask came first. */
static int
fs_scan(struct stream_operator *op, uint32_t *next, spate_error *err)
{
    DIR *d = opendir(fs_conf(op)->path);
    struct dirent *de;

    *next = 0;
    if (d == NULL)
        return spate_error_set(err, -errno, "cannot read output folder '%s': %s", fs_conf(op)->path,
                               spate_strerror(-errno));
    while ((de = readdir(d)) != NULL) {
        int writer;
        uint32_t part;
        bool hidden;

        if (parse_part_name(de->d_name, &writer, &part, &hidden) && writer == op->ctx.subtask &&
            part >= *next) {
            if (part == UINT32_MAX) {
                closedir(d);
                return spate_error_set(err, SPATE_ERANGE,
                                       "output folder '%s' has part file '%s': no number "
                                       "is left past it",
                                       fs_conf(op)->path, de->d_name);
            }
            *next = part + 1;
        }
    }
    closedir(d);
    return 0;
}

static int
fs_open(struct stream_operator *op, spate_error *err)
{
    const char *path = fs_conf(op)->path;
    struct file_sink *s;
    struct stat st;
    uint32_t next;
    int rc;

    /* Its parents too, as Flink's FileSink. */
    if ((rc = fs_mkdirs(path, err)) != 0)
        return rc;
    /* Never truncate what is there: an existing file stays as it is. */
    if (stat(path, &st) != 0)
        return spate_error_set(err, -errno, "cannot read output folder '%s': %s", path,
                               spate_strerror(-errno));
    if (!S_ISDIR(st.st_mode))
        return spate_error_set(err, SPATE_EEXIST,
                               "output '%s' is a file: the file sink writes a folder of part "
                               "files there, and leaves an existing file alone",
                               path);
    if ((rc = fs_scan(op, &next, err)) != 0)
        return rc;
    s = xcalloc(1, sizeof *s);
    s->part = next;
    s->line_cap = 4096;
    s->line = xmalloc(s->line_cap);
    op->impl = s;
    return 0;
}

/* Deletes writer's hidden files that no completed checkpoint pre-committed:
 * what a failed attempt wrote after its last checkpoint. */
static void
fs_delete_uncommitted(struct stream_operator *op, int writer)
{
    DIR *d = opendir(fs_conf(op)->path);
    struct dirent *de;

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        int w;
        uint32_t part;
        bool hidden;

        if (parse_part_name(de->d_name, &w, &part, &hidden) && hidden && w == writer) {
            char *path = xasprintf("%s/%s", fs_conf(op)->path, de->d_name);

            if (unlink(path) != 0 && errno != ENOENT)
                SPATE_LOG_WARN("streaming", "task %s cannot delete uncommitted file '%s': %s",
                               op->ctx.task_name, path, spate_strerror(-errno));
            free(path);
        }
    }
    closedir(d);
}

/* Before this attempt's first file: a restart that restored no checkpoint
 * (its job had none yet) replays from the start, so what the failed
 * attempts of this writer left uncommitted goes. A first attempt leaves
 * hidden files alone: they may be another run's, pre-committed by a
 * checkpoint that a resume will commit. */
static void
fs_settle(struct stream_operator *op)
{
    struct file_sink *s = op->impl;

    if (s->settled)
        return;
    s->settled = true;
    if (!s->restored && op->task->attempt > 0)
        fs_delete_uncommitted(op, op->ctx.subtask);
}

static void
fs_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct file_sink *s = op->impl;
    int n;

    UNUSED(meta);
    if (s->f == NULL) {
        char *name;

        fs_settle(op);
        name = part_name(op, s->part, "inprogress");
        s->f = fopen(name, "we");
        if (s->f == NULL) {
            spate_ctx_fail(&op->ctx, "cannot open output file '%s': %s", name,
                           spate_strerror(-errno));
            free(name);
            return;
        }
        free(name);
        setvbuf(s->f, NULL, _IOFBF, 1 << 20);
    }
    n = types_format(fs_conf(op)->type, rec, s->line, s->line_cap);
    if ((size_t)n >= s->line_cap) {
        s->line_cap = (size_t)n + 1;
        s->line = xrealloc(s->line, s->line_cap);
        n = types_format(fs_conf(op)->type, rec, s->line, s->line_cap);
    }
    fwrite(s->line, 1, (size_t)n, s->f);
    fputc('\n', s->f);
}

/* Pre-commit: closes the in-progress file into ".pending", to be committed
 * when checkpoint_id completes (FS_NEXT_CHECKPOINT: the next one that
 * does). */
static void
fs_pre_commit(struct stream_operator *op, int64_t checkpoint_id)
{
    struct file_sink *s = op->impl;
    char *from, *to;
    uint32_t part = s->part;
    int rc = 0;

    if (s->f == NULL)
        return;
    if (fclose(s->f) != 0)
        rc = -errno;
    s->f = NULL;
    s->part++;
    from = part_name(op, part, "inprogress");
    to = part_name(op, part, "pending");
    if (rc == 0 && rename(from, to) != 0)
        rc = -errno;
    if (rc != 0) {
        spate_ctx_fail(&op->ctx, "cannot close output file '%s': %s", from, spate_strerror(rc));
    } else {
        xgrow((void **)&s->pending, &s->cap, s->npending + 1, sizeof *s->pending);
        s->pending[s->npending++] = (struct pending_file){ checkpoint_id, part };
    }
    free(from);
    free(to);
}

static void
fs_commit(struct stream_operator *op, int writer, uint32_t part)
{
    char *from = writer_part_name(op, writer, part, "pending");
    char *to = writer_part_name(op, writer, part, NULL);

    /* Idempotent: a commit repeated after a restore finds it done. */
    if (rename(from, to) != 0 && errno != ENOENT)
        spate_ctx_fail(&op->ctx, "cannot commit output file '%s': %s", from,
                       spate_strerror(-errno));
    free(from);
    free(to);
}

static void
fs_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct file_sink *s = op->impl;
    uint32_t n;

    fs_settle(op);
    /* Files pre-committed at the end of input belong to this checkpoint. */
    for (size_t i = 0; i < s->npending; i++)
        if (s->pending[i].checkpoint_id == FS_NEXT_CHECKPOINT)
            s->pending[i].checkpoint_id = checkpoint_id;
    fs_pre_commit(op, checkpoint_id);
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
        if (s->pending[i].checkpoint_id != FS_NEXT_CHECKPOINT &&
            s->pending[i].checkpoint_id <= checkpoint_id)
            fs_commit(op, op->ctx.subtask, s->pending[i].part);
        else
            s->pending[kept++] = s->pending[i];
    }
    s->npending = kept;
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
    /* The writer's leftovers go once its pre-committed files are
     * committed, by one subtask: the writer's own, or at a lower
     * parallelism the one its index folds onto (no subtask writes as a
     * writer past the parallelism). */
    if ((int)writer % op->ctx.parallelism == op->ctx.subtask)
        fs_delete_uncommitted(op, (int)writer);
    /* New files past every restored writer's: no name a writer of this
     * index used before is written again. */
    if (part > s->part)
        s->part = part;
    s->npending = 0;
    s->restored = true;
    return 0;
}

/* Commits every pending file. */
static void
fs_commit_all(struct stream_operator *op)
{
    struct file_sink *s = op->impl;

    for (size_t i = 0; i < s->npending; i++)
        fs_commit(op, op->ctx.subtask, s->pending[i].part);
    s->npending = 0;
}

/* Bounded input ended: nothing will be replayed. The last file is
 * pre-committed as a checkpoint would, for the next checkpoint
 * (FS_NEXT_CHECKPOINT: fs_snapshot gives it that checkpoint's id, and its
 * completion commits it). As long as a task ends without a final
 * checkpoint (Flink's FLIP-147), fs_commit_all then commits it at once,
 * with every file still pending; once tasks wait for one, that call goes. */
static void
fs_end_input(struct stream_operator *op)
{
    fs_settle(op);
    fs_pre_commit(op, FS_NEXT_CHECKPOINT);
    fs_commit_all(op);
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

const struct operator_vtable file_sink_vtable = {
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
