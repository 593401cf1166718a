/* Folders on the local file system (fs.h). */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/fs.h"

int
fs_mkdirs(const char *dir, spate_error *err)
{
    char *p = xstrdup(dir);
    int rc = 0;

    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;

            *s = '\0';
            if (*p != '\0' && mkdir(p, 0755) != 0 && errno != EEXIST) {
                rc = spate_error_set(err, -errno, "cannot create folder '%s': %s", p,
                                     spate_strerror(-errno));
                break;
            }
            *s = c;
            if (c == '\0')
                break;
        }
    }
    free(p);
    return rc;
}

/* nftw passes no argument: the first failure is kept here (one walk at a
 * time per thread). */
static _Thread_local struct {
    int code;
    char path[512];
} fs_failure;

static int
fs_remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT && fs_failure.code == 0) {
        fs_failure.code = -errno;
        snprintf(fs_failure.path, sizeof fs_failure.path, "%s", path);
    }
    return 0; /* go on: remove what can be removed */
}

int
fs_remove_tree(const char *path, spate_error *err)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0
                               : spate_error_set(err, -errno, "cannot remove '%s': %s", path,
                                                 spate_strerror(-errno));
    fs_failure.code = 0;
    if (nftw(path, fs_remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && fs_failure.code == 0) {
        fs_failure.code = -errno;
        snprintf(fs_failure.path, sizeof fs_failure.path, "%s", path);
    }
    if (fs_failure.code != 0)
        return spate_error_set(err, fs_failure.code, "cannot remove '%s': %s", fs_failure.path,
                               spate_strerror(fs_failure.code));
    return 0;
}
