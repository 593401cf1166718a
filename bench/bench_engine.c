/* What the engine benchmarks share (bench_engine.h). */
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_engine.h"
#include "bench_http.h"

extern char **environ;

const char *bench_name = "bench";

/* The cluster a failing benchmark stops before it exits. */
static struct bench_cluster *running_cluster;

/* Every process the benchmark started, for a signal that ends it (a
 * timeout's SIGTERM, ^C) to stop them too: they would run on, a cluster
 * with its ports and folders, after the benchmark is gone. */
#define BENCH_MAX_CHILDREN 64
static pid_t children[BENCH_MAX_CHILDREN];
static volatile sig_atomic_t nchildren;

static void
on_end_signal(int sig)
{
    for (int i = 0; i < nchildren; i++) {
        siginfo_t info;

        /* Only a child not yet reaped: a pid waited for may be another
         * process's by now. */
        info.si_pid = 0;
        if (children[i] > 0 &&
            waitid(P_PID, (id_t)children[i], &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == 0) {
            kill(children[i], SIGTERM);
            kill(children[i], SIGCONT); /* one stopped by the benchmark */
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void
bench_track_child(pid_t pid)
{
    static const int ends[] = { SIGINT, SIGTERM, SIGHUP };

    if (nchildren == 0)
        for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
            signal(ends[i], on_end_signal);
    if (nchildren < BENCH_MAX_CHILDREN) {
        children[nchildren] = pid;
        nchildren = nchildren + 1;
    } else {
        /* Reuse the slot of one already reaped. */
        for (int i = 0; i < BENCH_MAX_CHILDREN; i++) {
            siginfo_t info;

            if (waitid(P_PID, (id_t)children[i], &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
                children[i] = pid;
                return;
            }
        }
    }
}

void
bench_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "%s: ", bench_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (running_cluster != NULL)
        bench_cluster_stop(running_cluster);
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
                const char *const *args, struct bench_usage *usage)
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
    bench_track_child(pid);
    posix_spawn_file_actions_destroy(&fa);
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_fail("the job failed: see %s", log);
    if ((r = json_load_file(result, 0, &jerr)) == NULL)
        bench_fail("cannot read %s: %s", result, jerr.text);
    if (usage != NULL) {
        usage->rss_kb = ru.ru_maxrss;
        usage->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    }
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

double
bench_percentile(double *v, int n, double p)
{
    int i;

    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    i = (int)(p / 100.0 * (n - 1) + 0.5);
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

pid_t
bench_spawn(char *const argv[], const char *out, const char *err)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
        bench_fail("cannot start %s", argv[0]);
    bench_track_child(pid);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

void
bench_sleep_ms(int ms)
{
    sleep_ms(ms);
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void
bench_remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- a cluster of spate processes ---- */

/* Argument vectors: the spate command, "-D key=value" pairs, then the rest. */
static int
argv_conf(const char *argv[], int argc, const char *const *conf)
{
    for (int i = 0; conf != NULL && conf[i] != NULL && argc < 60; i++) {
        argv[argc++] = "-D";
        argv[argc++] = conf[i];
    }
    return argc;
}

void
bench_cluster_start(struct bench_cluster *c, const char *spate, const char *dir,
                    const char *const *conf)
{
    char log[PATH_MAX + 32], tmp[PATH_MAX + 32], line[4096];
    const char *argv[64] = { spate, "-D", "jobmanager.rpc.port=0", "-D", "rest.port=0", "-D", tmp };
    int argc = argv_conf(argv, 7, conf);

    memset(c, 0, sizeof *c);
    c->spate = spate;
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(tmp, sizeof tmp, "io.tmp.dirs=%s", dir);
    snprintf(log, sizeof log, "%s/jobmanager.log", dir);
    argv[argc++] = "jobmanager";
    argv[argc] = NULL;
    c->jm = bench_spawn((char *const *)argv, log, log);
    running_cluster = c;
    for (int i = 0; i < 5000 && c->rest_port == 0; i++) {
        FILE *f = fopen(log, "r");

        while (f != NULL && fgets(line, sizeof line, f) != NULL) {
            char *p = strstr(line, "JobManager started: rpc at ");

            if (p != NULL)
                sscanf(p, "JobManager started: rpc at 127.0.0.1:%d, REST at http://127.0.0.1:%d",
                       &c->rpc_port, &c->rest_port);
        }
        if (f != NULL)
            fclose(f);
        if (c->rest_port == 0)
            sleep_ms(2);
    }
    if (c->rest_port == 0)
        bench_fail("the JobManager did not start: see %s", log);
}

void
bench_cluster_start_tm(struct bench_cluster *c, int i, int slots)
{
    char rpc[64], nslots[64], rid[64], tmp[PATH_MAX + 32], log[PATH_MAX + 32], backend[64];
    char *argv[] = { (char *)c->spate, "-D",          rpc, "-D", nslots, "-D", rid, "-D", tmp, "-D",
                     backend,          "taskmanager", NULL };

    if (i < 0 || i >= BENCH_MAX_TMS)
        bench_fail("TaskManager %d: at most %d", i, BENCH_MAX_TMS);
    snprintf(rpc, sizeof rpc, "jobmanager.rpc.port=%d", c->rpc_port);
    snprintf(nslots, sizeof nslots, "taskmanager.numberOfTaskSlots=%d", slots);
    snprintf(rid, sizeof rid, "taskmanager.resource-id=%032x", 0xb0 + i);
    snprintf(tmp, sizeof tmp, "io.tmp.dirs=%s", c->dir);
    snprintf(backend, sizeof backend, "state.backend.type=%s",
             c->state_backend != NULL ? c->state_backend : "hashmap");
    snprintf(log, sizeof log, "%s/taskmanager-%d.log", c->dir, i);
    c->tm[i] = bench_spawn(argv, log, log);
    if (i >= c->ntms)
        c->ntms = i + 1;
}

void
bench_cluster_kill_tm(struct bench_cluster *c, int i)
{
    if (c->tm[i] <= 0)
        return;
    kill(c->tm[i], SIGKILL);
    waitpid(c->tm[i], NULL, 0);
    c->tm[i] = 0;
}

json_t *
bench_cluster_rest(struct bench_cluster *c, const char *method, const char *path)
{
    return bench_http(c->rest_port, method, path);
}

json_t *
bench_cluster_post(struct bench_cluster *c, const char *path, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_t *answer = bench_http_send(c->rest_port, "POST", path, text);

    free(text);
    json_decref(body);
    return answer;
}

void
bench_cluster_wait_slots(struct bench_cluster *c, int tms, int free)
{
    for (int i = 0; i < 30000; i++) {
        json_t *o = bench_http(c->rest_port, "GET", "/overview");
        bool ok = o != NULL && json_integer_value(json_object_get(o, "taskmanagers")) == tms &&
                  json_integer_value(json_object_get(o, "slots-available")) == free;

        json_decref(o);
        if (ok)
            return;
        sleep_ms(1);
    }
    bench_fail("the cluster did not show %d TaskManagers with %d free slots", tms, free);
}

void
bench_cluster_submit(struct bench_cluster *c, const char *const *conf, const char *const *args,
                     char jid[33])
{
    char target[64], out[PATH_MAX + 32], err[PATH_MAX + 32], text[4096];
    const char *argv[64] = { c->spate };
    int argc = argv_conf(argv, 1, conf), status;
    pid_t pid;
    FILE *f;
    size_t n;
    char *at;

    snprintf(target, sizeof target, "127.0.0.1:%d", c->rest_port);
    snprintf(out, sizeof out, "%s/run.out", c->dir);
    snprintf(err, sizeof err, "%s/run.err", c->dir);
    argv[argc++] = "run";
    argv[argc++] = "-m";
    argv[argc++] = target;
    argv[argc++] = "-d";
    for (int i = 0; args[i] != NULL && argc < 63; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    pid = bench_spawn((char *const *)argv, out, err);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_fail("spate run -d failed: see %s", err);
    f = fopen(out, "r");
    n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f != NULL)
        fclose(f);
    if ((at = strstr(text, "JobID ")) == NULL || strlen(at + 6) < 32)
        bench_fail("spate run -d printed no job id: see %s", out);
    snprintf(jid, 33, "%.32s", at + 6);
}

json_t *
bench_cluster_wait_job(struct bench_cluster *c, const char *jid, const char *state, int timeout_ms)
{
    char path[64];

    snprintf(path, sizeof path, "/jobs/%s", jid);
    for (int i = 0; i < timeout_ms; i++) {
        json_t *j = bench_http(c->rest_port, "GET", path);
        const char *s = json_string_value(json_object_get(j, "state"));

        if (s != NULL && strcmp(s, state) == 0)
            return j;
        if (s != NULL && (strcmp(s, "FAILED") == 0 || strcmp(s, "CANCELED") == 0))
            bench_fail("job %s is %s: see %s/jobmanager.log", jid, s, c->dir);
        json_decref(j);
        sleep_ms(1);
    }
    bench_fail("job %s did not reach %s in %d ms", jid, state, timeout_ms);
}

void
bench_cluster_stop(struct bench_cluster *c)
{
    running_cluster = NULL;
    for (int i = 0; i < c->ntms; i++)
        if (c->tm[i] > 0) {
            kill(c->tm[i], SIGTERM);
            waitpid(c->tm[i], NULL, 0);
            c->tm[i] = 0;
        }
    if (c->jm > 0) {
        kill(c->jm, SIGTERM);
        waitpid(c->jm, NULL, 0);
        c->jm = 0;
    }
}
