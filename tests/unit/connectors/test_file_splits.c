/* Unit tests of src/connectors/file_splits.c and the file source's line
 * splitting: every line read exactly once whatever the split size. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "connectors/connectors.h"
#include "connectors/file_splits.h"
#include "streaming/operator.h"
#include "streaming/types.h"
#include "sync_runner.h"

static char dir[] = "/tmp/spate-test-splits-XXXXXX";

static void
write_file(const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(file_splits, folders_are_listed_sorted_and_cut)
{
    struct split_assigner a;
    spate_error err;
    const struct file_split *s;
    int n = 0;

    cr_assert_not_null(mkdtemp(dir));
    write_file("b.txt", "0123456789");
    write_file("a.txt", "abc");
    write_file(".hidden", "x");
    write_file("empty.txt", "");
    cr_assert_eq(split_assigner_init(&a, dir, 4, 1, &err), 0, "%s", err.message);
    cr_assert_eq(a.count, 1 + 3);
    s = split_assigner_next(&a);
    cr_assert(strstr(s->path, "/a.txt") != NULL);
    while (split_assigner_next(&a) != NULL)
        n++;
    cr_assert_eq(n, 3);
    split_assigner_return(&a, &a.splits[2]);
    cr_assert_eq(split_assigner_next(&a), &a.splits[2]);
    cr_assert_null(split_assigner_next(&a));
    split_assigner_release(&a);
    cr_assert_eq(split_assigner_init(&a, "/nonexistent/in", 4, 1, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "cannot read input path '/nonexistent/in'") != NULL);
}

/* Without a size, a file is cut so that each subtask of the source gets
 * several splits, of at most FILE_SPLIT_DEFAULT_SIZE (sparse files: only
 * their sizes matter). */
static size_t
count_splits(const char *name, uint64_t size, int parallelism)
{
    char path[256];
    struct split_assigner a;
    spate_error err;
    uint64_t covered = 0;
    size_t n;
    int fd;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
    close(fd);
    cr_assert_eq(split_assigner_init(&a, path, 0, parallelism, &err), 0, "%s", err.message);
    for (size_t i = 0; i < a.count; i++) {
        cr_assert_eq(a.splits[i].start, covered);
        cr_assert_leq(a.splits[i].length, FILE_SPLIT_DEFAULT_SIZE);
        covered += a.splits[i].length;
    }
    cr_assert_eq(covered, size);
    n = a.count;
    split_assigner_release(&a);
    unlink(path);
    return n;
}

Test(file_splits, default_size_gives_every_subtask_several_splits)
{
    cr_assert_not_null(mkdtemp(dir));
    /* 10 MiB at p2: 8 splits of 1.25 MiB, 4 a subtask. */
    cr_assert_eq(count_splits("ten", 10u << 20, 2), 2 * FILE_SPLITS_PER_SUBTASK);
    /* 85 MB at p1: splits of at most 8 MiB. */
    cr_assert_eq(count_splits("big", 85000000, 1), (85000000 + (8u << 20) - 1) / (8u << 20));
    /* Small files are not cut below FILE_SPLIT_MIN_SIZE. */
    cr_assert_eq(count_splits("small", 3u << 20, 4), 3);
    cr_assert_eq(count_splits("tiny", 100, 4), 1);
    rmdir(dir);
}

/* ---- every line once ---- */

struct seen {
    int count[1000];
    int total;
};

static void
note(spate_ctx *ctx, const void *in)
{
    struct seen *s = *(struct seen *const *)spate_ctx_params(ctx, NULL);
    const spate_str *line = in;
    int v = atoi(line->data + 4); /* "line123" */

    cr_assert(line->len >= 5 && v >= 0 && v < 1000, "bad line '%.*s'", (int)line->len, line->data);
    s->count[v]++;
    s->total++;
}

Test(file_splits, each_line_is_read_once_for_any_split_size)
{
    char text[16384] = "";
    static const uint64_t sizes[] = { 1, 2, 3, 7, 10, 64, 1000, 100000 };

    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 1000; i++) {
        char line[32];

        /* Lines of varying length, some with \r\n. */
        snprintf(line, sizeof line, i % 7 ? "line%d\n" : "line%d\r\n", i);
        strcat(text, line);
    }
    write_file("in.txt", text);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        struct sync_splits a;
        struct seen seen = { { 0 }, 0 }, *sp = &seen;
        spate_env *env = env_new(NULL, NULL);
        struct accumulators acc;
        char *failure;
        char path[256];

        snprintf(path, sizeof path, "%s/in.txt", dir);
        sync_splits_init(&a, path, sizes[k]);
        spate_params(spate_sink(spate_source_text_file(env, path), note), &sp, sizeof sp);
        accumulators_init(&acc);
        sync_run_env_splits(env, &acc, &failure, &a);
        cr_assert_null(failure);
        cr_assert_eq(seen.total, 1000, "split size %llu: %d lines", (unsigned long long)sizes[k],
                     seen.total);
        for (int i = 0; i < 1000; i++)
            cr_assert_eq(seen.count[i], 1, "split size %llu: line %d read %d times",
                         (unsigned long long)sizes[k], i, seen.count[i]);
        accumulators_release(&acc);
        sync_splits_release(&a);
        env_free(env);
    }
}

/* ---- a job resumed at a lower parallelism ---- */

static int
no_more_splits(void *data, int op, bool register_reader, bool request_split,
               int64_t last_checkpoint, int (*add)(void *arg, const void *split, size_t len),
               void *arg, bool *no_more, spate_error *err)
{
    (void)data, (void)op, (void)register_reader, (void)request_split, (void)add, (void)arg;
    (void)last_checkpoint;
    (void)err;
    *no_more = true;
    return 0;
}

struct line_counts {
    struct output base;
    int count[100];
};

static void
count_line(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct line_counts *c = (struct line_counts *)self;
    const spate_str *line = rec;

    (void)meta;
    c->count[atoi(line->data + 4)]++;
}

static void
no_watermark(struct output *self, int64_t watermark)
{
    (void)self, (void)watermark;
}

/* The state element of a split in progress: file_snapshot's form. */
static size_t
split_element(uint8_t *e, const char *path, uint64_t pos, uint64_t split_end)
{
    uint32_t plen = (uint32_t)strlen(path);

    e[0] = 1;
    memcpy(e + 1, &pos, 8);
    memcpy(e + 9, &split_end, 8);
    e[17] = 0;
    memcpy(e + 18, &plen, 4);
    memcpy(e + 22, path, plen);
    return 22 + plen;
}

Test(file_splits, a_subtask_restored_with_several_splits_in_progress_reads_them_all)
{
    char text[2048] = "", path[256];
    uint64_t at[100], size;
    uint8_t e1[300], e2[300];
    size_t n1, n2;
    spate_env *env = env_new(NULL, NULL);
    struct task_info task = { 0 };
    struct line_counts out = { .base = { .collect = count_line, .emit_watermark = no_watermark } };
    struct operator_settings settings;
    struct stream_operator *op;
    spate_error err = { 0 };

    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 100; i++) {
        at[i] = strlen(text);
        snprintf(text + at[i], sizeof text - at[i], "line%02d\n", i);
    }
    size = strlen(text);
    write_file("in.txt", text);
    snprintf(path, sizeof path, "%s/in.txt", dir);
    /* Two old subtasks' splits, [0, 50) and [50, 100) by line, each in
     * progress: at line 10 and at line 60. */
    n1 = split_element(e1, path, at[10], at[50] - 1);
    n2 = split_element(e2, path, at[60], size - 1);
    task.connectors = connectors_builtin();
    task.parallelism = 1;
    task.max_parallelism = 128;
    task.task_name = "restored";
    task.request_splits = no_more_splits;
    stream_node_settings(spate_source_text_file(env, path), &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out.base, &op, &err), 0, "%s", err.message);
    cr_assert_eq(op->vt->restore_state(op, e1, n1, &err), 0, "%s", err.message);
    cr_assert_eq(op->vt->restore_state(op, e2, n2, &err), 0, "%s", err.message);
    while (op->vt->poll(op, 7, &err) != SOURCE_END)
        ;
    cr_assert_eq(err.code, 0, "%s", err.message);
    for (int i = 0; i < 100; i++)
        cr_expect_eq(out.count[i], (i >= 10 && i < 50) || i >= 60, "line %d read %d times", i,
                     out.count[i]);
    operator_free(op);
    env_free(env);
}

/* ---- a reader's first split comes without a wait ---- */

/* As the file enumerator on the JobMaster: a split only on request (the
 * registration alone brings none), the whole file once, then no more. */
struct on_request {
    const char *path;
    uint64_t size;
    int requests; /* that asked for a split */
};

static int
split_on_request(void *data, int op, bool register_reader, bool request_split,
                 int64_t last_checkpoint, int (*add)(void *arg, const void *split, size_t len),
                 void *arg, bool *no_more, spate_error *err)
{
    struct on_request *r = data;
    uint32_t plen = (uint32_t)strlen(r->path);
    uint64_t start = 0;
    uint8_t e[300];

    (void)op, (void)register_reader, (void)last_checkpoint, (void)err;
    if (!request_split)
        return 0;
    if (r->requests++ > 0) {
        *no_more = true;
        return 0;
    }
    e[0] = 2; /* an assigned split: u64 start, u64 length, u32 path length, path */
    memcpy(e + 1, &start, 8);
    memcpy(e + 9, &r->size, 8);
    memcpy(e + 17, &plen, 4);
    memcpy(e + 21, r->path, plen);
    return add(arg, e, 21 + plen);
}

Test(file_splits, a_reader_asks_for_its_first_split_without_waiting)
{
    char text[2048] = "", path[256];
    spate_env *env = env_new(NULL, NULL);
    struct task_info task = { 0 };
    struct line_counts out = { .base = { .collect = count_line, .emit_watermark = no_watermark } };
    struct on_request req = { path, 0, 0 };
    struct operator_settings settings;
    struct stream_operator *op;
    spate_error err = { 0 };
    enum source_status st;
    int waits = 0;

    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 100; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "line%02d\n", i);
    write_file("in.txt", text);
    snprintf(path, sizeof path, "%s/in.txt", dir);
    req.size = strlen(text);
    task.connectors = connectors_builtin();
    task.parallelism = 1;
    task.max_parallelism = 128;
    task.task_name = "first split";
    task.request_splits = split_on_request;
    task.split_data = &req;
    stream_node_settings(spate_source_text_file(env, path), &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out.base, &op, &err), 0, "%s", err.message);
    while ((st = op->vt->poll(op, 1000, &err)) != SOURCE_END) {
        /* A wait before the first split was the registration's empty
         * answer taken for the enumerator having none: 20 ms lost at the
         * start of every job. */
        if (st == SOURCE_WAITING && out.count[0] == 0)
            waits++;
        cr_assert_lt(req.requests, 10, "the reader keeps asking");
    }
    cr_assert_eq(err.code, 0, "%s", err.message);
    cr_assert_eq(waits, 0, "the reader waited %d time(s) before its first split", waits);
    for (int i = 0; i < 100; i++)
        cr_expect_eq(out.count[i], 1, "line %d read %d times", i, out.count[i]);
    operator_free(op);
    env_free(env);
}
