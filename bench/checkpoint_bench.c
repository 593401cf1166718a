/* checkpoint_bench: the cost of checkpoints and the time to recover from
 * them, on a cluster of spate processes (a JobManager, three TaskManagers of
 * two slots: room for the job and a spare) running
 * build/bench/checkpoint_bench_job.so (public API only):
 * the benchmarks' window tuples keyed over 1,000,000 keys, each key holding
 * a 96-byte ValueState read and written per record (about 100 MB of state).
 *
 *   throughput_overhead_pct   the job with checkpoints every second against
 *                             the same job without, interleaved pairs,
 *                             medians of records/s (JobMaster start to end)
 *   checkpoint_duration_ms_*  end to end durations of the completed
 *                             checkpoints of those runs (REST statistics)
 *   state_mb                  the state size of the last checkpoint
 *   recovery_ms               10,000 keys: kill -9 of the TaskManager running
 *                             the keyed subtask 0 to the job RUNNING again
 *                             (every task restored and running), a spare
 *                             TaskManager present
 *   recovery_ms_100mb         the same with the 1,000,000 keys
 *   savepoint_ms_100mb        a savepoint of the 1,000,000 keys' state over
 *                             REST, its trigger to COMPLETED
 *   restore_ms_100mb_rescaled the job resumed from that savepoint at twice
 *                             the parallelism: `spate run -s` to every task
 *                             running with its key groups read
 *
 *   rocksdb_records_per_s_*   the same job with its state in RocksDB
 *                             (state.backend.type: rocksdb: a second
 *                             cluster of one TaskManager of two slots),
 *                             without and with checkpoints (full ones),
 *                             in the same rounds
 *
 * Beside them, in the same run, a hand-written C loop doing the job's work
 * (the same tuples, the same 96-byte update per key) gives the baseline and
 * the checksum every run must match. Last line: a JSON object.
 *
 * CHECKPOINT_BENCH_RECORDS (default 30,000,000), CHECKPOINT_BENCH_RUNS (3),
 * CHECKPOINT_BENCH_P (2), CHECKPOINT_BENCH_ROCKSDB_RECORDS (records of the
 * RocksDB runs, default 5,000,000; 0: none). */
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_data.h"
#include "bench_engine.h"
#include "core/clock.h"

#define KEYS_100MB 1000000
#define KEYS_SMALL 10000
#define TMS        2
#define SLOTS      2

struct key_state {
    int64_t count;
    int64_t sum;
    uint8_t payload[80];
};

/* ---- the hand-written loop: the job's work in one thread ---- */

static double
loop_rate(uint64_t n, uint64_t keys, int64_t *checksum)
{
    struct key_state *st = calloc(keys, sizeof *st);
    uint64_t t0 = clock_mono_ns();
    int64_t sum = 0;

    if (st == NULL)
        bench_fail("out of memory");
    for (uint64_t j = 0; j < n; j++) {
        uint64_t x = bench_h(3, j);
        struct key_state *s = &st[(uint32_t)x % keys];
        int64_t value = (int64_t)((x >> 32) % 1000);

        s->count++;
        s->sum += value;
        s->payload[s->count % sizeof s->payload] ^= (uint8_t)value;
        sum += s->count;
    }
    *checksum = sum;
    sum = (int64_t)(clock_mono_ns() - t0);
    free(st);
    return (double)n / ((double)sum / 1e9);
}

/* ---- the engine ---- */

static char spate[PATH_MAX + 16], job[PATH_MAX + 64], tmpdir[64], chkdir[128];
static int parallelism = 2;
static struct bench_cluster cluster;
/* The RocksDB cluster, and the cluster the calls below talk to. */
static struct bench_cluster rcluster;
static struct bench_cluster *cur = &cluster;

/* GET /jobs/<jid><more>. */
static json_t *
rest(const char *jid, const char *more)
{
    char path[256];

    snprintf(path, sizeof path, "/jobs/%s%s", jid, more);
    return bench_cluster_rest(cur, "GET", path);
}

/* Submits the job: count records (0: unbounded) over keys keys. */
static void
submit(uint64_t count, uint64_t keys, bool checkpoints, char jid[33])
{
    char n[32], k[32], p[16], dir[160];
    const char *conf[] = { "execution.checkpointing.interval=1s", dir, NULL };
    const char *args[] = { "-p", p, job, "--count", n, "--keys", k, NULL };

    snprintf(n, sizeof n, "%llu", (unsigned long long)count);
    snprintf(k, sizeof k, "%llu", (unsigned long long)keys);
    snprintf(p, sizeof p, "%d", parallelism);
    snprintf(dir, sizeof dir, "state.checkpoints.dir=%s", chkdir);
    bench_cluster_submit(cur, checkpoints ? conf : NULL, args, jid);
}

struct run {
    double records_per_s;
    int64_t checksum;
    int completed;
    double durations[256];
    int ndurations;
    double state_mb;
    json_t *plan;
};

/* One run to its end; its rate, checksum and checkpoint statistics. */
static void
run_job(uint64_t n, bool checkpoints, struct run *r)
{
    char jid[33];
    json_t *j, *acc, *hist;
    size_t i;

    memset(r, 0, sizeof *r);
    submit(n, KEYS_100MB, checkpoints, jid);
    j = bench_cluster_wait_job(cur, jid, "FINISHED", 1800000);
    r->records_per_s =
        (double)n / ((double)json_integer_value(json_object_get(j, "duration")) / 1e3);
    r->plan = json_incref(json_object_get(j, "plan"));
    json_decref(j);
    acc = rest(jid, "/accumulators");
    json_array_foreach(json_object_get(acc, "user-task-accumulators"), i,
                       j) if (strcmp(json_string_value(json_object_get(j, "name")), "checksum") ==
                              0) r->checksum =
        strtoll(json_string_value(json_object_get(j, "value")), NULL, 10);
    json_decref(acc);
    if (!checkpoints)
        return;
    j = rest(jid, "/checkpoints");
    r->completed =
        (int)json_integer_value(json_object_get(json_object_get(j, "counts"), "completed"));
    hist = json_object_get(j, "history");
    json_array_foreach(hist, i, acc)
    {
        const char *status = json_string_value(json_object_get(acc, "status"));

        if (status == NULL || strcmp(status, "COMPLETED") != 0 || r->ndurations >= 256)
            continue;
        r->durations[r->ndurations++] =
            (double)json_integer_value(json_object_get(acc, "end_to_end_duration"));
    }
    acc = json_object_get(json_object_get(j, "latest"), "completed");
    r->state_mb = (double)json_integer_value(json_object_get(acc, "state_size")) / 1048576.0;
    json_decref(j);
}

/* The TaskManager (index) running subtask 0 of the job's keyed vertex. */
static int
tm_of_keyed_subtask(const char *jid)
{
    json_t *j = rest(jid, ""), *v, *d;
    const char *tm = NULL;
    char want[40];
    size_t i;
    int found = -1;

    json_array_foreach(json_object_get(j, "vertices"), i, v)
    {
        char path[160];

        if (strstr(json_string_value(json_object_get(v, "name")), "Update") == NULL)
            continue;
        snprintf(path, sizeof path, "/jobs/%s/vertices/%s", jid,
                 json_string_value(json_object_get(v, "id")));
        d = bench_cluster_rest(&cluster, "GET", path);
        tm = json_string_value(
            json_object_get(json_array_get(json_object_get(d, "subtasks"), 0), "taskmanager-id"));
        for (int t = 0; tm != NULL && t < TMS + 1; t++) {
            snprintf(want, sizeof want, "%032x", 0xb0 + t);
            if (strcmp(tm, want) == 0)
                found = t;
        }
        json_decref(d);
    }
    json_decref(j);
    if (found < 0)
        bench_fail("cannot tell which TaskManager runs the keyed subtask 0 of job %s", jid);
    return found;
}

static bool
all_running(const char *jid)
{
    json_t *j = rest(jid, "");
    json_t *tasks = json_object_get(j, "tasks");
    const char *state = json_string_value(json_object_get(j, "state"));
    bool ok = state != NULL && strcmp(state, "RUNNING") == 0 &&
              json_integer_value(json_object_get(tasks, "total")) > 0 &&
              json_integer_value(json_object_get(tasks, "running")) ==
                  json_integer_value(json_object_get(tasks, "total"));

    json_decref(j);
    return ok;
}

/* Polls (every 0.2 ms, not a busy loop) until every task of the job runs,
 * or (running false) until one does not; fails 120 s after t0. */
static void
await_running(const char *jid, bool running, uint64_t t0, const char *what)
{
    while (all_running(jid) != running) {
        if (clock_mono_ns() - t0 > 120000000000ull)
            bench_fail("job %s: %s in 120 s", jid, what);
        usleep(200);
    }
}

/* An unbounded run over keys keys: once a checkpoint of at least min_mb
 * completed, kill -9 of the TaskManager of the keyed subtask 0; the time
 * to every task running again. The TaskManager comes back as the spare. */
static double
recovery(uint64_t keys, double min_mb, double *state_mb)
{
    char jid[33], path[64];
    uint64_t t0, end;
    int victim;

    submit(0, keys, true, jid);
    for (end = clock_mono_ms() + 120000;; bench_sleep_ms(20)) {
        json_t *j = rest(jid, "/checkpoints");
        json_t *c = json_object_get(json_object_get(j, "latest"), "completed");
        double mb = (double)json_integer_value(json_object_get(c, "state_size")) / 1048576.0;

        json_decref(j);
        if (c != NULL && mb >= min_mb && all_running(jid)) {
            *state_mb = mb;
            break;
        }
        if (clock_mono_ms() > end)
            bench_fail("job %s: no checkpoint of %.0f MB in 2 minutes", jid, min_mb);
    }
    victim = tm_of_keyed_subtask(jid);
    t0 = clock_mono_ns();
    bench_cluster_kill_tm(&cluster, victim);
    /* The loss is seen (a task not running), then every task runs again. */
    await_running(jid, false, t0, "the loss of a TaskManager was not seen");
    await_running(jid, true, t0, "not running again after the kill");
    end = clock_mono_ns();
    snprintf(path, sizeof path, "/jobs/%s?mode=cancel", jid);
    json_decref(bench_cluster_rest(&cluster, "PATCH", path));
    bench_cluster_wait_job(&cluster, jid, "CANCELED", 60000);
    bench_cluster_start_tm(&cluster, victim, SLOTS);
    bench_cluster_wait_slots(&cluster, TMS + 1, (TMS + 1) * SLOTS);
    return (double)(end - t0) / 1e6;
}

/* The job over 1,000,000 keys once a checkpoint of min_mb completed: a
 * savepoint over REST (POST /jobs/:jobid/savepoints) to COMPLETED
 * (*savepoint_ms); the job cancelled, then resumed from it at twice the
 * parallelism (`spate run -s PATH -p 2P`): the CLI's start to every task
 * running, its state read (*restore_ms). */
static void
savepoint_rescaled(double min_mb, double *savepoint_ms, double *restore_ms, double *mb)
{
    char jid[33], path[128], location[PATH_MAX], n[32], p2[16], dir[160];
    const char *conf[] = { "execution.checkpointing.interval=1s", dir, NULL };
    const char *args[] = { "-s", location, "-p", p2, job, "--count", "0", "--keys", n, NULL };
    uint64_t t0, end;
    json_t *j;
    const char *trigger;

    submit(0, KEYS_100MB, true, jid);
    for (end = clock_mono_ms() + 120000;; bench_sleep_ms(20)) {
        json_t *cp = rest(jid, "/checkpoints");
        json_t *c = json_object_get(json_object_get(cp, "latest"), "completed");

        *mb = (double)json_integer_value(json_object_get(c, "state_size")) / 1048576.0;
        json_decref(cp);
        if (c != NULL && *mb >= min_mb)
            break;
        if (clock_mono_ms() > end)
            bench_fail("job %s: no checkpoint of %.0f MB in 2 minutes", jid, min_mb);
    }
    snprintf(path, sizeof path, "/jobs/%s/savepoints", jid);
    t0 = clock_mono_ns();
    j = bench_cluster_post(&cluster, path,
                           json_pack("{s:s, s:b}", "target-directory", chkdir, "cancel-job", 0));
    if ((trigger = json_string_value(json_object_get(j, "request-id"))) == NULL)
        bench_fail("job %s: no savepoint trigger", jid);
    snprintf(path, sizeof path, "/savepoints/%s", trigger);
    json_decref(j);
    for (location[0] = '\0'; location[0] == '\0';) {
        json_t *st = rest(jid, path);
        const char *id = json_string_value(json_object_get(json_object_get(st, "status"), "id"));
        json_t *op = json_object_get(st, "operation");

        if (id != NULL && strcmp(id, "COMPLETED") == 0) {
            if (json_object_get(op, "location") == NULL)
                bench_fail("job %s: the savepoint failed: %s", jid, json_dumps(op, 0));
            snprintf(location, sizeof location, "%s",
                     json_string_value(json_object_get(op, "location")));
        }
        json_decref(st);
        if (location[0] == '\0')
            bench_sleep_ms(1);
        if (clock_mono_ns() - t0 > 120000000000ull)
            bench_fail("job %s: no savepoint in 2 minutes", jid);
    }
    *savepoint_ms = (double)(clock_mono_ns() - t0) / 1e6;
    snprintf(path, sizeof path, "/jobs/%s?mode=cancel", jid);
    json_decref(bench_cluster_rest(&cluster, "PATCH", path));
    bench_cluster_wait_job(&cluster, jid, "CANCELED", 60000);
    bench_cluster_wait_slots(&cluster, TMS + 1, (TMS + 1) * SLOTS);

    snprintf(n, sizeof n, "%d", KEYS_100MB);
    snprintf(p2, sizeof p2, "%d", 2 * parallelism);
    snprintf(dir, sizeof dir, "state.checkpoints.dir=%s", chkdir);
    t0 = clock_mono_ns();
    bench_cluster_submit(&cluster, conf, args, jid);
    await_running(jid, true, t0, "not running after its submission");
    *restore_ms = (double)(clock_mono_ns() - t0) / 1e6;
    snprintf(path, sizeof path, "/jobs/%s?mode=cancel", jid);
    json_decref(bench_cluster_rest(&cluster, "PATCH", path));
    bench_cluster_wait_job(&cluster, jid, "CANCELED", 60000);
    bench_cluster_wait_slots(&cluster, TMS + 1, (TMS + 1) * SLOTS);
}

int
main(void)
{
    const char *e;
    uint64_t n = (e = getenv("CHECKPOINT_BENCH_RECORDS")) ? strtoull(e, NULL, 10) : 30000000;
    int runs = (e = getenv("CHECKPOINT_BENCH_RUNS")) ? atoi(e) : 3;
    double base[16], with[16], without[16], durations[16 * 256], rec[16], rec100[16];
    double sp[16], rs[16], sp_mb = 0, rwo[16], rw[16], rdurations[16 * 256], rstate_mb = 0;
    uint64_t rn =
        (e = getenv("CHECKPOINT_BENCH_ROCKSDB_RECORDS")) ? strtoull(e, NULL, 10) : 5000000;
    int rnd = 0;
    double state_mb = 0, small_mb = 0, big_mb = 0;
    int nd = 0, completed = 0;
    json_t *plan = NULL;
    int64_t expect = 0, rexpect = 0;
    char dir[PATH_MAX];
    json_t *out;
    char *s;

    bench_name = "checkpoint_bench";
    if (runs < 1 || runs > 16)
        runs = 3;
    if ((e = getenv("CHECKPOINT_BENCH_P")) != NULL && atoi(e) > 0 && atoi(e) <= TMS * SLOTS)
        parallelism = atoi(e);
    bench_exe_dir(dir, sizeof dir);
    snprintf(spate, sizeof spate, "%s/spate", dir);
    snprintf(job, sizeof job, "%s/../bench/checkpoint_bench_job.so", dir);
    if (access(spate, X_OK) != 0 || access(job, R_OK) != 0)
        bench_fail("cannot find spate and bench/checkpoint_bench_job.so beside %s", dir);
    strcpy(tmpdir, "/tmp/spate-checkpoint-bench-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        bench_fail("cannot make %s", tmpdir);
    snprintf(chkdir, sizeof chkdir, "%s/checkpoints", tmpdir);
    fprintf(stderr, "checkpoint_bench: %llu records per run, %d keys, p%d, %d rounds in %s\n",
            (unsigned long long)n, KEYS_100MB, parallelism, runs, tmpdir);
    /* Three TaskManagers of two slots: the job and a spare. */
    bench_cluster_start(&cluster, spate, tmpdir, NULL);
    for (int t = 0; t < TMS + 1; t++)
        bench_cluster_start_tm(&cluster, t, SLOTS);
    bench_cluster_wait_slots(&cluster, TMS + 1, (TMS + 1) * SLOTS);
    if (rn > 0) {
        char rdir[sizeof tmpdir + 16];

        snprintf(rdir, sizeof rdir, "%s/rocksdb", tmpdir);
        if (mkdir(rdir, 0700) != 0)
            bench_fail("cannot make %s", rdir);
        bench_cluster_start(&rcluster, spate, rdir, NULL);
        rcluster.state_backend = "rocksdb";
        bench_cluster_start_tm(&rcluster, 0, SLOTS);
        bench_cluster_wait_slots(&rcluster, 1, SLOTS);
    }

    for (int i = 0; i < runs; i++) {
        struct run a, b;

        base[i] = loop_rate(n, KEYS_100MB, &expect);
        run_job(n, false, &a);
        run_job(n, true, &b);
        if (a.checksum != expect || b.checksum != expect)
            bench_fail("checksums %lld (no checkpoints) and %lld (checkpoints) are not the "
                       "loop's %lld",
                       (long long)a.checksum, (long long)b.checksum, (long long)expect);
        if (b.completed == 0)
            bench_fail("round %d: no checkpoint completed", i + 1);
        without[i] = a.records_per_s;
        with[i] = b.records_per_s;
        for (int d = 0; d < b.ndurations; d++)
            durations[nd++] = b.durations[d];
        completed += b.completed;
        state_mb = b.state_mb;
        json_decref(plan);
        json_decref(a.plan);
        plan = b.plan;
        fprintf(stderr,
                "checkpoint_bench: round %d: loop %.2f M/s; without checkpoints %.2f M/s, with "
                "%.2f M/s (%d checkpoints, last %.1f MB)\n",
                i + 1, base[i] / 1e6, a.records_per_s / 1e6, b.records_per_s / 1e6, b.completed,
                b.state_mb);
        if (rn == 0)
            continue;
        /* The same job on RocksDB, fewer records (its checksum: the loop's
         * over as many). */
        loop_rate(rn, KEYS_100MB, &rexpect);
        cur = &rcluster;
        run_job(rn, false, &a);
        run_job(rn, true, &b);
        cur = &cluster;
        if (a.checksum != rexpect || b.checksum != rexpect)
            bench_fail("RocksDB: checksums %lld and %lld are not the loop's %lld",
                       (long long)a.checksum, (long long)b.checksum, (long long)rexpect);
        rwo[i] = a.records_per_s;
        rw[i] = b.records_per_s;
        for (int d = 0; d < b.ndurations; d++)
            rdurations[rnd++] = b.durations[d];
        rstate_mb = b.state_mb;
        json_decref(a.plan);
        json_decref(b.plan);
        fprintf(stderr,
                "checkpoint_bench: round %d: RocksDB without checkpoints %.2f M/s, with %.2f M/s "
                "(%d checkpoints, last %.1f MB)\n",
                i + 1, a.records_per_s / 1e6, b.records_per_s / 1e6, b.completed, b.state_mb);
    }
    if (rn > 0)
        bench_cluster_stop(&rcluster);
    for (int i = 0; i < runs; i++) {
        rec[i] = recovery(KEYS_SMALL, 0.1, &small_mb);
        rec100[i] = recovery(KEYS_100MB, 90, &big_mb);
        fprintf(stderr,
                "checkpoint_bench: round %d: recovery %.1f ms (%.1f MB), %.1f ms (%.1f MB)\n",
                i + 1, rec[i], small_mb, rec100[i], big_mb);
    }
    for (int i = 0; i < runs; i++) {
        savepoint_rescaled(90, &sp[i], &rs[i], &sp_mb);
        fprintf(stderr,
                "checkpoint_bench: round %d: savepoint of %.1f MB %.1f ms, resumed at p%d in "
                "%.1f ms\n",
                i + 1, sp_mb, sp[i], 2 * parallelism, rs[i]);
    }
    bench_cluster_stop(&cluster);
    bench_remove_tree(tmpdir);
    {
        double b = bench_median(base, runs), wo = bench_median(without, runs),
               w = bench_median(with, runs);

        out = json_pack(
            "{s:s, s:I, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:f, s:f, s:f, "
            "s:f, s:f, s:f, s:i, s:I, s:o}",
            "bench", "checkpoint_bench", "records", (json_int_t)n, "keys", KEYS_100MB,
            "parallelism", parallelism, "runs", runs, "baseline_records_per_s", b,
            "records_per_s_without_checkpoints", wo, "records_per_s_with_checkpoints", w,
            "throughput_overhead_pct", (wo - w) / wo * 100.0, "checkpoints_completed", completed,
            "checkpoint_duration_ms_p50", bench_percentile(durations, nd, 50),
            "checkpoint_duration_ms_p99", bench_percentile(durations, nd, 99), "state_mb", state_mb,
            "recovery_ms", bench_median(rec, runs), "recovery_ms_100mb", bench_median(rec100, runs),
            "recovery_state_mb_100mb", big_mb, "savepoint_ms_100mb", bench_median(sp, runs),
            "savepoint_state_mb", sp_mb, "restore_ms_100mb_rescaled", bench_median(rs, runs),
            "restore_parallelism", 2 * parallelism, "checksum", (json_int_t)expect, "plan",
            plan != NULL ? plan : json_null());
    }
    if (rn > 0) {
        double wo = bench_median(rwo, runs), w = bench_median(rw, runs);

        json_object_set_new(out, "rocksdb_records", json_integer((json_int_t)rn));
        json_object_set_new(out, "rocksdb_records_per_s_without_checkpoints", json_real(wo));
        json_object_set_new(out, "rocksdb_records_per_s_with_checkpoints", json_real(w));
        json_object_set_new(out, "rocksdb_throughput_overhead_pct",
                            json_real((wo - w) / wo * 100.0));
        json_object_set_new(out, "rocksdb_checkpoint_duration_ms_p50",
                            json_real(bench_percentile(rdurations, rnd, 50)));
        json_object_set_new(out, "rocksdb_checkpoint_duration_ms_p99",
                            json_real(bench_percentile(rdurations, rnd, 99)));
        json_object_set_new(out, "rocksdb_state_mb", json_real(rstate_mb));
    }
    s = json_dumps(out, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(out);
    return 0;
}
