/* network_bench: the data plane between two net_harness processes on loopback
 * (throughput 1→1 and 2×2, 16 B and 1 KiB records, a local channel, ping-pong
 * latency) beside a plain TCP stream of 32 KiB writes and a bare TCP ping-pong
 * measured in the same run; and 1→1 again with TLS (security.ssl.internal,
 * certificates from scripts/make-test-certs.sh), interleaved with the
 * plaintext runs. Medians of NETWORK_BENCH_RUNS (default 5). Beside the
 * rates, the CPU time per byte of both processes of a 1 KiB run and of the
 * TCP stream (wait4's rusage: every thread, user and system), which holds on
 * a machine whose load moves the rates, also without busy-polling (the work
 * alone: a spin's CPU grows with the load); with --instr (BENCH_INSTR=1) also
 * callgrind's instructions per KiB (bench_instr.h). Last line: a JSON
 * object. */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_engine.h"
#include "bench_instr.h"
#include "core/clock.h"

extern char **environ;

#define SEGMENT         32768
#define PINGPONG_BYTES  52 /* a frame header, a length and a 24-byte record */
#define PINGPONG_ROUNDS 4000

static char harness[PATH_MAX];
static char tls_dir[PATH_MAX]; /* test certificates for the TLS runs */
/* Set while counting instructions: the harness runs under callgrind, its
 * output files go here. */
static const char *instr_dir;

struct proc {
    pid_t pid;
    FILE *out;
    FILE *in;
    double cpu_ns; /* user + system time of all its threads, once it exited */
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
    const char *wrapped[64];

    if (pipe(out) != 0 || (want_stdin && pipe(in) != 0))
        fail("pipe");
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    if (want_stdin) {
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_addclose(&fa, in[1]);
    }
    if (instr_dir != NULL)
        bench_instr_wrap((const char *const *)argv, instr_dir, wrapped, 64);
    if (posix_spawn(&p->pid, instr_dir ? wrapped[0] : harness, &fa, NULL,
                    instr_dir ? (char *const *)wrapped : argv, environ) != 0)
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

static double
rusage_ns(const struct rusage *ru)
{
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e9 +
           (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1e3;
}

static double
process_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The JSON result line; the caller frees it. */
static char *
read_result(struct proc *p)
{
    char *line = NULL;
    size_t cap = 0;
    struct rusage ru;
    int status;

    while (getline(&line, &cap, p->out) > 0)
        if (line[0] == '{')
            break;
    fclose(p->out);
    if (p->in != NULL)
        fclose(p->in);
    if (wait4(p->pid, &status, 0, &ru) != p->pid)
        fail("wait4");
    p->cpu_ns = rusage_ns(&ru);
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
 * consumers; *bytes_per_s their payload bytes per second, *cpu_ns_per_byte
 * the CPU time both processes took per payload byte. busy_poll false:
 * taskmanager.network.busy-poll 0 (as under callgrind, where a spin would
 * count its wait). */
static double
spate_stream(int producers, int subs, unsigned long long records, int size, bool tls,
             bool busy_poll, double *bytes_per_s, double *cpu_ns_per_byte)
{
    char ids[2][70], rec[32], sz[16], sb[16], gates[2][400];
    char *pargv[24], *cargv[24];
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
    if (!busy_poll) {
        pargv[pc++] = "--busy-poll-us";
        pargv[pc++] = "0";
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
    if (!busy_poll) {
        cargv[cc++] = "--busy-poll-us";
        cargv[cc++] = "0";
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
    if (cpu_ns_per_byte != NULL)
        *cpu_ns_per_byte = (prod.cpu_ns + cons.cpu_ns) / json_num(cres, "bytes");
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

/* A stream of `bytes` in SEGMENT writes; the reader reads SEGMENT at a time.
 * Returns bytes per second; *cpu_ns_per_byte (may be NULL): the CPU time
 * writer and reader took per byte. */
static double
baseline_tcp(unsigned long long bytes, double *cpu_ns_per_byte)
{
    static char buf[SEGMENT];
    int port, lfd = listen_any(&port), fd, status;
    struct rusage ru;
    pid_t pid;
    uint64_t start;
    double cpu;
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
    cpu = process_cpu_ns();
    fd = connect_to(port);
    for (unsigned long long sent = 0; sent < bytes; sent += sizeof buf)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            fail("baseline write");
    shutdown(fd, SHUT_WR);
    if (read(fd, &ack, 1) != 1)
        fail("baseline ack");
    close(fd);
    cpu = process_cpu_ns() - cpu;
    if (wait4(pid, &status, 0, &ru) != pid)
        fail("wait4");
    if (cpu_ns_per_byte != NULL)
        *cpu_ns_per_byte = (cpu + rusage_ns(&ru)) / (double)bytes;
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

/* ---- instructions per KiB (--instr) ---- */

static void
instr_loop_tcp(const char *bytes)
{
    baseline_tcp(strtoull(bytes, NULL, 10), NULL);
}

static const struct bench_instr_loop loops[] = {
    { "tcp", instr_loop_tcp },
    { NULL, NULL },
};

/* Instructions per 1 KiB record of a 1→1 stream, both processes, over n
 * and 2n records (busy-poll off: a spin would count its wait). */
static double
instr_spate_1kib(uint64_t n, bool tls)
{
    char dir[] = "/tmp/network-bench-instr-XXXXXX";
    uint64_t a, b;

    if (mkdtemp(dir) == NULL)
        fail("mkdtemp");
    instr_dir = dir;
    spate_stream(1, 1, n, 1024, tls, false, NULL, NULL);
    a = bench_instr_total(dir);
    spate_stream(1, 1, 2 * n, 1024, tls, false, NULL, NULL);
    b = bench_instr_total(dir);
    instr_dir = NULL;
    rmdir(dir);
    if (b < a)
        fail("more instructions over fewer records");
    return (double)(b - a) / (double)n;
}

static double
instr_tcp_per_kib(uint64_t n)
{
    char dir[] = "/tmp/network-bench-instr-XXXXXX", a[32], b[32];
    double per;

    if (mkdtemp(dir) == NULL)
        fail("mkdtemp");
    snprintf(a, sizeof a, "%llu", (unsigned long long)n * 1024);
    snprintf(b, sizeof b, "%llu", (unsigned long long)n * 2048);
    per = bench_instr_loop("tcp", a, b, n, 2 * n, dir);
    rmdir(dir);
    return per;
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
    double cpu_tcp[MAX_RUNS], cpu1k[MAX_RUNS], cpu_tls1k[MAX_RUNS];
    double ratio1k[MAX_RUNS], ratio_cpu1k[MAX_RUNS], tls_cost_cpu1k[MAX_RUNS];
    double mb1k_nbp[MAX_RUNS], cpu1k_nbp[MAX_RUNS], ratio_cpu1k_nbp[MAX_RUNS];
    double instr_1k = 0, instr_tls1k = 0, instr_tcp = 0;
    char self[PATH_MAX];
    ssize_t n;
    bool want_instr;

    bench_instr_loop_main(argc, argv, loops);
    want_instr = bench_instr_wanted(argc, argv);
    n = readlink("/proc/self/exe", self, sizeof self - 1);
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

        tcp[r] = baseline_tcp(1ull << 30, &cpu_tcp[r]) / 1e6;
        spate_stream(1, 1, 1ull << 20, 1024, false, true, &bytes, &cpu1k[r]);
        mb1k[r] = bytes / 1e6;
        spate_stream(1, 1, 1ull << 20, 1024, false, false, &bytes, &cpu1k_nbp[r]);
        mb1k_nbp[r] = bytes / 1e6;
        spate_stream(1, 1, 1ull << 20, 1024, true, true, &bytes, &cpu_tls1k[r]);
        tmb1k[r] = bytes / 1e6;
        ratio1k[r] = mb1k[r] / tcp[r];
        ratio_cpu1k[r] = cpu_tcp[r] / cpu1k[r];
        ratio_cpu1k_nbp[r] = cpu_tcp[r] / cpu1k_nbp[r];
        tls_cost_cpu1k[r] = 1 - cpu1k[r] / cpu_tls1k[r];
        r16[r] = spate_stream(1, 1, 20000000, 16, false, true, NULL, NULL);
        t16[r] = spate_stream(1, 1, 20000000, 16, true, true, NULL, NULL);
        r2x2[r] = spate_stream(2, 2, 10000000, 16, false, true, NULL, NULL);
        local[r] = spate_local(30000000);
        baseline_pingpong(&b50[r], &b99[r]);
        spate_pingpong(true, &l50[r], &l99[r]);
        spate_pingpong(false, &n50[r], &n99[r]);
        fprintf(stderr,
                "run %d: tcp %.0f MB/s %.3f ns CPU/B, 1KiB %.0f MB/s %.3f ns CPU/B (no busy-poll "
                "%.0f MB/s %.3f ns CPU/B; TLS %.0f MB/s "
                "%.3f ns CPU/B), 16B 1to1 %.2fM/s (TLS "
                "%.2fM/s), 2x2 %.2fM/s, local %.2fM/s, ping-pong p50/p99 %.0f/%.0f us (no "
                "busy-poll %.0f/%.0f us, tcp %.0f/%.0f us)\n",
                r, tcp[r], cpu_tcp[r], mb1k[r], cpu1k[r], mb1k_nbp[r], cpu1k_nbp[r], tmb1k[r],
                cpu_tls1k[r], r16[r] / 1e6, t16[r] / 1e6, r2x2[r] / 1e6, local[r] / 1e6, l50[r],
                l99[r], n50[r], n99[r], b50[r], b99[r]);
    }
    {
        double m_tcp = median(tcp, runs), m_1k = median(mb1k, runs), m16 = median(r16, runs);
        double m2x2 = median(r2x2, runs), mloc = median(local, runs);
        double ml50 = median(l50, runs), ml99 = median(l99, runs);
        double mb50 = median(b50, runs), mb99 = median(b99, runs);
        double mn50 = median(n50, runs), mn99 = median(n99, runs);
        double mt16 = median(t16, runs), mt1k = median(tmb1k, runs);
        double m_ratio = median(ratio1k, runs), m_ratio_cpu = median(ratio_cpu1k, runs);
        double m_cpu_tcp = median(cpu_tcp, runs), m_cpu1k = median(cpu1k, runs);
        double m_cpu_tls = median(cpu_tls1k, runs), m_tls_cpu = median(tls_cost_cpu1k, runs);
        double m_1k_nbp = median(mb1k_nbp, runs), m_cpu_nbp = median(cpu1k_nbp, runs);
        double m_ratio_cpu_nbp = median(ratio_cpu1k_nbp, runs);
        char cmd[PATH_MAX + 16], instr[256] = "null";
        const char *e = getenv("NETWORK_BENCH_INSTR_RECORDS");
        uint64_t instr_n = e != NULL ? strtoull(e, NULL, 10) : 20000;

        if (want_instr) {
            instr_tcp = instr_tcp_per_kib(instr_n);
            instr_1k = instr_spate_1kib(instr_n, false);
            instr_tls1k = instr_spate_1kib(instr_n, true);
            fprintf(stderr, "instructions per KiB: tcp %.1f, 1KiB %.1f, TLS 1KiB %.1f\n", instr_tcp,
                    instr_1k, instr_tls1k);
            snprintf(instr, sizeof instr,
                     "{\"baseline_instr_per_kib\":%.1f,\"instr_per_kib_1kib\":%.1f,"
                     "\"tls_instr_per_kib_1kib\":%.1f}",
                     instr_tcp, instr_1k, instr_tls1k);
        }

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tls_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "network_bench: cannot remove %s\n", tls_dir);

        printf("{\"bench\":\"network\",\"runs\":%d,\"records_per_s_16b_1to1\":%.0f,"
               "\"records_per_s_16b_2x2\":%.0f,\"mb_per_s_1kib\":%.0f,"
               "\"local_records_per_s_16b\":%.0f,\"latency_us_p50\":%.1f,\"latency_us_p99\":%.1f,"
               "\"baseline_tcp_mb_per_s\":%.0f,\"baseline_pingpong_p50_us\":%.1f,"
               "\"baseline_pingpong_p99_us\":%.1f,\"ratio_mb_per_s_1kib_to_tcp\":%.3f,"
               "\"cpu_ns_per_byte_1kib\":%.4f,\"baseline_tcp_cpu_ns_per_byte\":%.4f,"
               "\"ratio_cpu_per_byte_tcp_to_1kib\":%.3f,\"mb_per_s_1kib_no_busy_poll\":%.0f,"
               "\"cpu_ns_per_byte_1kib_no_busy_poll\":%.4f,"
               "\"ratio_cpu_per_byte_tcp_to_1kib_no_busy_poll\":%.3f,\"tls_cpu_ns_per_byte_1kib\":%"
               ".4f,"
               "\"tls_cost_cpu_1kib\":%.3f,\"instr\":%s,"
               "\"ratio_latency_p99_to_pingpong_p99\":%.2f,"
               "\"latency_us_p50_no_busy_poll\":%.1f,\"latency_us_p99_no_busy_poll\":%.1f,"
               "\"tls_records_per_s_16b_1to1\":%.0f,\"tls_mb_per_s_1kib\":%.0f,"
               "\"tls_cost_16b_1to1\":%.3f,\"tls_cost_1kib\":%.3f,"
               "\"targets\":{\"mb_per_s_1kib_ge_0.8x_tcp\":%s,"
               "\"cpu_per_byte_1kib_le_1.25x_tcp\":%s,\"records_per_s_16b_1to1_ge_10M\":%s,"
               "\"local_ge_30M\":%s,\"latency_p99_lt_1000us\":%s,\"latency_p99_le_3x_pingpong\":%s,"
               "\"tls_cost_16b_1to1_lt_0.3\":%s}"
               "}\n",
               runs, m16, m2x2, m_1k, mloc, ml50, ml99, m_tcp, mb50, mb99, m_ratio, m_cpu1k,
               m_cpu_tcp, m_ratio_cpu, m_1k_nbp, m_cpu_nbp, m_ratio_cpu_nbp, m_cpu_tls, m_tls_cpu,
               instr, ml99 / mb99, mn50, mn99, mt16, mt1k, 1 - mt16 / m16, 1 - mt1k / m_1k,
               m_ratio >= 0.8 ? "true" : "false", m_ratio_cpu >= 0.8 ? "true" : "false",
               m16 >= 1e7 ? "true" : "false", mloc >= 3e7 ? "true" : "false",
               ml99 < 1000 ? "true" : "false", ml99 <= 3 * mb99 ? "true" : "false",
               1 - mt16 / m16 < 0.3 ? "true" : "false");
    }
    return 0;
}
