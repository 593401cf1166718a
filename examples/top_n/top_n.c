/* Top-N per window: the N most frequent words of each tumbling event-time
 * window. Counts per word and window first (keyed by word), then all counts
 * of one window meet in one keyed process function (keyed by the window's
 * end) that emits the top N when the window's time has passed.
 *
 *   spate run [--local] build/examples/top_n.so [--input PATH] [--n 3] [--window-lines 1000]
 *
 * Event time here is the line number: each line of the text is one tick. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

struct word_count {
    spate_str word;
    int64_t count;
    int64_t window_end;
};

struct params {
    int n;
};

static void
tokenize(spate_ctx *ctx, const void *in)
{
    const spate_str *line = in;
    char *lower = spate_ctx_alloc(ctx, line->len + 1);
    struct word_count wc = { { NULL, 0 }, 1, 0 };
    size_t i = 0;

    for (size_t k = 0; k < line->len; k++)
        lower[k] = (char)tolower((unsigned char)line->data[k]);
    while (i < line->len) {
        size_t start;

        while (i < line->len && !isalnum((unsigned char)lower[i]))
            i++;
        for (start = i; i < line->len && isalnum((unsigned char)lower[i]); i++)
            ;
        if (i > start) {
            wc.word.data = lower + start;
            wc.word.len = i - start;
            spate_emit(ctx, &wc);
        }
    }
}

/* Lines carry no time: their number in the text is it. */
static int64_t line_time(spate_ctx *ctx, const void *rec);
static void counter_open(spate_ctx *ctx);
static void counter_close(spate_ctx *ctx);

static void
add(spate_ctx *ctx, const void *a, const void *b, void *out)
{
    struct word_count *r = out;

    (void)ctx;
    *r = *(const struct word_count *)a;
    r->count += ((const struct word_count *)b)->count;
}

static void
stamp_window(spate_ctx *ctx, spate_time_window w, spate_iter *result)
{
    struct word_count wc;

    if (spate_list_next(result, &wc)) {
        wc.window_end = w.end;
        spate_emit(ctx, &wc);
    }
}

/* Keyed by window end: collect the window's counts, emit the top N once its
 * time has passed. */
static void
collect(spate_ctx *ctx, const void *in)
{
    const struct word_count *wc = in;

    spate_list_add(spate_ctx_state(ctx, "counts"), wc);
    spate_timer_register_event_time(ctx, wc->window_end);
}

static void
emit_top(spate_ctx *ctx, int64_t ts, bool event_time)
{
    const struct params *p = spate_ctx_params(ctx, NULL);
    struct word_count best[16], wc;
    int n = p->n < 16 ? p->n : 16, have = 0;
    spate_state *counts = spate_ctx_state(ctx, "counts");
    spate_iter it;

    (void)ts;
    (void)event_time;
    spate_list_iter(counts, &it);
    while (spate_list_next(&it, &wc)) {
        int at = have;

        /* Insertion into the best n, most counted first, then by word. */
        while (at > 0 && (best[at - 1].count < wc.count ||
                          (best[at - 1].count == wc.count &&
                           (best[at - 1].word.len > wc.word.len ||
                            (best[at - 1].word.len == wc.word.len &&
                             memcmp(best[at - 1].word.data, wc.word.data, wc.word.len) > 0))))) {
            if (at < n)
                best[at] = best[at - 1];
            at--;
        }
        if (at < n) {
            best[at] = wc;
            if (have < n)
                have++;
        }
    }
    for (int i = 0; i < have; i++)
        spate_emit(ctx, &best[i]);
    spate_state_clear(counts);
}

static spate_bytes
by_window(spate_ctx *ctx, const void *rec, void *scratch, size_t cap)
{
    (void)ctx;
    (void)scratch;
    (void)cap;
    return (spate_bytes){ &((const struct word_count *)rec)->window_end, 8 };
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const char *input = NULL;
    struct params p = { 3 };
    int64_t window = 1000;
    const spate_type *fields[] = { spate_type_string(), spate_type_int64(), spate_type_int64() };
    const spate_type *wct = spate_type_tuple(env, 3, fields);
    spate_watermark_strategy ws = spate_watermarks_monotonous(line_time);
    spate_stream *s;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--input") == 0)
            input = argv[i + 1];
        else if (strcmp(argv[i], "--n") == 0)
            p.n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--window-lines") == 0)
            window = atoll(argv[i + 1]);
    }
    if (input == NULL) {
        fprintf(stderr, "top_n: give --input PATH\n");
        return SPATE_EINVAL;
    }
    /* One reader keeps the line order, so line numbers are event time. */
    s = spate_set_parallelism(spate_source_text_file(env, input), 1);
    s = spate_set_parallelism(spate_assign_timestamps_and_watermarks(s, &ws), 1);
    spate_open_close(s, counter_open, counter_close);
    s = spate_flat_map(s, tokenize, wct);
    s = spate_window(spate_key_by_field(s, 0), spate_tumbling_event_time(window));
    s = spate_window_reduce(s, add, stamp_window, wct);
    s = spate_process(spate_key_by(s, by_window), collect, wct);
    spate_list_state(s, "counts", wct, 0);
    spate_params(spate_on_timer(s, emit_top), &p, sizeof p);
    spate_sink_print(s);
    return spate_execute(env, "Top-N per window");
}

/* A monotonous clock: the n-th line seen by this (single) subtask, counted
 * in memory the operator's open makes and its close frees. */
static int64_t
line_time(spate_ctx *ctx, const void *rec)
{
    int64_t *n = spate_ctx_user(ctx);

    (void)rec;
    return (*n)++;
}

static void
counter_open(spate_ctx *ctx)
{
    spate_ctx_set_user(ctx, calloc(1, sizeof(int64_t)));
}

static void
counter_close(spate_ctx *ctx)
{
    free(spate_ctx_user(ctx));
}
