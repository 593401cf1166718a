/* The text file sink (Flink's FileSink) on the Sink API
 * (include/spate/sink.h), with or without checkpoints: the output path is a
 * folder of part files, written by two-phase commit. Subtask s's writer
 * writes ".part-s-n.inprogress"; a barrier (or the end of input) closes it
 * into ".part-s-n.pending" (prepare_commit: the committable names writer s,
 * part n and its bucket) and the committer renames it to "part-s-n" once
 * its checkpoint completes. Committed files are never written again: a
 * writer numbers its files past every part file of its subtask's in the
 * folder.
 * Buckets (Flink's BucketAssigner; a partitioned SQL table's partition
 * paths): when the configuration says so, each record is its bucket, a
 * folder under the path as "dt=2015-07-15/hm=00%3A01", a newline and its
 * line; the writer keeps an in-progress file per bucket, numbered from the
 * one count of its subtask, and the part files go in the bucket's folder.
 * Leftovers go when a writer is created: after a restore (whose
 * committables are committed by then) the hidden files of every writer
 * index that folds onto the subtask, after a restart without a checkpoint
 * its own, in the bucket folders too; a first run leaves hidden files
 * alone (another run's pending files, which a resume of it commits). Task
 * thread only. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
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

/* In-progress files a writer keeps open at once: past them, the least
 * recently written closes, and is appended to when its bucket's next
 * record comes. */
#define FILE_SINK_OPEN_MAX 64
/* Bucket folders deep: a tree deeper than this is not the sink's. */
#define FILE_SINK_DEPTH_MAX 16

/* A bucket's in-progress file (Flink's Bucket). */
struct file_bucket {
    char *dir;     /* the folder under the path; "": the path itself */
    FILE *f;       /* NULL: closed to spare descriptors */
    uint32_t part; /* its number */
    uint64_t used; /* the writer's record count at its last record */
};

/* A writer: one subtask's in-progress files, one per bucket written since
 * the last checkpoint. */
struct file_writer {
    const struct file_sink_config *conf;
    uint32_t writer; /* its subtask */
    uint32_t next;   /* the next in-progress file's number */
    struct file_bucket *buckets;
    size_t nbuckets, cap;
    size_t last; /* the bucket of the last record */
    size_t nopen;
    uint64_t records;
    char *line; /* the record's line: line_len bytes of line_cap */
    size_t line_len, line_cap;
    char **keys; /* json: each field's member name, quoted, and ':' */
};

/* A committable: u32 writer subtask, u32 part, then the bucket's folder
 * (the rest of the bytes; none: the path itself). */
struct file_committable {
    uint32_t writer, part;
};

/* The file `part` of writer subtask `writer` in the bucket dir, in state
 * (NULL: committed). */
static char *
part_name(const struct file_sink_config *conf, const char *dir, uint32_t writer, uint32_t part,
          const char *state)
{
    const char *sep = *dir ? "/" : "";

    if (state == NULL)
        return xasprintf("%s%s%s/part-%u-%u", conf->path, sep, dir, writer, part);
    return xasprintf("%s%s%s/.part-%u-%u.%s", conf->path, sep, dir, writer, part, state);
}

/* Whether a bucket's folder stays under the path: relative, no empty,
 * "." or ".." step (an escaped partition path never has one). */
static bool
bucket_ok(const char *dir, size_t len)
{
    size_t i = 0;

    while (i < len) {
        size_t j = i;

        while (j < len && dir[j] != '/' && dir[j] != '\0')
            j++;
        if (j < len && dir[j] == '\0')
            return false;
        if (j == i || (j - i == 1 && dir[i] == '.') ||
            (j - i == 2 && dir[i] == '.' && dir[i + 1] == '.'))
            return false;
        i = j + 1;
        if (j + 1 == len)
            return false; /* a trailing '/' */
    }
    return true;
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
 * (fold 0: none) in the folder dir (and, with buckets, the folders under
 * it), then numbers the writer's files past every part file of its
 * subtask's there (its name is its own, part-<subtask>-<n>): no committed
 * file, nor a pending one a later restore may commit, is written again.
 * Other writers' numbers are theirs: counting them, the names of a run
 * would hang on which subtask came first. */
static int
fw_settle(struct file_writer *w, const char *dir, int depth, uint32_t fold, spate_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int rc = 0;

    if (d == NULL)
        return spate_error_set(err, -errno, "cannot read output folder '%s': %s", dir,
                               spate_strerror(-errno));
    while (rc == 0 && (de = readdir(d)) != NULL) {
        char *name = xasprintf("%s/%s", dir, de->d_name);
        uint32_t writer, part;
        bool hidden;
        struct stat st;

        if (!parse_part_name(de->d_name, &writer, &part, &hidden)) {
            /* A bucket's folder (not a link: the tree stays the sink's). */
            if (w->conf->bucketed && de->d_name[0] != '.' && depth < FILE_SINK_DEPTH_MAX &&
                lstat(name, &st) == 0 && S_ISDIR(st.st_mode))
                rc = fw_settle(w, name, depth + 1, fold, err);
            free(name);
            continue;
        }
        if (hidden && fold != 0 && writer % fold == w->writer) {
            if (unlink(name) == 0 || errno == ENOENT) {
                free(name);
                continue;
            }
            SPATE_LOG_WARN("streaming", "file sink cannot delete uncommitted file '%s': %s", name,
                           spate_strerror(-errno));
        }
        if (writer == w->writer && part >= w->next) {
            if (part == UINT32_MAX)
                rc = spate_error_set(err, SPATE_ERANGE,
                                     "output folder '%s' has part file '%s': no number is left "
                                     "past it",
                                     dir, de->d_name);
            w->next = part + 1;
        }
        free(name);
    }
    closedir(d);
    return rc;
}

static void fw_close(void *writer);

/* ---- the line formats: csv and json lines (text is types_format) ---- */

/* Appends n bytes to the writer's line. */
static void
line_put(struct file_writer *w, const void *bytes, size_t n)
{
    if (w->line_len + n > w->line_cap) {
        w->line_cap = MAX(2 * w->line_cap, w->line_len + n);
        w->line = xrealloc(w->line, w->line_cap);
    }
    memcpy(w->line + w->line_len, bytes, n);
    w->line_len += n;
}

/* Appends the readable form of the value at `at`, of type t. */
static void
line_put_readable(struct file_writer *w, const struct spate_type *t, const void *at)
{
    size_t room = w->line_cap - w->line_len;
    int n = types_format(t, at, w->line + w->line_len, room);

    if (n > 0 && (size_t)n >= room) {
        w->line_cap = w->line_len + (size_t)n + 1;
        w->line = xrealloc(w->line, w->line_cap);
        n = types_format(t, at, w->line + w->line_len, w->line_cap - w->line_len);
    }
    w->line_len += (size_t)MAX(n, 0);
}

/* Appends s (n bytes) as a JSON string: '"' and '\\' escaped, control
 * characters as \n, \t, ... or \u00XX; other bytes as they are. */
static void
line_put_json_string(struct file_writer *w, const char *s, size_t n)
{
    line_put(w, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];

        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        }
        if (esc != NULL)
            line_put(w, esc, strlen(esc));
        else
            line_put(w, s + i, 1);
    }
    line_put(w, "\"", 1);
}

/* Appends the readable form of `at` as a JSON string. */
static void
line_put_json_readable(struct file_writer *w, const struct spate_type *t, const void *at)
{
    size_t from = w->line_len;
    char *copy;

    line_put_readable(w, t, at);
    copy = xstrndup(w->line + from, w->line_len - from);
    w->line_len = from;
    line_put_json_string(w, copy, strlen(copy));
    free(copy);
}

static void
line_put_json(struct file_writer *w, const struct spate_type *t, const void *at)
{
    switch (t->kind) {
    case TYPE_INT64:
        line_put_readable(w, t, at);
        break;
    case TYPE_DOUBLE:
        if (isfinite(*(const double *)at))
            line_put_readable(w, t, at);
        else
            line_put(w, "null", 4); /* JSON has no NaN nor infinity */
        break;
    case TYPE_STRING:
        line_put_json_string(w, ((const spate_str *)at)->data, ((const spate_str *)at)->len);
        break;
    case TYPE_TUPLE:
        line_put(w, "[", 1);
        for (int i = t->nullable ? 1 : 0; i < t->nfields; i++) {
            if (i > (t->nullable ? 1 : 0))
                line_put(w, ",", 1);
            if (t->nullable && types_row_is_null(at, i))
                line_put(w, "null", 4);
            else
                line_put_json(w, t->fields[i], (const char *)at + t->offsets[i]);
        }
        line_put(w, "]", 1);
        break;
    default:
        line_put_json_readable(w, t, at);
        break;
    }
}

/* A tuple as a JSON object, its members named by w->keys. */
static void
line_put_json_record(struct file_writer *w, const void *rec)
{
    const struct spate_type *t = w->conf->type;

    line_put(w, "{", 1);
    for (int i = 0; i < t->nfields; i++) {
        if (i > 0)
            line_put(w, ",", 1);
        line_put(w, w->keys[i], strlen(w->keys[i]));
        line_put_json(w, t->fields[i], (const char *)rec + t->offsets[i]);
    }
    line_put(w, "}", 1);
}

/* A tuple as a CSV line (RFC 4180, as SQL's filesystem tables write theirs):
 * a field other than a number between quotes when it is empty or holds the
 * delimiter, a quote or a line break, its quotes doubled. */
static void
line_put_csv_record(struct file_writer *w, const void *rec)
{
    const struct spate_type *t = w->conf->type;

    for (int i = 0; i < t->nfields; i++) {
        const struct spate_type *f = t->fields[i];
        size_t from, n;
        char *copy;

        if (i > 0)
            line_put(w, ",", 1);
        from = w->line_len;
        line_put_readable(w, f, (const char *)rec + t->offsets[i]);
        n = w->line_len - from;
        if (f->kind == TYPE_INT64 || f->kind == TYPE_DOUBLE ||
            (n > 0 && memchr(w->line + from, ',', n) == NULL &&
             memchr(w->line + from, '"', n) == NULL && memchr(w->line + from, '\n', n) == NULL &&
             memchr(w->line + from, '\r', n) == NULL))
            continue;
        copy = xstrndup(w->line + from, n);
        w->line_len = from;
        line_put(w, "\"", 1);
        for (size_t k = 0; k < n; k++)
            line_put(w, copy[k] == '"' ? "\"\"" : copy + k, copy[k] == '"' ? 2 : 1);
        line_put(w, "\"", 1);
        free(copy);
    }
}

/* The writer's line format: csv and json need tuples (the API call checks
 * it; a job graph from elsewhere is checked here), json its members' names
 * made once. */
static int
fw_init_format(struct file_writer *w, spate_error *err)
{
    const struct file_sink_config *c = w->conf;
    const struct spate_type *t = c->type;

    if (c->format == SPATE_FILE_TEXT)
        return 0;
    if (t == NULL || t->kind != TYPE_TUPLE || t->nullable || c->bucketed)
        return spate_error_set(err, SPATE_EINVAL,
                               "file sink '%s': the %s format needs a tuple-typed stream without "
                               "buckets",
                               c->path, c->format == SPATE_FILE_CSV ? "csv" : "json");
    if (c->format != SPATE_FILE_JSON)
        return 0;
    w->keys = xcalloc((size_t)t->nfields, sizeof *w->keys);
    for (int i = 0; i < t->nfields; i++) {
        char f[24];
        const char *name = f;

        if (i < c->nfield_names)
            name = c->field_names[i];
        else
            snprintf(f, sizeof f, "f%d", i);
        w->line_len = 0;
        line_put_json_string(w, name, strlen(name));
        line_put(w, ":", 1);
        w->keys[i] = xstrndup(w->line, w->line_len);
    }
    w->line_len = 0;
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
    if (fw_settle(w, w->conf->path, 0, fold, err) != 0) {
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
        if (next > w->next)
            w->next = next;
    }
    w->line_cap = 4096;
    w->line = xmalloc(w->line_cap);
    if (fw_init_format(w, err) != 0) {
        fw_close(w);
        return NULL;
    }
    return w;
}

/* The writer's bucket dir (len bytes), added if it has none. */
static struct file_bucket *
fw_bucket(struct file_writer *w, const char *dir, size_t len)
{
    struct file_bucket *b;

    if (w->last < w->nbuckets && strlen(w->buckets[w->last].dir) == len &&
        memcmp(w->buckets[w->last].dir, dir, len) == 0)
        return &w->buckets[w->last];
    for (w->last = 0; w->last < w->nbuckets; w->last++) {
        b = &w->buckets[w->last];
        if (strlen(b->dir) == len && memcmp(b->dir, dir, len) == 0)
            return b;
    }
    xgrow((void **)&w->buckets, &w->cap, w->nbuckets + 1, sizeof *w->buckets);
    b = &w->buckets[w->nbuckets++];
    *b = (struct file_bucket){ xstrndup(dir, len), NULL, UINT32_MAX, 0 };
    return b;
}

/* Opens the bucket's in-progress file: a new one, numbered and its folder
 * made, or the one closed to spare descriptors, to append to. */
static int
fw_open(struct file_writer *w, struct file_bucket *b, spate_error *err)
{
    bool fresh = b->part == UINT32_MAX;
    char *name;

    if (w->nopen >= FILE_SINK_OPEN_MAX) {
        struct file_bucket *lru = NULL;

        for (size_t i = 0; i < w->nbuckets; i++)
            if (w->buckets[i].f != NULL && (lru == NULL || w->buckets[i].used < lru->used))
                lru = &w->buckets[i];
        if (fclose(lru->f) != 0) {
            lru->f = NULL;
            w->nopen--;
            return spate_error_set(err, -errno, "cannot write output file in '%s/%s': %s",
                                   w->conf->path, lru->dir, spate_strerror(-errno));
        }
        lru->f = NULL;
        w->nopen--;
    }
    if (fresh) {
        if (*b->dir != '\0') {
            char *dir = xasprintf("%s/%s", w->conf->path, b->dir);
            int rc = fs_mkdirs(dir, err);

            free(dir);
            if (rc != 0)
                return rc;
        }
        b->part = w->next++;
    }
    name = part_name(w->conf, b->dir, w->writer, b->part, "inprogress");
    if ((b->f = fopen(name, fresh ? "we" : "ae")) == NULL) {
        spate_error_set(err, -errno, "cannot open output file '%s': %s", name,
                        spate_strerror(-errno));
        free(name);
        return -1;
    }
    free(name);
    w->nopen++;
    /* Smaller buffers with buckets: up to FILE_SINK_OPEN_MAX of them. */
    setvbuf(b->f, NULL, _IOFBF, w->conf->bucketed ? 1 << 16 : 1 << 20);
    return 0;
}

static int
fw_write(void *writer, const void *rec, int64_t timestamp_ms, spate_error *err)
{
    struct file_writer *w = writer;
    struct file_bucket *b;
    const char *line;
    size_t len;

    UNUSED(timestamp_ms);
    w->line_len = 0;
    if (w->conf->format == SPATE_FILE_CSV)
        line_put_csv_record(w, rec);
    else if (w->conf->format == SPATE_FILE_JSON)
        line_put_json_record(w, rec);
    else
        line_put_readable(w, w->conf->type, rec);
    line = w->line;
    len = w->line_len;
    if (w->conf->bucketed) {
        const char *nl = memchr(w->line, '\n', len);

        if (nl == NULL || !bucket_ok(w->line, (size_t)(nl - w->line)))
            return spate_error_set(err, SPATE_EINVAL,
                                   "file sink '%s': a record that is no bucket (a relative "
                                   "folder), a newline and a line: '%.*s'",
                                   w->conf->path, (int)MIN(len, 80), w->line);
        b = fw_bucket(w, w->line, (size_t)(nl - w->line));
        line = nl + 1;
        len -= (size_t)(line - w->line);
    } else {
        b = fw_bucket(w, "", 0);
    }
    if (b->f == NULL && fw_open(w, b, err) != 0)
        return -1;
    b->used = ++w->records;
    fwrite(line, 1, len, b->f);
    fputc('\n', b->f);
    return 0;
}

/* Closes the in-progress files into ".pending", their committables for the
 * checkpoint; the buckets go (the next records open new files). */
static int
fw_prepare_commit(void *writer, int64_t checkpoint_id, spate_sink_context *ctx, spate_error *err)
{
    struct file_writer *w = writer;
    int rc = 0;

    UNUSED(checkpoint_id);
    for (size_t i = 0; i < w->nbuckets; i++) {
        struct file_bucket *b = &w->buckets[i];
        size_t dirlen = strlen(b->dir);
        struct file_committable c = { w->writer, b->part };
        char *from = part_name(w->conf, b->dir, c.writer, c.part, "inprogress");
        char *to = part_name(w->conf, b->dir, c.writer, c.part, "pending");
        uint8_t *bytes = xmalloc(sizeof c + dirlen);
        int r = 0;

        if (b->part == UINT32_MAX) { /* its file never opened */
            free(bytes);
            free(from);
            free(to);
            free(b->dir);
            continue;
        }
        if (b->f != NULL && fclose(b->f) != 0)
            r = -errno;
        if (r == 0 && rc == 0 && rename(from, to) != 0)
            r = -errno;
        if (r != 0 && rc == 0)
            rc = spate_error_set(err, r, "cannot close output file '%s': %s", from,
                                 spate_strerror(r));
        if (rc == 0) {
            memcpy(bytes, &c, sizeof c);
            memcpy(bytes + sizeof c, b->dir, dirlen);
            spate_sink_context_save_committable(ctx, bytes, sizeof c + dirlen);
        }
        free(bytes);
        free(from);
        free(to);
        free(b->dir);
    }
    w->nbuckets = 0;
    w->nopen = 0;
    return rc != 0 ? -1 : 0;
}

/* The writer state: u32 the next part. */
static void
fw_snapshot_state(void *writer, int64_t checkpoint_id, spate_sink_context *ctx)
{
    struct file_writer *w = writer;

    UNUSED(checkpoint_id);
    spate_sink_context_save_writer_state(ctx, &w->next, sizeof w->next);
}

static void
fw_close(void *writer)
{
    struct file_writer *w = writer;

    for (size_t i = 0; i < w->nbuckets; i++) {
        if (w->buckets[i].f != NULL)
            fclose(w->buckets[i].f); /* stays in progress: uncommitted */
        free(w->buckets[i].dir);
    }
    free(w->buckets);
    free(w->line);
    for (int i = 0; w->keys != NULL && i < w->conf->type->nfields; i++)
        free(w->keys[i]);
    free(w->keys);
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
    char *dir, *from, *to;
    spate_commit_result r = SPATE_COMMIT_OK;

    if (len < sizeof c || !bucket_ok((const char *)committable + sizeof c, len - sizeof c)) {
        spate_error_set(err, SPATE_EPROTO,
                        "file sink: a malformed committable (%zu bytes: %zu, then a bucket's "
                        "folder)",
                        len, sizeof c);
        return SPATE_COMMIT_FAILED;
    }
    memcpy(&c, committable, sizeof c);
    dir = xstrndup((const char *)committable + sizeof c, len - sizeof c);
    from = part_name(conf, dir, c.writer, c.part, "pending");
    to = part_name(conf, dir, c.writer, c.part, NULL);
    if (rename(from, to) != 0 && errno != ENOENT) {
        spate_error_set(err, -errno, "cannot commit output file '%s': %s", from,
                        spate_strerror(-errno));
        r = SPATE_COMMIT_FAILED;
    }
    free(dir);
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
