/* What the engine benchmarks share (bench_engine.h). */
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_engine.h"

extern char **environ;

const char *bench_name = "bench";

void
bench_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "%s: ", bench_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void
bench_exe_dir(char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    char *slash;

    dir[n > 0 ? n : 0] = '\0';
    if ((slash = strrchr(dir, '/')) != NULL)
        *slash = '\0';
}

json_t *
bench_run_local(const char *spate, const char *tmpdir, int p, const char *job,
                const char *const *args, long *rss_kb)
{
    char pbuf[16], result[PATH_MAX], log[PATH_MAX];
    const char *argv[64] = { spate, "run", "--local", "-p", pbuf, "--json", result, job };
    int argc = 8;
    posix_spawn_file_actions_t fa;
    struct rusage ru;
    json_error_t jerr;
    json_t *r;
    pid_t pid;
    int status;

    for (int i = 0; args != NULL && args[i] != NULL && argc < 63; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    snprintf(pbuf, sizeof pbuf, "%d", p);
    snprintf(result, sizeof result, "%s/result.json", tmpdir);
    snprintf(log, sizeof log, "%s/spate.log", tmpdir);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (posix_spawn(&pid, spate, &fa, NULL, (char *const *)argv, environ) != 0)
        bench_fail("cannot start %s", spate);
    posix_spawn_file_actions_destroy(&fa);
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_fail("the job failed: see %s", log);
    if ((r = json_load_file(result, 0, &jerr)) == NULL)
        bench_fail("cannot read %s: %s", result, jerr.text);
    if (rss_kb != NULL)
        *rss_kb = ru.ru_maxrss;
    unlink(result);
    return r;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

double
bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
