/* WordCount, as Flink's streaming WordCount example: counts the words of a
 * text and emits every update "word count"; the last line of a word holds
 * its final count. A word is a run of ASCII letters and digits, lower-cased.
 * The pipeline: a text source, flat_map into words, key_by the word, a
 * rolling sum, a formatting map, a print or text-file sink.
 *
 *   spate run [--local] build/examples/wordcount.so [--input PATH] [--output PATH]
 *       [--format text|csv|json]
 *
 * --input: a file or a folder of files (default: a bundled text);
 * --output: a folder of part files, part-<subtask>-<n> (default: standard
 * output); --format: their lines, "word count" (text, the default), the
 * (word, count) tuples as CSV "word,count" or JSON lines
 * {"word":"...","count":n} (spate_sink_file). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <spate/spate.h>

struct word_count {
    spate_str word;
    int64_t count;
};

/* Splits a line into lower-cased words, each emitted as (word, 1). */
static void
tokenize(spate_ctx *ctx, const void *in)
{
    const spate_str *line = in;
    char *lower = spate_ctx_alloc(ctx, line->len ? line->len : 1);
    struct word_count wc = { { NULL, 0 }, 1 };
    size_t i = 0;

    for (size_t k = 0; k < line->len; k++)
        lower[k] = (char)tolower((unsigned char)line->data[k]);
    while (i < line->len) {
        size_t start;

        while (i < line->len && !isalnum((unsigned char)lower[i]))
            i++;
        start = i;
        while (i < line->len && isalnum((unsigned char)lower[i]))
            i++;
        if (i > start) {
            wc.word.data = lower + start;
            wc.word.len = i - start;
            spate_emit(ctx, &wc);
        }
    }
}

/* (word, count) -> "word count" */
static void
format(spate_ctx *ctx, const void *in, void *out)
{
    const struct word_count *wc = in;
    spate_str *s = out;
    char *buf = spate_ctx_alloc(ctx, wc->word.len + 24);
    int n = snprintf(buf, wc->word.len + 24, "%.*s %lld", (int)wc->word.len, wc->word.data,
                     (long long)wc->count);

    s->data = buf;
    s->len = (size_t)n;
}

static const char *const hamlet[] = {
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
    "And by opposing end them?--To die,--to sleep,--",
    "No more; and by a sleep to say we end",
    "The heartache, and the thousand natural shocks",
    "That flesh is heir to,--'tis a consummation",
    "Devoutly to be wish'd. To die,--to sleep;--",
    "To sleep! perchance to dream:--ay, there's the rub;",
    "For in that sleep of death what dreams may come,",
    "When we have shuffled off this mortal coil,",
    "Must give us pause: there's the respect",
    "That makes calamity of so long life;",
};

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    static const char *const names[] = { "word", "count", NULL };
    const char *input = NULL, *output = NULL;
    const spate_type *fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *word_count = spate_type_tuple(env, 2, fields);
    spate_file_format fmt = SPATE_FILE_TEXT;
    spate_stream *text, *counts;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
            input = argv[++i];
        } else if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) {
            output = argv[++i];
        } else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "text") == 0 || strcmp(argv[i + 1], "csv") == 0 ||
                    strcmp(argv[i + 1], "json") == 0)) {
            i++;
            fmt = argv[i][0] == 't'   ? SPATE_FILE_TEXT
                  : argv[i][0] == 'c' ? SPATE_FILE_CSV
                                      : SPATE_FILE_JSON;
        } else {
            fprintf(stderr,
                    "wordcount: unknown argument '%s' (--input PATH, --output PATH, "
                    "--format text|csv|json)\n",
                    argv[i]);
            return SPATE_EINVAL;
        }
    }
    if (input != NULL)
        text = spate_name(spate_source_text_file(env, input), "Source: Text");
    else
        text = spate_source_strings(env, hamlet, sizeof hamlet / sizeof hamlet[0]);
    counts = spate_uid(
        spate_name(spate_flat_map(spate_uid(text, "source"), tokenize, word_count), "Tokenizer"),
        "tokenizer");
    counts = spate_uid(spate_sum(spate_key_by_field(counts, 0), 1), "counts");
    if (output != NULL && fmt != SPATE_FILE_TEXT) {
        spate_sink_file(counts, output, fmt, fmt == SPATE_FILE_JSON ? names : NULL);
        return spate_execute(env, "WordCount");
    }
    counts = spate_name(spate_map(counts, format, spate_type_string()), "Format");
    if (output != NULL)
        spate_sink_text_file(counts, output);
    else
        spate_sink_print(counts);
    return spate_execute(env, "WordCount");
}
