/* window_bench: the benchmarks' keyed tumbling window (10,000 keys, 1 s
 * event-time windows, count and sum) and YSB-like workloads on the mini
 * cluster, through build/bench/window_bench_job.so (public API only), beside
 * hand-written single-threaded C loops over the same generated events,
 * measured in the same run. Rounds interleave loops and engine runs; the
 * figures are medians; every engine run's checksums (the sum of the
 * windows' counts and sums, and the number of windows) must equal the
 * loop's. A rate is events over the job's runtime (the JobMaster's start to
 * end), generator included. Last line: a JSON object, with each round's
 * figures beside the medians ("rounds"): on a shared machine they spread.
 *
 * WINDOW_BENCH_EVENTS (default 20,000,000) and WINDOW_BENCH_RUNS (5).
 * --instr (or BENCH_INSTR=1): instructions per event too, of the loops and
 * of the engine's runs, counted by callgrind over WINDOW_BENCH_INSTR_EVENTS
 * (1,000,000: one window of the keyed workload) and twice as many
 * (bench_instr.h).
 * WINDOW_BENCH_PROMETHEUS=1: each round also runs the window at p1 and p2
 * with the Prometheus reporter on (metrics.reporter.prom.*, through a copy
 * of the build's conf/ with those keys), which a thread of the benchmark
 * scrapes every second as a Prometheus server would; right before the
 * round's engine runs without it in odd rounds, after them in even ones.
 * The reporter's cost is the median of the rounds' ratios of rates
 * ("prometheus_over_plain_p1", "_p2": 1 is none) and of the processes' CPU
 * seconds ("prometheus_cpu_over_plain_p1", "_p2": 1 is none), the latter
 * blind to how much of the machine's cores the neighbours left the run.
 * Latency tracking is off, as by default. */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_data.h"
#include "bench_engine.h"
#include "bench_instr.h"
#include "core/clock.h"

struct checksums {
    int64_t count, sum, windows;
};

/* ---- the hand-written loops ---- */

#define WINDOW_KEYS 10000

/* Events come in time order: one window is open at a time. */
static void
loop_window(uint64_t n, struct checksums *c)
{
    static int64_t count[WINDOW_KEYS], sum[WINDOW_KEYS];
    uint64_t window = 0;

    memset(c, 0, sizeof *c);
    memset(count, 0, sizeof count);
    memset(sum, 0, sizeof sum);
    for (uint64_t j = 0; j <= n; j++) {
        uint64_t x = j < n ? bench_h(3, j) : 0;

        if (j == n || j / 1000000 != window) {
            for (int k = 0; k < WINDOW_KEYS; k++) {
                if (count[k] == 0)
                    continue;
                c->count += count[k];
                c->sum += sum[k];
                c->windows++;
                count[k] = sum[k] = 0;
            }
            window = j / 1000000;
            if (j == n)
                break;
        }
        count[(uint32_t)x % WINDOW_KEYS]++;
        sum[(uint32_t)x % WINDOW_KEYS] += (int64_t)((x >> 32) % 1000);
    }
}

#define ADS 1000

static void
loop_ysb(uint64_t n, struct checksums *c)
{
    static uint64_t slot_id[2048];
    static int16_t slot_campaign[2048];
    int64_t count[100] = { 0 };
    uint64_t window = 0;

    memset(c, 0, sizeof *c);
    memset(slot_id, 0, sizeof slot_id);
    for (uint64_t a = 0; a < ADS; a++) {
        uint64_t id = bench_h(6, a), k = id & 2047;

        while (slot_id[k] != 0)
            k = (k + 1) & 2047;
        slot_id[k] = id;
        slot_campaign[k] = (int16_t)(a % 100);
    }
    for (uint64_t j = 0; j <= n; j++) {
        uint64_t x, id, k;

        if (j == n || j / 10000000 != window) {
            for (int cpg = 0; cpg < 100; cpg++) {
                if (count[cpg] == 0)
                    continue;
                c->count += count[cpg];
                c->sum += count[cpg]; /* the job counts views by summing 1s */
                c->windows++;
                count[cpg] = 0;
            }
            window = j / 10000000;
            if (j == n)
                break;
        }
        x = bench_h(4, j);
        if ((x >> 32) % 3 != 0)
            continue; /* views only */
        id = bench_h(6, x % ADS);
        for (k = id & 2047; slot_id[k] != id; k = (k + 1) & 2047)
            ;
        count[slot_campaign[k]]++;
    }
}

/* The loops alone, for callgrind (bench_instr_loop_main). */
static void
instr_loop_window(const char *n)
{
    struct checksums c;

    loop_window(strtoull(n, NULL, 10), &c);
    printf("%lld\n", (long long)c.sum);
}

static void
instr_loop_ysb(const char *n)
{
    struct checksums c;

    loop_ysb(strtoull(n, NULL, 10), &c);
    printf("%lld\n", (long long)c.sum);
}

static const struct bench_instr_loop loops[] = {
    { "window", instr_loop_window },
    { "ysb", instr_loop_ysb },
    { NULL, NULL },
};

/* ---- the engine ---- */

struct engine_run {
    double events_per_s;
    struct bench_usage usage;
    struct checksums c;
    json_t *plan;
};

static char spate[PATH_MAX + 16], job[PATH_MAX + 64], tmpdir[64];

static void
run_engine(const char *workload, int p, uint64_t n, struct engine_run *out)
{
    char count[32];
    const char *args[] = { workload, "--count", count, NULL };
    json_t *r, *acc;
    int64_t ms;

    snprintf(count, sizeof count, "%llu", (unsigned long long)n);
    r = bench_run_local(spate, tmpdir, p, job, args, &out->usage);
    acc = json_object_get(r, "accumulators");
    ms = json_integer_value(json_object_get(r, "duration_ms"));
    out->events_per_s = (double)n / ((double)(ms > 0 ? ms : 1) / 1000.0);
    out->c.count = json_integer_value(json_object_get(acc, "checksum_count"));
    out->c.sum = json_integer_value(json_object_get(acc, "checksum_sum"));
    out->c.windows = json_integer_value(json_object_get(acc, "windows"));
    out->plan = json_incref(json_object_get(r, "plan"));
    json_decref(r);
}

/* ---- the Prometheus scraper (WINDOW_BENCH_PROMETHEUS=1) ---- */

struct scraper {
    int port;
    char conf[128]; /* the folder of the config with the reporter's keys */
    atomic_bool stop;
    atomic_long scrapes; /* answers with Flink's metric names */
    pthread_t thread;
};

/* GET /metrics every second (no answer while no job runs: the next try). */
static void *
scrape_loop(void *arg)
{
    struct scraper *s = arg;

    while (!atomic_load(&s->stop)) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s->port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const char *req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        char buf[1 << 16];
        ssize_t n;
        bool flink = false;

        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
            write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
            while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
                buf[n] = '\0';
                flink = flink || strstr(buf, "flink_taskmanager_") != NULL;
            }
        }
        close(fd);
        if (flink)
            atomic_fetch_add(&s->scrapes, 1);
        bench_sleep_ms(1000);
    }
    return NULL;
}

/* A free port below the ephemeral range, a config folder with the
 * reporter's keys for the runs (SPATE_CONF_DIR), the scraper started. */
static void
scraper_start(struct scraper *s, const char *bindir)
{
    char src[PATH_MAX + 32], conf[128];
    FILE *in, *out;
    int c;

    s->port = 0;
    for (int port = 19249; port < 19449 && s->port == 0; port++) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            s->port = port;
        close(fd);
    }
    if (s->port == 0)
        bench_fail("no free port for the Prometheus reporter in 19249-19448");
    snprintf(conf, sizeof conf, "%s/conf", tmpdir);
    mkdir(conf, 0755);
    snprintf(src, sizeof src, "%s/../conf/config.yaml", bindir);
    strncat(conf, "/config.yaml", sizeof conf - strlen(conf) - 1);
    if ((out = fopen(conf, "w")) == NULL)
        bench_fail("cannot write %s", conf);
    if ((in = fopen(src, "r")) != NULL) {
        while ((c = fgetc(in)) != EOF)
            fputc(c, out);
        fclose(in);
    }
    fprintf(out,
            "\nmetrics.reporter.prom.factory.class: prometheus\n"
            "metrics.reporter.prom.port: %d\n",
            s->port);
    fclose(out);
    *strrchr(conf, '/') = '\0';
    snprintf(s->conf, sizeof s->conf, "%s", conf);
    atomic_store(&s->stop, false);
    atomic_store(&s->scrapes, 0);
    if (pthread_create(&s->thread, NULL, scrape_loop, s) != 0)
        bench_fail("cannot start the scraper thread");
}

static long
scraper_stop(struct scraper *s)
{
    char conf[128];

    atomic_store(&s->stop, true);
    pthread_join(s->thread, NULL);
    snprintf(conf, sizeof conf, "%s/conf/config.yaml", tmpdir);
    unlink(conf);
    *strrchr(conf, '/') = '\0';
    rmdir(conf);
    return atomic_load(&s->scrapes);
}

/* Instructions per event, n events against 2n, of the loop name (p 0) or
 * of the engine's workload name at parallelism p, under callgrind. */
static double
instr_per_event(const char *name, int p, uint64_t n)
{
    char n1[32], n2[32];
    const char *a[] = { name, "--count", n1, NULL }, *b[] = { name, "--count", n2, NULL };

    snprintf(n1, sizeof n1, "%llu", (unsigned long long)n);
    snprintf(n2, sizeof n2, "%llu", (unsigned long long)(2 * n));
    if (p == 0)
        return bench_instr_loop(name, n1, n2, n, 2 * n, tmpdir);
    return bench_instr_local(spate, tmpdir, p, job, a, b, n, 2 * n);
}

static void check(const char *what, const struct checksums *engine, const struct checksums *loop);

/* The window at p1 and p2 with the reporter on (its config for these runs
 * only), checked against the loop's checksums: their rates and their
 * processes' CPU seconds. */
static void
run_with_reporter(struct scraper *s, uint64_t n, const struct checksums *wc, double *p1, double *p2,
                  double *cpu1, double *cpu2)
{
    struct engine_run a, b;

    setenv("SPATE_CONF_DIR", s->conf, 1);
    run_engine("window", 1, n, &a);
    run_engine("window", 2, n, &b);
    unsetenv("SPATE_CONF_DIR");
    check("window p1 with the reporter", &a.c, wc);
    check("window p2 with the reporter", &b.c, wc);
    *p1 = a.events_per_s;
    *p2 = b.events_per_s;
    *cpu1 = a.usage.cpu_s;
    *cpu2 = b.usage.cpu_s;
    json_decref(a.plan);
    json_decref(b.plan);
}

static void
check(const char *what, const struct checksums *engine, const struct checksums *loop)
{
    if (memcmp(engine, loop, sizeof *loop) != 0)
        bench_fail("%s: the engine's checksums (count %lld, sum %lld, windows %lld) are not "
                   "the loop's (%lld, %lld, %lld)",
                   what, (long long)engine->count, (long long)engine->sum,
                   (long long)engine->windows, (long long)loop->count, (long long)loop->sum,
                   (long long)loop->windows);
}

int
main(int argc, char **argv)
{
    const char *e;
    uint64_t n = (e = getenv("WINDOW_BENCH_EVENTS")) ? strtoull(e, NULL, 10) : 20000000;
    int runs = (e = getenv("WINDOW_BENCH_RUNS")) ? atoi(e) : 5;
    double base[16], ysb_base[16], p1[16], p2[16], ysb2[16], pp1[16], pp2[16], r1[16], r2[16];
    double cp1[16], cp2[16], c1[16], c2[16]; /* CPU seconds with the reporter, their ratios */
    struct checksums wc, yc;
    json_t *plan = NULL, *ysb_plan = NULL, *rounds = json_array(), *out;
    long rss_kb = 0, scrapes = -1;
    char dir[PATH_MAX];
    bool prom = (e = getenv("WINDOW_BENCH_PROMETHEUS")) != NULL && strcmp(e, "1") == 0;
    struct scraper scraper;
    bool instr;
    json_t *instr_json = json_null();

    bench_instr_loop_main(argc, argv, loops);
    bench_name = "window_bench";
    instr = bench_instr_wanted(argc, argv);
    if (runs < 1 || runs > 16)
        runs = 5;
    bench_exe_dir(dir, sizeof dir);
    snprintf(spate, sizeof spate, "%s/spate", dir);
    snprintf(job, sizeof job, "%s/../bench/window_bench_job.so", dir);
    if (access(spate, X_OK) != 0 || access(job, R_OK) != 0)
        bench_fail("cannot find spate and bench/window_bench_job.so beside %s", dir);
    strcpy(tmpdir, "/tmp/spate-window-bench-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        bench_fail("cannot make %s", tmpdir);
    fprintf(stderr, "window_bench: %llu events per run, %d rounds%s\n", (unsigned long long)n, runs,
            prom ? ", the Prometheus reporter scraped every second" : "");
    if (prom)
        scraper_start(&scraper, dir);
    for (int i = 0; i < runs; i++) {
        struct engine_run a, b, y;
        uint64_t t0;

        t0 = clock_mono_ns();
        loop_window(n, &wc);
        base[i] = (double)n / ((double)(clock_mono_ns() - t0) / 1e9);
        t0 = clock_mono_ns();
        loop_ysb(n, &yc);
        ysb_base[i] = (double)n / ((double)(clock_mono_ns() - t0) / 1e9);
        if (prom && i % 2 == 0) /* the loops' checksums first */
            run_with_reporter(&scraper, n, &wc, &pp1[i], &pp2[i], &cp1[i], &cp2[i]);
        run_engine("window", 1, n, &a);
        run_engine("window", 2, n, &b);
        run_engine("ysb", 2, n, &y);
        check("window p1", &a.c, &wc);
        check("window p2", &b.c, &wc);
        check("ysb p2", &y.c, &yc);
        if (prom && i % 2 == 1)
            run_with_reporter(&scraper, n, &wc, &pp1[i], &pp2[i], &cp1[i], &cp2[i]);
        p1[i] = a.events_per_s;
        p2[i] = b.events_per_s;
        ysb2[i] = y.events_per_s;
        json_array_append_new(rounds,
                              json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "baseline_events_per_s",
                                        base[i], "events_per_s_p1", p1[i], "events_per_s_p2", p2[i],
                                        "p2_over_p1", p2[i] / p1[i], "ysb_baseline_events_per_s",
                                        ysb_base[i], "ysb_events_per_s_p2", ysb2[i]));
        if (prom) {
            json_t *last = json_array_get(rounds, json_array_size(rounds) - 1);

            r1[i] = pp1[i] / p1[i];
            r2[i] = pp2[i] / p2[i];
            c1[i] = cp1[i] / a.usage.cpu_s;
            c2[i] = cp2[i] / b.usage.cpu_s;
            json_object_set_new(last, "prometheus_cpu_over_plain_p1", json_real(c1[i]));
            json_object_set_new(last, "prometheus_cpu_over_plain_p2", json_real(c2[i]));
            json_object_set_new(last, "events_per_s_p1_prometheus", json_real(pp1[i]));
            json_object_set_new(last, "events_per_s_p2_prometheus", json_real(pp2[i]));
            json_object_set_new(last, "prometheus_over_plain_p1", json_real(r1[i]));
            json_object_set_new(last, "prometheus_over_plain_p2", json_real(r2[i]));
            fprintf(stderr,
                    "window_bench: round %d: with the reporter p1 %.1f M/s (%.3f of plain; "
                    "CPU %.3f of plain's), p2 %.1f M/s (%.3f; CPU %.3f)\n",
                    i + 1, pp1[i] / 1e6, r1[i], c1[i], pp2[i] / 1e6, r2[i], c2[i]);
        }
        rss_kb = a.usage.rss_kb > rss_kb ? a.usage.rss_kb : rss_kb;
        json_decref(plan);
        json_decref(ysb_plan);
        json_decref(b.plan);
        plan = a.plan;
        ysb_plan = y.plan;
        fprintf(stderr,
                "window_bench: round %d: loop %.1f M/s, p1 %.1f M/s, p2 %.1f M/s; ysb "
                "loop %.1f M/s, p2 %.1f M/s\n",
                i + 1, base[i] / 1e6, p1[i] / 1e6, p2[i] / 1e6, ysb_base[i] / 1e6, ysb2[i] / 1e6);
    }
    if (prom)
        scrapes = scraper_stop(&scraper);
    if (instr) {
        uint64_t in = (e = getenv("WINDOW_BENCH_INSTR_EVENTS")) ? strtoull(e, NULL, 10) : 1000000;
        double lw = instr_per_event("window", 0, in), ly = instr_per_event("ysb", 0, in);
        double w1 = instr_per_event("window", 1, in), w2 = instr_per_event("window", 2, in);
        double y2 = instr_per_event("ysb", 2, in);

        fprintf(stderr,
                "window_bench: instructions per event: loop %.1f, p1 %.1f, p2 %.1f; ysb loop "
                "%.1f, p2 %.1f\n",
                lw, w1, w2, ly, y2);
        instr_json = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "events", (json_int_t)in,
                               "baseline_instr_per_record", lw, "instr_per_record_p1", w1,
                               "instr_per_record_p2", w2, "ysb_baseline_instr_per_record", ly,
                               "ysb_instr_per_record_p2", y2);
    }
    {
        char log[128];

        snprintf(log, sizeof log, "%s/spate.log", tmpdir);
        unlink(log);
        rmdir(tmpdir);
    }
    {
        double b = bench_median(base, runs), m1 = bench_median(p1, runs),
               m2 = bench_median(p2, runs), yb = bench_median(ysb_base, runs),
               y2 = bench_median(ysb2, runs);
        char *s;

        out = json_pack(
            "{s:s, s:I, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, "
            "s:I, s:I, s:b, s:I, s:o, s:o, s:o, s:o}",
            "bench", "window_bench", "events", (json_int_t)n, "runs", runs, "baseline_events_per_s",
            b, "events_per_s_p1", m1, "events_per_s_p2", m2, "ratio_p1", m1 / b, "ratio_p2", m2 / b,
            "p2_over_p1", m2 / m1, "ysb_baseline_events_per_s", yb, "ysb_events_per_s_p2", y2,
            "ysb_ratio_p2", y2 / yb, "rss_kb", (json_int_t)rss_kb, "checksum_count",
            (json_int_t)wc.count, "checksum_sum", (json_int_t)wc.sum, "windows",
            (json_int_t)wc.windows, "prometheus", prom, "prometheus_scrapes", (json_int_t)scrapes,
            "rounds", rounds, "instr", instr_json, "plan", plan, "ysb_plan", ysb_plan);
        if (prom) {
            json_object_set_new(out, "events_per_s_p1_prometheus",
                                json_real(bench_median(pp1, runs)));
            json_object_set_new(out, "events_per_s_p2_prometheus",
                                json_real(bench_median(pp2, runs)));
            json_object_set_new(out, "prometheus_over_plain_p1", json_real(bench_median(r1, runs)));
            json_object_set_new(out, "prometheus_over_plain_p2", json_real(bench_median(r2, runs)));
            json_object_set_new(out, "prometheus_cpu_over_plain_p1",
                                json_real(bench_median(c1, runs)));
            json_object_set_new(out, "prometheus_cpu_over_plain_p2",
                                json_real(bench_median(c2, runs)));
        }
        s = json_dumps(out, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(out);
    }
    return 0;
}
