/* The text file sink (Flink's FileSink) on the Sink API
 * (include/spate/sink.h), with or without checkpoints: the output path is a
 * folder of part files, written by two-phase commit. Subtask s's writer
 * writes ".part-s-n.inprogress"; a barrier (or the end of input) closes it
 * into ".part-s-n.pending" (prepare_commit: the committable names writer s
 * and part n) and the committer renames it to "part-s-n" once its
 * checkpoint completes. Committed files are never written again: a writer
 * numbers its files past every part file of its subtask's in the folder.
 * Leftovers go when a writer is created: after a restore (whose
 * committables are committed by then) the hidden files of every writer
 * index that folds onto the subtask, after a restart without a checkpoint
 * its own; a first run leaves hidden files alone (another run's pending
 * files, which a resume of it commits). Task thread only. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spate/sink.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/util.h"
#include "connectors/connectors_int.h"
#include "streaming/connector_config.h"
#include "streaming/types.h"

/* A writer: one subtask's in-progress file. */
struct file_writer {
    const struct file_sink_config *conf;
    uint32_t writer; /* its subtask */
    FILE *f;         /* the in-progress file, NULL until a record comes */
    uint32_t part;   /* its number; the next file's when f is NULL */
    char *line;
    size_t line_cap;
};

/* A committable: u32 writer subtask, u32 part. */
struct file_committable {
    uint32_t writer, part;
};

/* The file `part` of writer subtask `writer` in state (NULL: committed). */
static char *
part_name(const struct file_sink_config *conf, uint32_t writer, uint32_t part, const char *state)
{
    if (state == NULL)
        return xasprintf("%s/part-%u-%u", conf->path, writer, part);
    return xasprintf("%s/.part-%u-%u.%s", conf->path, writer, part, state);
}

/* A part file's writer and number: "part-W-N" (committed) or
 * ".part-W-N.STATE" (hidden: in progress or pending). */
static bool
parse_part_name(const char *name, uint32_t *writer, uint32_t *part, bool *hidden)
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
    *writer = (uint32_t)w;
    *part = n;
    return true;
}

/* Deletes the hidden files (uncommitted: what failed attempts wrote after
 * their last checkpoint) of the writers whose index mod fold is this one's
 * (fold 0: none),
 * then numbers the writer's files past every part file of its subtask's
 * in the folder (its name is its own, part-<subtask>-<n>): no committed
 * file, nor a pending one a later restore may commit, is written again.
 * Other writers' numbers are theirs: counting them, the names of a run
 * would hang on which subtask came first. */
static int
fw_settle(struct file_writer *w, uint32_t fold, spate_error *err)
{
    const char *path = w->conf->path;
    DIR *d = opendir(path);
    struct dirent *de;

    w->part = 0;
    if (d == NULL)
        return spate_error_set(err, -errno, "cannot read output folder '%s': %s", path,
                               spate_strerror(-errno));
    while ((de = readdir(d)) != NULL) {
        uint32_t writer, part;
        bool hidden;

        if (!parse_part_name(de->d_name, &writer, &part, &hidden))
            continue;
        if (hidden && fold != 0 && writer % fold == w->writer) {
            char *name = xasprintf("%s/%s", path, de->d_name);

            if (unlink(name) == 0 || errno == ENOENT) {
                free(name);
                continue;
            }
            SPATE_LOG_WARN("streaming", "file sink cannot delete uncommitted file '%s': %s", name,
                           spate_strerror(-errno));
            free(name);
        }
        if (writer == w->writer && part >= w->part) {
            if (part == UINT32_MAX) {
                closedir(d);
                return spate_error_set(err, SPATE_ERANGE,
                                       "output folder '%s' has part file '%s': no number "
                                       "is left past it",
                                       path, de->d_name);
            }
            w->part = part + 1;
        }
    }
    closedir(d);
    return 0;
}

static void *
fw_create(spate_sink_context *ctx, const void *config, spate_error *err)
{
    struct file_writer *w = xcalloc(1, sizeof *w);
    int parallelism = spate_sink_context_parallelism(ctx);
    uint32_t fold = 0;

    w->conf = config;
    w->writer = (uint32_t)spate_sink_context_subtask(ctx);
    /* After a restore, every writer index that folds onto this subtask
     * (a job resumed at a lower parallelism has no subtask of the higher
     * ones); after a restart without a checkpoint (the job replays from
     * the start), its own. */
    if (spate_sink_context_restored(ctx))
        fold = (uint32_t)parallelism;
    else if (spate_sink_context_attempt(ctx) > 0)
        fold = UINT32_MAX;
    if (fw_settle(w, fold, err) != 0) {
        free(w);
        return NULL;
    }
    /* New files past every restored writer's too: no name a writer of
     * this index used before is written again, whichever subtask wrote
     * it. */
    for (size_t i = 0; i < spate_sink_context_writer_states(ctx); i++) {
        size_t len;
        const void *state = spate_sink_context_writer_state(ctx, i, &len);
        uint32_t next;

        if (len != sizeof next) {
            spate_error_set(err, SPATE_EPROTO, "file sink: a writer state of %zu bytes, not %zu",
                            len, sizeof next);
            free(w);
            return NULL;
        }
        memcpy(&next, state, sizeof next);
        if (next > w->part)
            w->part = next;
    }
    w->line_cap = 4096;
    w->line = xmalloc(w->line_cap);
    return w;
}

static int
fw_write(void *writer, const void *rec, int64_t timestamp_ms, spate_error *err)
{
    struct file_writer *w = writer;
    int n;

    UNUSED(timestamp_ms);
    if (w->f == NULL) {
        char *name = part_name(w->conf, w->writer, w->part, "inprogress");

        if ((w->f = fopen(name, "we")) == NULL) {
            spate_error_set(err, -errno, "cannot open output file '%s': %s", name,
                            spate_strerror(-errno));
            free(name);
            return -1;
        }
        free(name);
        setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    }
    n = types_format(w->conf->type, rec, w->line, w->line_cap);
    if ((size_t)n >= w->line_cap) {
        w->line_cap = (size_t)n + 1;
        w->line = xrealloc(w->line, w->line_cap);
        n = types_format(w->conf->type, rec, w->line, w->line_cap);
    }
    fwrite(w->line, 1, (size_t)n, w->f);
    fputc('\n', w->f);
    return 0;
}

/* Closes the in-progress file into ".pending", its committable for the
 * checkpoint. */
static int
fw_prepare_commit(void *writer, int64_t checkpoint_id, spate_sink_context *ctx, spate_error *err)
{
    struct file_writer *w = writer;
    struct file_committable c = { w->writer, w->part };
    char *from, *to;
    int rc = 0;

    UNUSED(checkpoint_id);
    if (w->f == NULL)
        return 0;
    if (fclose(w->f) != 0)
        rc = -errno;
    w->f = NULL;
    w->part++;
    from = part_name(w->conf, c.writer, c.part, "inprogress");
    to = part_name(w->conf, c.writer, c.part, "pending");
    if (rc == 0 && rename(from, to) != 0)
        rc = -errno;
    if (rc != 0)
        spate_error_set(err, rc, "cannot close output file '%s': %s", from, spate_strerror(rc));
    else
        spate_sink_context_save_committable(ctx, &c, sizeof c);
    free(from);
    free(to);
    return rc != 0 ? -1 : 0;
}

/* The writer state: u32 the next part. */
static void
fw_snapshot_state(void *writer, int64_t checkpoint_id, spate_sink_context *ctx)
{
    struct file_writer *w = writer;

    UNUSED(checkpoint_id);
    spate_sink_context_save_writer_state(ctx, &w->part, sizeof w->part);
}

static void
fw_close(void *writer)
{
    struct file_writer *w = writer;

    if (w->f != NULL)
        fclose(w->f); /* stays in progress: uncommitted */
    free(w->line);
    free(w);
}

/* The committer's object is the configuration; making it makes the output
 * folder (and its parents, as Flink's FileSink), so that a bad path fails
 * the job as it starts. */
static void *
fc_create(spate_sink_context *ctx, const void *config, spate_error *err)
{
    const struct file_sink_config *conf = config;
    struct stat st;

    UNUSED(ctx);
    if (fs_mkdirs(conf->path, err) != 0)
        return NULL;
    /* Never truncate what is there: an existing file stays as it is. */
    if (stat(conf->path, &st) != 0) {
        spate_error_set(err, -errno, "cannot read output folder '%s': %s", conf->path,
                        spate_strerror(-errno));
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        spate_error_set(err, SPATE_EEXIST,
                        "output '%s' is a file: the file sink writes a folder of part files "
                        "there, and leaves an existing file alone",
                        conf->path);
        return NULL;
    }
    return (void *)conf;
}

/* Renames the pending file; idempotent: a commit repeated after a restore
 * finds it done. */
static spate_commit_result
fc_commit(void *committer, const void *committable, size_t len, spate_error *err)
{
    const struct file_sink_config *conf = committer;
    struct file_committable c;
    char *from, *to;
    spate_commit_result r = SPATE_COMMIT_OK;

    if (len != sizeof c) {
        spate_error_set(err, SPATE_EPROTO, "file sink: a committable of %zu bytes, not %zu", len,
                        sizeof c);
        return SPATE_COMMIT_FAILED;
    }
    memcpy(&c, committable, sizeof c);
    from = part_name(conf, c.writer, c.part, "pending");
    to = part_name(conf, c.writer, c.part, NULL);
    if (rename(from, to) != 0 && errno != ENOENT) {
        spate_error_set(err, -errno, "cannot commit output file '%s': %s", from,
                        spate_strerror(-errno));
        r = SPATE_COMMIT_FAILED;
    }
    free(from);
    free(to);
    return r;
}

/* The state of the file sink before the Sink API: one element per writer,
 * u32 writer subtask, u32 next part, u32 pending, then per pending file
 * i64 checkpoint id, u32 part; each pending file becomes its committable,
 * the next part its writer state. */
int
file_sink_upgrade_state(const uint8_t *bytes, size_t len, const struct sink_restore *to, void *arg,
                        spate_error *err)
{
    uint32_t writer, next, n;

    if (len < 12)
        return spate_error_set(err, SPATE_EPROTO, "malformed file sink state (%zu bytes)", len);
    memcpy(&writer, bytes, 4);
    memcpy(&next, bytes + 4, 4);
    memcpy(&n, bytes + 8, 4);
    if (len != 12 + (size_t)n * 12 || writer > INT32_MAX)
        return spate_error_set(err, SPATE_EPROTO, "malformed file sink state (%zu bytes)", len);
    for (uint32_t i = 0; i < n; i++) {
        struct file_committable c = { writer, 0 };

        memcpy(&c.part, bytes + 20 + i * 12, 4);
        to->committable(arg, writer, &c, sizeof c);
    }
    to->writer_state(arg, writer, &next, sizeof next);
    return 0;
}

static const spate_sink_writer file_writer = {
    .create = fw_create,
    .write = fw_write,
    .prepare_commit = fw_prepare_commit,
    .snapshot_state = fw_snapshot_state,
    .close = fw_close,
};

static const spate_committer file_committer = {
    .create = fc_create,
    .commit = fc_commit,
};

const spate_committing_sink file_sink = { &file_writer, &file_committer };
