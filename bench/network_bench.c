/* network_bench: the data plane between two net_harness processes on loopback
 * (throughput 1→1 and 2×2, 16 B and 1 KiB records, a local channel, ping-pong
 * latency) beside a plain TCP stream of 32 KiB writes and a bare TCP ping-pong
 * measured in the same run; and 1→1 again with TLS (security.ssl.internal,
 * certificates from scripts/make-test-certs.sh), interleaved with the
 * plaintext runs. Medians of NETWORK_BENCH_RUNS (default 5). Last line: a
 * JSON object. */
#include <arpa/inet.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_engine.h"
#include "core/clock.h"

extern char **environ;

#define SEGMENT         32768
#define PINGPONG_BYTES  52 /* a frame header, a length and a 24-byte record */
#define PINGPONG_ROUNDS 4000

static char harness[PATH_MAX];
static char tls_dir[PATH_MAX]; /* test certificates for the TLS runs */

struct proc {
    pid_t pid;
    FILE *out;
    FILE *in;
};

static void
fail(const char *what)
{
    fprintf(stderr, "network_bench: %s\n", what);
    exit(1);
}

static void
spawn(struct proc *p, char *const argv[], bool want_stdin)
{
    int out[2], in[2];
    posix_spawn_file_actions_t fa;

    if (pipe(out) != 0 || (want_stdin && pipe(in) != 0))
        fail("pipe");
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    if (want_stdin) {
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_addclose(&fa, in[1]);
    }
    if (posix_spawn(&p->pid, harness, &fa, NULL, argv, environ) != 0)
        fail("cannot start net_harness");
    bench_track_child(p->pid);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    p->out = fdopen(out[0], "r");
    p->in = NULL;
    if (want_stdin) {
        close(in[0]);
        p->in = fdopen(in[1], "w");
    }
}

static int
read_port(struct proc *p)
{
    char line[256];

    while (fgets(line, sizeof line, p->out) != NULL)
        if (strncmp(line, "data_port=", 10) == 0)
            return atoi(line + 10);
    fail("net_harness printed no data port");
    return 0;
}

/* The JSON result line; the caller frees it. */
static char *
read_result(struct proc *p)
{
    char *line = NULL;
    size_t cap = 0;
    int status;

    while (getline(&line, &cap, p->out) > 0)
        if (line[0] == '{')
            break;
    fclose(p->out);
    if (p->in != NULL)
        fclose(p->in);
    waitpid(p->pid, &status, 0);
    if (line == NULL || line[0] != '{' || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "network_bench: net_harness: %s (status %d)\n", line ? line : "no result",
                status),
            exit(1);
    return line;
}

static double
json_num(const char *json, const char *key)
{
    char pat[64];
    const char *p;

    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = strstr(json, pat);
    if (p == NULL)
        fail("a result lacks a field");
    return strtod(p + strlen(pat), NULL);
}

static void
partition_id(char out[70])
{
    unsigned char b[32];

    if (getrandom(b, sizeof b, 0) != sizeof b)
        fail("getrandom");
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i + (i >= 16), "%02x", b[i]);
    out[32] = '@';
}

/* ---- spate runs ---- */

/* producers × subs by hash (1 × 1 forward); returns records per second at the
 * consumers; *bytes_per_s their payload bytes per second. */
static double
spate_stream(int producers, int subs, unsigned long long records, int size, bool tls,
             double *bytes_per_s)
{
    char ids[2][70], rec[32], sz[16], sb[16], gates[2][400];
    char *pargv[16], *cargv[16];
    struct proc prod, cons;
    char *pres, *cres;
    int pc = 0, cc = 0, port;
    double rate;

    snprintf(rec, sizeof rec, "%llu", records);
    snprintf(sz, sizeof sz, "%d", size);
    snprintf(sb, sizeof sb, "%d", subs);
    pargv[pc++] = harness;
    pargv[pc++] = "produce";
    for (int i = 0; i < producers; i++) {
        partition_id(ids[i]);
        pargv[pc++] = "--partition";
        pargv[pc++] = ids[i];
    }
    pargv[pc++] = "--records";
    pargv[pc++] = rec;
    pargv[pc++] = "--size";
    pargv[pc++] = sz;
    pargv[pc++] = "--subpartitions";
    pargv[pc++] = sb;
    pargv[pc++] = "--partitioner";
    pargv[pc++] = subs > 1 ? "hash" : "forward";
    if (tls) {
        pargv[pc++] = "--tls";
        pargv[pc++] = tls_dir;
    }
    pargv[pc] = NULL;
    spawn(&prod, pargv, false);
    port = read_port(&prod);
    cargv[cc++] = harness;
    cargv[cc++] = "consume";
    for (int s = 0; s < subs; s++) {
        int off = 0;

        for (int i = 0; i < producers; i++)
            off += snprintf(gates[s] + off, sizeof gates[s] - (size_t)off, "%s%s:%d@127.0.0.1:%d",
                            i ? "," : "", ids[i], s, port);
        cargv[cc++] = "--gate";
        cargv[cc++] = gates[s];
    }
    if (tls) {
        cargv[cc++] = "--tls";
        cargv[cc++] = tls_dir;
    }
    cargv[cc] = NULL;
    spawn(&cons, cargv, false);
    cres = read_result(&cons);
    pres = read_result(&prod);
    if (json_num(cres, "received") != (double)records * producers ||
        json_num(cres, "order_errors") != 0)
        fail("records lost or out of order");
    rate = json_num(cres, "received") / (json_num(cres, "elapsed_ns") / 1e9);
    if (bytes_per_s != NULL)
        *bytes_per_s = json_num(cres, "bytes") / (json_num(cres, "elapsed_ns") / 1e9);
    free(cres);
    free(pres);
    return rate;
}

static double
spate_local(unsigned long long records)
{
    char rec[32];
    char *argv[] = { harness, "local", "--records", rec, NULL };
    struct proc p;
    char *res;
    double rate;

    snprintf(rec, sizeof rec, "%llu", records);
    spawn(&p, argv, false);
    read_port(&p);
    res = read_result(&p);
    if (json_num(res, "received") != (double)records || json_num(res, "order_errors") != 0)
        fail("local records lost or out of order");
    rate = json_num(res, "received") / (json_num(res, "elapsed_ns") / 1e9);
    free(res);
    return rate;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static void
percentiles(uint64_t *v, size_t n, double *p50, double *p99)
{
    qsort(v, n, sizeof *v, cmp_u64);
    *p50 = (double)v[n / 2] / 1000.0;
    *p99 = (double)v[(n * 99) / 100] / 1000.0;
}

/* Round trips of one record through two spate partitions, buffer timeout 0;
 * busy_poll false: with taskmanager.network.busy-poll 0 (and no task spin). */
static void
spate_pingpong(bool busy_poll, double *p50, double *p99)
{
    char a[70], b[70], rounds[16], pport[16];
    char *pingv[] = { harness,    "ping", "--partition",  a,   "--peer-partition", b,
                      "--rounds", rounds, "--timeout-ms", "0", "--busy-poll-us",   "0",
                      NULL };
    char *pongv[] = { harness,       "pong", "--partition",  b,   "--peer-partition", a,
                      "--peer-port", pport,  "--timeout-ms", "0", "--busy-poll-us",   "0",
                      NULL };

    if (busy_poll) { /* the defaults: drop the last option */
        pingv[10] = NULL;
        pongv[10] = NULL;
    }
    struct proc ping, pong;
    uint64_t *rtt = calloc(PINGPONG_ROUNDS, sizeof *rtt);
    char *res, *p;
    size_t n = 0;

    partition_id(a);
    partition_id(b);
    snprintf(rounds, sizeof rounds, "%d", PINGPONG_ROUNDS);
    spawn(&ping, pingv, true);
    snprintf(pport, sizeof pport, "%d", read_port(&ping));
    spawn(&pong, pongv, false);
    fprintf(ping.in, "%d\n", read_port(&pong));
    fflush(ping.in);
    res = read_result(&ping);
    free(read_result(&pong));
    p = strstr(res, "\"rtt_ns\":[");
    if (p == NULL)
        fail("ping printed no round trips");
    p += 10;
    while (n < PINGPONG_ROUNDS && *p && *p != ']') {
        rtt[n++] = strtoull(p, &p, 10);
        if (*p == ',')
            p++;
    }
    if (n != PINGPONG_ROUNDS)
        fail("ping lost round trips");
    percentiles(rtt, n, p50, p99);
    free(rtt);
    free(res);
}

/* ---- baselines: plain TCP between two processes ---- */

static int
listen_any(int *port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0)
        fail("listen");
    getsockname(fd, (struct sockaddr *)&sa, &len);
    *port = ntohs(sa.sin_port);
    return fd;
}

static int
connect_to(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        fail("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int
read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t k = read(fd, (char *)buf + got, n - got);

        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* A stream of `bytes` in SEGMENT writes; the reader reads SEGMENT at a time. */
static double
baseline_tcp(unsigned long long bytes)
{
    static char buf[SEGMENT];
    int port, lfd = listen_any(&port), fd, status;
    pid_t pid;
    uint64_t start;
    char ack;

    pid = fork();
    if (pid == 0) {
        int c = accept(lfd, NULL, NULL);
        ssize_t k;

        while ((k = read(c, buf, sizeof buf)) > 0)
            ;
        ack = 1;
        if (write(c, &ack, 1) != 1)
            _exit(1);
        _exit(0);
    }
    close(lfd);
    if (getrandom(buf, sizeof buf, 0) < 0)
        fail("getrandom");
    start = clock_mono_ns();
    fd = connect_to(port);
    for (unsigned long long sent = 0; sent < bytes; sent += sizeof buf)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            fail("baseline write");
    shutdown(fd, SHUT_WR);
    if (read(fd, &ack, 1) != 1)
        fail("baseline ack");
    close(fd);
    waitpid(pid, &status, 0);
    return (double)bytes / ((clock_mono_ns() - start) / 1e9);
}

static void
baseline_pingpong(double *p50, double *p99)
{
    char msg[PINGPONG_BYTES] = { 0 };
    uint64_t *rtt = calloc(PINGPONG_ROUNDS, sizeof *rtt);
    int port, lfd = listen_any(&port), fd, status;
    pid_t pid = fork();

    if (pid == 0) {
        int c = accept(lfd, NULL, NULL), one = 1;

        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        while (read_full(c, msg, sizeof msg) == 0)
            if (write(c, msg, sizeof msg) != (ssize_t)sizeof msg)
                break;
        _exit(0);
    }
    close(lfd);
    fd = connect_to(port);
    for (int i = 0; i < PINGPONG_ROUNDS; i++) {
        uint64_t t = clock_mono_ns();

        if (write(fd, msg, sizeof msg) != (ssize_t)sizeof msg || read_full(fd, msg, sizeof msg))
            fail("baseline ping-pong");
        rtt[i] = clock_mono_ns() - t;
        usleep(100); /* the same low load as the spate ping-pong */
    }
    close(fd);
    waitpid(pid, &status, 0);
    percentiles(rtt, PINGPONG_ROUNDS, p50, p99);
    free(rtt);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

#define MAX_RUNS 15

int
main(int argc, char **argv)
{
    const char *env_runs = getenv("NETWORK_BENCH_RUNS");
    int runs = env_runs ? atoi(env_runs) : 5;
    double r16[MAX_RUNS], r2x2[MAX_RUNS], mb1k[MAX_RUNS], local[MAX_RUNS], tcp[MAX_RUNS];
    double l50[MAX_RUNS], l99[MAX_RUNS], b50[MAX_RUNS], b99[MAX_RUNS];
    double n50[MAX_RUNS], n99[MAX_RUNS], t16[MAX_RUNS], tmb1k[MAX_RUNS];
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

    (void)argc;
    (void)argv;
    if (n <= 0)
        fail("cannot find myself");
    self[n] = '\0';
    snprintf(harness, sizeof harness, "%s/net_harness", dirname(self));
    if (access(harness, X_OK) != 0)
        fail("net_harness is not beside network_bench");
    signal(SIGPIPE, SIG_IGN);
    setenv("SPATE_LOG_LEVEL", "warn", 1);
    if (runs < 1 || runs > MAX_RUNS)
        runs = 5;
    {
        char cmd[2 * PATH_MAX];

        snprintf(tls_dir, sizeof tls_dir, "/tmp/network-bench-tls-XXXXXX");
        if (mkdtemp(tls_dir) == NULL)
            fail("mkdtemp");
        snprintf(cmd, sizeof cmd, "sh '%s/make-test-certs.sh' '%s' >/dev/null", SPATE_SCRIPTS_DIR,
                 tls_dir);
        if (system(cmd) != 0)
            fail("scripts/make-test-certs.sh failed");
    }
    for (int r = 0; r < runs; r++) {
        double bytes;

        tcp[r] = baseline_tcp(1ull << 30) / 1e6;
        spate_stream(1, 1, 1ull << 20, 1024, false, &bytes);
        mb1k[r] = bytes / 1e6;
        spate_stream(1, 1, 1ull << 20, 1024, true, &bytes);
        tmb1k[r] = bytes / 1e6;
        r16[r] = spate_stream(1, 1, 20000000, 16, false, NULL);
        t16[r] = spate_stream(1, 1, 20000000, 16, true, NULL);
        r2x2[r] = spate_stream(2, 2, 10000000, 16, false, NULL);
        local[r] = spate_local(30000000);
        baseline_pingpong(&b50[r], &b99[r]);
        spate_pingpong(true, &l50[r], &l99[r]);
        spate_pingpong(false, &n50[r], &n99[r]);
        fprintf(stderr,
                "run %d: tcp %.0f MB/s, 1KiB %.0f MB/s (TLS %.0f), 16B 1to1 %.2fM/s (TLS "
                "%.2fM/s), 2x2 %.2fM/s, local %.2fM/s, ping-pong p50/p99 %.0f/%.0f us (no "
                "busy-poll %.0f/%.0f us, tcp %.0f/%.0f us)\n",
                r, tcp[r], mb1k[r], tmb1k[r], r16[r] / 1e6, t16[r] / 1e6, r2x2[r] / 1e6,
                local[r] / 1e6, l50[r], l99[r], n50[r], n99[r], b50[r], b99[r]);
    }
    {
        double m_tcp = median(tcp, runs), m_1k = median(mb1k, runs), m16 = median(r16, runs);
        double m2x2 = median(r2x2, runs), mloc = median(local, runs);
        double ml50 = median(l50, runs), ml99 = median(l99, runs);
        double mb50 = median(b50, runs), mb99 = median(b99, runs);
        double mn50 = median(n50, runs), mn99 = median(n99, runs);
        double mt16 = median(t16, runs), mt1k = median(tmb1k, runs);
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tls_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "network_bench: cannot remove %s\n", tls_dir);

        printf("{\"bench\":\"network\",\"runs\":%d,\"records_per_s_16b_1to1\":%.0f,"
               "\"records_per_s_16b_2x2\":%.0f,\"mb_per_s_1kib\":%.0f,"
               "\"local_records_per_s_16b\":%.0f,\"latency_us_p50\":%.1f,\"latency_us_p99\":%.1f,"
               "\"baseline_tcp_mb_per_s\":%.0f,\"baseline_pingpong_p50_us\":%.1f,"
               "\"baseline_pingpong_p99_us\":%.1f,\"ratio_mb_per_s_1kib_to_tcp\":%.3f,"
               "\"ratio_latency_p99_to_pingpong_p99\":%.2f,"
               "\"latency_us_p50_no_busy_poll\":%.1f,\"latency_us_p99_no_busy_poll\":%.1f,"
               "\"tls_records_per_s_16b_1to1\":%.0f,\"tls_mb_per_s_1kib\":%.0f,"
               "\"tls_cost_16b_1to1\":%.3f,\"tls_cost_1kib\":%.3f,"
               "\"targets\":{\"mb_per_s_1kib_ge_0.7x_tcp\":%s,\"records_per_s_16b_1to1_ge_10M\":%s,"
               "\"local_ge_30M\":%s,\"latency_p99_lt_1000us\":%s,\"latency_p99_le_3x_pingpong\":%s,"
               "\"tls_cost_16b_1to1_lt_0.3\":%s}"
               "}\n",
               runs, m16, m2x2, m_1k, mloc, ml50, ml99, m_tcp, mb50, mb99, m_1k / m_tcp,
               ml99 / mb99, mn50, mn99, mt16, mt1k, 1 - mt16 / m16, 1 - mt1k / m_1k,
               m_1k >= 0.7 * m_tcp ? "true" : "false", m16 >= 1e7 ? "true" : "false",
               mloc >= 3e7 ? "true" : "false", ml99 < 1000 ? "true" : "false",
               ml99 <= 3 * mb99 ? "true" : "false", 1 - mt16 / m16 < 0.3 ? "true" : "false");
    }
    return 0;
}
