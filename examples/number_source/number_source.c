/* A custom source on spate's Source API (include/spate/source.h), after
 * Flink's NumberSequenceSource: the numbers 0 .. count-1, cut into splits
 * of consecutive numbers. Its split enumerator, on the JobMaster, hands a
 * split to whichever reader asks; each reader emits its split's numbers in
 * order, each with itself as its event time, at most --rate a second, and
 * checkpoints each unfinished split as where it is and where it ends. The
 * numbers go, one a line, to an exactly-once text file sink.
 *
 *   spate run [-p N] build/examples/number_source.so --output PATH
 *       [--count N] [--splits N] [--rate N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spate/source.h>
#include <spate/spate.h>

/* The job's parameters, in the source's spate_params. */
struct number_params {
    int64_t count;
    int64_t splits;
    int64_t rate; /* numbers a second per reader; 0: as fast as it goes */
};

/* A split: the next number and the end, 16 bytes. */
struct number_split {
    int64_t next, end;
};

static const struct number_params *
params_of(const void *p, size_t len)
{
    static const struct number_params none = { 0, 1, 0 };

    return len == sizeof(struct number_params) ? p : &none;
}

/* ---- the split enumerator: on the JobMaster ---- */

struct enumerator {
    spate_split_enumerator_context *ctx;
    struct number_split *left; /* not assigned; handed out from the end */
    size_t n, cap;
};

static void
push(struct enumerator *e, struct number_split s)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 16;
        e->left = realloc(e->left, e->cap * sizeof *e->left);
        if (e->left == NULL)
            abort();
    }
    e->left[e->n++] = s;
}

static void *
enumerator_create(spate_split_enumerator_context *ctx, const void *config, const void *state,
                  size_t state_len, spate_error *err)
{
    size_t len;
    const void *bytes = spate_enumerator_context_params(ctx, &len);
    const struct number_params *p = params_of(bytes, len);
    struct enumerator *e = calloc(1, sizeof *e);

    (void)config;
    if (e == NULL)
        abort();
    e->ctx = ctx;
    if (state != NULL) {
        if (state_len % sizeof(struct number_split) != 0) {
            free(e);
            spate_error_set(err, SPATE_EPROTO, "number source state of %zu bytes", state_len);
            return NULL;
        }
        for (size_t at = state_len; at > 0; at -= sizeof(struct number_split)) {
            struct number_split s;

            memcpy(&s, (const char *)state + at - sizeof s, sizeof s);
            push(e, s);
        }
        return e;
    }
    /* The last split first, so that the first goes out first. */
    for (int64_t i = p->splits; i-- > 0;)
        push(e, (struct number_split){ i * p->count / p->splits, (i + 1) * p->count / p->splits });
    return e;
}

static void
enumerator_handle_split_request(void *enumerator, int subtask)
{
    struct enumerator *e = enumerator;

    if (e->n == 0) {
        spate_enumerator_context_signal_no_more_splits(e->ctx, subtask);
        return;
    }
    e->n--;
    spate_enumerator_context_assign_split(e->ctx, subtask, &e->left[e->n], sizeof *e->left);
}

static void
enumerator_add_split_back(void *enumerator, int subtask, const void *split, size_t len)
{
    struct number_split s;

    (void)subtask;
    if (len != sizeof s)
        return;
    memcpy(&s, split, sizeof s);
    push(enumerator, s);
}

/* The splits left, in the order they go out. */
static void
enumerator_snapshot(void *enumerator, spate_split_enumerator_context *ctx)
{
    struct enumerator *e = enumerator;

    for (size_t i = e->n; i-- > 0;)
        spate_enumerator_context_save_state(ctx, &e->left[i], sizeof e->left[i]);
}

static void
enumerator_close(void *enumerator)
{
    struct enumerator *e = enumerator;

    free(e->left);
    free(e);
}

static const spate_split_enumerator number_enumerator = {
    .create = enumerator_create,
    .handle_split_request = enumerator_handle_split_request,
    .add_split_back = enumerator_add_split_back,
    .snapshot_state = enumerator_snapshot,
    .close = enumerator_close,
};

/* ---- the source reader: in each subtask ---- */

struct reader {
    spate_source_reader_context *ctx;
    struct number_split *splits; /* read in order, the first one now */
    size_t n, cap;
    bool no_more;
    int64_t rate;
    int64_t emitted;
    struct timespec start;
};

static void *
reader_create(spate_source_reader_context *ctx, const void *config, spate_error *err)
{
    size_t len;
    const void *bytes = spate_reader_context_params(ctx, &len);
    const struct number_params *p = params_of(bytes, len);
    struct reader *r = calloc(1, sizeof *r);

    (void)config;
    (void)err;
    if (r == NULL)
        abort();
    r->ctx = ctx;
    r->rate = p->rate;
    clock_gettime(CLOCK_MONOTONIC, &r->start);
    return r;
}

static int
reader_add_split(void *reader, const void *split, size_t len, spate_error *err)
{
    struct reader *r = reader;

    if (len != sizeof(struct number_split))
        return spate_error_set(err, SPATE_EPROTO, "a number split of %zu bytes", len);
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 4;
        r->splits = realloc(r->splits, r->cap * sizeof *r->splits);
        if (r->splits == NULL)
            abort();
    }
    memcpy(&r->splits[r->n++], split, len);
    return 0;
}

static void
reader_no_more_splits(void *reader)
{
    ((struct reader *)reader)->no_more = true;
}

/* How many more numbers the rate allows now. */
static int64_t
allowed(struct reader *r)
{
    struct timespec now;
    int64_t ms;

    if (r->rate <= 0)
        return INT64_MAX;
    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (now.tv_sec - r->start.tv_sec) * 1000 + (now.tv_nsec - r->start.tv_nsec) / 1000000;
    return r->rate * ms / 1000 - r->emitted;
}

static spate_input_status
reader_poll_next(void *reader, spate_reader_output *out, int budget, spate_error *err)
{
    struct reader *r = reader;
    int64_t n = allowed(r);
    struct number_split *s;

    (void)err;
    if (r->n == 0) {
        if (r->no_more)
            return SPATE_INPUT_END_OF_INPUT;
        spate_reader_context_request_split(r->ctx);
        return SPATE_INPUT_NOTHING_AVAILABLE;
    }
    if (n <= 0)
        return SPATE_INPUT_NOTHING_AVAILABLE;
    if (n > budget)
        n = budget;
    s = &r->splits[0];
    for (; n > 0 && s->next < s->end; n--, s->next++, r->emitted++)
        spate_reader_output_collect(out, 0, &s->next, s->next);
    if (s->next == s->end) {
        memmove(r->splits, r->splits + 1, --r->n * sizeof *r->splits);
        if (r->n == 0)
            spate_reader_context_request_split(r->ctx);
    }
    return SPATE_INPUT_MORE_AVAILABLE;
}

static void
reader_snapshot(void *reader, int64_t checkpoint_id, spate_source_reader_context *ctx)
{
    struct reader *r = reader;

    (void)checkpoint_id;
    for (size_t i = 0; i < r->n; i++)
        spate_reader_context_save_split(ctx, &r->splits[i], sizeof r->splits[i]);
}

static void
reader_close(void *reader)
{
    struct reader *r = reader;

    free(r->splits);
    free(r);
}

static const spate_source_reader number_reader = {
    .create = reader_create,
    .add_split = reader_add_split,
    .no_more_splits = reader_no_more_splits,
    .poll_next = reader_poll_next,
    .snapshot_state = reader_snapshot,
    .close = reader_close,
};

static const spate_source number_source = { &number_enumerator, &number_reader };

/* n -> "n" */
static void
format(spate_ctx *ctx, const void *in, void *out)
{
    char *buf = spate_ctx_alloc(ctx, 24);
    spate_str *s = out;

    s->len = (size_t)snprintf(buf, 24, "%lld", (long long)*(const int64_t *)in);
    s->data = buf;
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    struct number_params p = { 1000000, 64, 0 };
    const char *output = NULL;
    spate_stream *numbers;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) {
            output = argv[++i];
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            p.count = atoll(argv[++i]);
        } else if (strcmp(argv[i], "--splits") == 0 && i + 1 < argc) {
            p.splits = atoll(argv[++i]);
        } else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc) {
            p.rate = atoll(argv[++i]);
        } else {
            fprintf(stderr,
                    "number_source: unknown argument '%s' (--output PATH, --count N, "
                    "--splits N, --rate N)\n",
                    argv[i]);
            return SPATE_EINVAL;
        }
    }
    if (p.count < 0 || p.splits < 1 || p.rate < 0) {
        fprintf(stderr, "number_source: --count must be >= 0, --splits >= 1, --rate >= 0\n");
        return SPATE_EINVAL;
    }
    numbers = spate_source_from(env, &number_source, spate_type_int64());
    numbers = spate_uid(spate_name(spate_params(numbers, &p, sizeof p), "Numbers"), "numbers");
    numbers = spate_name(spate_map(numbers, format, spate_type_string()), "Format");
    if (output != NULL)
        spate_sink_text_file(numbers, output);
    else
        spate_sink_print(numbers);
    return spate_execute(env, "Number Source");
}
