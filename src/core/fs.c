/* Folders on the local file system (fs.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Copies in with read and write, from where copy_file_range stopped. */
static int
fs_copy_rw(int in, int out, const char *src, const char *dst, uint64_t *total, spate_error *err)
{
    char *buf = xmalloc(1u << 20);
    int rc = 0;

    for (;;) {
        ssize_t n = read(in, buf, 1u << 20), w = 0;

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = spate_error_set(err, -errno, "cannot read '%s': %s", src, spate_strerror(-errno));
            break;
        }
        if (n == 0)
            break;
        while (w < n && rc == 0) {
            ssize_t k = write(out, buf + w, (size_t)(n - w));

            if (k < 0 && errno != EINTR)
                rc = spate_error_set(err, -errno, "cannot write '%s': %s", dst,
                                     spate_strerror(-errno));
            else if (k > 0)
                w += k;
        }
        if (rc != 0)
            break;
        *total += (uint64_t)n;
    }
    free(buf);
    return rc;
}

int
fs_copy_file(const char *src, const char *dst, uint64_t *size, spate_error *err)
{
    int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
    uint64_t total = 0;
    ssize_t n;

    if (in < 0)
        return spate_error_set(err, -errno, "cannot open '%s': %s", src, spate_strerror(-errno));
    if ((out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
        rc = spate_error_set(err, -errno, "cannot create '%s': %s", dst, spate_strerror(-errno));
        close(in);
        return rc;
    }
    /* In the kernel, page cache to page cache (a reflink where the file
     * system shares extents): no copy through a buffer of ours. A new
     * file all the same, never the source's inode: what is done to the
     * copy (a checkpoint's file deleted or cut short) leaves the source
     * (a running database's) alone. Where the kernel or the file systems
     * cannot (another file system, /proc), read and write. */
    while ((n = copy_file_range(in, NULL, out, NULL, 1u << 30, 0)) != 0) {
        if (n > 0) {
            total += (uint64_t)n;
        } else if (errno == EINTR) {
            continue;
        } else if (total == 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                                  errno == EOPNOTSUPP || errno == EPERM)) {
            rc = fs_copy_rw(in, out, src, dst, &total, err);
            break;
        } else {
            rc = spate_error_set(err, -errno, "cannot copy '%s' to '%s': %s", src, dst,
                                 spate_strerror(-errno));
            break;
        }
    }
    if (rc == 0 && fsync(out) != 0)
        rc = spate_error_set(err, -errno, "cannot sync '%s': %s", dst, spate_strerror(-errno));
    close(in);
    if (close(out) != 0 && rc == 0)
        rc = spate_error_set(err, -errno, "cannot write '%s': %s", dst, spate_strerror(-errno));
    if (rc != 0)
        unlink(dst);
    else if (size != NULL)
        *size = total;
    return rc;
}

int
fs_link_or_copy(const char *src, const char *dst, spate_error *err)
{
    if (link(src, dst) == 0)
        return 0;
    if (errno != EXDEV && errno != EPERM && errno != EMLINK)
        return spate_error_set(err, -errno, "cannot link '%s' to '%s': %s", dst, src,
                               spate_strerror(-errno));
    return fs_copy_file(src, dst, NULL, err);
}
