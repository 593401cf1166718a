/* SocketWindowWordCount, as Flink's example: counts the words of the text
 * arriving on a TCP socket in tumbling processing-time windows, and prints
 * each window's counts. Start a server first, e.g. `nc -lk 9999`, then
 *
 *   spate run [--local] build/examples/socket_window_wordcount.so --port 9999
 *             [--hostname localhost] [--window-ms 5000]
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

struct word_count {
    spate_str word;
    int64_t count;
};

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

        while (i < line->len && isspace((unsigned char)lower[i]))
            i++;
        for (start = i; i < line->len && !isspace((unsigned char)lower[i]); i++)
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

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const char *host = "localhost";
    int port = 0;
    int64_t window_ms = 5000;
    const spate_type *fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *wc = spate_type_tuple(env, 2, fields);
    spate_stream *s;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--hostname") == 0)
            host = argv[i + 1];
        else if (strcmp(argv[i], "--port") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--window-ms") == 0)
            window_ms = atoll(argv[i + 1]);
    }
    if (port <= 0) {
        fprintf(stderr, "socket_window_wordcount: give --port (and --hostname)\n");
        return SPATE_EINVAL;
    }
    s = spate_flat_map(spate_source_socket(env, host, port), tokenize, wc);
    s = spate_window(spate_key_by_field(s, 0), spate_tumbling_processing_time(window_ms));
    s = spate_window_reduce(s, add, NULL, NULL);
    spate_set_parallelism(spate_sink_print(s), 1);
    return spate_execute(env, "Socket Window WordCount");
}
