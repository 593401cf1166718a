/* The hand-written C DataStream jobs of Nexmark q1 and q2 that sql_bench
 * sets beside the same queries in spate SQL, written as a user writes a job,
 * against the public API only, with the Nexmark generator
 * (src/sql/sql_nexmark.c, plain C) compiled in:
 *
 *   q1 --count N --rate R --base-time B   each bid's price in euros
 *                                         (price * 0.908, 3 decimals)
 *   q2 --count N --rate R --base-time B   the bids of every 123rd auction
 *
 * Both do what the SQL job does: event numbers from a generator source,
 * each made into its event (a bid's fields only for bids), event time from
 * dateTime with watermarks 4 s behind (bench/nexmark/ddl.sql's), the bids
 * kept, the query's row made. The sink adds up the rows (accumulator
 * "rows") and their prices ("price_sum") for sql_bench's checks. */
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

#include "sql/sql_nexmark.h"

/* A Nexmark event as the source emits it: the kind, and a bid's fields. */
struct event {
    int64_t kind;
    int64_t auction;
    int64_t bidder;
    int64_t price;
    int64_t date_time;
    spate_str channel;
    spate_str url;
    spate_str extra;
};

struct q1_row {
    int64_t auction;
    int64_t bidder;
    int64_t price_milli; /* DECIMAL(18, 3) */
    int64_t date_time;
    spate_str extra;
};

struct q2_row {
    int64_t auction;
    int64_t price;
};

struct params {
    int64_t rate;
    int64_t base_time;
};

static void
gen_open(spate_ctx *ctx)
{
    size_t len;
    const struct params *p = spate_ctx_params(ctx, &len);
    struct sql_nexmark_gen *g;
    struct sql_nexmark_config c;
    const char *why = "out of memory";

    if (len != sizeof *p) {
        spate_ctx_fail(ctx, "the nexmark generator has no parameters");
        return;
    }
    sql_nexmark_config_default(&c);
    c.first_event_rate = p->rate;
    c.base_time_ms = p->base_time;
    if ((g = calloc(1, sizeof *g)) == NULL || sql_nexmark_gen_init(g, &c, &why) != 0) {
        free(g);
        spate_ctx_fail(ctx, "the nexmark generator: %s", why);
        return;
    }
    spate_ctx_set_user(ctx, g);
}

static void
gen_close(spate_ctx *ctx)
{
    struct sql_nexmark_gen *g = spate_ctx_user(ctx);

    if (g != NULL)
        sql_nexmark_gen_release(g);
    free(g);
}

static void
gen_event(spate_ctx *ctx, uint64_t index, void *out)
{
    struct sql_nexmark_gen *g = spate_ctx_user(ctx);
    struct event *e = out;
    struct sql_nexmark_event ev;
    enum sql_nexmark_kind kind = sql_nexmark_kind_of(g, (int64_t)index);

    if (kind != SQL_NEXMARK_BID) {
        /* The other kinds' fields: made only by a job that reads them. */
        memset(e, 0, sizeof *e);
        e->kind = kind;
        return;
    }
    sql_nexmark_next(g, (int64_t)index, &ev);
    e->kind = kind;
    e->auction = ev.bid.auction;
    e->bidder = ev.bid.bidder;
    e->price = ev.bid.price;
    e->date_time = ev.date_time;
    e->channel = (spate_str){ ev.bid.channel.p, ev.bid.channel.len };
    e->url = (spate_str){ ev.bid.url.p, ev.bid.url.len };
    e->extra = (spate_str){ ev.extra.p, ev.extra.len };
}

static int64_t
event_time(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct event *)rec)->date_time;
}

static bool
is_bid(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct event *)rec)->kind == SQL_NEXMARK_BID;
}

static bool
is_q2_bid(spate_ctx *ctx, const void *rec)
{
    const struct event *e = rec;

    (void)ctx;
    return e->kind == SQL_NEXMARK_BID && e->auction % 123 == 0;
}

static void
to_q1(spate_ctx *ctx, const void *in, void *out)
{
    const struct event *e = in;
    struct q1_row *r = out;

    (void)ctx;
    r->auction = e->auction;
    r->bidder = e->bidder;
    r->price_milli = e->price * 908; /* 0.908 * price at scale 3 */
    r->date_time = e->date_time;
    r->extra = e->extra;
}

static void
to_q2(spate_ctx *ctx, const void *in, void *out)
{
    const struct event *e = in;
    struct q2_row *r = out;

    (void)ctx;
    r->auction = e->auction;
    r->price = e->price;
}

struct sums {
    spate_counter *rows, *price_sum;
};

static void
sink_open(spate_ctx *ctx)
{
    struct sums *s = calloc(1, sizeof *s);

    if (s == NULL) {
        spate_ctx_fail(ctx, "out of memory");
        return;
    }
    s->rows = spate_ctx_counter(ctx, "rows");
    s->price_sum = spate_ctx_counter(ctx, "price_sum");
    spate_ctx_set_user(ctx, s);
}

static void
sink_close(spate_ctx *ctx)
{
    free(spate_ctx_user(ctx));
}

static void
sink_q1(spate_ctx *ctx, const void *in)
{
    const struct sums *s = spate_ctx_user(ctx);

    spate_counter_add(s->rows, 1);
    spate_counter_add(s->price_sum, ((const struct q1_row *)in)->price_milli / 908);
}

static void
sink_q2(spate_ctx *ctx, const void *in)
{
    const struct sums *s = spate_ctx_user(ctx);

    spate_counter_add(s->rows, 1);
    spate_counter_add(s->price_sum, ((const struct q2_row *)in)->price);
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const spate_type *i64 = spate_type_int64(), *str = spate_type_string();
    const spate_type *ef[] = { i64, i64, i64, i64, i64, str, str, str };
    const spate_type *q1f[] = { i64, i64, i64, i64, str };
    const spate_type *q2f[] = { i64, i64 };
    const spate_type *et = spate_type_tuple(env, 8, ef);
    spate_watermark_strategy ws = spate_watermarks_bounded(event_time, 4000);
    bool q2 = argc > 1 && strcmp(argv[1], "q2") == 0;
    struct params p = { 10000000, 0 };
    uint64_t count = 1000000;
    spate_stream *s;

    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--count") == 0)
            count = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--rate") == 0)
            p.rate = strtoll(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--base-time") == 0)
            p.base_time = strtoll(argv[i + 1], NULL, 10);
    }
    s = spate_source_generator(env, gen_event, et, count, (double)p.rate);
    s = spate_open_close(spate_params(spate_name(s, "Nexmark"), &p, sizeof p), gen_open, gen_close);
    s = spate_source_with_watermarks(s, &ws);
    if (q2) {
        s = spate_name(spate_filter(s, is_q2_bid), "Bids of every 123rd auction");
        s = spate_name(spate_map(s, to_q2, spate_type_tuple(env, 2, q2f)), "Auction and price");
        s = spate_sink(s, sink_q2);
    } else {
        s = spate_name(spate_filter(s, is_bid), "Bids");
        s = spate_name(spate_map(s, to_q1, spate_type_tuple(env, 5, q1f)), "Euros");
        s = spate_sink(s, sink_q1);
    }
    spate_open_close(spate_name(s, "Sum"), sink_open, sink_close);
    return spate_execute(env, q2 ? "Nexmark q2 (C)" : "Nexmark q1 (C)");
}
