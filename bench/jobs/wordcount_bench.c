/* The word-count job of job_bench (bench/README.md's workload 1), written as a
 * user writes one, against the public API only, like examples/wordcount:
 * text file -> split into lower-cased words -> key by word -> running count
 * -> a sink that sums every emitted count (the checksum) into an
 * accumulator and records when its first record arrived.
 *
 *   spate run --local [-p N] build/bench/wordcount_bench.so --input PATH */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spate/spate.h>

struct word_count {
    spate_str word;
    int64_t count;
};

/* Splits a line into words (runs of ASCII letters and digits) and lower-
 * cases them in one pass: the same work per character as the loop. */
static void
tokenize(spate_ctx *ctx, const void *in)
{
    const spate_str *line = in;
    struct word_count wc = { { NULL, 0 }, 1 };
    char *word = spate_ctx_alloc(ctx, line->len ? line->len : 1);
    size_t n = 0;

    for (size_t i = 0; i <= line->len; i++) {
        unsigned char c = i < line->len ? (unsigned char)line->data[i] : ' ';

        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            word[n++] = (char)c;
        } else if (c >= 'A' && c <= 'Z') {
            word[n++] = (char)(c + 32);
        } else if (n > 0) {
            wc.word.data = word;
            wc.word.len = n;
            spate_emit(ctx, &wc);
            word += n;
            n = 0;
        }
    }
}

struct sink_state {
    spate_counter *checksum;
    bool seen;
};

static void
sink_open(spate_ctx *ctx)
{
    struct sink_state *s = calloc(1, sizeof *s);

    s->checksum = spate_ctx_counter(ctx, "checksum");
    spate_ctx_set_user(ctx, s);
}

static void
sink_close(spate_ctx *ctx)
{
    free(spate_ctx_user(ctx));
}

static void
checksum(spate_ctx *ctx, const void *in)
{
    const struct word_count *wc = in;
    struct sink_state *s = spate_ctx_user(ctx);

    if (!s->seen) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        spate_counter_add(spate_ctx_counter(ctx, "first_record_at_us"),
                          (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
        s->seen = true;
    }
    spate_counter_add(s->checksum, wc->count);
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const spate_type *fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *word_count = spate_type_tuple(env, 2, fields);
    const char *input = NULL;
    spate_stream *s;

    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--input") == 0)
            input = argv[++i];
    if (input == NULL) {
        fprintf(stderr, "wordcount_bench: --input PATH is required\n");
        return SPATE_EINVAL;
    }
    s = spate_name(spate_source_text_file(env, input), "Source: Text");
    s = spate_name(spate_flat_map(s, tokenize, word_count), "Tokenizer");
    s = spate_sum(spate_key_by_field(s, 0), 1);
    spate_open_close(spate_name(spate_sink(s, checksum), "Checksum"), sink_open, sink_close);
    return spate_execute(env, "WordCount benchmark");
}
