/* Checkpoint storage on the local file system (Flink's
 * FsCheckpointStorageAccess): locations are folders, `_metadata` a file
 * written to a temporary name, synced and renamed (checkpoint_metadata.c).
 * Disposing of a savepoint removes its own files only: the state files its
 * `_metadata` names inside its folder, the `_metadata`, the folder when
 * empty. Absolute paths only: checkpoint_storage.c parsed them. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint_metadata.h"
#include "checkpoint/checkpoint_storage_int.h"
#include "core/alloc.h"
#include "core/fs.h"

static int
fs_resolve(const char *pointer, char **metadata, spate_error *err)
{
    struct stat st;

    (void)err;
    if (stat(pointer, &st) == 0 && S_ISDIR(st.st_mode))
        *metadata = xasprintf("%s/%s", pointer, CHECKPOINT_METADATA_FILE);
    else
        *metadata = xstrdup(pointer); /* reading it says what is wrong */
    return 0;
}

static int
fs_init_location(const char *dir, const char *name, char **location, spate_error *err)
{
    char *loc = xasprintf("%s/%s", dir, name);
    int rc;

    if ((rc = fs_mkdirs(loc, err)) != 0) {
        free(loc);
        return rc;
    }
    *location = loc;
    return 0;
}

static char *
fs_state_file(const char *location, const spate_id *vertex, int subtask)
{
    return xasprintf("%s/%s-%d.state", location, id_str(vertex).s, subtask);
}

static int
fs_write_metadata(const char *location, const Checkpoint__CheckpointMetadata *md, char **metadata,
                  spate_error *err)
{
    return checkpoint_metadata_write(md, location, metadata, err);
}

static int
fs_read_metadata(const char *metadata, Checkpoint__CheckpointMetadata **md, spate_error *err)
{
    return checkpoint_metadata_read(metadata, md, err);
}

static int
fs_dispose_location(const char *location, spate_error *err)
{
    return fs_remove_tree(location, err);
}

static void
fs_remove_if_empty(const char *dir)
{
    rmdir(dir); /* fails, as it should, while anything is left in it */
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* n of chk-<n>, or 0 for any other name. */
static uint64_t
chk_id(const char *name)
{
    const char *digits = name + strlen(CHECKPOINT_STORAGE_CHK_PREFIX);
    char *end;
    unsigned long long id;

    if (strncmp(name, CHECKPOINT_STORAGE_CHK_PREFIX, strlen(CHECKPOINT_STORAGE_CHK_PREFIX)) != 0 ||
        *digits < '1' || *digits > '9')
        return 0;
    errno = 0;
    id = strtoull(digits, &end, 10);
    return *end == '\0' && errno == 0 ? (uint64_t)id : 0;
}

static int
fs_list_checkpoints(const char *dir, uint64_t **ids, size_t *n, spate_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t cap = 8;

    *n = 0;
    *ids = NULL;
    if (d == NULL) {
        if (errno == ENOENT)
            return 0; /* no checkpoint yet */
        return spate_error_set(err, -errno, "cannot list '%s': %s", dir, spate_strerror(-errno));
    }
    *ids = xcalloc(cap, sizeof **ids);
    while ((e = readdir(d)) != NULL) {
        uint64_t id = chk_id(e->d_name);
        struct stat st;
        char *path;

        if (id == 0)
            continue;
        path = xasprintf("%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (*n == cap)
                *ids = xrealloc(*ids, (cap *= 2) * sizeof **ids);
            (*ids)[(*n)++] = id;
        }
        free(path);
    }
    closedir(d);
    qsort(*ids, *n, sizeof **ids, cmp_u64);
    return 0;
}

/* Unlinks path when it lies inside dir (a missing file is no error). */
static int
dispose_file(const char *dir, const char *path, spate_error *err)
{
    size_t n = strlen(dir);

    if (strncmp(path, dir, n) != 0 || path[n] != '/')
        return 0; /* not the savepoint's own */
    if (unlink(path) != 0 && errno != ENOENT)
        return spate_error_set(err, -errno, "cannot delete '%s': %s", path, spate_strerror(-errno));
    return 0;
}

static int
fs_dispose_savepoint(const char *file, spate_error *err)
{
    Checkpoint__CheckpointMetadata *md = NULL;
    char *dir, *slash;
    int rc;

    if ((rc = checkpoint_metadata_read(file, &md, err)) != 0)
        return rc;
    dir = xstrdup(file);
    slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    else
        strcpy(dir, ".");
    for (size_t o = 0; rc == 0 && o < md->n_operators; o++) {
        const Checkpoint__OperatorState *op = md->operators[o];

        for (size_t s = 0; rc == 0 && s < op->n_subtasks; s++) {
            const Checkpoint__OperatorSubtaskState *sub = op->subtasks[s];

            for (size_t k = 0; rc == 0 && k < sub->n_keyed; k++)
                rc = dispose_file(dir, sub->keyed[k]->path, err);
            for (size_t k = 0; rc == 0 && k < sub->n_operator_; k++)
                rc = dispose_file(dir, sub->operator_[k]->path, err);
        }
    }
    if (rc == 0 && unlink(file) != 0 && errno != ENOENT)
        rc = spate_error_set(err, -errno, "cannot delete '%s': %s", file, spate_strerror(-errno));
    if (rc == 0)
        rmdir(dir); /* only when nothing else is left in it */
    checkpoint_metadata_free(md);
    free(dir);
    return rc;
}

const struct checkpoint_storage_ops checkpoint_storage_fs_ops = {
    .scheme = "file",
    .resolve = fs_resolve,
    .init_location = fs_init_location,
    .state_file = fs_state_file,
    .write_metadata = fs_write_metadata,
    .read_metadata = fs_read_metadata,
    .dispose_location = fs_dispose_location,
    .remove_if_empty = fs_remove_if_empty,
    .list_checkpoints = fs_list_checkpoints,
    .dispose_savepoint = fs_dispose_savepoint,
};
