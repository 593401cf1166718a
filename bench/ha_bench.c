/* ha_bench: high availability with ZooKeeper, real processes on loopback:
 * a JobManager's start to its leadership (leader_elected_ms), kill -9 of
 * the leader to the standby leading and the job RUNNING again on it with
 * every task in a slot (jm_failover_ms), and the session timeout the server
 * negotiated. The job is a real JobGraph submitted with `spate run`:
 * testjobs' exactly-once `checkpointed` job (generator -> key_by ->
 * counting state -> file sink) at -p 4 on two TaskManagers with 2 slots
 * each, checkpoints every 200 ms; the kill comes after a checkpoint
 * completed, so the standby restores the job from it, with its library
 * from the HA blob store. Starts its own ZooKeeper server. Last line: a
 * JSON object. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench_engine.h"
#include "core/clock.h"

/* The session timeout is 1 s (the target: failover under 3 s with
 * a 1 s session timeout). */
#define ROUNDS       5
#define PARALLELISM  4
#define TASKMANAGERS 2
#define SESSION_MS   1000

static char spate[600], testjobs[600], tmpdir[64], zk_cfg[128];
static int zk_port;
static pid_t zk_pid;

static void
sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

    nanosleep(&ts, NULL);
}

static int
free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    bind(fd, (struct sockaddr *)&sa, sizeof sa);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* Sends a request to 127.0.0.1:port and reads the answer into buf. */
static size_t
talk(int port, const char *req, char *buf, size_t size)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t got = 0;
    ssize_t n;

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || write(fd, req, strlen(req)) < 0) {
        close(fd);
        return 0;
    }
    while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    buf[got] = '\0';
    return got;
}

static pid_t
spawn(char *const argv[], const char *log)
{
    pid_t pid = fork();

    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid > 0)
        bench_track_child(pid);
    return pid;
}

static void
stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGCONT);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static int
zk_start(void)
{
    char data[128], buf[64];
    char *argv[] = { "java",
                     "-Xmx128m",
                     "-XX:+UseSerialGC",
                     "-XX:TieredStopAtLevel=1",
                     "-cp",
                     "/usr/share/java/zookeeper.jar",
                     "org.apache.zookeeper.server.ZooKeeperServerMain",
                     zk_cfg,
                     NULL };
    FILE *f;

    zk_port = free_port();
    snprintf(data, sizeof data, "%s/zk-data", tmpdir);
    mkdir(data, 0755);
    snprintf(zk_cfg, sizeof zk_cfg, "%s/zoo.cfg", tmpdir);
    if ((f = fopen(zk_cfg, "w")) == NULL)
        return -1;
    fprintf(f,
            "tickTime=200\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\nmaxClientCnxns=0\n",
            data, zk_port);
    fclose(f);
    snprintf(data, sizeof data, "%s/zookeeper.log", tmpdir);
    zk_pid = spawn(argv, data);
    for (int i = 0; i < 1200; i++) {
        if (talk(zk_port, "ruok", buf, sizeof buf) > 0 && strcmp(buf, "imok") == 0)
            return 0;
        sleep_ms(50);
    }
    return -1;
}

/* The whole log file (malloc'd), or NULL. */
static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    n = (long)fread(buf, 1, (size_t)n, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Waits for text in the log; returns the text after it (malloc'd copy of
 * the rest of its line), or NULL after timeout_ms. */
static char *
wait_log(const char *log, const char *text, int timeout_ms)
{
    uint64_t end = clock_mono_ms() + (uint64_t)timeout_ms;

    while (clock_mono_ms() < end) {
        char *all = slurp(log), *p;

        if (all != NULL && (p = strstr(all, text)) != NULL) {
            char *nl = strchr(p, '\n'), *out;

            if (nl)
                *nl = '\0';
            out = strdup(p + strlen(text));
            free(all);
            return out;
        }
        free(all);
        sleep_ms(1);
    }
    return NULL;
}

static char common[6][200];

static pid_t
start_spate(const char *log, const char *const extra[])
{
    char *argv[40];
    int n = 0;

    argv[n++] = spate;
    for (int i = 0; i < 6; i++) {
        argv[n++] = "-D";
        argv[n++] = common[i];
    }
    for (int i = 0; extra[i] != NULL; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    return spawn(argv, log);
}

/* GET path on the REST port, parsed; NULL when there is no JSON answer. */
static json_t *
rest_get(int rest_port, const char *path)
{
    char req[300], buf[1 << 17], *body;

    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (talk(rest_port, req, buf, sizeof buf) == 0 || (body = strstr(buf, "\r\n\r\n")) == NULL)
        return NULL;
    return json_loads(body + 4, 0, NULL);
}

/* The job's tasks when it is RUNNING with every one of them running (each
 * in a slot), else -1. */
static int
all_running(int rest_port, const char *job)
{
    char path[100];
    json_t *j, *tasks;
    int n = -1;

    snprintf(path, sizeof path, "/jobs/%s", job);
    if ((j = rest_get(rest_port, path)) == NULL)
        return -1;
    tasks = json_object_get(j, "tasks");
    if (tasks != NULL &&
        strcmp(json_string_value(json_object_get(j, "state")) ?: "", "RUNNING") == 0 &&
        json_integer_value(json_object_get(tasks, "running")) ==
            json_integer_value(json_object_get(tasks, "total")))
        n = (int)json_integer_value(json_object_get(tasks, "total"));
    json_decref(j);
    return n;
}

/* Completed checkpoints of job, -1 when unknown. */
static int
completed_checkpoints(int rest_port, const char *job)
{
    char path[100];
    json_t *j;
    int n = -1;

    snprintf(path, sizeof path, "/jobs/%s/checkpoints", job);
    if ((j = rest_get(rest_port, path)) == NULL)
        return -1;
    if (json_object_get(j, "counts") != NULL)
        n = (int)json_integer_value(json_object_get(json_object_get(j, "counts"), "completed"));
    json_decref(j);
    return n;
}

static int
rest_port_of(const char *log)
{
    char *rest = wait_log(log, "REST at http://127.0.0.1:", 30000);
    int port = rest ? atoi(rest) : -1;

    free(rest);
    return port;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Polls until cond(rest_port, job) >= want or timeout_ms passed. */
static bool
wait_until(int (*cond)(int, const char *), int rest_port, const char *job, int want, int timeout_ms,
           int poll_ms)
{
    for (uint64_t end = clock_mono_ms() + (uint64_t)timeout_ms; clock_mono_ms() < end;) {
        if (cond(rest_port, job) >= want)
            return true;
        sleep_ms(poll_ms);
    }
    return false;
}

int
main(int argc, char **argv)
{
    double elected[ROUNDS], failover[ROUNDS], standby[ROUNDS];
    int negotiated = -1, done = 0, tasks = -1, restored = 0;
    char log[ROUNDS][3][128], *dir, self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    struct stat st;

    (void)argc;
    (void)argv;
    self[n > 0 ? n : 0] = '\0';
    dir = strrchr(self, '/');
    if (dir != NULL)
        *dir = '\0';
    snprintf(spate, sizeof spate, "%s/spate", self);
    snprintf(testjobs, sizeof testjobs, "%s/../tests/jobs/testjobs.so", self);
    if (stat(testjobs, &st) != 0) {
        fprintf(stderr, "ha_bench: no job library at %s (build the tests)\n", testjobs);
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/spate-ha-bench-XXXXXX");
    if (mkdtemp(tmpdir) == NULL || zk_start() != 0) {
        fprintf(stderr, "ha_bench: cannot start ZooKeeper (Debian's zookeeper package)\n");
        stop(zk_pid);
        return 1;
    }
    for (int r = 0; r < ROUNDS; r++) {
        const char *jm_args[] = { "-D", "jobmanager.rpc.port=0", "-D", "rest.port=0", "jobmanager",
                                  NULL };
        char tm_slots[64], job[64] = "", chk[160], out[160], par[16];
        const char *tm_args[] = { "-D", tm_slots, "taskmanager", NULL };
        const char *job_args[] = { "-D",       chk,  "run",        "-d",
                                   "-p",       par,  testjobs,     "checkpointed",
                                   "--count",  "0",  "--rate",     "20000",
                                   "--keys",   "20", "--interval", "200",
                                   "--output", out,  NULL };
        pid_t jm1, jm2, tm[TASKMANAGERS], sub;
        uint64_t t0;
        char *line, *text;
        int rest1, rest2;
        bool ok;

        snprintf(common[0], sizeof common[0], "high-availability.type=zookeeper");
        snprintf(common[1], sizeof common[1], "high-availability.zookeeper.quorum=127.0.0.1:%d",
                 zk_port);
        snprintf(common[2], sizeof common[2], "high-availability.cluster-id=/bench-%d", r);
        snprintf(common[3], sizeof common[3], "high-availability.storageDir=%s/storage", tmpdir);
        snprintf(common[4], sizeof common[4],
                 "high-availability.zookeeper.client.session-timeout=%d ms", SESSION_MS);
        snprintf(common[5], sizeof common[5], "log.level=info");
        snprintf(tm_slots, sizeof tm_slots, "taskmanager.numberOfTaskSlots=%d",
                 PARALLELISM / TASKMANAGERS);
        snprintf(chk, sizeof chk, "state.checkpoints.dir=%s/checkpoints", tmpdir);
        snprintf(out, sizeof out, "%s/out-%d", tmpdir, r);
        snprintf(par, sizeof par, "%d", PARALLELISM);
        for (int i = 0; i < 3; i++)
            snprintf(log[r][i], sizeof log[r][i], "%s/r%d-%d.log", tmpdir, r, i);

        t0 = clock_mono_ns();
        jm1 = start_spate(log[r][0], jm_args);
        line = wait_log(log[r][0], "this JobManager was granted leadership", 30000);
        elected[r] = (double)(clock_mono_ns() - t0) / 1e6;
        free(line);
        if ((line = wait_log(log[r][0], ", session timeout ", 1000)) != NULL)
            negotiated = atoi(line);
        free(line);
        rest1 = rest_port_of(log[r][0]);
        jm2 = start_spate(log[r][1], jm_args);
        free(wait_log(log[r][1], "standing by", 30000));
        rest2 = rest_port_of(log[r][1]);
        for (int i = 0; i < TASKMANAGERS; i++) {
            char tm_log[160];

            snprintf(tm_log, sizeof tm_log, "%s/r%d-tm%d.log", tmpdir, r, i);
            tm[i] = start_spate(tm_log, tm_args);
            free(wait_log(tm_log, "registered at the ResourceManager", 30000));
        }
        /* `spate run` finds the leading REST endpoint through ZooKeeper. */
        sub = start_spate(log[r][2], job_args);
        waitpid(sub, NULL, 0);
        if ((line = wait_log(log[r][2], "JobID ", 1000)) != NULL)
            snprintf(job, sizeof job, "%.32s", line);
        free(line);
        ok = job[0] != '\0' && wait_until(all_running, rest1, job, 1, 60000, 2) &&
             wait_until(completed_checkpoints, rest1, job, 1, 60000, 10);
        if (!ok) {
            fprintf(stderr,
                    "ha_bench: round %d: job '%s' not running with a checkpoint on the "
                    "leader (logs in %s)\n",
                    r, job, tmpdir);
            for (int i = 0; i < TASKMANAGERS; i++)
                stop(tm[i]);
            stop(jm1);
            stop(jm2);
            continue;
        }

        t0 = clock_mono_ns();
        stop(jm1);
        line = wait_log(log[r][1], "this JobManager was granted leadership", 30000);
        standby[r] = (double)(clock_mono_ns() - t0) / 1e6;
        free(line);
        ok = wait_until(all_running, rest2, job, 1, 60000, 1);
        failover[done] = (double)(clock_mono_ns() - t0) / 1e6;
        tasks = all_running(rest2, job);
        text = slurp(log[r][1]);
        if (text != NULL && strstr(text, "recovered; resuming from '") != NULL)
            restored++;
        free(text);
        printf("round %d: leader elected %.1f ms after start; after kill -9 of the leader the "
               "standby leads at %.1f ms, job %s RUNNING with its %d tasks in slots at %.1f ms%s\n",
               r, elected[r], standby[r], job, tasks, failover[done],
               ok ? "" : " (NOT running again: timed out)");
        fflush(stdout);
        for (int i = 0; i < TASKMANAGERS; i++)
            stop(tm[i]);
        stop(jm2);
        if (ok) {
            elected[done] = elected[r];
            standby[done] = standby[r];
            done++;
        }
    }
    stop(zk_pid);
    {
        char cmd[128];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (done == ROUNDS && system(cmd) != 0)
            fprintf(stderr, "ha_bench: could not remove %s\n", tmpdir);
    }
    if (done == 0) {
        printf("{\"error\": \"no round completed\", \"logs\": \"%s\"}\n", tmpdir);
        return 1;
    }
    printf("{\"leader_elected_ms\": %.1f, \"standby_leads_after_kill_ms\": %.1f, "
           "\"jm_failover_ms\": %.1f, \"jm_failover_target_ms\": 3000, "
           "\"zookeeper_session_timeout_ms_requested\": %d, "
           "\"zookeeper_session_timeout_ms_negotiated\": %d, \"rounds\": %d, "
           "\"rounds_restored_from_a_checkpoint\": %d, "
           "\"job\": \"testjobs checkpointed (exactly once, checkpoints every 200 ms), -p %d, %d "
           "tasks on %d TaskManagers\", \"zookeeper_tick_ms\": 200}\n",
           median(elected, done), median(standby, done), median(failover, done), SESSION_MS,
           negotiated, done, restored, PARALLELISM, tasks, TASKMANAGERS);
    return done == ROUNDS ? 0 : 1;
}
