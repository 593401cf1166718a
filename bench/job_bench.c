/* job_bench: WordCount (bench/README.md's workload 1) on the mini cluster,
 * beside a hand-written single-threaded C word count over the same file,
 * measured in the same run. The engine runs build/bench/wordcount_bench.so
 * (public API only) with `spate run --local -p N --json`; its rate is the
 * file's bytes over the job's runtime (the JobMaster's start to end), its
 * checksum (the sum of every emitted count) must equal the loop's. Rounds
 * interleave loop, p1 and p2; the figures are medians. Also the time from
 * handing the JobGraph to the Dispatcher to the first record reaching the
 * sink (p1 runs). And, on a real cluster (a JobManager and 2 TaskManagers
 * of 2 slots as processes), the time from starting `spate run -d -p 4` to
 * every task RUNNING (cluster_submit). Last line: a JSON object.
 *
 * JOB_BENCH_LINES (default 1000000, about 85 MB), JOB_BENCH_RUNS (default
 * 3) and JOB_BENCH_CLUSTER_RUNS (default 7) scale it. --instr (or
 * BENCH_INSTR=1): instructions per word too, of the loop and of the engine
 * at p1 and p2, counted by callgrind over files of JOB_BENCH_INSTR_LINES
 * (20,000) and twice as many lines (bench_instr.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_data.h"
#include "bench_engine.h"
#include "bench_instr.h"
#include "core/clock.h"

extern char **environ;

static char spate[PATH_MAX + 16], job[PATH_MAX + 64], tmpdir[64], text[128];
static char endless[PATH_MAX + 64];

static size_t
write_text(uint64_t lines)
{
    struct bench_vocab *v = malloc(sizeof *v);
    char line[BENCH_LINE_WORDS * (BENCH_WORD_MAX + 1) + 1];
    FILE *f = fopen(text, "w");
    size_t bytes = 0;

    if (f == NULL || v == NULL)
        bench_fail("cannot write %s", text);
    bench_vocab_init(v);
    for (uint64_t l = 0; l < lines; l++) {
        size_t n = bench_line(v, l, line);

        line[n++] = '\n';
        fwrite(line, 1, n, f);
        bytes += n;
    }
    if (fclose(f) != 0)
        bench_fail("cannot write %s", text);
    free(v);
    return bytes;
}

/* ---- the hand-written loop ---- */

struct slot {
    uint64_t hash;
    uint32_t off, len; /* the word's bytes in the arena */
    int64_t count;
};

static inline uint64_t
word_hash(const char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;

    while (n >= 8) {
        uint64_t w;

        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;

        memcpy(&w, p, n);
        h = (h ^ w) * 0x94D049BB133111EBULL;
    }
    return h ^ (h >> 32);
}

/* Reads the file in 1 MiB blocks, splits words (runs of ASCII letters and
 * digits, lower-cased), counts them in an open-addressing table and sums
 * every running count, as the job does. */
static int64_t
baseline(uint64_t *words_out)
{
    size_t cap = 1 << 16, used = 0, arena_len = 0, arena_cap = 1 << 20;
    struct slot *t = calloc(cap, sizeof *t);
    char *arena = malloc(arena_cap);
    static char buf[(1 << 20) + 64];
    char word[256];
    size_t wlen = 0, have;
    int64_t sum = 0;
    uint64_t words = 0;
    int fd = open(text, O_RDONLY);

    if (fd < 0 || t == NULL || arena == NULL)
        bench_fail("cannot read %s", text);
    while ((have = (size_t)read(fd, buf, sizeof buf - 64)) > 0 && have != (size_t)-1) {
        buf[have] = ' '; /* ends a word at the block's end check below */
        for (size_t i = 0; i <= have; i++) {
            unsigned char c = (unsigned char)buf[i];
            bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');

            if (i < have && alnum) {
                if (wlen < sizeof word)
                    word[wlen++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
                continue;
            }
            if (i == have)
                break; /* a word may go on in the next block */
            if (wlen == 0)
                continue;
            {
                uint64_t h = word_hash(word, wlen);
                size_t k = h & (cap - 1);

                for (;; k = (k + 1) & (cap - 1)) {
                    struct slot *s = &t[k];

                    if (s->len == 0) {
                        if (arena_len + wlen > arena_cap)
                            arena = realloc(arena, arena_cap *= 2);
                        memcpy(arena + arena_len, word, wlen);
                        *s = (struct slot){ h, (uint32_t)arena_len, (uint32_t)wlen, 0 };
                        arena_len += wlen;
                        used++;
                    } else if (s->hash != h || s->len != wlen ||
                               memcmp(arena + s->off, word, wlen) != 0) {
                        continue;
                    }
                    sum += ++s->count;
                    break;
                }
                words++;
                wlen = 0;
                if (used * 2 > cap) {
                    size_t ncap = cap * 2;
                    struct slot *n = calloc(ncap, sizeof *n);

                    for (size_t j = 0; j < cap; j++) {
                        size_t q = t[j].hash & (ncap - 1);

                        if (t[j].len == 0)
                            continue;
                        while (n[q].len != 0)
                            q = (q + 1) & (ncap - 1);
                        n[q] = t[j];
                    }
                    free(t);
                    t = n;
                    cap = ncap;
                }
            }
        }
    }
    close(fd);
    free(t);
    free(arena);
    *words_out = words;
    return sum;
}

/* The loop alone over the file path, for callgrind (bench_instr_loop_main). */
static void
instr_loop_wordcount(const char *path)
{
    uint64_t words;

    snprintf(text, sizeof text, "%s", path);
    printf("%lld\n", (long long)baseline(&words));
}

static const struct bench_instr_loop loops[] = {
    { "wordcount", instr_loop_wordcount },
    { NULL, NULL },
};

/* ---- the engine ---- */

struct engine_run {
    double mb_per_s;
    double first_record_ms;
    double cluster_start_ms;
    int64_t checksum;
    json_t *plan;
};

static void
run_engine(int p, size_t bytes, struct engine_run *out)
{
    const char *args[] = { "--input", text, NULL };
    json_t *r = bench_run_local(spate, tmpdir, p, job, args, NULL), *acc;
    int64_t ms;

    acc = json_object_get(r, "accumulators");
    ms = json_integer_value(json_object_get(r, "duration_ms"));
    out->mb_per_s = (double)bytes / 1e6 / ((double)(ms > 0 ? ms : 1) / 1000.0);
    out->checksum = json_integer_value(json_object_get(acc, "checksum"));
    out->first_record_ms = (double)(json_integer_value(json_object_get(acc, "first_record_at_us")) -
                                    json_integer_value(json_object_get(r, "submitted_at_us"))) /
                           1000.0;
    out->cluster_start_ms =
        (double)json_integer_value(json_object_get(r, "minicluster_start_us")) / 1000.0;
    out->plan = json_incref(json_object_get(r, "plan"));
    json_decref(r);
}

/* ---- cluster_submit: a real cluster ---------------------------------------------------- */

static struct bench_cluster cluster;

static void
read_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, cap - 1, f) : 0;

    buf[n] = '\0';
    if (f != NULL)
        fclose(f);
}

struct submit_run {
    double to_running_ms;     /* CLI start to every task RUNNING */
    double to_job_running_ms; /* CLI start to the job's RUNNING timestamp */
    double process_ms;        /* baseline: `spate --version`, start to exit */
    double roundtrip_ms;      /* baseline: one GET /overview */
};

/* One submission: `spate run -d -m ... -p 4` of the endless job, polled
 * (GET /jobs/:jobid every 0.2 ms) until all its tasks run; then cancelled. */
static void
submit_once(const char *target, struct submit_run *out)
{
    char *argv[] = { spate, "run", "-d", "-m", (char *)target, "-p", "4", endless, NULL };
    char *version[] = { spate, "--version", NULL };
    char outp[160], errp[160], text_out[4096], path[128], *at;
    json_t *jd = NULL;
    uint64_t t0_wall_us, t0, done = 0;
    int status;
    pid_t pid;

    snprintf(outp, sizeof outp, "%s/run.out", tmpdir);
    snprintf(errp, sizeof errp, "%s/run.err", tmpdir);
    t0 = clock_mono_ns();
    pid = bench_spawn(version, outp, errp);
    waitpid(pid, &status, 0);
    out->process_ms = (double)(clock_mono_ns() - t0) / 1e6;
    t0 = clock_mono_ns();
    json_decref(bench_cluster_rest(&cluster, "GET", "/overview"));
    out->roundtrip_ms = (double)(clock_mono_ns() - t0) / 1e6;

    t0_wall_us = (uint64_t)clock_wall_us();
    t0 = clock_mono_ns();
    pid = bench_spawn(argv, outp, errp);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_fail("spate run -d failed: see %s", errp);
    read_file(outp, text_out, sizeof text_out);
    if ((at = strstr(text_out, "JobID ")) == NULL)
        bench_fail("spate run -d printed no job id: see %s", outp);
    snprintf(path, sizeof path, "/jobs/%.32s", at + 6);
    for (int i = 0; i < 100000 && done == 0; i++) {
        json_t *tasks;

        json_decref(jd);
        jd = bench_cluster_rest(&cluster, "GET", path);
        tasks = json_object_get(jd, "tasks");
        if (tasks != NULL && json_integer_value(json_object_get(tasks, "total")) > 0 &&
            json_integer_value(json_object_get(tasks, "running")) ==
                json_integer_value(json_object_get(tasks, "total")))
            done = clock_mono_ns();
        else
            usleep(200);
    }
    if (done == 0)
        bench_fail("job %.32s did not get all its tasks running", at + 6);
    out->to_running_ms = (double)(done - t0) / 1e6;
    out->to_job_running_ms =
        (double)json_integer_value(json_object_get(json_object_get(jd, "timestamps"), "RUNNING")) -
        (double)t0_wall_us / 1000.0;
    json_decref(jd);
    snprintf(path, sizeof path, "/jobs/%.32s?mode=cancel", at + 6);
    json_decref(bench_cluster_rest(&cluster, "PATCH", path));
    bench_cluster_wait_slots(&cluster, 2, 4);
}

struct cluster_figures {
    double to_running[3]; /* median, min, max */
    double to_job_running, process, roundtrip;
};

static void
cluster_submit_bench(int runs, struct cluster_figures *fig)
{
    char target[64];
    double to_running[32], job_running[32], process[32], roundtrip[32];

    bench_cluster_start(&cluster, spate, tmpdir, NULL);
    for (int i = 0; i < 2; i++)
        bench_cluster_start_tm(&cluster, i, 2);
    bench_cluster_wait_slots(&cluster, 2, 4);
    snprintf(target, sizeof target, "127.0.0.1:%d", cluster.rest_port);
    submit_once(target, &(struct submit_run){ 0 }); /* warm-up: caches, first blob fetch */
    for (int i = 0; i < runs; i++) {
        struct submit_run r;

        submit_once(target, &r);
        to_running[i] = r.to_running_ms;
        job_running[i] = r.to_job_running_ms;
        process[i] = r.process_ms;
        roundtrip[i] = r.roundtrip_ms;
        fprintf(stderr,
                "job_bench: cluster round %d: submit to all tasks RUNNING %.1f ms (job RUNNING "
                "%.1f ms); spate --version %.1f ms, REST round trip %.2f ms\n",
                i + 1, r.to_running_ms, r.to_job_running_ms, r.process_ms, r.roundtrip_ms);
    }
    bench_cluster_stop(&cluster);
    fig->to_running[0] = bench_median(to_running, runs);
    fig->to_running[1] = to_running[0];
    fig->to_running[2] = to_running[runs - 1]; /* median sorted them */
    fig->to_job_running = bench_median(job_running, runs);
    fig->process = bench_median(process, runs);
    fig->roundtrip = bench_median(roundtrip, runs);
}

/* Instructions per word of the loop and the engine at p1 and p2 under
 * callgrind, over files of lines and 2 * lines lines. */
static json_t *
instr_per_word(uint64_t lines)
{
    char a[128], b[128];
    const char *args_a[] = { "--input", a, NULL }, *args_b[] = { "--input", b, NULL };
    uint64_t wa, wb;
    double loop, p1, p2;

    snprintf(a, sizeof a, "%s/instr-a.txt", tmpdir);
    snprintf(b, sizeof b, "%s/instr-b.txt", tmpdir);
    snprintf(text, sizeof text, "%s", a);
    write_text(lines);
    baseline(&wa);
    snprintf(text, sizeof text, "%s", b);
    write_text(2 * lines);
    baseline(&wb);
    loop = bench_instr_loop("wordcount", a, b, wa, wb, tmpdir);
    p1 = bench_instr_local(spate, tmpdir, 1, job, args_a, args_b, wa, wb);
    p2 = bench_instr_local(spate, tmpdir, 2, job, args_a, args_b, wa, wb);
    unlink(a);
    unlink(b);
    fprintf(stderr, "job_bench: instructions per word: loop %.1f, p1 %.1f, p2 %.1f\n", loop, p1,
            p2);
    return json_pack("{s:I, s:f, s:f, s:f}", "lines", (json_int_t)lines,
                     "baseline_instr_per_record", loop, "instr_per_record_p1", p1,
                     "instr_per_record_p2", p2);
}

int
main(int argc, char **argv)
{
    const char *e;
    uint64_t lines = (e = getenv("JOB_BENCH_LINES")) ? strtoull(e, NULL, 10) : 1000000;
    int runs = (e = getenv("JOB_BENCH_RUNS")) ? atoi(e) : 3;
    int cruns = (e = getenv("JOB_BENCH_CLUSTER_RUNS")) ? atoi(e) : 7;
    struct cluster_figures cf;
    char exe[PATH_MAX];
    double base[16], p1[16], p2[16], first[16], start[16];
    int64_t expect = 0;
    uint64_t words = 0;
    json_t *plan1 = NULL, *plan2 = NULL, *out, *instr = json_null();
    bool want_instr;
    size_t bytes;

    bench_instr_loop_main(argc, argv, loops);
    bench_name = "job_bench";
    want_instr = bench_instr_wanted(argc, argv);
    if (runs < 1 || runs > 16)
        runs = 3;
    if (cruns < 1 || cruns > 32)
        cruns = 7;
    bench_exe_dir(exe, sizeof exe);
    snprintf(spate, sizeof spate, "%s/spate", exe);
    snprintf(job, sizeof job, "%s/../bench/wordcount_bench.so", exe);
    snprintf(endless, sizeof endless, "%s/../tests/e2e/jobs/job_endless.so", exe);
    if (access(spate, X_OK) != 0 || access(job, R_OK) != 0 || access(endless, R_OK) != 0)
        bench_fail("cannot find spate, bench/wordcount_bench.so and tests/e2e/jobs/job_endless.so "
                   "beside %s",
                   exe);
    strcpy(tmpdir, "/tmp/spate-job-bench-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        bench_fail("cannot make %s", tmpdir);
    snprintf(text, sizeof text, "%s/text.txt", tmpdir);
    bytes = write_text(lines);
    fprintf(stderr, "job_bench: %llu lines, %.1f MB\n", (unsigned long long)lines, bytes / 1e6);

    for (int i = 0; i < runs; i++) {
        struct engine_run a, b;
        uint64_t t0 = clock_mono_ns(), w;
        int64_t sum = baseline(&w);

        base[i] = (double)bytes / 1e6 / ((double)(clock_mono_ns() - t0) / 1e9);
        if (i == 0) {
            expect = sum;
            words = w;
        } else if (sum != expect) {
            bench_fail("the loop's checksum changed between runs");
        }
        run_engine(1, bytes, &a);
        run_engine(2, bytes, &b);
        if (a.checksum != expect || b.checksum != expect) {
            fprintf(stderr, "job_bench: checksums differ: loop %lld, p1 %lld, p2 %lld\n",
                    (long long)expect, (long long)a.checksum, (long long)b.checksum);
            return 1;
        }
        p1[i] = a.mb_per_s;
        p2[i] = b.mb_per_s;
        first[i] = a.first_record_ms;
        start[i] = a.cluster_start_ms;
        json_decref(plan1);
        json_decref(plan2);
        plan1 = a.plan;
        plan2 = b.plan;
        fprintf(stderr,
                "job_bench: round %d: loop %.0f MB/s, p1 %.0f MB/s, p2 %.0f MB/s, "
                "first record %.2f ms\n",
                i + 1, base[i], p1[i], p2[i], first[i]);
    }
    unlink(text);
    if (want_instr)
        instr =
            instr_per_word((e = getenv("JOB_BENCH_INSTR_LINES")) ? strtoull(e, NULL, 10) : 20000);
    cluster_submit_bench(cruns, &cf);
    bench_remove_tree(tmpdir);

    {
        double b = bench_median(base, runs), m1 = bench_median(p1, runs),
               m2 = bench_median(p2, runs);

        out = json_pack(
            "{s:s, s:I, s:I, s:I, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
            "s:o, s:o, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:o}",
            "bench", "job_bench", "lines", (json_int_t)lines, "bytes", (json_int_t)bytes, "words",
            (json_int_t)words, "runs", runs, "checksum", (json_int_t)expect,
            "baseline_wordcount_mb_per_s", b, "wordcount_mb_per_s_p1", m1, "wordcount_mb_per_s_p2",
            m2, "ratio_p1", m1 / b, "ratio_p2", m2 / b, "minicluster_submit_to_first_record_ms",
            bench_median(first, runs), "minicluster_start_ms", bench_median(start, runs), "plan_p1",
            plan1, "plan_p2", plan2, "cluster_runs", cruns, "cluster_submit_to_running_ms",
            cf.to_running[0], "cluster_submit_to_running_ms_min", cf.to_running[1],
            "cluster_submit_to_running_ms_max", cf.to_running[2],
            "cluster_submit_to_job_running_ms", cf.to_job_running, "baseline_spate_process_ms",
            cf.process, "baseline_rest_roundtrip_ms", cf.roundtrip, "instr", instr);
    }
    {
        char *s = json_dumps(out, JSON_COMPACT);

        printf("%s\n", s);
        free(s);
    }
    json_decref(out);
    return 0;
}
