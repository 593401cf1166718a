/* The state file of a task's checkpoint (state_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "state/state_file.h"

#define STATE_FILE_MAGIC   "SPST"
#define STATE_FILE_VERSION 1u

void
state_file_write(struct state_file_writer *w, const uint8_t *p, size_t n)
{
    while (w->error == 0 && n > 0) {
        ssize_t k = write(w->fd, p, n);

        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->error = k < 0 ? errno : EIO;
            return;
        }
        p += k;
        n -= (size_t)k;
    }
}

void
state_file_flush(struct state_file_writer *w)
{
    state_file_write(w, w->buf, w->used);
    w->used = 0;
}

int
state_file_create(struct state_file_writer *w, const char *path, spate_error *err)
{
    memset(w, 0, sizeof *w);
    /* Into the folder the CheckpointCoordinator made before it triggered
     * the checkpoint, never a new one: a folder that is gone was deleted
     * with its checkpoint (aborted, the job ended), and made again here it
     * outlived the job. */
    if ((w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        if (errno == ENOENT)
            return spate_error_set(err, SPATE_ENOENT,
                                   "cannot create state file '%s': its checkpoint's folder does "
                                   "not exist (the checkpoint was aborted and its folder deleted, "
                                   "or state.checkpoints.dir is not shared with the JobManager)",
                                   path);
        return spate_error_set(err, -errno, "cannot create state file '%s': %s", path,
                               spate_strerror(-errno));
    }
    w->buf = xmalloc(STATE_FILE_BUFFER);
    state_file_put(w, STATE_FILE_MAGIC, 4);
    state_file_u32(w, STATE_FILE_VERSION);
    return 0;
}

int
state_file_finish(struct state_file_writer *w, const char *path, spate_error *err)
{
    state_file_flush(w);
    free(w->buf);
    w->buf = NULL;
    if (close(w->fd) != 0 && w->error == 0)
        w->error = errno ? errno : EIO;
    if (w->error == 0)
        return 0;
    unlink(path);
    return spate_error_set(err, -w->error, "cannot write state file '%s': %s", path,
                           spate_strerror(-w->error));
}

Checkpoint__OperatorStateEntry *
state_file_operator_entry(const char *name, Checkpoint__DistributionMode mode)
{
    Checkpoint__OperatorStateEntry *e = xcalloc(1, sizeof *e);

    checkpoint__operator_state_entry__init(e);
    e->name = xstrdup(name);
    e->mode = mode;
    return e;
}

void
state_file_add_offset(Checkpoint__OperatorStateEntry *e, uint64_t off)
{
    e->offsets = xrealloc(e->offsets, (e->n_offsets + 1) * sizeof *e->offsets);
    e->offsets[e->n_offsets++] = off;
}

/* ---- reading ---- */

int
state_file_open(struct state_file_reader *r, const char *path, struct state_file **out,
                spate_error *err)
{
    struct stat st;
    char magic[4];
    uint32_t version;
    struct state_file *f;

    for (int i = 0; i < r->nfiles; i++) {
        if (strcmp(r->files[i].path, path) == 0) {
            *out = &r->files[i];
            return 0;
        }
    }
    r->files = xrealloc(r->files, (size_t)(r->nfiles + 1) * sizeof *r->files);
    f = &r->files[r->nfiles];
    memset(f, 0, sizeof *f);
    if ((f->f = fopen(path, "rbe")) == NULL)
        return spate_error_set(err, -errno, "cannot open state file '%s': %s", path,
                               spate_strerror(-errno));
    if (fstat(fileno(f->f), &st) != 0 || fread(magic, 1, 4, f->f) != 4 ||
        fread(&version, 1, 4, f->f) != 4 || memcmp(magic, STATE_FILE_MAGIC, 4) != 0) {
        fclose(f->f);
        return spate_error_set(err, SPATE_EPROTO, "'%s' is not a spate state file", path);
    }
    if (version != STATE_FILE_VERSION) {
        fclose(f->f);
        return spate_error_set(err, SPATE_EPROTO, "state file '%s' has version %u, not %u", path,
                               version, STATE_FILE_VERSION);
    }
    f->path = xstrdup(path);
    f->size = (uint64_t)st.st_size;
    r->nfiles++;
    *out = f;
    return 0;
}

void
state_file_reader_release(struct state_file_reader *r)
{
    for (int i = 0; i < r->nfiles; i++) {
        fclose(r->files[i].f);
        free(r->files[i].path);
    }
    free(r->files);
    memset(r, 0, sizeof *r);
}

int
state_file_read(struct state_file *f, uint64_t off, uint64_t len, uint8_t **out, spate_error *err)
{
    uint8_t *buf;

    if (off > f->size || len > f->size - off)
        return spate_error_set(err, SPATE_EPROTO,
                               "state file '%s' is truncated: %llu bytes wanted at offset %llu "
                               "of %llu",
                               f->path, (unsigned long long)len, (unsigned long long)off,
                               (unsigned long long)f->size);
    buf = xmalloc(len ? len : 1);
    if (fseeko(f->f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, len, f->f) != len) {
        free(buf);
        return spate_error_set(err, SPATE_EIO, "cannot read state file '%s' at offset %llu",
                               f->path, (unsigned long long)off);
    }
    *out = buf;
    return 0;
}

int
state_file_corrupt(const struct state_file *f, uint64_t off, const char *what, spate_error *err)
{
    return spate_error_set(err, SPATE_EPROTO, "state file '%s' is corrupt at offset %llu: %s",
                           f->path, (unsigned long long)off, what);
}

bool
state_file_cursor_u32(struct state_file_cursor *c, uint32_t *v)
{
    if (c->end - c->p < 4)
        return false;
    memcpy(v, c->p, 4);
    c->p += 4;
    return true;
}

bool
state_file_cursor_entry(struct state_file_cursor *c, uint64_t *hash, const uint8_t **key,
                        uint32_t *klen, const uint8_t **value, uint32_t *vlen)
{
    if (c->end - c->p < 12)
        return false;
    memcpy(hash, c->p, 8);
    memcpy(klen, c->p + 8, 4);
    c->p += 12;
    if ((size_t)(c->end - c->p) < (size_t)*klen + 4)
        return false;
    *key = c->p;
    c->p += *klen;
    memcpy(vlen, c->p, 4);
    c->p += 4;
    if ((size_t)(c->end - c->p) < *vlen)
        return false;
    *value = c->p;
    c->p += *vlen;
    return true;
}
