/* Kafka WordCount: the words of the records of a Kafka topic counted per
 * tumbling 1 s event-time window (the records' Kafka timestamps, with
 * per-partition watermarks), each window's count of each word written to
 * another topic as JSON {"window":START,"word":"w","count":N} keyed by the
 * word, exactly once (Kafka transactions committed at checkpoints):
 *
 *   spate run build/examples/kafka_wordcount.so --brokers localhost:9092
 *             --input-topic words --output-topic counts [--group wordcount]
 *             [--window-ms 1000] [--checkpoint-ms 1000] [--bounded]
 *
 * --bounded reads what the input topic holds when the job starts, then
 * ends (Flink's scan.bounded.mode latest-offset). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

struct word_count {
    spate_str word;
    int64_t count;
};

struct window_count {
    int64_t window;
    spate_str word;
    int64_t count;
};

/* Words: runs of ASCII letters and digits, lower-cased. */
static void
tokenize(spate_ctx *ctx, const void *in)
{
    const spate_str *line = in;
    char *lower = spate_ctx_alloc(ctx, line->len + 1);
    struct word_count wc = { { NULL, 0 }, 1 };
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

static void
add(spate_ctx *ctx, const void *a, const void *b, void *out)
{
    struct word_count *r = out;

    (void)ctx;
    *r = *(const struct word_count *)a;
    r->count += ((const struct word_count *)b)->count;
}

/* The window's count, with the window's start. */
static void
with_window(spate_ctx *ctx, spate_time_window window, spate_iter *elements)
{
    struct word_count wc;

    while (spate_list_next(elements, &wc)) {
        struct window_count out = { window.start, wc.word, wc.count };

        spate_emit(ctx, &out);
    }
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const char *brokers = NULL, *input = NULL, *output = NULL, *group = "spate-kafka-wordcount";
    int64_t window_ms = 1000, checkpoint_ms = 1000;
    bool bounded = false;
    const spate_type *wc_fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *wc = spate_type_tuple(env, 2, wc_fields);
    const spate_type *out_fields[] = { spate_type_int64(), spate_type_string(),
                                       spate_type_int64() };
    const spate_type *out = spate_type_tuple(env, 3, out_fields);
    spate_watermark_strategy wm = spate_watermarks_bounded(NULL, 200);
    char prefix[256];
    spate_stream *s;

    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--bounded") == 0) {
            bounded = true;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "kafka_wordcount: %s needs a value\n", argv[i]);
            return SPATE_EINVAL;
        }
        if (strcmp(argv[i], "--brokers") == 0)
            brokers = v;
        else if (strcmp(argv[i], "--input-topic") == 0)
            input = v;
        else if (strcmp(argv[i], "--output-topic") == 0)
            output = v;
        else if (strcmp(argv[i], "--group") == 0)
            group = v;
        else if (strcmp(argv[i], "--window-ms") == 0)
            window_ms = atoll(v);
        else if (strcmp(argv[i], "--checkpoint-ms") == 0)
            checkpoint_ms = atoll(v);
        else {
            fprintf(stderr, "kafka_wordcount: unknown argument '%s'\n", argv[i]);
            return SPATE_EINVAL;
        }
        i++;
    }
    if (brokers == NULL || input == NULL || output == NULL || window_ms <= 0 ||
        checkpoint_ms < 10) {
        fprintf(stderr, "kafka_wordcount: give --brokers, --input-topic and --output-topic "
                        "(--window-ms > 0, --checkpoint-ms >= 10)\n");
        return SPATE_EINVAL;
    }
    snprintf(prefix, sizeof prefix, "kafka-wordcount-%s", output);
    /* Key, value pairs. */
    /* clang-format off */
    const char *const source_options[] = {
        "topic", input,
        "properties.bootstrap.servers", brokers,
        "properties.group.id", group,
        "scan.startup.mode", "earliest-offset",
        "scan.bounded.mode", bounded ? "latest-offset" : "unbounded",
        "scan.topic-partition-discovery.interval", "2 s",
        "value.format", "string",
        NULL,
    };
    /* clang-format on */
    /* Key, value pairs. */
    /* clang-format off */
    const char *const sink_options[] = {
        "topic", output,
        "properties.bootstrap.servers", brokers,
        "sink.delivery-guarantee", "exactly-once",
        "sink.transactional-id-prefix", prefix,
        "value.format", "json",
        "fields", "window,word,count",
        "key.fields", "word",
        NULL,
    };
    /* clang-format on */

    spate_env_enable_checkpointing(env, checkpoint_ms, true);
    s = spate_from_source(env, "kafka", spate_type_string(), source_options);
    s = spate_source_with_watermarks(spate_uid(s, "kafka-words"), &wm);
    s = spate_flat_map(s, tokenize, wc);
    s = spate_window(spate_key_by_field(s, 0), spate_tumbling_event_time(window_ms));
    s = spate_uid(spate_window_reduce(s, add, with_window, out), "window-counts");
    spate_uid(spate_sink_to(s, "kafka", sink_options), "kafka-counts");
    return spate_execute(env, "Kafka WordCount");
}
