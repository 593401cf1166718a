/* Instructions per record, counted by callgrind (bench_instr.h). */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_engine.h"
#include "bench_instr.h"

extern char **environ;

#define VALGRIND "/usr/bin/valgrind"
#define MAX_ARGS 64

bool
bench_instr_wanted(int argc, char **argv)
{
    const char *e = getenv("BENCH_INSTR");
    bool wanted = e != NULL && strcmp(e, "1") == 0;

    for (int i = 1; i < argc; i++)
        wanted = wanted || strcmp(argv[i], "--instr") == 0;
    if (wanted && access(VALGRIND, X_OK) != 0)
        bench_fail("--instr counts instructions with callgrind: %s is not installed "
                   "(Debian's valgrind package)",
                   VALGRIND);
    return wanted;
}

/* The total of one callgrind output file: its "totals:" (or "summary:") line. */
static uint64_t
read_total(const char *path)
{
    char line[512];
    uint64_t total = 0;
    bool found = false;
    FILE *f = fopen(path, "r");

    if (f == NULL)
        bench_fail("cannot read callgrind's output %s", path);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "totals:", 7) == 0 || strncmp(line, "summary:", 8) == 0) {
            total = strtoull(strchr(line, ':') + 1, NULL, 10);
            found = true;
        }
    fclose(f);
    if (!found)
        bench_fail("callgrind's output %s has no totals line", path);
    return total;
}

int
bench_instr_wrap(const char *const argv[], const char *dir, const char *wrapped[], int size)
{
    static char out[PATH_MAX];
    static const char *const prefix[] = { VALGRIND, "--tool=callgrind", "--trace-children=yes",
                                          "--quiet" };
    int n = 0;

    snprintf(out, sizeof out, "--callgrind-out-file=%s/callgrind.out.%%p", dir);
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0] && n < size - 1; i++)
        wrapped[n++] = prefix[i];
    if (n < size - 1)
        wrapped[n++] = out;
    for (int i = 0; argv[i] != NULL && n < size - 1; i++)
        wrapped[n++] = argv[i];
    wrapped[n] = NULL;
    return n;
}

uint64_t
bench_instr_total(const char *dir)
{
    char path[PATH_MAX];
    uint64_t total = 0;
    int files = 0;
    struct dirent *d;
    DIR *dp;

    if ((dp = opendir(dir)) == NULL)
        bench_fail("cannot list %s", dir);
    while ((d = readdir(dp)) != NULL) {
        if (strncmp(d->d_name, "callgrind.out.", 14) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, d->d_name);
        total += read_total(path);
        unlink(path);
        files++;
    }
    closedir(dp);
    if (files == 0)
        bench_fail("callgrind wrote no output into %s", dir);
    return total;
}

uint64_t
bench_instr_count(const char *const argv[], const char *log)
{
    char dir[64];
    const char *vargv[MAX_ARGS + 8];
    posix_spawn_file_actions_t fa;
    uint64_t total;
    int status;
    pid_t pid;

    strcpy(dir, "/tmp/spate-instr-XXXXXX");
    if (mkdtemp(dir) == NULL)
        bench_fail("cannot make %s", dir);
    bench_instr_wrap(argv, dir, vargv, MAX_ARGS + 8);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (posix_spawn(&pid, VALGRIND, &fa, NULL, (char *const *)vargv, environ) != 0)
        bench_fail("cannot start %s", VALGRIND);
    bench_track_child(pid);
    posix_spawn_file_actions_destroy(&fa);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_fail("%s under callgrind failed: see %s", argv[0], log);
    total = bench_instr_total(dir);
    rmdir(dir);
    return total;
}

double
bench_instr_per_record(const char *const argv_a[], const char *const argv_b[], uint64_t records_a,
                       uint64_t records_b, const char *log)
{
    uint64_t a = bench_instr_count(argv_a, log), b = bench_instr_count(argv_b, log);

    if (records_b <= records_a || b < a)
        bench_fail("%s: %" PRIu64 " instructions over %" PRIu64 " records but %" PRIu64
                   " over %" PRIu64,
                   argv_a[0], a, records_a, b, records_b);
    return (double)(b - a) / (double)(records_b - records_a);
}

/* argv of `spate -D busy-poll=0us run --local -p p job args...`. */
static void
local_argv(const char *argv[], const char *spate, const char *p, const char *job,
           const char *const *args)
{
    int argc = 0;

    argv[argc++] = spate;
    argv[argc++] = "-D";
    argv[argc++] = "taskmanager.network.busy-poll=0us";
    argv[argc++] = "run";
    argv[argc++] = "--local";
    argv[argc++] = "-p";
    argv[argc++] = p;
    argv[argc++] = job;
    for (int i = 0; args[i] != NULL && argc < MAX_ARGS - 1; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
}

double
bench_instr_local(const char *spate, const char *tmpdir, int p, const char *job,
                  const char *const *args_a, const char *const *args_b, uint64_t records_a,
                  uint64_t records_b)
{
    const char *a[MAX_ARGS], *b[MAX_ARGS];
    char pbuf[16], log[PATH_MAX];
    double per;

    snprintf(pbuf, sizeof pbuf, "%d", p);
    snprintf(log, sizeof log, "%s/callgrind.log", tmpdir);
    local_argv(a, spate, pbuf, job, args_a);
    local_argv(b, spate, pbuf, job, args_b);
    per = bench_instr_per_record(a, b, records_a, records_b, log);
    unlink(log);
    return per;
}

void
bench_instr_loop_main(int argc, char **argv, const struct bench_instr_loop *loops)
{
    if (argc != 4 || strcmp(argv[1], "--instr-loop") != 0)
        return;
    for (int i = 0; loops[i].name != NULL; i++)
        if (strcmp(loops[i].name, argv[2]) == 0) {
            loops[i].run(argv[3]);
            exit(0);
        }
    fprintf(stderr, "%s: --instr-loop: no loop named %s\n", argv[0], argv[2]);
    exit(2);
}

double
bench_instr_loop(const char *name, const char *arg_a, const char *arg_b, uint64_t records_a,
                 uint64_t records_b, const char *tmpdir)
{
    char self[PATH_MAX], log[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    const char *a[] = { self, "--instr-loop", name, arg_a, NULL };
    const char *b[] = { self, "--instr-loop", name, arg_b, NULL };
    double per;

    self[len > 0 ? len : 0] = '\0';
    snprintf(log, sizeof log, "%s/callgrind.log", tmpdir);
    per = bench_instr_per_record(a, b, records_a, records_b, log);
    unlink(log);
    return per;
}
