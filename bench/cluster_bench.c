/* cluster_bench: the cluster's times and sizes with real processes on
 * loopback and spate's default heartbeats (1 s / 5 s): TaskManager start to
 * registered, kill and hang detection, JobManager restart, 1,000 simulated
 * TaskExecutors registering, idle RSS of both processes. Observed by
 * polling GET /overview every millisecond. Last line: a JSON object. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench_engine.h"
#include "bench_http.h"
#include "core/clock.h"

static char spate[600];
static char tmpdir[64];
static int rpc_port, rest_port;

static pid_t
spawn(const char *log, char *const extra[])
{
    char *argv[32];
    int n = 0;
    pid_t pid;

    argv[n++] = spate;
    for (int i = 0; extra[i] != NULL && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        dup2(fd, 1);
        dup2(fd, 2);
        execv(spate, argv);
        _exit(127);
    }
    if (pid > 0)
        bench_track_child(pid);
    return pid;
}

static void
stop(pid_t pid, int sig)
{
    if (pid <= 0)
        return;
    kill(pid, SIGCONT);
    kill(pid, sig);
    waitpid(pid, NULL, 0);
}

/* GET path from the REST server; the parsed body or NULL. */
static json_t *
http_get(const char *path)
{
    return bench_http(rest_port, "GET", path);
}

/* /overview's taskmanagers and slots-total (-1 when it does not answer). */
static int
overview(int *slots)
{
    json_t *j = http_get("/overview");
    int tms = -1;

    if (j != NULL) {
        tms = (int)json_integer_value(json_object_get(j, "taskmanagers"));
        if (slots != NULL)
            *slots = (int)json_integer_value(json_object_get(j, "slots-total"));
        json_decref(j);
    }
    return tms;
}

/* Milliseconds from start_ns until /overview shows tms TaskManagers (and
 * slots, when >= 0); -1 after timeout_ms. */
static double
wait_tms(uint64_t start_ns, int tms, int slots, int timeout_ms)
{
    for (;;) {
        int s = 0, t = overview(&s);
        uint64_t now = clock_mono_ns();

        if (t == tms && (slots < 0 || s == slots))
            return (now - start_ns) / 1e6;
        if ((now - start_ns) / 1000000 > (uint64_t)timeout_ms)
            return -1;
        sleep_ms(1);
    }
}

static pid_t
start_jm(int rpc, int rest, const char *log)
{
    char a[64], b[64];
    char *args[] = { "-D", a, "-D", b, "jobmanager", NULL };
    char line[4096];
    pid_t pid;

    snprintf(a, sizeof a, "jobmanager.rpc.port=%d", rpc);
    snprintf(b, sizeof b, "rest.port=%d", rest);
    pid = spawn(log, args);
    for (int i = 0; i < 2000; i++) {
        FILE *f = fopen(log, "r");
        bool found = false;

        while (f != NULL && fgets(line, sizeof line, f) != NULL) {
            char *p = strstr(line, "JobManager started: rpc at ");

            if (p != NULL &&
                sscanf(p, "JobManager started: rpc at 127.0.0.1:%d, REST at http://127.0.0.1:%d",
                       &rpc_port, &rest_port) == 2)
                found = true;
        }
        if (f != NULL)
            fclose(f);
        if (found)
            return pid;
        sleep_ms(5);
    }
    fprintf(stderr, "cluster_bench: the JobManager did not start (%s)\n", log);
    exit(1);
}

static pid_t
start_tm(const char *log, const char *count)
{
    char a[64];
    char *one[] = { "-D", a, "taskmanager", NULL };
    char *many[] = { "-D",          a,         "-D",          "taskmanager.numberOfTaskSlots=4",
                     "taskmanager", "--count", (char *)count, NULL };

    snprintf(a, sizeof a, "jobmanager.rpc.port=%d", rpc_port);
    return spawn(log, count != NULL ? many : one);
}

static long
rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static double
median(double *v, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (v[j] < v[i]) {
                double t = v[i];

                v[i] = v[j];
                v[j] = t;
            }
    return v[n / 2];
}

static void
path_in(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", tmpdir, name);
}

int
main(void)
{
    double start_ms[5], kill_ms[5], hang_ms[3], restart_ms[3], reg1000;
    long rss_tm, rss_jm;
    char log[128], exe[512], *slash;
    pid_t jm, tms[3], sim;
    int base;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    exe[n > 0 ? n : 0] = '\0';
    if ((slash = strrchr(exe, '/')) != NULL)
        *slash = '\0';
    snprintf(spate, sizeof spate, "%s/spate", exe);
    strcpy(tmpdir, "/tmp/spate-cluster-bench-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        return 1;
    setenv("SPATE_LOG_LEVEL", "info", 1);

    path_in(log, sizeof log, "jm.log");
    jm = start_jm(0, 0, log);

    /* A TaskManager process from its start to being counted. */
    for (int r = 0; r < 5; r++) {
        uint64_t t0;
        pid_t tm;

        path_in(log, sizeof log, "tm-start.log");
        t0 = clock_mono_ns();
        tm = start_tm(log, NULL);
        start_ms[r] = wait_tms(t0, 1, -1, 30000);
        if (r == 4) {
            sleep_ms(1500); /* idle: registered, a heartbeat or two */
            rss_tm = rss_kb(tm);
            rss_jm = rss_kb(jm);
        }
        /* kill -9 and detection. */
        t0 = clock_mono_ns();
        kill(tm, SIGKILL);
        kill_ms[r] = wait_tms(t0, 0, -1, 30000);
        waitpid(tm, NULL, 0);
    }

    /* SIGSTOP: found by heartbeat.timeout. */
    for (int r = 0; r < 3; r++) {
        uint64_t t0;
        pid_t tm;

        path_in(log, sizeof log, "tm-hang.log");
        tm = start_tm(log, NULL);
        wait_tms(clock_mono_ns(), 1, -1, 30000);
        t0 = clock_mono_ns();
        kill(tm, SIGSTOP);
        hang_ms[r] = wait_tms(t0, 0, -1, 60000);
        stop(tm, SIGKILL);
    }

    /* A killed JobManager restarted on the same ports: all three back. */
    for (int i = 0; i < 3; i++) {
        char name[32];

        snprintf(name, sizeof name, "tm-%d.log", i);
        path_in(log, sizeof log, name);
        tms[i] = start_tm(log, NULL);
    }
    wait_tms(clock_mono_ns(), 3, -1, 30000);
    base = rpc_port;
    for (int r = 0; r < 3; r++) {
        int rest = rest_port;
        uint64_t t0;

        stop(jm, SIGKILL);
        sleep_ms(300); /* the TaskManagers notice and start retrying */
        path_in(log, sizeof log, "jm-restart.log");
        t0 = clock_mono_ns();
        jm = start_jm(base, rest, log);
        restart_ms[r] = wait_tms(t0, 3, -1, 60000);
    }
    for (int i = 0; i < 3; i++)
        stop(tms[i], SIGKILL);
    wait_tms(clock_mono_ns(), 0, -1, 30000);

    /* A thousand simulated TaskExecutors in one process. */
    {
        uint64_t t0 = clock_mono_ns();

        path_in(log, sizeof log, "tm-1000.log");
        sim = start_tm(log, "1000");
        reg1000 = wait_tms(t0, 1000, 4000, 120000);
        stop(sim, SIGKILL);
    }
    stop(jm, SIGTERM);

    fprintf(stderr,
            "start %.1f %.1f %.1f %.1f %.1f | kill %.1f %.1f %.1f %.1f %.1f | hang %.0f %.0f %.0f "
            "| restart %.0f %.0f %.0f\n",
            start_ms[0], start_ms[1], start_ms[2], start_ms[3], start_ms[4], kill_ms[0], kill_ms[1],
            kill_ms[2], kill_ms[3], kill_ms[4], hang_ms[0], hang_ms[1], hang_ms[2], restart_ms[0],
            restart_ms[1], restart_ms[2]);
    printf("{\"bench\": \"cluster\", \"tm_start_to_registered_ms\": %.1f, "
           "\"tm_kill_detect_ms\": %.1f, \"tm_hang_detect_ms\": %.0f, "
           "\"jm_restart_to_all_registered_ms\": %.0f, \"register_1000_tms_ms\": %.0f, "
           "\"rss_kb_idle_tm\": %ld, \"rss_kb_idle_jm\": %ld, \"heartbeat\": \"1 s / 5 s\", "
           "\"targets\": {\"tm_start_to_registered_ms_max\": 300, \"tm_kill_detect_ms_max\": 500, "
           "\"rss_kb_idle_tm_max\": 10240, \"rss_kb_idle_jm_max\": 20480}, "
           "\"flink_default_process_memory_mb\": {\"taskmanager\": 1728, \"jobmanager\": 1600}}\n",
           median(start_ms, 5), median(kill_ms, 5), median(hang_ms, 3), median(restart_ms, 3),
           reg1000, rss_tm, rss_jm);
    return 0;
}
