/* A process's log files (log_files.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log_files.h"

int
log_files_dir(const struct config *conf, char *dir, size_t cap, spate_error *err)
{
    char target[PATH_MAX];
    const char *env = NULL;
    struct stat st;
    ssize_t n;

    /* Where the process logs: its standard error redirected to a file. */
    n = readlink("/proc/self/fd/2", target, sizeof target - 1);
    if (n > 0 && target[0] == '/') {
        target[n] = '\0';
        if (stat(target, &st) == 0 && S_ISREG(st.st_mode)) {
            *strrchr(target, '/') = '\0';
            snprintf(dir, cap, "%s", target[0] != '\0' ? target : "/");
            return 0;
        }
    }
    if (conf != NULL && config_get_string(conf, CFG(ENV_LOG_DIR), &env, NULL) == 0 && env != NULL &&
        stat(env, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (env[0] == '/' || getcwd(target, sizeof target) == NULL)
            snprintf(dir, cap, "%s", env);
        else
            snprintf(dir, cap, "%s/%s", target, env);
        return 0;
    }
    return spate_error_set(err, SPATE_ENOENT,
                           "this process logs to no file (its standard error is not a file, and "
                           "env.log.dir is no folder)");
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(((const struct log_file *)a)->name, ((const struct log_file *)b)->name);
}

size_t
log_files_list(const char *dir, struct log_file **out)
{
    struct log_file *f = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    DIR *d = opendir(dir);

    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        struct stat st;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        xgrow((void **)&f, &cap, n + 1, sizeof *f);
        f[n].name = xstrdup(e->d_name);
        f[n].size = (int64_t)st.st_size;
        f[n].mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        n++;
    }
    if (d != NULL)
        closedir(d);
    if (n > 1)
        qsort(f, n, sizeof *f, by_name);
    *out = f;
    return n;
}

void
log_files_free(struct log_file *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i].name);
    free(f);
}

int
log_files_read(const char *dir, const char *name, size_t max_bytes, char **data, size_t *len,
               spate_error *err)
{
    char path[PATH_MAX];
    struct stat st;
    size_t want, got = 0;
    off_t from = 0;
    char *buf;
    int fd;

    if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL || strlen(name) > NAME_MAX)
        return spate_error_set(err, SPATE_EINVAL, "'%s' is not a log file's name", name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return spate_error_set(err, SPATE_ENOENT, "no log file '%s'", name);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return spate_error_set(err, SPATE_ENOENT, "no log file '%s'", name);
    }
    want = (size_t)st.st_size;
    if (max_bytes > 0 && want > max_bytes) {
        from = (off_t)(want - max_bytes);
        want = max_bytes;
    }
    buf = xmalloc(want + 1);
    while (got < want) {
        ssize_t n = pread(fd, buf + got, want - got, from + (off_t)got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the file shrank: what there is */
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return 0;
}
