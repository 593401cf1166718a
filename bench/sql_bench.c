/* sql_bench: events/s of the Nexmark queries in spate SQL (bench/nexmark/:
 * q0, q1, q2, q21, q22, q3, q7, q8, q20, q10, q11, q12, q13, q14, q15, q16,
 * q17, q18, q19 at parallelism 1 and 2, each
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
 * their prices' sums. The queries with joins, q3, q7, q8, q20 at p1 and p2,
 * run over fewer events (their state keeps every row of both sides, as
 * Flink's runs do with no TTL); their rows (the join's records out) equal
 * those counted here from the generator's people, auctions and bids; q14's
 * those of its bids in the price range, and the aggregating queries' first
 * Calc's every bid (q18 and q19: every bid ranked; q10's Calc every bid
 * into its partitioned files, written in the temporary folder and removed
 * after each run). The queries that
 * consume changelogs, q4, q5, q9, at p1 and p2 over the joins' events: q4
 * and q9's join rows equal the bids within their auction's lifetime
 * counted here, q5's first Calc every bid. Last line: a JSON
 * object with each round's figures, the medians and each query's events/s
 * per core (its rate over its parallelism).
 *
 * SQL_BENCH_EVENTS (default 4,000,000), SQL_BENCH_JOIN_EVENTS (1,000,000)
 * and SQL_BENCH_RUNS (3). --instr (or BENCH_INSTR=1): instructions per
 * event too, of the generator loop, of q1, q2 and q15 in SQL and of the C
 * job of q1 at p1, counted by callgrind over SQL_BENCH_INSTR_EVENTS
 * (200,000) and twice as many (bench_instr.h). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_engine.h"
#include "bench_instr.h"
#include "core/clock.h"
#include "sql/sql_nexmark.h"

#define RATE      10000000 /* first-event.rate: Flink's Nexmark runs' TPS */
#define BASE_TIME 1600000000000LL
#define MAX_RUNS  16

static char spate[PATH_MAX + 16], job[PATH_MAX + 64], udf[PATH_MAX + 64], tmpdir[64];

/* What the loop finds, and what each run must reproduce. */
struct expect {
    int64_t bids, q2_rows, q2_price_sum, bid_price_sum, q14_rows;
    int64_t q3_rows, q7_rows, q8_rows, q20_rows; /* of the joins' events */
    int64_t join_bids;                           /* the bids of the joins' events */
    int64_t lifetime_rows; /* q4 and q9's join: bids within their auction's lifetime */
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
    x->bids = x->q2_rows = x->q2_price_sum = x->bid_price_sum = x->q14_rows = 0;
    t0 = clock_mono_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (sql_nexmark_kind_of(&g, (int64_t)i) != SQL_NEXMARK_BID)
            continue;
        sql_nexmark_next(&g, (int64_t)i, &ev);
        x->bids++;
        x->bid_price_sum += ev.bid.price;
        if (ev.bid.price * 908 > 1000000000 && ev.bid.price * 908 < 50000000000)
            x->q14_rows++; /* 0.908 * price between 1,000,000 and 50,000,000 */
        if (ev.bid.auction % 123 == 0) {
            x->q2_rows++;
            x->q2_price_sum += ev.bid.price;
        }
    }
    t0 = clock_mono_ns() - t0;
    sql_nexmark_gen_release(&g);
    return (double)n / ((double)t0 / 1e9);
}

/* The loop alone over n events, for callgrind (bench_instr_loop_main). */
static void
instr_loop_generator(const char *n)
{
    struct expect x;

    loop_generator(strtoull(n, NULL, 10), &x);
    printf("%lld\n", (long long)x.bid_price_sum);
}

static const struct bench_instr_loop loops[] = {
    { "generator", instr_loop_generator },
    { NULL, NULL },
};

/* The rows of the queries with joins over the first n events, computed
 * here from the generator (ids are dense: an array each): q3's auctions of
 * category 10 whose seller is in OR, ID or CA; q8's people who made an
 * auction in the 10-second window they entered in; q20's bids on auctions
 * of category 10; q4 and q9's bids within their auction's lifetime
 * (dateTime to expires). Untimed. */
static void
join_expect(uint64_t n, struct expect *x)
{
    struct sql_nexmark_config c;
    struct sql_nexmark_gen g;
    struct sql_nexmark_event ev;
    size_t np = n / 50 + 64, na = 3 * n / 50 + 64;
    /* 10-second windows from BASE_TIME (a multiple of 10 s) */
    size_t nw = (size_t)(n / (RATE / 1000) / 10000) + 2;
    int64_t *top = calloc(nw, sizeof *top);
    int64_t *person_window = malloc(np * sizeof *person_window);
    uint8_t *person_west = calloc(np, 1), *person_seen = calloc(np, 1);
    uint8_t *auction_cat10 = calloc(na, 1), *person_sold = calloc(np, 1);
    int64_t(*lifetime)[2] = calloc(na, sizeof *lifetime); /* dateTime, expires; 0: none */
    const char *why;

    if (top == NULL || person_window == NULL || person_west == NULL || person_seen == NULL ||
        auction_cat10 == NULL || person_sold == NULL || lifetime == NULL)
        bench_fail("out of memory");
    sql_nexmark_config_default(&c);
    c.first_event_rate = RATE;
    c.base_time_ms = BASE_TIME;
    if (sql_nexmark_gen_init(&g, &c, &why) != 0)
        bench_fail("the generator: %s", why);
    x->q3_rows = x->q7_rows = x->q8_rows = x->q20_rows = x->lifetime_rows = x->join_bids = 0;
    /* people first: a seller may come before the person, a join meets both */
    for (uint64_t i = 0; i < n; i++) {
        const struct sql_nexmark_str *st;
        uint64_t id;

        if (sql_nexmark_kind_of(&g, (int64_t)i) != SQL_NEXMARK_PERSON)
            continue;
        sql_nexmark_next(&g, (int64_t)i, &ev);
        if ((id = (uint64_t)(ev.person.id - 1000)) >= np)
            bench_fail("person id %lld out of range", (long long)ev.person.id);
        st = &ev.person.state;
        person_seen[id] = 1;
        person_window[id] = ev.date_time - ev.date_time % 10000;
        person_west[id] = st->len == 2 && (!memcmp(st->p, "OR", 2) || !memcmp(st->p, "ID", 2) ||
                                           !memcmp(st->p, "CA", 2));
    }
    for (uint64_t i = 0; i < n; i++) {
        enum sql_nexmark_kind kind = sql_nexmark_kind_of(&g, (int64_t)i);
        uint64_t id, seller;

        if (kind != SQL_NEXMARK_AUCTION)
            continue;
        sql_nexmark_next(&g, (int64_t)i, &ev);
        if ((id = (uint64_t)(ev.auction.id - 1000)) >= na)
            bench_fail("auction id %lld out of range", (long long)ev.auction.id);
        seller = (uint64_t)(ev.auction.seller - 1000);
        auction_cat10[id] = ev.auction.category == 10;
        lifetime[id][0] = ev.date_time;
        lifetime[id][1] = ev.auction.expires;
        if (seller < np && person_seen[seller]) {
            x->q3_rows += ev.auction.category == 10 && person_west[seller];
            if (person_window[seller] == ev.date_time - ev.date_time % 10000)
                person_sold[seller] = 1;
        }
    }
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = 0; i < n; i++) {
            uint64_t a, w;

            if (sql_nexmark_kind_of(&g, (int64_t)i) != SQL_NEXMARK_BID)
                continue;
            sql_nexmark_next(&g, (int64_t)i, &ev);
            w = (uint64_t)((ev.date_time - BASE_TIME) / 10000);
            if (w >= nw)
                bench_fail("bid time %lld out of range", (long long)ev.date_time);
            if (pass == 0) { /* q7: each window's highest price */
                top[w] = ev.bid.price > top[w] ? ev.bid.price : top[w];
                continue;
            }
            a = (uint64_t)(ev.bid.auction - 1000);
            x->join_bids++;
            x->q20_rows += a < na && auction_cat10[a];
            x->lifetime_rows += a < na && lifetime[a][1] != 0 && lifetime[a][0] <= ev.date_time &&
                                ev.date_time <= lifetime[a][1];
            /* its window's top, or the one before's when it is at its end */
            x->q7_rows += ev.bid.price == top[w];
            x->q7_rows +=
                (ev.date_time - BASE_TIME) % 10000 == 0 && w > 0 && ev.bid.price == top[w - 1];
        }
    for (size_t i = 0; i < np; i++)
        x->q8_rows += person_sold[i];
    sql_nexmark_gen_release(&g);
    free(top);
    free(person_window);
    free(person_west);
    free(person_seen);
    free(auction_cat10);
    free(person_sold);
    free(lifetime);
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
    char file[PATH_MAX], value[PATH_MAX + 64];
    char *ddl, *query, *at;
    FILE *out;

    snprintf(file, sizeof file, "%s/bench/nexmark/ddl.sql", SPATE_SOURCE_DIR);
    ddl = read_file(file);
    snprintf(file, sizeof file, "%s/bench/nexmark/%s.sql", SPATE_SOURCE_DIR, q);
    query = read_file(file);
    snprintf(path, size, "%s/%s.sql", tmpdir, q);
    if ((out = fopen(path, "w")) == NULL)
        bench_fail("cannot write %s", path);
    ddl = realloc(ddl, strlen(ddl) + strlen(query) + 2);
    if (ddl == NULL)
        bench_fail("out of memory");
    strcat(strcat(ddl, "\n"), query);
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
        else if (strncmp(at, "${NEXMARK_UDF}", 14) == 0)
            snprintf(value, sizeof value, "%s", udf);
        else if (strncmp(at, "${SIDE_INPUT}", 13) == 0)
            snprintf(value, sizeof value, "%s/side_input.csv", tmpdir);
        else if (strncmp(at, "${OUTPUT_DIR}", 13) == 0)
            snprintf(value, sizeof value, "%s/output", tmpdir);
        else
            bench_fail("ddl.sql: unknown placeholder at '%.20s'", at);
        fputs(value, out);
        s = strchr(at, '}') + 1;
    }
    fputc('\n', out);
    fclose(out);
    free(ddl);
    free(query);
}

/* q13's side input, tmpdir/side_input.csv: keys 0..9999, each a value. */
static void
write_side_input(void)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof path, "%s/side_input.csv", tmpdir);
    if ((f = fopen(path, "w")) == NULL)
        bench_fail("cannot write %s", path);
    for (int k = 0; k < 10000; k++)
        fprintf(f, "%d,v%d\n", k, k * 7919 % 1000);
    fclose(f);
}

/* The number after key in text, or -1. */
static int64_t
number_after(const char *text, const char *key)
{
    const char *at = strstr(text, key);

    return at == NULL ? -1 : strtoll(at + strlen(key), NULL, 10);
}

/* `spate sql --local -p p -f script`: events/s; *rows the records out of
 * the operator counted (its accumulator: "Calc", or "Join"). */
static double
run_sql(const char *script, int p, uint64_t n, const char *counted, int64_t *rows)
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
    {
        /* the first one's ("Calc.numRecordsOut", or "Calc (id).numRecordsOut"
         * when there are several) */
        char key[64];
        const char *at;

        snprintf(key, sizeof key, "- %s", counted);
        *rows = (at = strstr(text, key)) ? number_after(at, "numRecordsOut: ") : -1;
    }
    free(text);
    unlink(out);
    if (ms < 0 || *rows < 0)
        bench_fail("%s: no runtime or %s records in spate sql's output", script, counted);
    return (double)n / ((double)(ms > 0 ? ms : 1) / 1000.0);
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

/* Instructions per event of the generator, of q1, q2 and q15 (its COUNT
 * DISTINCTs' state) in SQL and of q1 in C at p1, under callgrind over n and
 * 2n events. */
static json_t *
instr_per_event(uint64_t n)
{
    static const char *const qs[] = { "q1", "q2", "q15" };
    enum { NQ = sizeof qs / sizeof *qs };
    char n1[32], n2[32], rate[32], base[32], log[PATH_MAX], sa[PATH_MAX], sb[PATH_MAX];
    const char *ca[] = { "q1", "--count", n1, "--rate", rate, "--base-time", base, NULL };
    const char *cb[] = { "q1", "--count", n2, "--rate", rate, "--base-time", base, NULL };
    double gen, sql[NQ], c;
    json_t *out;

    snprintf(n1, sizeof n1, "%llu", (unsigned long long)n);
    snprintf(n2, sizeof n2, "%llu", (unsigned long long)(2 * n));
    snprintf(rate, sizeof rate, "%d", RATE);
    snprintf(base, sizeof base, "%lld", BASE_TIME);
    snprintf(log, sizeof log, "%s/callgrind.log", tmpdir);
    gen = bench_instr_loop("generator", n1, n2, n, 2 * n, tmpdir);
    for (int q = 0; q < NQ; q++) {
        const char *a[] = { spate, "-D",      "taskmanager.network.busy-poll=0us",
                            "sql", "--local", "-p",
                            "1",   "-f",      sa,
                            NULL };
        const char *b[] = { spate, "-D",      "taskmanager.network.busy-poll=0us",
                            "sql", "--local", "-p",
                            "1",   "-f",      sb,
                            NULL };
        char path[PATH_MAX];

        write_script(qs[q], n, path, sizeof path);
        snprintf(sa, sizeof sa, "%s/%s-a.sql", tmpdir, qs[q]);
        rename(path, sa);
        write_script(qs[q], 2 * n, path, sizeof path);
        snprintf(sb, sizeof sb, "%s/%s-b.sql", tmpdir, qs[q]);
        rename(path, sb);
        sql[q] = bench_instr_per_record(a, b, n, 2 * n, log);
        unlink(sa);
        unlink(sb);
    }
    c = bench_instr_local(spate, tmpdir, 1, job, ca, cb, n, 2 * n);
    unlink(log);
    fprintf(stderr,
            "sql_bench: instructions per event: generator %.1f; p1: q1 SQL %.1f C %.1f, q2 SQL "
            "%.1f, q15 SQL %.1f\n",
            gen, sql[0], c, sql[1], sql[2]);
    out = json_pack("{s:I, s:f, s:f}", "events", (json_int_t)n, "baseline_instr_per_record", gen,
                    "c_q1_instr_per_record_p1", c);
    for (int q = 0; q < NQ; q++) {
        char name[64];

        snprintf(name, sizeof name, "sql_%s_instr_per_record_p1", qs[q]);
        json_object_set_new(out, name, json_real(sql[q]));
    }
    return out;
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
    SQL_Q21_P2,
    SQL_Q22_P2,
    SQL_Q3_P1,
    SQL_Q7_P1,
    SQL_Q8_P1,
    SQL_Q20_P1,
    SQL_Q3_P2,
    SQL_Q7_P2,
    SQL_Q8_P2,
    SQL_Q20_P2,
    NRUNS,
};

static const char *const run_names[NRUNS] = {
    "generator",  "c_q1_p1",    "sql_q1_p1",  "c_q2_p1",   "sql_q2_p1",  "sql_q0_p1",
    "sql_q21_p1", "sql_q22_p1", "c_q1_p2",    "sql_q1_p2", "c_q2_p2",    "sql_q2_p2",
    "sql_q0_p2",  "sql_q21_p2", "sql_q22_p2", "sql_q3_p1", "sql_q7_p1",  "sql_q8_p1",
    "sql_q20_p1", "sql_q3_p2",  "sql_q7_p2",  "sql_q8_p2", "sql_q20_p2",
};

/* The queries run at parallelism 1 and 2 both, after those above. */
static const char *const more_queries[] = { "q10", "q11", "q12", "q13", "q14",
                                            "q15", "q16", "q17", "q18", "q19" };
#define NMORE ((int)(sizeof more_queries / sizeof *more_queries))

/* The queries over changelogs, at parallelism 1 and 2 over the joins'
 * events: the operator whose records out are counted. */
static const struct {
    const char *name, *counted;
} updating_queries[] = { { "q4", "Join" }, { "q5", "Calc" }, { "q9", "Join" } };
#define NUPDATING ((int)(sizeof updating_queries / sizeof *updating_queries))

/* Each of updating_queries's rows checked against the loop's. */
static void
check_updating(int q, int p, int64_t rows, const struct expect *x)
{
    char what[64];

    snprintf(what, sizeof what, "SQL %s p%d rows", updating_queries[q].name, p);
    /* q5's first Calc: every bid of the joins' events, counted in its
     * windows */
    check(what, rows,
          strcmp(updating_queries[q].name, "q5") == 0 ? x->join_bids : x->lifetime_rows);
}

/* Each of more_queries's rows checked against the loop's. */
static void
check_more(int q, int p, int64_t rows, const struct expect *x)
{
    char what[64];

    snprintf(what, sizeof what, "SQL %s p%d rows", more_queries[q], p);
    /* q14's Calc: its bids; q13's lookup join: every bid (the side input
     * has every key); the others' first Calc: every bid, grouped or
     * ranked */
    check(what, rows, strcmp(more_queries[q], "q14") == 0 ? x->q14_rows : x->bids);
}

int
main(int argc, char **argv)
{
    const char *e;
    uint64_t n = (e = getenv("SQL_BENCH_EVENTS")) ? strtoull(e, NULL, 10) : 4000000;
    /* the joins keep every row of both sides (no TTL, as Flink's runs) */
    uint64_t nj = (e = getenv("SQL_BENCH_JOIN_EVENTS")) ? strtoull(e, NULL, 10) : 1000000;
    int runs = (e = getenv("SQL_BENCH_RUNS")) ? atoi(e) : 3;
    double v[NRUNS][MAX_RUNS], m[NRUNS], vm[NMORE][2][MAX_RUNS], vu[NUPDATING][2][MAX_RUNS];
    char dir[PATH_MAX], scripts[9][PATH_MAX], more[NMORE][PATH_MAX], upd[NUPDATING][PATH_MAX];
    static const char *const queries[9] = {
        "q0", "q1", "q2", "q21", "q22", "q3", "q7", "q8", "q20"
    };
    json_t *rounds = json_array(), *plan = NULL, *out, *medians = json_object();
    json_t *per_core = json_object();
    struct expect x = { 0 };
    char *s;
    json_t *instr = json_null();
    bool want_instr;

    bench_instr_loop_main(argc, argv, loops);
    bench_name = "sql_bench";
    want_instr = bench_instr_wanted(argc, argv);
    if (runs < 1 || runs > MAX_RUNS)
        runs = 3;
    bench_exe_dir(dir, sizeof dir);
    snprintf(spate, sizeof spate, "%s/spate", dir);
    snprintf(job, sizeof job, "%s/../bench/nexmark_bench_job.so", dir);
    snprintf(udf, sizeof udf, "%s/../examples/nexmark_udf.so", dir);
    if (access(spate, X_OK) != 0 || access(job, R_OK) != 0 || access(udf, R_OK) != 0)
        bench_fail("cannot find spate, bench/nexmark_bench_job.so and examples/nexmark_udf.so "
                   "beside %s",
                   dir);
    strcpy(tmpdir, "/tmp/spate-sql-bench-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        bench_fail("cannot make %s", tmpdir);
    write_side_input();
    for (int q = 0; q < 9; q++)
        write_script(queries[q], q < 5 ? n : nj, scripts[q], sizeof scripts[q]);
    for (int q = 0; q < NMORE; q++)
        write_script(more_queries[q], n, more[q], sizeof more[q]);
    for (int q = 0; q < NUPDATING; q++)
        write_script(updating_queries[q].name, nj, upd[q], sizeof upd[q]);
    join_expect(nj, &x);
    fprintf(stderr, "sql_bench: %llu events per run, %d rounds\n", (unsigned long long)n, runs);
    for (int i = 0; i < runs; i++) {
        json_t *round = json_object();
        int64_t rows, sum, q21_rows;

        v[GEN][i] = loop_generator(n, &x);
        v[C_Q1_P1][i] = run_c("q1", 1, n, &rows, &sum, &plan);
        check("C q1 p1 rows", rows, x.bids);
        check("C q1 p1 price sum", sum, x.bid_price_sum);
        v[SQL_Q1_P1][i] = run_sql(scripts[1], 1, n, "Calc", &rows);
        check("SQL q1 p1 rows", rows, x.bids);
        v[C_Q2_P1][i] = run_c("q2", 1, n, &rows, &sum, NULL);
        check("C q2 p1 rows", rows, x.q2_rows);
        check("C q2 p1 price sum", sum, x.q2_price_sum);
        v[SQL_Q2_P1][i] = run_sql(scripts[2], 1, n, "Calc", &rows);
        check("SQL q2 p1 rows", rows, x.q2_rows);
        v[SQL_Q0_P1][i] = run_sql(scripts[0], 1, n, "Calc", &rows);
        check("SQL q0 p1 rows", rows, x.bids);
        v[SQL_Q21_P1][i] = run_sql(scripts[3], 1, n, "Calc", &rows);
        if (rows <= 0 || rows > x.bids)
            bench_fail("SQL q21: %lld rows of %lld bids", (long long)rows, (long long)x.bids);
        q21_rows = rows;
        v[SQL_Q22_P1][i] = run_sql(scripts[4], 1, n, "Calc", &rows);
        check("SQL q22 p1 rows", rows, x.bids);
        v[C_Q1_P2][i] = run_c("q1", 2, n, &rows, &sum, NULL);
        check("C q1 p2 rows", rows, x.bids);
        v[SQL_Q1_P2][i] = run_sql(scripts[1], 2, n, "Calc", &rows);
        check("SQL q1 p2 rows", rows, x.bids);
        v[C_Q2_P2][i] = run_c("q2", 2, n, &rows, &sum, NULL);
        check("C q2 p2 rows", rows, x.q2_rows);
        v[SQL_Q2_P2][i] = run_sql(scripts[2], 2, n, "Calc", &rows);
        check("SQL q2 p2 rows", rows, x.q2_rows);
        v[SQL_Q0_P2][i] = run_sql(scripts[0], 2, n, "Calc", &rows);
        check("SQL q0 p2 rows", rows, x.bids);
        /* the same events: the rows p1 kept */
        v[SQL_Q21_P2][i] = run_sql(scripts[3], 2, n, "Calc", &rows);
        check("SQL q21 p2 rows (p1's)", rows, q21_rows);
        v[SQL_Q22_P2][i] = run_sql(scripts[4], 2, n, "Calc", &rows);
        check("SQL q22 p2 rows", rows, x.bids);
        for (int p = 1; p <= 2; p++) {
            int at = p == 1 ? SQL_Q3_P1 : SQL_Q3_P2;

            v[at][i] = run_sql(scripts[5], p, nj, "Join", &rows);
            check(p == 1 ? "SQL q3 p1 rows" : "SQL q3 p2 rows", rows, x.q3_rows);
            v[at + 1][i] = run_sql(scripts[6], p, nj, "Join", &rows);
            check(p == 1 ? "SQL q7 p1 rows" : "SQL q7 p2 rows", rows, x.q7_rows);
            v[at + 2][i] = run_sql(scripts[7], p, nj, "Join", &rows);
            check(p == 1 ? "SQL q8 p1 rows" : "SQL q8 p2 rows", rows, x.q8_rows);
            v[at + 3][i] = run_sql(scripts[8], p, nj, "Join", &rows);
            check(p == 1 ? "SQL q20 p1 rows" : "SQL q20 p2 rows", rows, x.q20_rows);
        }
        for (int q = 0; q < NUPDATING; q++)
            for (int p = 1; p <= 2; p++) {
                char name[32];

                vu[q][p - 1][i] = run_sql(upd[q], p, nj, updating_queries[q].counted, &rows);
                check_updating(q, p, rows, &x);
                snprintf(name, sizeof name, "sql_%s_p%d", updating_queries[q].name, p);
                json_object_set_new(round, name, json_real(vu[q][p - 1][i]));
                fprintf(stderr, "sql_bench: round %d: %s %.2f M/s\n", i + 1, name,
                        vu[q][p - 1][i] / 1e6);
            }
        for (int q = 0; q < NMORE; q++)
            for (int p = 1; p <= 2; p++) {
                char name[32];

                vm[q][p - 1][i] =
                    run_sql(more[q], p, n,
                            strcmp(more_queries[q], "q13") == 0 ? "LookupJoin" : "Calc", &rows);
                if (strcmp(more_queries[q], "q10") == 0) {
                    char output[sizeof tmpdir + 8];

                    snprintf(output, sizeof output, "%s/output", tmpdir);
                    bench_remove_tree(output); /* its partitioned files */
                }
                check_more(q, p, rows, &x);
                snprintf(name, sizeof name, "sql_%s_p%d", more_queries[q], p);
                json_object_set_new(round, name, json_real(vm[q][p - 1][i]));
                fprintf(stderr, "sql_bench: round %d: %s %.2f M/s\n", i + 1, name,
                        vm[q][p - 1][i] / 1e6);
            }
        for (int r = 0; r < NRUNS; r++)
            json_object_set_new(round, run_names[r], json_real(v[r][i]));
        json_array_append_new(rounds, round);
        fprintf(stderr,
                "sql_bench: round %d: generator %.2f M/s; p1: q1 SQL %.2f C %.2f, q2 SQL %.2f "
                "C %.2f, q0 %.2f, q21 %.2f, q22 %.2f; p2: q1 SQL %.2f C %.2f, q2 SQL %.2f C "
                "%.2f, q0 %.2f, q21 %.2f, q22 %.2f M/s\n",
                i + 1, v[GEN][i] / 1e6, v[SQL_Q1_P1][i] / 1e6, v[C_Q1_P1][i] / 1e6,
                v[SQL_Q2_P1][i] / 1e6, v[C_Q2_P1][i] / 1e6, v[SQL_Q0_P1][i] / 1e6,
                v[SQL_Q21_P1][i] / 1e6, v[SQL_Q22_P1][i] / 1e6, v[SQL_Q1_P2][i] / 1e6,
                v[C_Q1_P2][i] / 1e6, v[SQL_Q2_P2][i] / 1e6, v[C_Q2_P2][i] / 1e6,
                v[SQL_Q0_P2][i] / 1e6, v[SQL_Q21_P2][i] / 1e6, v[SQL_Q22_P2][i] / 1e6);
        fprintf(stderr,
                "sql_bench: round %d, joins: p1: q3 %.2f, q7 %.2f, q8 %.2f, q20 %.2f; p2: q3 "
                "%.2f, q7 %.2f, q8 %.2f, q20 %.2f M/s\n",
                i + 1, v[SQL_Q3_P1][i] / 1e6, v[SQL_Q7_P1][i] / 1e6, v[SQL_Q8_P1][i] / 1e6,
                v[SQL_Q20_P1][i] / 1e6, v[SQL_Q3_P2][i] / 1e6, v[SQL_Q7_P2][i] / 1e6,
                v[SQL_Q8_P2][i] / 1e6, v[SQL_Q20_P2][i] / 1e6);
    }
    for (int q = 0; q < 9; q++)
        unlink(scripts[q]);
    for (int q = 0; q < NMORE; q++)
        unlink(more[q]);
    for (int q = 0; q < NUPDATING; q++)
        unlink(upd[q]);
    if (want_instr)
        instr = instr_per_event((e = getenv("SQL_BENCH_INSTR_EVENTS")) ? strtoull(e, NULL, 10)
                                                                       : 200000);
    {
        char log[128];

        snprintf(log, sizeof log, "%s/spate.log", tmpdir);
        unlink(log);
        snprintf(log, sizeof log, "%s/side_input.csv", tmpdir);
        unlink(log);
        rmdir(tmpdir);
    }
    for (int r = 0; r < NRUNS; r++) {
        m[r] = bench_median(v[r], runs);
        json_object_set_new(medians, run_names[r], json_real(m[r]));
        if (strncmp(run_names[r], "sql_", 4) == 0)
            json_object_set_new(per_core, run_names[r],
                                json_real(m[r] / (strstr(run_names[r], "_p2") ? 2 : 1)));
    }
    for (int q = 0; q < NMORE; q++)
        for (int p = 1; p <= 2; p++) {
            char name[32];
            double med = bench_median(vm[q][p - 1], runs);

            snprintf(name, sizeof name, "sql_%s_p%d", more_queries[q], p);
            json_object_set_new(medians, name, json_real(med));
            json_object_set_new(per_core, name, json_real(med / p));
        }
    for (int q = 0; q < NUPDATING; q++)
        for (int p = 1; p <= 2; p++) {
            char name[32];
            double med = bench_median(vu[q][p - 1], runs);

            snprintf(name, sizeof name, "sql_%s_p%d", updating_queries[q].name, p);
            json_object_set_new(medians, name, json_real(med));
            json_object_set_new(per_core, name, json_real(med / p));
        }
    out = json_pack("{s:s, s:I, s:i, s:i, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, "
                    "s:I, s:o, s:o, s:o}",
                    "bench", "sql_bench", "events", (json_int_t)n, "runs", runs, "first_event_rate",
                    RATE, "events_per_s", medians, "q1_sql_over_c_p1", m[SQL_Q1_P1] / m[C_Q1_P1],
                    "q2_sql_over_c_p1", m[SQL_Q2_P1] / m[C_Q2_P1], "q1_sql_over_c_p2",
                    m[SQL_Q1_P2] / m[C_Q1_P2], "q2_sql_over_c_p2", m[SQL_Q2_P2] / m[C_Q2_P2],
                    "q0_sql_over_generator_p1", m[SQL_Q0_P1] / m[GEN],
                    "sql_q0_events_per_s_per_core_p2", m[SQL_Q0_P2] / 2,
                    "sql_q1_events_per_s_per_core_p2", m[SQL_Q1_P2] / 2,
                    "sql_q2_events_per_s_per_core_p2", m[SQL_Q2_P2] / 2, "bids", (json_int_t)x.bids,
                    "q2_rows", (json_int_t)x.q2_rows, "q2_price_sum", (json_int_t)x.q2_price_sum,
                    "rounds", rounds, "c_q1_plan", plan, "instr", instr);
    json_object_set_new(out, "events_per_s_per_core", per_core);
    json_object_set_new(out, "join_events", json_integer((json_int_t)nj));
    json_object_set_new(out, "q3_rows", json_integer(x.q3_rows));
    json_object_set_new(out, "q7_rows", json_integer(x.q7_rows));
    json_object_set_new(out, "q8_rows", json_integer(x.q8_rows));
    json_object_set_new(out, "q20_rows", json_integer(x.q20_rows));
    json_object_set_new(out, "q4_q9_join_rows", json_integer(x.lifetime_rows));
    json_object_set_new(out, "sql_q3_events_per_s_per_core_p2", json_real(m[SQL_Q3_P2] / 2));
    json_object_set_new(out, "sql_q7_events_per_s_per_core_p2", json_real(m[SQL_Q7_P2] / 2));
    json_object_set_new(out, "sql_q8_events_per_s_per_core_p2", json_real(m[SQL_Q8_P2] / 2));
    json_object_set_new(out, "sql_q20_events_per_s_per_core_p2", json_real(m[SQL_Q20_P2] / 2));
    s = json_dumps(out, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(out);
    return 0;
}
