/* A process's own folders under io.tmp.dirs (tmp_dir.h). */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fs.h"
#include "core/id.h"
#include "core/log.h"
#include "core/tmp_dir.h"

#define TMP_LOG "tmpdir"
#define LOCK    ".lock"
#define PREFIX  "spate-"

const char *
tmp_dir_base(const struct config *conf, char *buf, size_t size)
{
    const char *dirs = NULL;

    if (conf == NULL || config_get_string(conf, CFG(IO_TMP_DIRS), &dirs, NULL) != 0 ||
        dirs == NULL || *dirs == '\0')
        dirs = getenv("TMPDIR");
    if (dirs == NULL || *dirs == '\0')
        dirs = "/tmp";
    snprintf(buf, size, "%.*s", (int)strcspn(dirs, ";:,"), dirs);
    return buf;
}

int
tmp_dir_make(const char *base, const char *kind, struct tmp_dir *out, spate_error *err)
{
    spate_id unique;
    char *tmp;
    int fd, rc;

    out->path = NULL;
    out->lock_fd = -1;
    id_random(&unique);
    out->path = xasprintf("%s/" PREFIX "%s-%s", base, kind, id_str(&unique).s);
    if (mkdir(out->path, 0700) != 0) {
        rc = spate_error_set(err, -errno, "cannot make the folder '%s' (io.tmp.dirs): %s",
                             out->path, spate_strerror(-errno));
        goto fail;
    }
    /* Locked under a name of its own, then renamed: a sweep never finds
     * the ".lock" of a live process unlocked. */
    tmp = xasprintf("%s/.lock-%d", out->path, (int)getpid());
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        rc = spate_error_set(err, -errno, "cannot lock '%s': %s", tmp, spate_strerror(-errno));
    } else {
        char *lock = xasprintf("%s/" LOCK, out->path);

        rc = rename(tmp, lock) == 0 ? 0
                                    : spate_error_set(err, -errno, "cannot rename '%s': %s", tmp,
                                                      spate_strerror(-errno));
        free(lock);
    }
    if (rc != 0) {
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        free(tmp);
        rmdir(out->path);
        goto fail;
    }
    free(tmp);
    out->lock_fd = fd;
    return 0;
fail:
    free(out->path);
    out->path = NULL;
    return rc;
}

void
tmp_dir_remove(struct tmp_dir *d)
{
    spate_error err = { 0 };

    if (d->path == NULL)
        return;
    if (fs_remove_tree(d->path, &err) != 0)
        SPATE_LOG_WARN(TMP_LOG, "cannot remove '%s': %s", d->path, err.message);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    free(d->path);
    d->path = NULL;
    d->lock_fd = -1;
}

/* True when dir's ".lock" exists and no process holds it (taken by fd,
 * which the caller closes after removing the folder). */
static bool
abandoned(const char *dir, int *fd)
{
    char *lock = xasprintf("%s/" LOCK, dir);

    *fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    free(lock);
    if (*fd < 0)
        return false;
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        close(*fd);
        *fd = -1;
        return false;
    }
    return true;
}

int
tmp_dir_sweep(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *e;
    int removed = 0;

    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        spate_error err = { 0 };
        struct stat st;
        char *path;
        int fd;

        if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0)
            continue;
        path = xasprintf("%s/%s", base, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
            abandoned(path, &fd)) {
            if (fs_remove_tree(path, &err) == 0) {
                SPATE_LOG_INFO(TMP_LOG, "removed '%s', left by a process that is gone", path);
                removed++;
            } else {
                SPATE_LOG_WARN(TMP_LOG, "cannot remove '%s', left by a process that is gone: %s",
                               path, err.message);
            }
            close(fd);
        }
        free(path);
    }
    closedir(d);
    return removed;
}

int
tmp_dir_sweep_config(const struct config *conf)
{
    char bases[4][512];
    const char *dir;
    int n = 0, removed = 0;

    tmp_dir_base(conf, bases[n++], sizeof bases[0]);
    if (config_get_string(conf, CFG(STATE_BACKEND_ROCKSDB_LOCALDIR), &dir, NULL) == 0 &&
        dir != NULL && *dir)
        snprintf(bases[n++], sizeof bases[0], "%s", dir);
    if (config_get_string(conf, CFG(BLOB_STORAGE_DIRECTORY), &dir, NULL) == 0 && dir != NULL)
        snprintf(bases[n++], sizeof bases[0], "%s", dir);
    if (config_get_string(conf, CFG(WEB_UPLOAD_DIR), &dir, NULL) == 0 && dir != NULL)
        snprintf(bases[n++], sizeof bases[0], "%s", dir);
    for (int i = 0; i < n; i++) {
        bool seen = false;

        for (int j = 0; j < i; j++)
            seen = seen || strcmp(bases[i], bases[j]) == 0;
        if (!seen)
            removed += tmp_dir_sweep(bases[i]);
    }
    return removed;
}
