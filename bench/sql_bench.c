/* sql_bench: events/s of the Nexmark queries in spate SQL (bench/nexmark/:
 * q0, q1, q2, q21, q22 at parallelism 1, q0, q1, q2 at parallelism 2, q18
 * and q19 (deduplication and Top-N: every bid ranked) at both, each
 * `spate sql --local -p P` over ddl.sql), beside the generator alone in a
 * single-threaded loop (the limit: making the bid table's events, as every
 * one of those queries reads it) and the hand-written C DataStream jobs of
 * q1 and q2 (build/bench/nexmark_bench_job.so, public API only) at
 * parallelism 1 and 2, in the same run. Rounds interleave every run; the
 * figures are medians. A rate is the events generated (person, auction and
 * bid events, as Flink's Nexmark counts them) over the job's runtime (the
 * JobMaster's start to end), the generator included. Checks before a figure
 * is printed: each SQL query's rows (its Calc's records out) and each C
 * job's rows and price sums equal the loop's count of bids, of q2's bids and
 * their prices' sums. Last line: a JSON object with each round's figures.
 *
 * SQL_BENCH_EVENTS (default 4,000,000) and SQL_BENCH_RUNS (3). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_engine.h"
#include "core/clock.h"
#include "sql/sql_nexmark.h"

#define RATE      10000000 /* first-event.rate: Flink's Nexmark runs' TPS */
#define BASE_TIME 1600000000000LL
#define MAX_RUNS  16

static char spate[PATH_MAX + 16], job[PATH_MAX + 64], tmpdir[64];

/* What the loop finds, and what each run must reproduce. */
struct expect {
    int64_t bids, q2_rows, q2_price_sum, bid_price_sum;
};

/* ---- the generator alone ---- */

static double
loop_generator(uint64_t n, struct expect *x)
{
    struct sql_nexmark_config c;
    struct sql_nexmark_gen g;
    struct sql_nexmark_event ev;
    const char *why;
    uint64_t t0;

    sql_nexmark_config_default(&c);
    c.first_event_rate = RATE;
    c.base_time_ms = BASE_TIME;
    if (sql_nexmark_gen_init(&g, &c, &why) != 0)
        bench_fail("the generator: %s", why);
    memset(x, 0, sizeof *x);
    t0 = clock_mono_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (sql_nexmark_kind_of(&g, (int64_t)i) != SQL_NEXMARK_BID)
            continue;
        sql_nexmark_next(&g, (int64_t)i, &ev);
        x->bids++;
        x->bid_price_sum += ev.bid.price;
        if (ev.bid.auction % 123 == 0) {
            x->q2_rows++;
            x->q2_price_sum += ev.bid.price;
        }
    }
    t0 = clock_mono_ns() - t0;
    sql_nexmark_gen_release(&g);
    return (double)n / ((double)t0 / 1e9);
}

/* ---- the SQL queries ---- */

static char *
read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
        bench_fail("cannot read %s", path);
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n)
        bench_fail("cannot read %s", path);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* ddl.sql with its placeholders set, then the query: tmpdir/<q>.sql. */
static void
write_script(const char *q, uint64_t n, char *path, size_t size)
{
    char file[PATH_MAX], value[32];
    char *ddl, *query, *at;
    FILE *out;

    snprintf(file, sizeof file, "%s/bench/nexmark/ddl.sql", SPATE_SOURCE_DIR);
    ddl = read_file(file);
    snprintf(file, sizeof file, "%s/bench/nexmark/%s.sql", SPATE_SOURCE_DIR, q);
    query = read_file(file);
    snprintf(path, size, "%s/%s.sql", tmpdir, q);
    if ((out = fopen(path, "w")) == NULL)
        bench_fail("cannot write %s", path);
    for (const char *s = ddl; *s;) {
        if ((at = strstr(s, "${")) == NULL) {
            fputs(s, out);
            break;
        }
        fwrite(s, 1, (size_t)(at - s), out);
        if (strncmp(at, "${TPS}", 6) == 0)
            snprintf(value, sizeof value, "%d", RATE);
        else if (strncmp(at, "${EVENTS_NUM}", 13) == 0)
            snprintf(value, sizeof value, "%llu", (unsigned long long)n);
        else if (strncmp(at, "${PERSON_PROPORTION}", 20) == 0)
            snprintf(value, sizeof value, "1");
        else if (strncmp(at, "${AUCTION_PROPORTION}", 21) == 0)
            snprintf(value, sizeof value, "3");
        else if (strncmp(at, "${BID_PROPORTION}", 17) == 0)
            snprintf(value, sizeof value, "46");
        else if (strncmp(at, "${BASE_TIME}", 12) == 0)
            snprintf(value, sizeof value, "%lld", BASE_TIME);
        else
            bench_fail("ddl.sql: unknown placeholder at '%.20s'", at);
        fputs(value, out);
        s = strchr(at, '}') + 1;
    }
    fprintf(out, "\n%s\n", query);
    fclose(out);
    free(ddl);
    free(query);
}

/* The number after key in text, or -1. */
static int64_t
number_after(const char *text, const char *key)
{
    const char *at = strstr(text, key);

    return at == NULL ? -1 : strtoll(at + strlen(key), NULL, 10);
}

/* `spate sql --local -p p -f script`: events/s; *rows the number of
 * metric (an operator's records in or out, "Rank.numRecordsIn: "). */
static double
run_sql_counting(const char *script, int p, uint64_t n, const char *metric, int64_t *rows)
{
    char pbuf[16], out[PATH_MAX], err[PATH_MAX];
    char *argv[] = { spate, "sql", "--local", "-p", pbuf, "-f", (char *)script, NULL };
    char *text;
    int64_t ms;
    int status;
    pid_t pid;

    snprintf(pbuf, sizeof pbuf, "%d", p);
    snprintf(out, sizeof out, "%s/sql.out", tmpdir);
    snprintf(err, sizeof err, "%s/spate.log", tmpdir);
    pid = bench_spawn(argv, out, err);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_fail("%s at p%d failed: see %s and %s", script, p, out, err);
    text = read_file(out);
    ms = number_after(text, "Job Runtime: ");
    *rows = number_after(text, metric);
    free(text);
    unlink(out);
    if (ms < 0 || *rows < 0)
        bench_fail("%s: no runtime or %s in spate sql's output", script, metric);
    return (double)n / ((double)(ms > 0 ? ms : 1) / 1000.0);
}

/* run_sql_counting of the Calc's records out. */
static double
run_sql(const char *script, int p, uint64_t n, int64_t *rows)
{
    return run_sql_counting(script, p, n, "Calc.numRecordsOut: ", rows);
}

/* ---- the hand-written jobs ---- */

static double
run_c(const char *q, int p, uint64_t n, int64_t *rows, int64_t *price_sum, json_t **plan)
{
    char count[32], rate[32], base[32];
    const char *args[] = { q, "--count", count, "--rate", rate, "--base-time", base, NULL };
    json_t *r, *acc;
    int64_t ms;

    snprintf(count, sizeof count, "%llu", (unsigned long long)n);
    snprintf(rate, sizeof rate, "%d", RATE);
    snprintf(base, sizeof base, "%lld", BASE_TIME);
    r = bench_run_local(spate, tmpdir, p, job, args, NULL);
    acc = json_object_get(r, "accumulators");
    ms = json_integer_value(json_object_get(r, "duration_ms"));
    *rows = json_integer_value(json_object_get(acc, "rows"));
    *price_sum = json_integer_value(json_object_get(acc, "price_sum"));
    if (plan != NULL) {
        json_decref(*plan);
        *plan = json_incref(json_object_get(r, "plan"));
    }
    json_decref(r);
    return (double)n / ((double)(ms > 0 ? ms : 1) / 1000.0);
}

static void
check(const char *what, int64_t got, int64_t want)
{
    if (got != want)
        bench_fail("%s: %lld, the generator loop's %lld", what, (long long)got, (long long)want);
}

/* The runs of a round, in this order. */
enum run_id {
    GEN,
    C_Q1_P1,
    SQL_Q1_P1,
    C_Q2_P1,
    SQL_Q2_P1,
    SQL_Q0_P1,
    SQL_Q21_P1,
    SQL_Q22_P1,
    C_Q1_P2,
    SQL_Q1_P2,
    C_Q2_P2,
    SQL_Q2_P2,
    SQL_Q0_P2,
    SQL_Q18_P1,
    SQL_Q19_P1,
    SQL_Q18_P2,
    SQL_Q19_P2,
    NRUNS,
};

static const char *const run_names[NRUNS] = {
    "generator",  "c_q1_p1",    "sql_q1_p1",  "c_q2_p1",    "sql_q2_p1",  "sql_q0_p1",
    "sql_q21_p1", "sql_q22_p1", "c_q1_p2",    "sql_q1_p2",  "c_q2_p2",    "sql_q2_p2",
    "sql_q0_p2",  "sql_q18_p1", "sql_q19_p1", "sql_q18_p2", "sql_q19_p2",
};

int
main(void)
{
    const char *e;
    uint64_t n = (e = getenv("SQL_BENCH_EVENTS")) ? strtoull(e, NULL, 10) : 4000000;
    int runs = (e = getenv("SQL_BENCH_RUNS")) ? atoi(e) : 3;
    double v[NRUNS][MAX_RUNS], m[NRUNS];
    char dir[PATH_MAX], scripts[7][PATH_MAX];
    static const char *const queries[7] = { "q0", "q1", "q2", "q21", "q22", "q18", "q19" };
    json_t *rounds = json_array(), *plan = NULL, *out, *medians = json_object();
    struct expect x = { 0 };
    char *s;

    bench_name = "sql_bench";
    if (runs < 1 || runs > MAX_RUNS)
        runs = 3;
    bench_exe_dir(dir, sizeof dir);
    snprintf(spate, sizeof spate, "%s/spate", dir);
    snprintf(job, sizeof job, "%s/../bench/nexmark_bench_job.so", dir);
    if (access(spate, X_OK) != 0 || access(job, R_OK) != 0)
        bench_fail("cannot find spate and bench/nexmark_bench_job.so beside %s", dir);
    strcpy(tmpdir, "/tmp/spate-sql-bench-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        bench_fail("cannot make %s", tmpdir);
    for (int q = 0; q < 7; q++)
        write_script(queries[q], n, scripts[q], sizeof scripts[q]);
    fprintf(stderr, "sql_bench: %llu events per run, %d rounds\n", (unsigned long long)n, runs);
    for (int i = 0; i < runs; i++) {
        json_t *round = json_object();
        int64_t rows, sum;

        v[GEN][i] = loop_generator(n, &x);
        v[C_Q1_P1][i] = run_c("q1", 1, n, &rows, &sum, &plan);
        check("C q1 p1 rows", rows, x.bids);
        check("C q1 p1 price sum", sum, x.bid_price_sum);
        v[SQL_Q1_P1][i] = run_sql(scripts[1], 1, n, &rows);
        check("SQL q1 p1 rows", rows, x.bids);
        v[C_Q2_P1][i] = run_c("q2", 1, n, &rows, &sum, NULL);
        check("C q2 p1 rows", rows, x.q2_rows);
        check("C q2 p1 price sum", sum, x.q2_price_sum);
        v[SQL_Q2_P1][i] = run_sql(scripts[2], 1, n, &rows);
        check("SQL q2 p1 rows", rows, x.q2_rows);
        v[SQL_Q0_P1][i] = run_sql(scripts[0], 1, n, &rows);
        check("SQL q0 p1 rows", rows, x.bids);
        v[SQL_Q21_P1][i] = run_sql(scripts[3], 1, n, &rows);
        if (rows <= 0 || rows > x.bids)
            bench_fail("SQL q21: %lld rows of %lld bids", (long long)rows, (long long)x.bids);
        v[SQL_Q22_P1][i] = run_sql(scripts[4], 1, n, &rows);
        check("SQL q22 p1 rows", rows, x.bids);
        v[C_Q1_P2][i] = run_c("q1", 2, n, &rows, &sum, NULL);
        check("C q1 p2 rows", rows, x.bids);
        v[SQL_Q1_P2][i] = run_sql(scripts[1], 2, n, &rows);
        check("SQL q1 p2 rows", rows, x.bids);
        v[C_Q2_P2][i] = run_c("q2", 2, n, &rows, &sum, NULL);
        check("C q2 p2 rows", rows, x.q2_rows);
        v[SQL_Q2_P2][i] = run_sql(scripts[2], 2, n, &rows);
        check("SQL q2 p2 rows", rows, x.q2_rows);
        v[SQL_Q0_P2][i] = run_sql(scripts[0], 2, n, &rows);
        check("SQL q0 p2 rows", rows, x.bids);
        /* Top-N and deduplication: every bid ranked */
        v[SQL_Q18_P1][i] = run_sql_counting(scripts[5], 1, n, "Rank.numRecordsIn: ", &rows);
        check("SQL q18 p1 rows ranked", rows, x.bids);
        v[SQL_Q19_P1][i] = run_sql_counting(scripts[6], 1, n, "Rank.numRecordsIn: ", &rows);
        check("SQL q19 p1 rows ranked", rows, x.bids);
        v[SQL_Q18_P2][i] = run_sql_counting(scripts[5], 2, n, "Rank.numRecordsIn: ", &rows);
        check("SQL q18 p2 rows ranked", rows, x.bids);
        v[SQL_Q19_P2][i] = run_sql_counting(scripts[6], 2, n, "Rank.numRecordsIn: ", &rows);
        check("SQL q19 p2 rows ranked", rows, x.bids);
        for (int r = 0; r < NRUNS; r++)
            json_object_set_new(round, run_names[r], json_real(v[r][i]));
        json_array_append_new(rounds, round);
        fprintf(stderr,
                "sql_bench: round %d: generator %.2f M/s; p1: q1 SQL %.2f C %.2f, q2 SQL %.2f "
                "C %.2f, q0 %.2f, q21 %.2f, q22 %.2f; p2: q1 SQL %.2f C %.2f, q2 SQL %.2f C "
                "%.2f, q0 %.2f M/s; q18 p1 %.2f p2 %.2f, q19 p1 %.2f p2 %.2f M/s\n",
                i + 1, v[GEN][i] / 1e6, v[SQL_Q1_P1][i] / 1e6, v[C_Q1_P1][i] / 1e6,
                v[SQL_Q2_P1][i] / 1e6, v[C_Q2_P1][i] / 1e6, v[SQL_Q0_P1][i] / 1e6,
                v[SQL_Q21_P1][i] / 1e6, v[SQL_Q22_P1][i] / 1e6, v[SQL_Q1_P2][i] / 1e6,
                v[C_Q1_P2][i] / 1e6, v[SQL_Q2_P2][i] / 1e6, v[C_Q2_P2][i] / 1e6,
                v[SQL_Q0_P2][i] / 1e6, v[SQL_Q18_P1][i] / 1e6, v[SQL_Q18_P2][i] / 1e6,
                v[SQL_Q19_P1][i] / 1e6, v[SQL_Q19_P2][i] / 1e6);
    }
    for (int q = 0; q < 7; q++)
        unlink(scripts[q]);
    {
        char log[128];

        snprintf(log, sizeof log, "%s/spate.log", tmpdir);
        unlink(log);
        rmdir(tmpdir);
    }
    for (int r = 0; r < NRUNS; r++) {
        m[r] = bench_median(v[r], runs);
        json_object_set_new(medians, run_names[r], json_real(m[r]));
    }
    out = json_pack(
        "{s:s, s:I, s:i, s:i, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, "
        "s:I, s:I, s:o, s:o}",
        "bench", "sql_bench", "events", (json_int_t)n, "runs", runs, "first_event_rate", RATE,
        "events_per_s", medians, "q1_sql_over_c_p1", m[SQL_Q1_P1] / m[C_Q1_P1], "q2_sql_over_c_p1",
        m[SQL_Q2_P1] / m[C_Q2_P1], "q1_sql_over_c_p2", m[SQL_Q1_P2] / m[C_Q1_P2],
        "q2_sql_over_c_p2", m[SQL_Q2_P2] / m[C_Q2_P2], "q0_sql_over_generator_p1",
        m[SQL_Q0_P1] / m[GEN], "sql_q0_events_per_s_per_core_p2", m[SQL_Q0_P2] / 2,
        "sql_q1_events_per_s_per_core_p2", m[SQL_Q1_P2] / 2, "sql_q2_events_per_s_per_core_p2",
        m[SQL_Q2_P2] / 2, "sql_q18_events_per_s_per_core_p2", m[SQL_Q18_P2] / 2,
        "sql_q19_events_per_s_per_core_p2", m[SQL_Q19_P2] / 2, "bids", (json_int_t)x.bids,
        "q2_rows", (json_int_t)x.q2_rows, "q2_price_sum", (json_int_t)x.q2_price_sum, "rounds",
        rounds, "c_q1_plan", plan);
    s = json_dumps(out, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(out);
    return 0;
}
