/* Unit tests of a task's side of checkpoints (task_checkpoints.c,
 * state_snapshot.c): jobs run as task threads (local_job.h) take a
 * checkpoint through their sources' mailboxes, are cancelled as a failure
 * would end them, and a second run restored from the acknowledged state
 * ends with the results of an uninterrupted run: nothing lost, nothing
 * counted twice. Corrupt state files are clear errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "../wait.h"
#include "local_job.h"
#include "streaming/types.h"

#define KEYS 101
#define N    400000

struct pair {
    int64_t key;
    int64_t count;
};

static void
gen_pair(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct pair *)out)->key = (int64_t)(i * 7919 % KEYS);
    ((struct pair *)out)->count = 1;
}

/* The sinks' view: per key, the largest running count seen (a restored run
 * starts from the checkpoint's counts, so its largest is the total). */
struct seen {
    pthread_mutex_t lock;
    int64_t max[KEYS];
    size_t records;
};

static void
seen_sink(spate_ctx *ctx, const void *in)
{
    struct seen *s = *(struct seen *const *)spate_ctx_params(ctx, NULL);
    const struct pair *p = in;

    pthread_mutex_lock(&s->lock);
    if (p->count > s->max[p->key])
        s->max[p->key] = p->count;
    s->records++;
    pthread_mutex_unlock(&s->lock);
}

/* A timer per key (event time would need watermarks; processing time in
 * the far future never fires): its restore shows up in the sink below. */
static void
count_with_timer(spate_ctx *ctx, const void *in)
{
    spate_state *st = spate_ctx_state(ctx, "count");
    struct pair out = *(const struct pair *)in;
    int64_t c = 0;

    spate_value_get(st, &c);
    c += out.count;
    spate_value_update(st, &c);
    out.count = c;
    spate_emit(ctx, &out);
}

static spate_env *
build(struct seen **sp, double rate)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    spate_stream *s;

    s = spate_set_parallelism(spate_source_generator(env, gen_pair, pt, N, rate), 2);
    s = spate_uid(s, "numbers");
    s = spate_process(spate_key_by_field(s, 0), (spate_flat_map_fn)count_with_timer, pt);
    s = spate_uid(spate_value_state(s, "count", spate_type_int64(), 0), "counts");
    s = spate_set_parallelism(s, 3);
    spate_set_parallelism(spate_params(spate_sink(s, seen_sink), sp, sizeof *sp), 3);
    return env;
}

static void
expected_counts(int64_t *expect)
{
    memset(expect, 0, KEYS * sizeof *expect);
    for (uint64_t i = 0; i < N; i++)
        expect[i * 7919 % KEYS]++;
}

static char *
temp_dir(void)
{
    char *dir = xstrdup("/tmp/spate-ckpt-test-XXXXXX");

    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static size_t
locked_count(pthread_mutex_t *lock, const size_t *count)
{
    size_t have;

    pthread_mutex_lock(lock);
    have = *count;
    pthread_mutex_unlock(lock);
    return have;
}

static int64_t
acked_id(struct task_thread *t)
{
    int64_t id;

    pthread_mutex_lock(&t->lock);
    id = t->acked_id;
    pthread_mutex_unlock(&t->lock);
    return id;
}

/* Waits until *count (guarded by lock) reaches n. The checkpoint tests wait
 * so for the sink to have seen records: a checkpoint triggered then has the
 * source past its start, which a fixed pause did not always give under a
 * sanitizer on a loaded machine. */
static void
wait_at_least(pthread_mutex_t *lock, const size_t *count, size_t n)
{
    WAIT_FOR(locked_count(lock, count) >= n, 100, "the sink to see enough records");
}

static void
remove_dir(const char *dir)
{
    char *cmd = xasprintf("rm -rf '%s'", dir);

    cr_assert_eq(system(cmd), 0);
    free(cmd);
}

Test(checkpoints, restore_continues_where_the_checkpoint_was_taken, .timeout = 120)
{
    struct seen first = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 }, *fp = &first;
    struct seen second = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 }, *sp = &second;
    spate_env *env1 = build(&fp, 1e6), *env2 = build(&sp, 0);
    struct local_job a = { .checkpointing = true }, b = { .checkpointing = true };
    spate_error err = { 0 };
    int64_t expect[KEYS];
    char *dir = temp_dir();

    /* Run a: rate-limited to about 0.4 s, checkpointed part of the way in,
     * then cancelled as a failure would end it. */
    local_start(&a, env1);
    wait_at_least(&first.lock, &first.records, 1000);
    cr_assert(local_checkpoint(&a, 1, dir), "checkpoint 1 was not acknowledged by every task");
    local_cancel(&a);
    local_join(&a, &err);
    cr_assert_gt(first.records, 0);
    /* Run b: from checkpoint 1, to the end. */
    b.restore_from = &a;
    local_start(&b, env2);
    cr_assert_eq(local_join(&b, &err), 0, "%s", err.message);
    expected_counts(expect);
    for (int k = 0; k < KEYS; k++)
        cr_assert_eq(second.max[k], expect[k], "key %d: %lld, not %lld", k,
                     (long long)second.max[k], (long long)expect[k]);
    /* The second run emitted only what came after the checkpoint. */
    cr_assert_lt(second.records, N, "the restored run started from the beginning");
    local_free(&a);
    local_free(&b);
    env_free(env1);
    env_free(env2);
    remove_dir(dir);
    free(dir);
}

/* Truncated state: the restore fails, naming the file. */
Test(checkpoints, a_truncated_state_file_is_a_clear_error, .timeout = 120)
{
    struct seen first = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 }, *fp = &first;
    struct seen second = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 }, *sp = &second;
    spate_env *env1 = build(&fp, 1e6), *env2 = build(&sp, 0);
    struct local_job a = { .checkpointing = true }, b = { .checkpointing = true };
    spate_error err = { 0 };
    char *dir = temp_dir(), *cmd;

    local_start(&a, env1);
    wait_at_least(&first.lock, &first.records, 1000);
    cr_assert(local_checkpoint(&a, 7, dir));
    local_cancel(&a);
    local_join(&a, &err);
    /* Cut every state file of the keyed operator's tasks to 20 bytes. */
    cmd = xasprintf("for f in '%s'/chk-7/*.state; do truncate -s 20 \"$f\"; done", dir);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    b.restore_from = &a;
    memset(&err, 0, sizeof err);
    local_start(&b, env2);
    cr_assert_gt(local_join(&b, &err), 0);
    cr_assert(strstr(err.message, "state file") != NULL, "%s", err.message);
    cr_assert(strstr(err.message, dir) != NULL, "the error names no file: %s", err.message);
    cr_assert(strstr(err.message, "truncated") != NULL, "%s", err.message);
    local_free(&a);
    local_free(&b);
    env_free(env1);
    env_free(env2);
    remove_dir(dir);
    free(dir);
}

/* The coordinator makes a checkpoint's folder before it triggers it and
 * deletes it when the checkpoint is aborted: a task still writing then is
 * declined, and makes no folder again (one made so outlived its job). */
Test(checkpoints, a_checkpoint_whose_folder_is_gone_is_declined_and_not_made_again, .timeout = 120)
{
    struct seen first = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0 }, *fp = &first;
    spate_env *env = build(&fp, 1e6);
    struct local_job a = { .checkpointing = true };
    spate_error err = { 0 };
    char *dir = temp_dir(), *gone = xasprintf("%s/job/chk-3", dir);
    struct stat st;

    local_start(&a, env);
    wait_at_least(&first.lock, &first.records, 1000);
    cr_assert_not(local_trigger_at(&a, 3, gone, 0, false), "a task acknowledged checkpoint 3");
    cr_assert_neq(stat(gone, &st), 0, "'%s' was made by a task", gone);
    local_cancel(&a);
    local_join(&a, &err);
    local_free(&a);
    env_free(env);
    remove_dir(dir);
    free(gone);
    free(dir);
}

/* ---- stop with a savepoint ---- */

#define WN 200000

struct wres {
    int64_t key, end, count;
};

struct wsink {
    pthread_mutex_t lock;
    struct wres *r;
    size_t n, cap;
};

static void
gen_event(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct pair *)out)->key = (int64_t)(i * 7919 % 13);
    ((struct pair *)out)->count = (int64_t)(i / 100); /* event time, ms */
}

static int64_t
event_ms(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct pair *)rec)->count;
}

static void
count_window(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct wres r = { 0, w.end, 0 };
    struct pair p;

    r.key = spate_ctx_current_key_int64(ctx);
    while (spate_list_next(elements, &p))
        r.count++;
    spate_emit(ctx, &r);
}

static void
collect_window(spate_ctx *ctx, const void *in)
{
    struct wsink *s = *(struct wsink *const *)spate_ctx_params(ctx, NULL);

    pthread_mutex_lock(&s->lock);
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->r = xrealloc(s->r, s->cap * sizeof *s->r);
    }
    s->r[s->n++] = *(const struct wres *)in;
    pthread_mutex_unlock(&s->lock);
}

/* The count as an aggregate: the window's accumulator is kept in place
 * (the window operator's per-record path), not a list of its elements. */
static void
acc_zero(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    *(int64_t *)acc = 0;
}

static void
acc_count(spate_ctx *ctx, const void *in, void *acc)
{
    (void)ctx;
    (void)in;
    (*(int64_t *)acc)++;
}

static void
acc_out(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    memcpy(out, acc, 8);
}

static void
acc_merge(spate_ctx *ctx, const void *from, void *acc)
{
    (void)ctx;
    *(int64_t *)acc += *(const int64_t *)from;
}

static void
count_result(spate_ctx *ctx, spate_time_window w, spate_iter *results)
{
    struct wres r = { 0, w.end, 0 };

    r.key = spate_ctx_current_key_int64(ctx);
    while (spate_list_next(results, &r.count))
        spate_emit(ctx, &r);
}

static spate_env *
build_windows_as(struct wsink **sp, double rate, bool aggregate)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *pf[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *rf[] = { spate_type_int64(), spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, pf), *rt = spate_type_tuple(env, 3, rf);
    spate_watermark_strategy ws = spate_watermarks_monotonous(event_ms);
    spate_stream *s;

    s = spate_uid(spate_source_generator(env, gen_event, pt, WN, rate), "events");
    s = spate_set_parallelism(s, 2);
    /* Chained to each source subtask: timestamps stay in order per channel. */
    s = spate_set_parallelism(spate_assign_timestamps_and_watermarks(s, &ws), 2);
    s = spate_window(spate_key_by_field(s, 0), spate_tumbling_event_time(50));
    if (aggregate) {
        const spate_type *ct = spate_type_int64();
        spate_aggregate agg = { ct, ct, acc_zero, acc_count, acc_out, acc_merge };

        s = spate_uid(spate_window_aggregate(s, &agg, count_result, rt), "windows");
    } else {
        s = spate_uid(spate_window_process(s, count_window, rt), "windows");
    }
    s = spate_set_parallelism(s, 2);
    spate_set_parallelism(spate_params(spate_sink(s, collect_window), sp, sizeof *sp), 2);
    return env;
}

static spate_env *
build_windows(struct wsink **sp, double rate)
{
    return build_windows_as(sp, rate, false);
}

/* Every window of the whole input: per (key, end), the count. */
static int
cmp_wres(const void *a, const void *b)
{
    const struct wres *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static void
expected_windows(struct wsink *out)
{
    memset(out, 0, sizeof *out);
    for (uint64_t i = 0; i < WN; i++) {
        struct wres r = { (int64_t)(i * 7919 % 13), (int64_t)(i / 100) / 50 * 50 + 50, 1 };
        bool found = false;

        for (size_t k = out->n; k-- > 0 && !found;)
            if (out->r[k].key == r.key && out->r[k].end == r.end) {
                out->r[k].count++;
                found = true;
            }
        if (!found) {
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 1024;
                out->r = xrealloc(out->r, out->cap * sizeof *out->r);
            }
            out->r[out->n++] = r;
        }
    }
    qsort(out->r, out->n, sizeof *out->r, cmp_wres);
}

/* Sorts the windows of s and checks them against the whole input's. */
static void
assert_every_window_once(struct wsink *s)
{
    struct wsink expect;

    qsort(s->r, s->n, sizeof *s->r, cmp_wres);
    expected_windows(&expect);
    cr_assert_eq(s->n, expect.n, "%zu windows, not %zu", s->n, expect.n);
    for (size_t i = 0; i < s->n; i++)
        cr_assert(s->r[i].key == expect.r[i].key && s->r[i].end == expect.r[i].end &&
                      s->r[i].count == expect.r[i].count,
                  "window %zu: (%lld, %lld, %lld), not (%lld, %lld, %lld)", i,
                  (long long)s->r[i].key, (long long)s->r[i].end, (long long)s->r[i].count,
                  (long long)expect.r[i].key, (long long)expect.r[i].end,
                  (long long)expect.r[i].count);
    free(expect.r);
}

/* Runs the window job with `checkpoints` checkpoints taken while it runs,
 * stops it with a savepoint (no drain) and resumes from that: the windows
 * of both runs together are every window once, as of one run. */
static void
stop_and_resume(bool aggregate, int checkpoints)
{
    struct wsink first = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }, *fp = &first;
    struct wsink second = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }, *sp = &second;
    spate_env *env1 = build_windows_as(&fp, 100000, aggregate);
    spate_env *env2 = build_windows_as(&sp, 0, aggregate);
    struct local_job a = { .checkpointing = true }, b = { .checkpointing = true };
    spate_error err = { 0 };
    char *dir = temp_dir();
    int64_t id = 1;

    /* Each checkpoint, and the stop, once more windows fired (13 keys: a
     * round of 50 ms windows), so that accumulators changed between them;
     * the run holds 40 rounds. */
    local_start(&a, env1);
    for (; id <= checkpoints; id++) {
        wait_at_least(&first.lock, &first.n, 13 * (size_t)id);
        cr_assert(local_checkpoint(&a, id, dir), "checkpoint %lld was not acknowledged",
                  (long long)id);
        local_notify_complete(&a, id);
    }
    wait_at_least(&first.lock, &first.n, 13 * (size_t)id);
    cr_assert(local_savepoint(&a, id, dir, CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_TERMINATE, false),
              "the stop's savepoint was not acknowledged by every task");
    local_notify_complete(&a, id);
    /* Every task finishes on its own: the job stopped. */
    cr_assert_eq(local_join(&a, &err), 0, "%s", err.message);
    b.restore_from = &a;
    local_start(&b, env2);
    cr_assert_eq(local_join(&b, &err), 0, "%s", err.message);
    cr_assert_gt(first.n, 0, "nothing fired before the stop");
    cr_assert_gt(second.n, 0, "nothing was left for the resumed run");
    first.r = xrealloc(first.r, (first.n + second.n + 1) * sizeof *first.r);
    memcpy(first.r + first.n, second.r, second.n * sizeof *first.r);
    first.n += second.n;
    assert_every_window_once(&first);
    free(first.r);
    free(second.r);
    local_free(&a);
    local_free(&b);
    env_free(env1);
    env_free(env2);
    remove_dir(dir);
    free(dir);
}

Test(checkpoints, stop_without_drain_then_resume_gives_every_window_once, .timeout = 120)
{
    stop_and_resume(false, 0);
}

/* Accumulators changed in place while checkpoints share their tables (the
 * window operator's per-record path copies first). */
Test(checkpoints, window_aggregates_stay_exact_through_checkpoints_and_a_resume, .timeout = 120)
{
    stop_and_resume(true, 3);
}

Test(checkpoints, stop_with_drain_fires_every_pending_window, .timeout = 120)
{
    struct wsink first = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }, *fp = &first;
    spate_env *env = build_windows(&fp, 100000);
    struct local_job a = { .checkpointing = true };
    spate_error err = { 0 };
    char *dir = temp_dir();
    int64_t total = 0, emitted = 0;

    local_start(&a, env);
    wait_at_least(&first.lock, &first.n, 1); /* windows fire: the job is under way */
    cr_assert(local_savepoint(&a, 4, dir, CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_TERMINATE, true));
    local_notify_complete(&a, 4);
    cr_assert_eq(local_join(&a, &err), 0, "%s", err.message);
    /* Every record the sources emitted before the stop is in a fired
     * window, the last (partial) ones included. */
    for (size_t i = 0; i < first.n; i++)
        total += first.r[i].count;
    for (int k = 0; k < a.jg->vertices[0].parallelism; k++) {
        struct accumulators *acc = &a.tasks[0][k].acc;

        for (size_t c = 0; c < acc->count; c++)
            if (strstr(acc->counters[c]->name, "Generator.numRecordsOut") != NULL)
                emitted += acc->counters[c]->value;
    }
    cr_assert_gt(total, 0);
    cr_assert_lt(total, WN, "the stop came after the end");
    cr_assert_eq(total, emitted, "windows counted %lld of the %lld records read", (long long)total,
                 (long long)emitted);
    free(first.r);
    local_free(&a);
    env_free(env);
    remove_dir(dir);
    free(dir);
}

/* ---- the final checkpoint (FLIP-147) ---- */

#define FN 20000

static int64_t
count_committed_lines(const char *dir)
{
    char *cmd = xasprintf("cat '%s'/part-* 2>/dev/null | wc -l", dir);
    FILE *p = popen(cmd, "r");
    long long n = -1;

    cr_assert_not_null(p);
    cr_assert_eq(fscanf(p, "%lld", &n), 1);
    pclose(p);
    free(cmd);
    return n;
}

/* Runs a keyed count into the two-phase-commit file sink at parallelism 1,
 * triggers the sink task directly with checkpoint 1 of the given type
 * (its upstream task finishes meanwhile: the coordinator's plan), completes
 * it once acknowledged, and checks that the job then finishes on its own
 * with every record committed. */
static void
trigger_sink_then_finish(int type)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    struct local_job a = { .checkpointing = true };
    char *dir = temp_dir(), *out = xasprintf("%s/out", dir), *chk = xasprintf("%s/chk-1", dir);
    struct task_thread *t = NULL;
    spate_error err = { 0 };
    spate_stream *x;

    x = spate_source_generator(env, gen_pair, pt, FN, FN); /* about a second */
    x = spate_process(spate_key_by_field(x, 0), (spate_flat_map_fn)count_with_timer, pt);
    x = spate_value_state(x, "count", spate_type_int64(), 0);
    spate_sink_text_file(x, out);
    spate_env_set_parallelism(env, 1);
    cr_assert_eq(mkdir(chk, 0755), 0);
    local_start(&a, env);
    for (int v = 0; v < a.jg->nvertices; v++)
        if (a.jg->vertices[v].ninputs > 0)
            t = &a.tasks[v][0];
    cr_assert_not_null(t);
    task_mailbox_post(&t->mailbox, TASK_MAIL_TRIGGER, 1, 0, type, false, chk);
    WAIT_FOR(acked_id(t) >= 1, 100, "the sink task to acknowledge checkpoint 1");
    local_notify_complete(&a, 1);
    cr_assert_eq(local_join(&a, &err), 0, "%s", err.message);
    cr_assert_eq(count_committed_lines(out), FN);
    local_free(&a);
    env_free(env);
    remove_dir(dir);
    free(chk);
    free(out);
    free(dir);
}

Test(checkpoints, a_task_triggered_before_its_input_ended_takes_it_after_its_end_of_input,
     .timeout = 120)
{
    /* The coordinator triggers a task whose upstream tasks finished while
     * its channels still hold their last records: it takes the checkpoint
     * once they ended, and after its end of input, so that for a task with
     * a two-phase-commit sink it is the final checkpoint. Taken before,
     * the task waited for another checkpoint after its end of input, which
     * a coordinator with nothing left to trigger never sends (a job resumed
     * with a long interval hung in e2e/finished_checkpoints). */
    trigger_sink_then_finish(CHECKPOINT__CHECKPOINT_TYPE__CHECKPOINT);
}

Test(checkpoints, a_stop_s_savepoint_after_the_end_of_input_ends_the_wait_for_the_final_one,
     .timeout = 120)
{
    /* A stop with a savepoint that reaches a two-phase-commit sink after
     * its upstream finished: the coordinator triggers nothing after a stop
     * (not the final checkpoint it gives such a sink otherwise), so the
     * savepoint's completion must end the sink's wait for its final
     * checkpoint. It did not: the job's last task waited for ever
     * (e2e/exactly_once's stop of a p1 WordCount whose source had just
     * finished, now and then). */
    trigger_sink_then_finish(CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_SUSPEND);
}
