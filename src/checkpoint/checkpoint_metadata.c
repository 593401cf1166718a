/* The `_metadata` file (checkpoint_metadata.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/sha256.h"
#include "core/util.h"
#include "checkpoint/checkpoint_metadata.h"

#define HEADER_BYTES 8

typedef Checkpoint__CheckpointMetadata Metadata;

/* Calls fn on every state file path of md (so it may replace it). */
static int
each_path(Metadata *md, int (*fn)(char **path, void *arg), void *arg)
{
    int rc;

    for (size_t o = 0; o < md->n_operators; o++) {
        Checkpoint__OperatorState *op = md->operators[o];

        for (size_t s = 0; s < op->n_subtasks; s++) {
            Checkpoint__OperatorSubtaskState *st = op->subtasks[s];

            for (size_t k = 0; k < st->n_keyed; k++) {
                if ((rc = fn(&st->keyed[k]->path, arg)) != 0)
                    return rc;
                for (size_t f = 0; f < st->keyed[k]->n_files; f++)
                    if ((rc = fn(&st->keyed[k]->files[f]->path, arg)) != 0)
                        return rc;
            }
            for (size_t k = 0; k < st->n_operator_; k++)
                if ((rc = fn(&st->operator_[k]->path, arg)) != 0)
                    return rc;
        }
    }
    return 0;
}

Metadata *
checkpoint_metadata_copy(const Metadata *md)
{
    size_t len = checkpoint__checkpoint_metadata__get_packed_size(md);
    uint8_t *buf = xmalloc(len ? len : 1);
    Metadata *copy;

    checkpoint__checkpoint_metadata__pack(md, buf);
    copy = checkpoint__checkpoint_metadata__unpack(NULL, len, buf);
    free(buf);
    SPATE_ASSERT(copy != NULL); /* it packed: it unpacks */
    return copy;
}

void
checkpoint_metadata_free(Metadata *md)
{
    if (md != NULL)
        checkpoint__checkpoint_metadata__free_unpacked(md, NULL);
}

/* ---- encoding ---------------------------------------------------------------------- */

struct rel {
    const char *dir;
    size_t len;
};

/* dir/x/y -> x/y; other paths stay as they are. Strings of an unpacked
 * message come from malloc, so they may be replaced. */
static int
make_relative(char **path, void *arg)
{
    struct rel *r = arg;
    const char *p = *path;

    if (p != NULL && strncmp(p, r->dir, r->len) == 0 && p[r->len] == '/' && p[r->len + 1]) {
        char *rel = xstrdup(p + r->len + 1);

        free(*path);
        *path = rel;
    }
    return 0;
}

int
checkpoint_metadata_encode(const Metadata *md, const char *dir, uint8_t **out, size_t *len,
                           spate_error *err)
{
    Metadata *copy = checkpoint_metadata_copy(md);
    struct rel r = { dir, strlen(dir) };
    size_t body;
    uint8_t *buf;
    uint32_t v = CHECKPOINT_METADATA_VERSION;

    UNUSED(err);
    while (r.len > 1 && dir[r.len - 1] == '/')
        r.len--;
    each_path(copy, make_relative, &r);
    body = checkpoint__checkpoint_metadata__get_packed_size(copy);
    buf = xmalloc(HEADER_BYTES + body + SHA256_BYTES);
    memcpy(buf, CHECKPOINT_METADATA_MAGIC, 4);
    buf[4] = (uint8_t)v;
    buf[5] = (uint8_t)(v >> 8);
    buf[6] = (uint8_t)(v >> 16);
    buf[7] = (uint8_t)(v >> 24);
    checkpoint__checkpoint_metadata__pack(copy, buf + HEADER_BYTES);
    sha256(buf, HEADER_BYTES + body, buf + HEADER_BYTES + body);
    checkpoint_metadata_free(copy);
    *out = buf;
    *len = HEADER_BYTES + body + SHA256_BYTES;
    return 0;
}

/* ---- decoding ---------------------------------------------------------------------- */

struct resolve {
    char *dir; /* the metadata file's folder */
};

static int
make_absolute(char **path, void *arg)
{
    struct resolve *r = arg;
    char *abs;

    if (*path == NULL || (*path)[0] == '/' || (*path)[0] == '\0')
        return 0;
    abs = xasprintf("%s/%s", r->dir, *path);
    free(*path);
    *path = abs;
    return 0;
}

static char *
dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL)
        return xstrdup(".");
    if (slash == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

/* What the message must hold beyond decoding. */
static int
check_message(const Metadata *md, const char *path, spate_error *err)
{
    if (md->checkpoint_id <= 0)
        return spate_error_set(err, SPATE_EPROTO, "checkpoint metadata '%s': checkpoint id %lld",
                               path, (long long)md->checkpoint_id);
    if (md->job_id.len != 16)
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint metadata '%s': the job id is not 16 bytes", path);
    for (size_t o = 0; o < md->n_operators; o++) {
        const Checkpoint__OperatorState *op = md->operators[o];
        const char *name = op->name ? op->name : "";

        if (op->operator_id.len != 16)
            return spate_error_set(err, SPATE_EPROTO,
                                   "checkpoint metadata '%s': operator %zu ('%s') has no 16-byte "
                                   "id",
                                   path, o, name);
        if (op->parallelism < 1 || op->max_parallelism < op->parallelism ||
            op->max_parallelism > 32768)
            return spate_error_set(err, SPATE_EPROTO,
                                   "checkpoint metadata '%s': operator '%s' has parallelism %d "
                                   "and max parallelism %d",
                                   path, name, op->parallelism, op->max_parallelism);
        for (size_t s = 0; s < op->n_subtasks; s++) {
            const Checkpoint__OperatorSubtaskState *st = op->subtasks[s];

            if (st->subtask < 0 || st->subtask >= op->parallelism)
                return spate_error_set(err, SPATE_EPROTO,
                                       "checkpoint metadata '%s': operator '%s' has state of "
                                       "subtask %d of %d",
                                       path, name, st->subtask, op->parallelism);
            for (size_t k = 0; k < st->n_keyed; k++) {
                const Checkpoint__KeyedStateHandle *h = st->keyed[k];

                if (h->path == NULL || h->path[0] == '\0' ||
                    h->key_group_start > h->key_group_end ||
                    h->key_group_end >= (uint32_t)op->max_parallelism ||
                    h->n_offsets != (size_t)(h->key_group_end - h->key_group_start + 1))
                    return spate_error_set(err, SPATE_EPROTO,
                                           "checkpoint metadata '%s': operator '%s' subtask %d "
                                           "has a keyed state handle without a file or with key "
                                           "groups %u-%u and %zu offsets (max parallelism %d)",
                                           path, name, st->subtask, h->key_group_start,
                                           h->key_group_end, h->n_offsets, op->max_parallelism);
                for (size_t f = 0; f < h->n_files; f++)
                    if (h->files[f]->path == NULL || h->files[f]->path[0] == '\0' ||
                        h->files[f]->name == NULL || h->files[f]->name[0] == '\0' ||
                        h->files[f]->name[0] == '.' || strchr(h->files[f]->name, '/') != NULL)
                        return spate_error_set(err, SPATE_EPROTO,
                                               "checkpoint metadata '%s': operator '%s' subtask "
                                               "%d has a RocksDB file without a path or a plain "
                                               "name",
                                               path, name, st->subtask);
            }
            for (size_t k = 0; k < st->n_operator_; k++)
                if (st->operator_[k]->path == NULL || st->operator_[k]->path[0] == '\0')
                    return spate_error_set(err, SPATE_EPROTO,
                                           "checkpoint metadata '%s': operator '%s' subtask %d "
                                           "has an operator state handle without a file",
                                           path, name, st->subtask);
        }
    }
    return 0;
}

int
checkpoint_metadata_decode(const uint8_t *data, size_t len, const char *path, Metadata **out,
                           spate_error *err)
{
    uint8_t digest[SHA256_BYTES];
    struct resolve r;
    uint32_t version;
    Metadata *md;
    int rc;

    if (len < HEADER_BYTES + SHA256_BYTES)
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint metadata '%s' is truncated: %zu bytes, a header and "
                               "checksum alone take %d",
                               path, len, HEADER_BYTES + SHA256_BYTES);
    if (memcmp(data, CHECKPOINT_METADATA_MAGIC, 4) != 0)
        return spate_error_set(err, SPATE_EPROTO,
                               "'%s' is not checkpoint metadata: it does not start with '%s'", path,
                               CHECKPOINT_METADATA_MAGIC);
    version = (uint32_t)data[4] | (uint32_t)data[5] << 8 | (uint32_t)data[6] << 16 |
              (uint32_t)data[7] << 24;
    if (version != CHECKPOINT_METADATA_VERSION)
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint metadata '%s' has format version %u; this spate reads "
                               "version %u",
                               path, version, CHECKPOINT_METADATA_VERSION);
    sha256(data, len - SHA256_BYTES, digest);
    if (memcmp(digest, data + len - SHA256_BYTES, SHA256_BYTES) != 0)
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint metadata '%s' is corrupt or truncated: its SHA-256 "
                               "does not match its %zu bytes",
                               path, len);
    md = checkpoint__checkpoint_metadata__unpack(NULL, len - HEADER_BYTES - SHA256_BYTES,
                                                 data + HEADER_BYTES);
    if (md == NULL)
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint metadata '%s' does not decode as CheckpointMetadata",
                               path);
    if ((rc = check_message(md, path, err)) != 0) {
        checkpoint_metadata_free(md);
        return rc;
    }
    r.dir = dir_of(path);
    each_path(md, make_absolute, &r);
    free(r.dir);
    *out = md;
    return 0;
}

/* ---- files ------------------------------------------------------------------------- */

static int
write_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int
checkpoint_metadata_write(const Metadata *md, const char *dir, char **path, spate_error *err)
{
    char *tmp = xasprintf("%s/%s.inprogress", dir, CHECKPOINT_METADATA_FILE);
    char *final = xasprintf("%s/%s", dir, CHECKPOINT_METADATA_FILE);
    uint8_t *buf = NULL;
    size_t len;
    int fd, rc;

    if ((rc = checkpoint_metadata_encode(md, dir, &buf, &len, err)) != 0)
        goto out;
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        rc = spate_error_set(err, -errno, "cannot create '%s': %s", tmp, spate_strerror(-errno));
        goto out;
    }
    if ((rc = write_all(fd, buf, len)) != 0 || fsync(fd) != 0) {
        rc = spate_error_set(err, rc ? rc : -errno, "cannot write '%s': %s", tmp,
                             spate_strerror(rc ? rc : -errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    close(fd);
    if (rename(tmp, final) != 0) {
        rc = spate_error_set(err, -errno, "cannot rename '%s' to '%s': %s", tmp, final,
                             spate_strerror(-errno));
        unlink(tmp);
        goto out;
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        fsync(fd); /* the rename itself is durable */
        close(fd);
    }
    if (path != NULL) {
        *path = final;
        final = NULL;
    }
out:
    free(buf);
    free(tmp);
    free(final);
    return rc;
}

int
checkpoint_metadata_read(const char *path, Metadata **out, spate_error *err)
{
    struct stat st;
    char *file = NULL;
    uint8_t *buf = NULL;
    size_t got = 0;
    int fd = -1, rc;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        path = file = xasprintf("%s/%s", path, CHECKPOINT_METADATA_FILE);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = spate_error_set(err, errno == ENOENT ? SPATE_ENOENT : -errno,
                             "cannot read checkpoint metadata '%s': %s", path,
                             spate_strerror(-errno));
        goto out;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > CHECKPOINT_METADATA_MAX_BYTES) {
        rc = spate_error_set(err, SPATE_EPROTO,
                             "checkpoint metadata '%s' is no regular file of at most %u bytes",
                             path, CHECKPOINT_METADATA_MAX_BYTES);
        goto out;
    }
    buf = xmalloc((size_t)st.st_size + 1);
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = spate_error_set(err, -errno, "cannot read checkpoint metadata '%s': %s", path,
                                 spate_strerror(-errno));
            goto out;
        }
        if (n == 0)
            break; /* shrank while read: the checks below say what is wrong */
        got += (size_t)n;
    }
    rc = checkpoint_metadata_decode(buf, got, path, out, err);
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    free(file);
    return rc;
}

/* ---- restore-time checks ----------------------------------------------------------- */

static int
check_file(const Metadata *md, const char *mdpath, const Checkpoint__OperatorState *op, int subtask,
           const char *file, uint64_t need, spate_error *err)
{
    struct stat st;

    if (stat(file, &st) != 0)
        return spate_error_set(err, errno == ENOENT ? SPATE_ENOENT : -errno,
                               "checkpoint %lld ('%s'): state file '%s' of operator '%s' (subtask "
                               "%d) is missing: %s",
                               (long long)md->checkpoint_id, mdpath, file, op->name ? op->name : "",
                               subtask, spate_strerror(-errno));
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < need)
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint %lld ('%s'): state file '%s' of operator '%s' (subtask "
                               "%d) is truncated: %lld bytes, its state handles need %llu",
                               (long long)md->checkpoint_id, mdpath, file, op->name ? op->name : "",
                               subtask, (long long)st.st_size, (unsigned long long)need);
    return 0;
}

/* A file of an incremental RocksDB checkpoint: exactly as long as it was
 * written (an SST file cut short or grown is no longer the one). */
static int
check_db_file(const Metadata *md, const char *mdpath, const Checkpoint__OperatorState *op,
              int subtask, const Checkpoint__DbFile *f, spate_error *err)
{
    struct stat st;
    int rc;

    if ((rc = check_file(md, mdpath, op, subtask, f->path, f->size, err)) != 0)
        return rc;
    if (stat(f->path, &st) == 0 && (uint64_t)st.st_size != f->size)
        return spate_error_set(err, SPATE_EPROTO,
                               "checkpoint %lld ('%s'): RocksDB file '%s' of operator '%s' "
                               "(subtask %d) has %lld bytes, the checkpoint wrote %llu",
                               (long long)md->checkpoint_id, mdpath, f->path,
                               op->name ? op->name : "", subtask, (long long)st.st_size,
                               (unsigned long long)f->size);
    return 0;
}

int
checkpoint_metadata_check_files(const Metadata *md, const char *path, spate_error *err)
{
    int rc;

    for (size_t o = 0; o < md->n_operators; o++) {
        const Checkpoint__OperatorState *op = md->operators[o];

        for (size_t s = 0; s < op->n_subtasks; s++) {
            const Checkpoint__OperatorSubtaskState *st = op->subtasks[s];

            for (size_t k = 0; k < st->n_keyed; k++) {
                const Checkpoint__KeyedStateHandle *h = st->keyed[k];
                uint64_t need = h->length;

                for (size_t i = 0; i < h->n_offsets; i++)
                    need = h->offsets[i] > need ? h->offsets[i] : need;
                if ((rc = check_file(md, path, op, st->subtask, h->path, need, err)) != 0)
                    return rc;
                for (size_t f = 0; f < h->n_files; f++)
                    if ((rc = check_db_file(md, path, op, st->subtask, h->files[f], err)) != 0)
                        return rc;
            }
            for (size_t k = 0; k < st->n_operator_; k++) {
                const Checkpoint__OperatorStateHandle *h = st->operator_[k];
                uint64_t need = h->length;

                for (size_t e = 0; e < h->n_states; e++)
                    for (size_t i = 0; i < h->states[e]->n_offsets; i++)
                        if (h->states[e]->offsets[i] >= need)
                            need = h->states[e]->offsets[i] + 1;
                if ((rc = check_file(md, path, op, st->subtask, h->path, need, err)) != 0)
                    return rc;
            }
        }
    }
    return 0;
}
