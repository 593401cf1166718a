/* Unit tests of the Sink API's operator (src/connectors/sink_operator.c) and
 * of the file sink on it: committables in the checkpointed state, committed
 * when their checkpoint completes, retried when the committer asks,
 * recovered (each by exactly one subtask) on restore, and the file sink's
 * state from before the Sink API restored. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <spate/sink.h>

#include "connectors/connectors.h"
#include "core/util.h"
#include "streaming/operator.h"
#include "streaming/stream_graph.h"

static void
discard(struct output *self, const void *rec, const struct record_meta *meta)
{
    (void)self, (void)rec, (void)meta;
}

static void
discard_watermark(struct output *self, int64_t watermark)
{
    (void)self, (void)watermark;
}

static const struct record_meta no_time = { RECORD_NO_TIMESTAMP, 0, false };

/* ---- a sink whose committables are the records, committed into a log ---- */

/* What the committers did: each committed value once per commit call. */
static int64_t committed[64];
static int ncommitted;
static int retries_left; /* commits answer "retry later" while > 0 */
static int64_t fail_on = -1;

static void
log_reset(void)
{
    ncommitted = 0;
    retries_left = 0;
    fail_on = -1;
}

struct log_writer {
    int64_t vals[16];
    int n;
};

static void *
lw_create(spate_sink_context *ctx, const void *config, spate_error *err)
{
    (void)ctx, (void)config, (void)err;
    return calloc(1, sizeof(struct log_writer));
}

static int
lw_write(void *writer, const void *rec, int64_t ts, spate_error *err)
{
    struct log_writer *w = writer;

    (void)ts, (void)err;
    memcpy(&w->vals[w->n++], rec, sizeof(int64_t));
    return 0;
}

static int
lw_prepare(void *writer, int64_t checkpoint_id, spate_sink_context *ctx, spate_error *err)
{
    struct log_writer *w = writer;

    (void)checkpoint_id, (void)err;
    for (int i = 0; i < w->n; i++)
        spate_sink_context_save_committable(ctx, &w->vals[i], sizeof w->vals[i]);
    w->n = 0;
    return 0;
}

static spate_commit_result
lc_commit(void *committer, const void *c, size_t len, spate_error *err)
{
    int64_t v;

    (void)committer;
    cr_assert_eq(len, sizeof v);
    memcpy(&v, c, sizeof v);
    if (v == fail_on) {
        spate_error_set(err, SPATE_EIO, "value %lld cannot be committed", (long long)v);
        return SPATE_COMMIT_FAILED;
    }
    if (retries_left > 0) {
        retries_left--;
        return SPATE_COMMIT_RETRY_LATER;
    }
    committed[ncommitted++] = v;
    return SPATE_COMMIT_OK;
}

static void
lw_close(void *writer)
{
    free(writer);
}

static const spate_sink_writer log_writer = {
    .create = lw_create, .write = lw_write, .prepare_commit = lw_prepare, .close = lw_close
};
static const spate_committer log_committer = { .commit = lc_commit };
static const spate_committing_sink log_sink = { &log_writer, &log_committer };

struct harness {
    spate_env *env;
    struct operator_settings settings;
    struct task_info task;
    struct output out;
};

/* h's sink operator s, as subtask of parallelism. */
static void
harness_task(struct harness *h, spate_stream *s, int subtask, int parallelism)
{
    stream_node_settings(s, &h->settings);
    h->task.connectors = connectors_builtin();
    h->task.subtask = subtask;
    h->task.parallelism = parallelism;
    h->task.max_parallelism = 128;
    h->task.task_name = "sink";
    h->out = (struct output){ .collect = discard, .emit_watermark = discard_watermark };
}

static void
harness_init(struct harness *h, spate_stream *(*sink)(spate_stream *, const char *),
             const char *path, int subtask, int parallelism)
{
    int64_t v = 0;
    spate_stream *in;

    memset(h, 0, sizeof *h);
    h->env = env_new(NULL, NULL);
    in = spate_source_collection(h->env, spate_type_int64(), &v, 1);
    harness_task(h, sink != NULL ? sink(in, path) : spate_sink_committing(in, &log_sink), subtask,
                 parallelism);
}

static struct stream_operator *
harness_op(struct harness *h)
{
    struct stream_operator *op;
    spate_error err = { 0 };

    cr_assert_eq(operator_new(&h->settings, 0, &h->task, &h->out, &op, &err), 0, "%s", err.message);
    return op;
}

static void
write_values(struct stream_operator *op, int64_t from, int64_t to)
{
    for (int64_t v = from; v < to; v++)
        operator_process(op, &v, &no_time);
}

/* Restores every element of snap into op (union state: all of them). */
static void
restore_all(struct stream_operator *op, const struct byte_buf *snap)
{
    for (size_t at = 0; at < snap->len;) {
        uint32_t n;
        spate_error err = { 0 };

        memcpy(&n, snap->data + at, 4);
        cr_assert_eq(op->vt->restore_state(op, snap->data + at + 4, n, &err), 0, "%s", err.message);
        at += 4 + n;
    }
}

static bool
was_committed(int64_t v)
{
    int times = 0;

    for (int i = 0; i < ncommitted; i++)
        times += committed[i] == v;
    cr_assert_leq(times, 1, "value %lld committed %d times", (long long)v, times);
    return times == 1;
}

Test(sink_operator, committables_wait_for_their_checkpoint_to_complete)
{
    struct harness h;
    struct byte_buf s1 = { 0 }, s2 = { 0 };
    struct stream_operator *op;

    log_reset();
    harness_init(&h, NULL, NULL, 0, 1);
    op = harness_op(&h);
    write_values(op, 0, 3);
    op->vt->snapshot_state(op, 1, &s1);
    write_values(op, 3, 5);
    op->vt->snapshot_state(op, 2, &s2);
    cr_assert_eq(ncommitted, 0, "a commit before any checkpoint completed");
    op->vt->checkpoint_complete(op, 1);
    cr_assert(was_committed(0) && was_committed(2) && !was_committed(3),
              "checkpoint 1's completion commits its committables and not checkpoint 2's");
    op->vt->checkpoint_complete(op, 2);
    cr_assert(was_committed(3) && was_committed(4));
    cr_assert_eq(ncommitted, 5);
    operator_free(op);
    free(s1.data);
    free(s2.data);
    env_free(h.env);
}

Test(sink_operator, a_commit_asked_to_retry_is_committed_at_the_next_completion)
{
    struct harness h;
    struct byte_buf s1 = { 0 };
    struct stream_operator *op;

    log_reset();
    harness_init(&h, NULL, NULL, 0, 1);
    op = harness_op(&h);
    write_values(op, 7, 8);
    op->vt->snapshot_state(op, 1, &s1);
    retries_left = 1;
    op->vt->checkpoint_complete(op, 1);
    cr_assert_not(was_committed(7));
    op->vt->checkpoint_complete(op, 2);
    cr_assert(was_committed(7), "the retried commit did not come back");
    operator_free(op);
    free(s1.data);
    env_free(h.env);
}

Test(sink_operator, a_failed_commit_fails_the_task_with_the_committers_reason)
{
    struct harness h;
    struct byte_buf s1 = { 0 };
    struct stream_operator *op;

    log_reset();
    harness_init(&h, NULL, NULL, 0, 1);
    op = harness_op(&h);
    write_values(op, 9, 10);
    op->vt->snapshot_state(op, 1, &s1);
    fail_on = 9;
    op->vt->checkpoint_complete(op, 1);
    cr_assert_not_null(operator_failure(op));
    cr_assert(strstr(operator_failure(op), "value 9 cannot be committed") != NULL, "%s",
              operator_failure(op));
    operator_free(op);
    free(s1.data);
    env_free(h.env);
}

Test(sink_operator, a_rescaled_restore_commits_each_committable_once)
{
    /* Three writers' committables, restored at parallelism 2: writer 2
     * folds onto subtask 0; each subtask gets the whole union state. */
    struct byte_buf snap = { 0 };

    log_reset();
    for (int w = 0; w < 3; w++) {
        struct harness h;
        struct stream_operator *op;

        harness_init(&h, NULL, NULL, w, 3);
        op = harness_op(&h);
        write_values(op, 10 * w, 10 * w + 2);
        op->vt->snapshot_state(op, 4, &snap); /* never completes before the failure */
        operator_free(op);
        env_free(h.env);
    }
    cr_assert_eq(ncommitted, 0);
    for (int s = 0; s < 2; s++) {
        struct harness h;
        struct stream_operator *op;
        struct byte_buf next = { 0 };

        harness_init(&h, NULL, NULL, s, 2);
        h.task.attempt = 1;
        op = harness_op(&h);
        restore_all(op, &snap);
        /* The first barrier commits the restored ones before the writer. */
        op->vt->snapshot_state(op, 5, &next);
        if (s == 0)
            cr_assert(was_committed(0) && was_committed(1) && was_committed(20) &&
                      was_committed(21) && !was_committed(10));
        else
            cr_assert(was_committed(10) && was_committed(11));
        cr_assert_eq(ncommitted, s == 0 ? 4 : 6); /* was_committed: none twice */
        operator_free(op);
        free(next.data);
        env_free(h.env);
    }
    free(snap.data);
}

Test(sink_operator, state_that_is_no_sinks_is_refused_clearly)
{
    struct harness h;
    struct stream_operator *op;
    spate_error err = { 0 };

    log_reset();
    harness_init(&h, NULL, NULL, 0, 1);
    op = harness_op(&h);
    cr_assert_neq(op->vt->restore_state(op, (const uint8_t *)"junk", 4, &err), 0);
    cr_assert(strstr(err.message, "not a Sink API sink's") != NULL, "%s", err.message);
    operator_free(op);
    env_free(h.env);
}

/* ---- the file sink ---- */

static void
touch(const char *dir, const char *name)
{
    char path[400];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_not_null(f = fopen(path, "w"), "%s", path);
    fputs("1\n", f);
    fclose(f);
}

static bool
exists(const char *dir, const char *name)
{
    char path[400];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static void
remove_dir(const char *dir)
{
    char cmd[400];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(sink_operator, the_file_sink_restores_its_state_from_before_the_sink_api)
{
    /* A savepoint of the old file sink: writer 1 had part 2 pending
     * (checkpoint 5) and part 3 in progress; restored at parallelism 1,
     * part 2 is committed, part 3 goes, and new files come past every
     * part the old writers had numbered (its next part, 4). */
    char dir[] = "/tmp/spate-test-sink-XXXXXX";
    uint8_t old[24];
    uint32_t writer = 1, next = 4, n = 1, part = 2;
    int64_t id = 5;
    struct harness h;
    struct stream_operator *op;
    spate_error err = { 0 };

    cr_assert_not_null(mkdtemp(dir));
    touch(dir, ".part-1-2.pending");
    touch(dir, ".part-1-3.inprogress");
    touch(dir, "part-0-0");
    memcpy(old, &writer, 4);
    memcpy(old + 4, &next, 4);
    memcpy(old + 8, &n, 4);
    memcpy(old + 12, &id, 8);
    memcpy(old + 20, &part, 4);
    harness_init(&h, spate_sink_text_file, dir, 0, 1);
    h.task.attempt = 1;
    op = harness_op(&h);
    cr_assert_eq(op->vt->restore_state(op, old, sizeof old, &err), 0, "%s", err.message);
    write_values(op, 0, 1);
    cr_assert(exists(dir, "part-1-2"), "the old state's pending file was not committed");
    cr_assert_not(exists(dir, ".part-1-3.inprogress"), "writer 1's leftover stayed");
    cr_assert(exists(dir, ".part-0-4.inprogress"),
              "the new file is not numbered past the old writer's next part");
    op->vt->end_input(op);
    cr_assert(exists(dir, "part-0-4") && exists(dir, "part-0-0"));
    cr_assert_eq(op->vt->restore_state(op, old, 7, &err), SPATE_EPROTO);
    cr_assert(strstr(err.message, "malformed file sink state") != NULL, "%s", err.message);
    operator_free(op);
    env_free(h.env);
    remove_dir(dir);
}

Test(sink_operator, a_file_sink_commits_at_completion_and_a_restart_drops_the_rest)
{
    char dir[] = "/tmp/spate-test-sink-XXXXXX", path[400], line[64] = { 0 };
    struct byte_buf snap = { 0 };
    FILE *f;
    struct harness h;
    struct stream_operator *op;

    cr_assert_not_null(mkdtemp(dir));
    harness_init(&h, spate_sink_text_file, dir, 0, 1);
    op = harness_op(&h);
    write_values(op, 0, 2);
    op->vt->snapshot_state(op, 1, &snap);
    cr_assert(exists(dir, ".part-0-0.pending"));
    write_values(op, 2, 4); /* after the barrier: in part 1, never pre-committed */
    operator_free(op);      /* the task fails before checkpoint 1 completes */
    env_free(h.env);

    harness_init(&h, spate_sink_text_file, dir, 0, 1);
    h.task.attempt = 1;
    op = harness_op(&h);
    restore_all(op, &snap);
    write_values(op, 9, 10);
    cr_assert(exists(dir, "part-0-0"), "the restored checkpoint's file was not committed");
    op->vt->end_input(op);
    snprintf(path, sizeof path, "%s/part-0-1", dir);
    cr_assert_not_null(f = fopen(path, "r"), "the new attempt did not write part 1");
    cr_assert_eq(fread(line, 1, sizeof line - 1, f), 2, "part 1 keeps the failed attempt's lines");
    fclose(f);
    cr_assert_eq(strncmp(line, "9\n", 2), 0);
    operator_free(op);
    env_free(h.env);
    free(snap.data);
    remove_dir(dir);
}

Test(sink_operator, a_restored_file_writer_numbers_past_every_restored_writers_parts)
{
    /* Writer 0 of a p1 run pre-commits parts 0 and 1; resumed at p2,
     * subtask 1 (which never wrote) numbers its files past them, from its
     * writer state: no part number a writer used is written again. */
    char dir[] = "/tmp/spate-test-sink-XXXXXX";
    struct byte_buf snap = { 0 };
    struct harness h;
    struct stream_operator *op;

    cr_assert_not_null(mkdtemp(dir));
    harness_init(&h, spate_sink_text_file, dir, 0, 1);
    op = harness_op(&h);
    write_values(op, 0, 1);
    op->vt->snapshot_state(op, 1, &snap);
    write_values(op, 1, 2);
    free(snap.data);
    snap = (struct byte_buf){ 0 };
    op->vt->snapshot_state(op, 2, &snap);
    op->vt->checkpoint_complete(op, 2);
    cr_assert(exists(dir, "part-0-0") && exists(dir, "part-0-1"));
    operator_free(op);
    env_free(h.env);

    harness_init(&h, spate_sink_text_file, dir, 1, 2);
    op = harness_op(&h);
    restore_all(op, &snap);
    write_values(op, 5, 6);
    cr_assert(exists(dir, ".part-1-2.inprogress"),
              "subtask 1 does not number past the restored writer's parts");
    operator_free(op);
    env_free(h.env);
    free(snap.data);
    remove_dir(dir);
}

/* A bucketed file sink of lines (a partitioned SQL table's): each record
 * its bucket, a newline and its line. */
static spate_stream *
bucketed_sink(spate_stream *in, const char *path)
{
    spate_stream *s = spate_sink_text_file(in, path);

    s->conn.file_sink.bucketed = true;
    return s;
}

static void
write_line(struct stream_operator *op, const char *rec)
{
    spate_str s = { rec, strlen(rec) };

    operator_process(op, &s, &no_time);
}

static void
harness_lines(struct harness *h, const char *dir, int attempt)
{
    spate_str v = { "x", 1 }; /* (an empty one: types.c sizes it into NULL + 0) */
    spate_stream *in;

    memset(h, 0, sizeof *h);
    h->env = env_new(NULL, NULL);
    in = spate_source_collection(h->env, spate_type_string(), &v, 1);
    harness_task(h, bucketed_sink(in, dir), 0, 1);
    h->task.attempt = attempt;
}

static void
assert_file(const char *dir, const char *name, const char *want)
{
    char path[400], got[256] = { 0 };
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_not_null(f = fopen(path, "r"), "%s is not there", name);
    cr_assert_eq(fread(got, 1, sizeof got - 1, f), strlen(want), "%s: '%s'", name, got);
    fclose(f);
    cr_assert_str_eq(got, want, "%s", name);
}

Test(sink_operator, a_bucketed_file_sink_commits_and_cleans_up_in_each_bucket_folder)
{
    /* Two buckets before the barrier (one file each, numbered from the
     * writer's one count), one after it, which the failure leaves in
     * progress; the restart commits the checkpoint's files in their
     * folders, deletes the leftover in its folder (its number free again)
     * and numbers its file past the committed ones. */
    char dir[] = "/tmp/spate-test-sink-XXXXXX";
    struct byte_buf snap = { 0 };
    struct harness h;
    struct stream_operator *op;

    cr_assert_not_null(mkdtemp(dir));
    harness_lines(&h, dir, 0);
    op = harness_op(&h);
    write_line(op, "dt=1\nx");
    write_line(op, "dt=2/hm=00%3A01\ny");
    write_line(op, "dt=1\nz,\"q\"");
    op->vt->snapshot_state(op, 1, &snap);
    cr_assert(exists(dir, "dt=1/.part-0-0.pending") &&
              exists(dir, "dt=2/hm=00%3A01/.part-0-1.pending"));
    write_line(op, "dt=2/hm=00%3A01\nw");
    cr_assert(exists(dir, "dt=2/hm=00%3A01/.part-0-2.inprogress"));
    operator_free(op); /* the task fails before checkpoint 1 completes */
    env_free(h.env);

    harness_lines(&h, dir, 1);
    op = harness_op(&h);
    restore_all(op, &snap);
    write_line(op, "dt=3\nv");
    cr_assert_not(exists(dir, "dt=2/hm=00%3A01/.part-0-2.inprogress"),
                  "the failed attempt's file in a bucket folder stayed");
    op->vt->end_input(op);
    assert_file(dir, "dt=1/part-0-0", "x\nz,\"q\"\n");
    assert_file(dir, "dt=2/hm=00%3A01/part-0-1", "y\n");
    assert_file(dir, "dt=3/part-0-2", "v\n"); /* part 2 was never committed */
    cr_assert_null(operator_failure(op));
    /* A record whose bucket would leave the folder fails the task. */
    write_line(op, "../up\nu");
    cr_assert_not_null(operator_failure(op));
    cr_assert(strstr(operator_failure(op), "a record that is no bucket") != NULL, "%s",
              operator_failure(op));
    cr_assert_not(exists(dir, "../up"));
    operator_free(op);
    env_free(h.env);
    free(snap.data);
    remove_dir(dir);
}

/* ---- the file sink's csv and json lines (spate_sink_file) ---- */

/* h's file sink in format over (string, int64, double) tuples. */
static void
harness_init_tuples(struct harness *h, const char *dir, spate_file_format format,
                    const char *const *names)
{
    const spate_type *fields[] = { spate_type_string(), spate_type_int64(), spate_type_double() };
    spate_stream *in;

    memset(h, 0, sizeof *h);
    h->env = env_new(NULL, NULL);
    in = spate_source_collection(h->env, spate_type_tuple(h->env, 3, fields), NULL, 0);
    harness_task(h, spate_sink_file(in, dir, format, names), 0, 1);
    cr_assert_null(spate_env_error(h->env), "%s", spate_env_error(h->env)->message);
}

/* Writes the tuple (s, n, d) laid out as the stream's type says. */
static void
write_tuple(struct harness *h, struct stream_operator *op, const char *s, int64_t n, double d)
{
    const spate_type *t = h->settings.in_type;
    uint8_t rec[64] = { 0 };
    spate_str str = { s, strlen(s) };

    memcpy(rec + spate_type_field_offset(t, 0), &str, sizeof str);
    memcpy(rec + spate_type_field_offset(t, 1), &n, sizeof n);
    memcpy(rec + spate_type_field_offset(t, 2), &d, sizeof d);
    operator_process(op, rec, &no_time);
}

/* The bytes of dir/name (at most cap - 1), NUL-ended. */
static size_t
read_part(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[400];
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_not_null(f = fopen(path, "r"), "no file '%s'", path);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

/* The tuples (s, n, d) of recs written (to the end of input) by a file sink
 * in format: the bytes of its one part file are want. */
struct tuple_rec {
    const char *s;
    int64_t n;
    double d;
};

static void
check_written(spate_file_format format, const char *const *names, const struct tuple_rec *recs,
              size_t nrecs, const char *want)
{
    char dir[] = "/tmp/spate-test-sink-XXXXXX", got[1024];
    struct harness h;
    struct stream_operator *op;

    cr_assert_not_null(mkdtemp(dir));
    harness_init_tuples(&h, dir, format, names);
    op = harness_op(&h);
    for (size_t i = 0; i < nrecs; i++)
        write_tuple(&h, op, recs[i].s, recs[i].n, recs[i].d);
    op->vt->end_input(op);
    read_part(dir, "part-0-0", got, sizeof got);
    cr_assert_str_eq(got, want);
    operator_free(op);
    env_free(h.env);
    remove_dir(dir);
}

/* What the csv and json tests write: a field that needs quotes, escapes,
 * an empty string, a double that is not finite. */
static const struct tuple_rec awkward[] = {
    { "plain", 1, 0.5 },
    { "a,b \"q\"", -2, 1e20 },
    { "", 3, 0.1 },
    { "two\nlines\tand \\", 4, INFINITY },
};

Test(sink_operator, a_csv_file_sink_writes_rfc_4180_lines_of_the_tuples)
{
    check_written(SPATE_FILE_CSV, NULL, awkward, ARRAY_SIZE(awkward),
                  "plain,1,0.5\n"
                  "\"a,b \"\"q\"\"\",-2,1e+20\n"
                  "\"\",3,0.1\n"
                  "\"two\nlines\tand \\\",4,inf\n");
}

Test(sink_operator, a_json_file_sink_writes_one_object_per_tuple_named_as_told)
{
    static const char *const names[] = { "word", "n", "the \"x\"", NULL };

    check_written(SPATE_FILE_JSON, names, awkward, ARRAY_SIZE(awkward),
                  "{\"word\":\"plain\",\"n\":1,\"the \\\"x\\\"\":0.5}\n"
                  "{\"word\":\"a,b \\\"q\\\"\",\"n\":-2,\"the \\\"x\\\"\":1e+20}\n"
                  "{\"word\":\"\",\"n\":3,\"the \\\"x\\\"\":0.1}\n"
                  "{\"word\":\"two\\nlines\\tand \\\\\",\"n\":4,\"the \\\"x\\\"\":null}\n");
}

Test(sink_operator, json_members_are_f0_f1_as_flinks_tuples_without_names)
{
    static const struct tuple_rec one[] = { { "w", 7, -1.5 } };

    check_written(SPATE_FILE_JSON, NULL, one, 1, "{\"f0\":\"w\",\"f1\":7,\"f2\":-1.5}\n");
}

/* Exactly-once as the text format: the checkpoint's lines committed once
 * it completes on restore, the failed attempt's later lines gone. */
Test(sink_operator, a_csv_file_sink_commits_a_checkpoints_lines_once_through_a_restart)
{
    char dir[] = "/tmp/spate-test-sink-XXXXXX", got[256];
    struct byte_buf snap = { 0 };
    struct harness h;
    struct stream_operator *op;

    cr_assert_not_null(mkdtemp(dir));
    harness_init_tuples(&h, dir, SPATE_FILE_CSV, NULL);
    op = harness_op(&h);
    write_tuple(&h, op, "a", 1, 1);
    write_tuple(&h, op, "b", 2, 2);
    op->vt->snapshot_state(op, 1, &snap);
    write_tuple(&h, op, "lost", 3, 3); /* after the barrier: never committed */
    operator_free(op);                 /* the task fails before checkpoint 1 completes */
    env_free(h.env);

    harness_init_tuples(&h, dir, SPATE_FILE_CSV, NULL);
    h.task.attempt = 1;
    op = harness_op(&h);
    restore_all(op, &snap);
    write_tuple(&h, op, "c", 4, 4);
    op->vt->end_input(op);
    read_part(dir, "part-0-0", got, sizeof got);
    cr_assert_str_eq(got, "a,1,1\nb,2,2\n");
    read_part(dir, "part-0-1", got, sizeof got);
    cr_assert_str_eq(got, "c,4,4\n", "part 1 keeps the failed attempt's lines");
    cr_assert_not(exists(dir, ".part-0-1.inprogress"));
    operator_free(op);
    env_free(h.env);
    free(snap.data);
    remove_dir(dir);
}

Test(sink_operator, csv_and_json_of_a_stream_that_is_no_tuple_are_clear_errors)
{
    static const char *const one[] = { "only", NULL };
    spate_env *env = env_new(NULL, NULL);
    int64_t v = 0;
    spate_stream *in = spate_source_collection(env, spate_type_int64(), &v, 1);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    spate_stream *pairs;

    spate_sink_file(in, "/tmp/out", SPATE_FILE_CSV, NULL);
    cr_assert_not_null(spate_env_error(env));
    cr_assert(strstr(spate_env_error(env)->message, "csv file sink needs a tuple-typed stream") !=
                  NULL,
              "%s", spate_env_error(env)->message);
    env_free(env);

    env = env_new(NULL, NULL);
    pairs = spate_source_collection(env, spate_type_tuple(env, 2, fields), NULL, 0);
    spate_sink_file(pairs, "/tmp/out", SPATE_FILE_JSON, one);
    cr_assert_not_null(spate_env_error(env));
    cr_assert_str_eq(spate_env_error(env)->message,
                     "json file sink: 1 field names for a tuple of 2 fields");
    env_free(env);
}
