/* SessionWindowing, as Flink's example: clicks per user, grouped into event-
 * time sessions that end after a gap of inactivity; prints each session's
 * user, start, end and click count.
 *
 *   spate run [--local] build/examples/session_windowing.so [--gap-ms 3]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

struct click {
    spate_str user;
    int64_t ts;
    int64_t count;
};

struct session {
    spate_str user;
    int64_t start, end, clicks;
};

static const char *const users[] = { "a", "b", "c" };

/* Flink's example data: (user, time, 1) with bursts and pauses. */
static const int64_t times[][3] = {
    { 0, 1, 1 }, { 1, 1, 1 }, { 0, 2, 1 },  { 2, 6, 1 },  { 1, 6, 1 },
    { 0, 7, 1 }, { 1, 8, 1 }, { 2, 10, 1 }, { 0, 10, 1 }, { 2, 11, 1 },
};

static void
make_click(spate_ctx *ctx, uint64_t i, void *out)
{
    struct click *c = out;

    (void)ctx;
    c->user.data = users[times[i][0]];
    c->user.len = strlen(c->user.data);
    c->ts = times[i][1];
    c->count = times[i][2];
}

static int64_t
click_time(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct click *)rec)->ts;
}

static void
summarize(spate_ctx *ctx, spate_time_window w, spate_iter *clicks)
{
    struct click c;
    struct session s = { { NULL, 0 }, w.start, w.end, 0 };

    while (spate_list_next(clicks, &c)) {
        s.user = c.user;
        s.clicks += c.count;
    }
    spate_emit(ctx, &s);
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    int64_t gap = 3;
    const spate_type *cf[] = { spate_type_string(), spate_type_int64(), spate_type_int64() };
    const spate_type *sf[] = { spate_type_string(), spate_type_int64(), spate_type_int64(),
                               spate_type_int64() };
    const spate_type *click = spate_type_tuple(env, 3, cf);
    const spate_type *session = spate_type_tuple(env, 4, sf);
    spate_watermark_strategy ws = spate_watermarks_monotonous(click_time);
    spate_stream *s;

    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--gap-ms") == 0)
            gap = atoll(argv[i + 1]);
    s = spate_source_generator(env, make_click, click, sizeof times / sizeof times[0], 0);
    s = spate_source_with_watermarks(spate_set_parallelism(s, 1), &ws);
    s = spate_window(spate_key_by_field(s, 0), spate_session_event_time(gap));
    s = spate_window_process(s, summarize, session);
    spate_sink_print(s);
    return spate_execute(env, "Session Windowing");
}
