/* Click count: a first job. Reads clicks from CSV files (user,url,event
 * time in ms; a "user,url,event_time" header is skipped), counts the
 * clicks of each user in tumbling event-time windows, and writes each
 * window's count as "user,window_start,window_end,count". Clicks that come
 * after their window was counted (later than the out-of-orderness allows)
 * go to a side output of their own (a typed tag: spate_output_tag), written
 * to a sink of their own: "user,url,event_time". Lines that are
 * not clicks are counted in the job's "malformed" accumulator.
 *
 *   spate run [--local] build/examples/click_count.so --input PATH
 *       [--output FOLDER] [--window-ms N] [--out-of-orderness-ms N]
 *
 * --input: a CSV file or a folder of them; --output: FOLDER/counts and
 * FOLDER/late (folders of part files), else both on standard output, late
 * clicks prefixed "late: ". Windows are 60 s, clicks may be 5 s out of
 * order, unless told otherwise. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

struct click {
    spate_str user;
    spate_str url;
    int64_t time_ms;
};

/* The next comma-separated field of line from *at; false at the end. */
static bool
next_field(const spate_str *line, size_t *at, spate_str *field)
{
    const char *comma;

    if (*at > line->len)
        return false;
    field->data = line->data + *at;
    comma = memchr(field->data, ',', line->len - *at);
    field->len = comma ? (size_t)(comma - field->data) : line->len - *at;
    *at += field->len + 1;
    return true;
}

static bool
parse_ms(spate_str f, int64_t *out)
{
    char buf[32], *end;

    if (f.len == 0 || f.len >= sizeof buf)
        return false;
    memcpy(buf, f.data, f.len);
    buf[f.len] = '\0';
    errno = 0;
    *out = strtoll(buf, &end, 10);
    return *end == '\0' && errno == 0;
}

static bool
is_header(const spate_str *line)
{
    static const char header[] = "user,url,event_time";

    return line->len == sizeof header - 1 && memcmp(line->data, header, line->len) == 0;
}

/* The "malformed" counter, looked up once per parallel instance. */
static void
parse_open(spate_ctx *ctx)
{
    spate_ctx_set_user(ctx, spate_ctx_counter(ctx, "malformed"));
}

/* A CSV line into a click; anything else counts as malformed. */
static void
parse(spate_ctx *ctx, const void *in)
{
    const spate_str *line = in;
    struct click c;
    spate_str rest;
    size_t at = 0;

    if (line->len == 0 || is_header(line))
        return;
    if (next_field(line, &at, &c.user) && c.user.len > 0 && next_field(line, &at, &c.url) &&
        next_field(line, &at, &rest) && parse_ms(rest, &c.time_ms) &&
        !next_field(line, &at, &rest)) {
        spate_emit(ctx, &c);
        return;
    }
    spate_counter_add(spate_ctx_user(ctx), 1);
}

static int64_t
click_time(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct click *)rec)->time_ms;
}

/* Bounded out-of-orderness, with a watermark after every click rather than
 * every pipeline.auto-watermark-interval: which clicks are late then
 * depends on the input alone, not on how fast it was read. */
static int64_t
watermark_after(spate_ctx *ctx, const void *rec, int64_t time_ms)
{
    const int64_t *out_of_orderness_ms = spate_ctx_params(ctx, NULL);

    (void)rec;
    return time_ms - *out_of_orderness_ms - 1;
}

static void
count_create(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    *(int64_t *)acc = 0;
}

static void
count_add(spate_ctx *ctx, const void *in, void *acc)
{
    (void)ctx;
    (void)in;
    (*(int64_t *)acc)++;
}

static void
count_result(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)acc;
}

/* The window's count, with its user (the key) and bounds, as a line. */
static void
format_count(spate_ctx *ctx, spate_time_window w, spate_iter *counts)
{
    spate_str user = spate_ctx_current_key_string(ctx);
    int64_t count;
    spate_str line;
    char *buf;

    if (!spate_list_next(counts, &count))
        return;
    buf = spate_ctx_alloc(ctx, user.len + 64);
    line.data = buf;
    line.len = (size_t)snprintf(buf, user.len + 64, "%.*s,%lld,%lld,%lld", (int)user.len, user.data,
                                (long long)w.start, (long long)w.end, (long long)count);
    spate_emit(ctx, &line);
}

/* A late click as its CSV line, prefixed when it shares standard output. */
static void
format_late(spate_ctx *ctx, const void *in, void *out)
{
    const struct click *c = in;
    const bool *on_stdout = spate_ctx_params(ctx, NULL);
    const char *prefix = on_stdout != NULL && *on_stdout ? "late: " : "";
    size_t cap = c->user.len + c->url.len + 48;
    char *buf = spate_ctx_alloc(ctx, cap);
    spate_str *line = out;

    line->data = buf;
    line->len = (size_t)snprintf(buf, cap, "%s%.*s,%.*s,%lld", prefix, (int)c->user.len,
                                 c->user.data, (int)c->url.len, c->url.data, (long long)c->time_ms);
}

static int
usage(const char *what)
{
    fprintf(stderr,
            "click_count: %s (--input PATH [--output FOLDER] [--window-ms N] "
            "[--out-of-orderness-ms N])\n",
            what);
    return SPATE_EINVAL;
}

static bool
parse_arg_ms(const char *s, int64_t min, int64_t *out)
{
    char *end;

    errno = 0;
    *out = strtoll(s, &end, 10);
    return *s != '\0' && *end == '\0' && errno == 0 && *out >= min;
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const char *input = NULL, *output = NULL;
    int64_t window_ms = 60000, out_of_orderness_ms = 5000;
    const spate_type *fields[] = { spate_type_string(), spate_type_string(), spate_type_int64() };
    const spate_type *click = spate_type_tuple(env, 3, fields);
    spate_tag late = spate_output_tag(env, "late-clicks", click);
    spate_aggregate count = { spate_type_int64(), spate_type_int64(), count_create,
                              count_add,          count_result,       NULL };
    spate_watermark_strategy ws = { .timestamp = click_time, .watermark = watermark_after };
    bool on_stdout = true;
    spate_stream *clicks, *counts, *late_clicks;
    char path[4096];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--input") == 0 && i + 1 < argc)
            input = argv[++i];
        else if (strcmp(argv[i], "--output") == 0 && i + 1 < argc)
            output = argv[++i];
        else if (strcmp(argv[i], "--window-ms") == 0 && i + 1 < argc) {
            if (!parse_arg_ms(argv[++i], 1, &window_ms))
                return usage("--window-ms needs a positive number of milliseconds");
        } else if (strcmp(argv[i], "--out-of-orderness-ms") == 0 && i + 1 < argc) {
            if (!parse_arg_ms(argv[++i], 0, &out_of_orderness_ms))
                return usage("--out-of-orderness-ms needs a number of milliseconds, 0 or more");
        } else {
            snprintf(path, sizeof path, "unknown argument '%s'", argv[i]);
            return usage(path);
        }
    }
    if (input == NULL)
        return usage("which clicks? --input is missing");

    clicks = spate_name(spate_source_text_file(env, input), "Source: Clicks");
    clicks = spate_name(spate_flat_map(spate_uid(clicks, "source"), parse, click), "Parse");
    spate_open_close(clicks, parse_open, NULL);
    clicks = spate_assign_timestamps_and_watermarks(spate_uid(clicks, "parse"), &ws);
    clicks = spate_params(spate_name(spate_uid(clicks, "timestamps"), "Click time"),
                          &out_of_orderness_ms, sizeof out_of_orderness_ms);

    counts = spate_window(spate_key_by_field(clicks, 0), spate_tumbling_event_time(window_ms));
    spate_late_data_side_output(counts, late);
    counts = spate_window_aggregate(counts, &count, format_count, spate_type_string());
    counts = spate_name(spate_uid(counts, "counts"), "Clicks per user");
    late_clicks =
        spate_name(spate_map(spate_side_output(counts, late), format_late, spate_type_string()),
                   "Format late clicks");

    if (output != NULL) {
        snprintf(path, sizeof path, "%s/counts", output);
        spate_name(spate_sink_text_file(counts, path), "Counts");
        snprintf(path, sizeof path, "%s/late", output);
        spate_name(spate_sink_text_file(late_clicks, path), "Late clicks");
    } else {
        spate_name(spate_sink_print(counts), "Counts");
        spate_name(spate_sink_print(spate_params(late_clicks, &on_stdout, sizeof on_stdout)),
                   "Late clicks");
    }
    return spate_execute(env, "Click count");
}
