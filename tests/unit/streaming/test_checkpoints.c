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
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
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
    int64_t records;
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
    struct timespec pause = { 0, 20000000 };

    /* Run a: rate-limited to about 0.4 s, checkpointed part of the way in,
     * then cancelled as a failure would end it. */
    local_start(&a, env1);
    nanosleep(&pause, NULL);
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
    struct timespec pause = { 0, 20000000 };

    local_start(&a, env1);
    nanosleep(&pause, NULL);
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
