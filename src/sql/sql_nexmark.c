/* The Nexmark generator (sql_nexmark.h). Each event is made as the
 * Nexmark repository's Flink generator makes it in the release whose
 * NexmarkGenerator seeds a java.util.Random with each event's id: a single
 * generator on one timeline (Flink's at parallelism 1: the first event id 1
 * and event number 1), with the bid's channel and url of its later
 * BidGenerator. Java's arithmetic is kept where it differs from C's
 * (truncating division and remainder, int wrap-around, Math.round). */
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql_nexmark.h"

#define FIRST_AUCTION_ID   1000
#define FIRST_PERSON_ID    1000
#define FIRST_CATEGORY_ID  10
#define NUM_CATEGORIES     5
#define HOT_AUCTION_RATIO  100
#define HOT_BIDDER_RATIO   100
#define HOT_SELLER_RATIO   100
#define PERSON_ID_LEAD     10
#define AUCTION_ID_LEAD    10
#define MIN_STRING_LENGTH  3
#define HOT_CHANNELS_RATIO 2
#define CHANNELS_NUMBER    10000
#define NHOT               4
/* The largest avg-size this generator takes: an event's strings fit in a
 * buffer of twice it. */
#define MAX_AVG_SIZE (16 << 20)

struct sql_nexmark_url {
    char *s; /* NULL until drawn */
    size_t len;
};

static const char *const first_names[] = { "Peter", "Paul",  "Luke",  "John",   "Saul",  "Vicky",
                                           "Kate",  "Julie", "Sarah", "Deiter", "Walter" };
static const char *const last_names[] = { "Shultz", "Abrams", "Spencer", "White", "Bartels",
                                          "Walton", "Smith",  "Jones",   "Noris" };
static const char *const us_cities[] = { "Phoenix",  "Los Angeles", "San Francisco", "Boise",
                                         "Portland", "Bend",        "Redmond",       "Seattle",
                                         "Kent",     "Cheyenne" };
static const char *const us_states[] = { "AZ", "CA", "ID", "OR", "WA", "WY" };
static const char *const hot_channels[NHOT] = { "Google", "Facebook", "Baidu", "Apple" };

#define NELEM(a) ((int32_t)(sizeof(a) / sizeof((a)[0])))

/* ---- java.util.Random ---- */

#define JR_MULT 0x5DEECE66DULL
#define JR_MASK ((1ULL << 48) - 1)

struct jrand {
    uint64_t seed;
};

static void
jr_seed(struct jrand *r, int64_t seed)
{
    r->seed = ((uint64_t)seed ^ JR_MULT) & JR_MASK;
}

static int32_t
jr_next(struct jrand *r, int bits)
{
    r->seed = (r->seed * JR_MULT + 0xBULL) & JR_MASK;
    return (int32_t)(uint32_t)(r->seed >> (48 - bits));
}

static int32_t
jr_int(struct jrand *r)
{
    return jr_next(r, 32);
}

/* nextInt(bound), bound > 0: Java's rejection of the biased tail. */
static int32_t
jr_int_below(struct jrand *r, int32_t bound)
{
    int32_t x = jr_next(r, 31), m = bound - 1;

    if ((bound & m) == 0)
        return (int32_t)(((int64_t)bound * x) >> 31);
    for (int32_t u = x; (int32_t)((uint32_t)u - (uint32_t)(x = u % bound) + (uint32_t)m) < 0;
         u = jr_next(r, 31))
        ;
    return x;
}

static int64_t
jr_long(struct jrand *r)
{
    uint64_t hi = (uint64_t)(int64_t)jr_next(r, 32) << 32;

    return (int64_t)(hi + (uint64_t)(int64_t)jr_next(r, 32));
}

static double
jr_double(struct jrand *r)
{
    int64_t hi = (int64_t)jr_next(r, 26) << 27;

    return (double)(hi + jr_next(r, 27)) * 0x1.0p-53;
}

/* ---- the generator's helpers (LongGenerator, PriceGenerator, ...) ---- */

/* Math.round for the values here (finite, far from the long range). */
static int64_t
java_round(double x)
{
    return (int64_t)floor(x + 0.5);
}

static int64_t
next_long_below(struct jrand *r, int64_t n)
{
    int64_t v;

    if (n < INT32_MAX)
        return jr_int_below(r, (int32_t)n);
    v = jr_long(r) % n; /* "very skewed", as the reference's */
    return v < 0 ? -v : v;
}

static int64_t
next_price(struct jrand *r)
{
    return java_round(pow(10.0, jr_double(r) * 6.0) * 100.0);
}

/* The strings of the event being made. */
struct out {
    char *buf;
    size_t used;
};

static struct sql_nexmark_str
out_put(struct out *o, const char *s, size_t n)
{
    struct sql_nexmark_str v = { o->buf + o->used, n };

    memcpy(o->buf + o->used, s, n);
    o->used += n;
    return v;
}

/* StringsGenerator.nextString: 3 .. max - 1 letters or the special
 * character, trimmed of spaces. */
static struct sql_nexmark_str
next_string(struct jrand *r, struct out *o, int32_t max, char special)
{
    int32_t len = MIN_STRING_LENGTH + jr_int_below(r, max - MIN_STRING_LENGTH);
    char *s = o->buf + o->used;
    size_t b = 0, e = 0;

    for (int32_t i = 0; i < len; i++)
        s[i] = jr_int_below(r, 13) == 0 ? special : (char)('a' + jr_int_below(r, 26));
    e = (size_t)len;
    while (b < e && (unsigned char)s[b] <= ' ')
        b++;
    while (e > b && (unsigned char)s[e - 1] <= ' ')
        e--;
    memmove(s, s + b, e - b);
    o->used += e - b;
    return (struct sql_nexmark_str){ s, e - b };
}

/* StringsGenerator.nextExactString: six letters from each int, Java's
 * remainder (a negative int gives characters below 'a'). */
static struct sql_nexmark_str
next_exact_string(struct jrand *r, struct out *o, int32_t length)
{
    char *s = o->buf + o->used;
    int32_t rnd = 0, n = 0;

    for (int32_t i = 0; i < length; i++) {
        if (n == 0) {
            rnd = jr_int(r);
            n = 6;
        }
        s[i] = (char)('a' + rnd % 26);
        rnd /= 26;
        n--;
    }
    o->used += (size_t)length;
    return (struct sql_nexmark_str){ s, (size_t)length };
}

/* StringsGenerator.nextExtra: the event's size brought to about avg. */
static struct sql_nexmark_str
next_extra(struct jrand *r, struct out *o, int32_t current, int32_t avg)
{
    int32_t delta, size;

    if (current > avg)
        return (struct sql_nexmark_str){ o->buf + o->used, 0 };
    avg -= current;
    delta = (int32_t)java_round(avg * 0.2);
    size = avg - delta + (delta == 0 ? 0 : jr_int_below(r, 2 * delta));
    return next_exact_string(r, o, size);
}

/* ---- ids ---- */

static int64_t
last_base0_person_id(const struct sql_nexmark_gen *g, int64_t event_id)
{
    int64_t epoch = event_id / g->total, offset = event_id % g->total;

    if (offset >= g->c.person_proportion)
        offset = g->c.person_proportion - 1;
    return epoch * g->c.person_proportion + offset;
}

static int64_t
last_base0_auction_id(const struct sql_nexmark_gen *g, int64_t event_id)
{
    int64_t epoch = event_id / g->total, offset = event_id % g->total;
    int64_t p = g->c.person_proportion, a = g->c.auction_proportion;

    if (offset < p) {
        epoch--;
        offset = a - 1;
    } else if (offset >= p + a) {
        offset = a - 1;
    } else {
        offset -= p;
    }
    return epoch * a + offset;
}

static int64_t
next_base0_person_id(const struct sql_nexmark_gen *g, struct jrand *r, int64_t event_id)
{
    int64_t people = last_base0_person_id(g, event_id) + 1;
    int64_t active = people < g->c.num_active_people ? people : g->c.num_active_people;

    return people - active + next_long_below(r, active + PERSON_ID_LEAD);
}

static int64_t
next_base0_auction_id(const struct sql_nexmark_gen *g, struct jrand *r, int64_t event_id)
{
    int64_t max = last_base0_auction_id(g, event_id);
    int64_t min = max - g->c.num_in_flight_auctions > 0 ? max - g->c.num_in_flight_auctions : 0;

    return min + next_long_below(r, max - min + 1 + AUCTION_ID_LEAD);
}

/* GeneratorConfig.timestampForEvent. */
static int64_t
timestamp_for(const struct sql_nexmark_gen *g, int64_t event_number)
{
    return g->c.base_time_ms + (int64_t)((double)event_number * g->delay_us) / 1000;
}

/* ---- the events ---- */

static void
next_person(struct sql_nexmark_gen *g, struct jrand *r, struct out *o, int64_t event_id,
            struct sql_nexmark_event *ev)
{
    const char *first = first_names[jr_int_below(r, NELEM(first_names))];
    const char *last = last_names[jr_int_below(r, NELEM(last_names))];
    struct sql_nexmark_str a, b;
    char cc[8];
    size_t size;

    ev->person.id = last_base0_person_id(g, event_id) + FIRST_PERSON_ID;
    ev->person.name.p = o->buf + o->used;
    out_put(o, first, strlen(first));
    out_put(o, " ", 1);
    out_put(o, last, strlen(last));
    ev->person.name.len = (size_t)(o->buf + o->used - ev->person.name.p);
    /* email: nextString(7) "@" nextString(5) ".com" */
    a = next_string(r, o, 7, ' ');
    out_put(o, "@", 1);
    b = next_string(r, o, 5, ' ');
    out_put(o, ".com", 4);
    ev->person.email = (struct sql_nexmark_str){ a.p, (size_t)(b.p + b.len + 4 - a.p) };
    ev->person.credit_card.p = o->buf + o->used;
    for (int i = 0; i < 4; i++) {
        int n = snprintf(cc, sizeof cc, "%s%04d", i > 0 ? " " : "", jr_int_below(r, 10000));

        out_put(o, cc, (size_t)n);
    }
    ev->person.credit_card.len = (size_t)(o->buf + o->used - ev->person.credit_card.p);
    a.p = us_cities[jr_int_below(r, NELEM(us_cities))];
    ev->person.city = out_put(o, a.p, strlen(a.p));
    a.p = us_states[jr_int_below(r, NELEM(us_states))];
    ev->person.state = out_put(o, a.p, strlen(a.p));
    size = 8 + ev->person.name.len + ev->person.email.len + ev->person.credit_card.len +
           ev->person.city.len + ev->person.state.len;
    ev->extra = next_extra(r, o, (int32_t)size, g->c.avg_person_size);
}

static void
next_auction(struct sql_nexmark_gen *g, struct jrand *r, struct out *o, int64_t event_id,
             int64_t event_number, struct sql_nexmark_event *ev)
{
    int64_t seller, horizon, events_ahead;
    size_t size;

    ev->auction.id = last_base0_auction_id(g, event_id) + FIRST_AUCTION_ID;
    if (jr_int_below(r, g->c.hot_sellers_ratio) > 0)
        seller = (last_base0_person_id(g, event_id) / HOT_SELLER_RATIO) * HOT_SELLER_RATIO;
    else
        seller = next_base0_person_id(g, r, event_id);
    ev->auction.seller = seller + FIRST_PERSON_ID;
    ev->auction.category = FIRST_CATEGORY_ID + jr_int_below(r, NUM_CATEGORIES);
    ev->auction.initial_bid = next_price(r);
    /* nextAuctionLengthMs: a length of about the time until
     * numInFlightAuctions more auctions come. */
    events_ahead = ((int64_t)g->c.num_in_flight_auctions * g->total) / g->c.auction_proportion;
    horizon = timestamp_for(g, event_number + events_ahead) - ev->date_time;
    ev->auction.expires = ev->date_time + 1 + next_long_below(r, horizon * 2 > 1 ? horizon * 2 : 1);
    ev->auction.item_name = next_string(r, o, 20, ' ');
    ev->auction.description = next_string(r, o, 100, ' ');
    ev->auction.reserve = ev->auction.initial_bid + next_price(r);
    size = 8 + ev->auction.item_name.len + ev->auction.description.len + 8 + 8 + 8 + 8 + 8;
    ev->extra = next_extra(r, o, (int32_t)size, g->c.avg_auction_size);
}

/* The URL of a channel: the reference draws its path from an unseeded
 * Random (different in every run); here from one seeded with the
 * channel's number (a hot channel's: CHANNELS_NUMBER + its index), so
 * that the stream is the same in every run. */
static const struct sql_nexmark_url *
channel_url(struct sql_nexmark_gen *g, int32_t slot)
{
    struct sql_nexmark_url *u = &g->urls[slot];
    char buf[160];
    struct out o = { buf, 0 };
    struct jrand r;

    if (u->s != NULL)
        return u;
    jr_seed(&r, slot);
    out_put(&o, "https://www.nexmark.com/", 24);
    for (int i = 0; i < 3; i++) {
        next_string(&r, &o, 5, '_');
        out_put(&o, "/", 1);
    }
    out_put(&o, "item.htm?query=1", 16);
    if (slot < CHANNELS_NUMBER && jr_int_below(&r, 10) > 0) {
        /* Math.abs(Integer.reverse(n)): Integer.MIN_VALUE stays negative. */
        uint32_t v = (uint32_t)slot, rev = 0;
        int64_t id;

        for (int i = 0; i < 32; i++, v >>= 1)
            rev = rev << 1 | (v & 1);
        id = (int32_t)rev;
        id = id < 0 && id != INT32_MIN ? -id : id;
        o.used +=
            (size_t)snprintf(buf + o.used, sizeof buf - o.used, "&channel_id=%lld", (long long)id);
    }
    u->s = malloc(o.used);
    if (u->s == NULL)
        abort();
    memcpy(u->s, buf, o.used);
    u->len = o.used;
    return u;
}

static void
next_bid(struct sql_nexmark_gen *g, struct jrand *r, struct out *o, int64_t event_id,
         struct sql_nexmark_event *ev)
{
    const struct sql_nexmark_url *url;
    int64_t auction, bidder;
    int32_t slot;

    if (jr_int_below(r, g->c.hot_auction_ratio) > 0)
        auction = (last_base0_auction_id(g, event_id) / HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO;
    else
        auction = next_base0_auction_id(g, r, event_id);
    ev->bid.auction = auction + FIRST_AUCTION_ID;
    if (jr_int_below(r, g->c.hot_bidders_ratio) > 0)
        bidder = (last_base0_person_id(g, event_id) / HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1;
    else
        bidder = next_base0_person_id(g, r, event_id);
    ev->bid.price = next_price(r);
    if (jr_int_below(r, HOT_CHANNELS_RATIO) > 0) {
        int32_t i = jr_int_below(r, NHOT);

        ev->bid.channel = (struct sql_nexmark_str){ hot_channels[i], strlen(hot_channels[i]) };
        slot = CHANNELS_NUMBER + i;
    } else {
        char digits[8];
        int n = 0;

        /* "channel-" + the number, without printf's cost per bid */
        slot = jr_int_below(r, CHANNELS_NUMBER);
        for (int32_t v = slot; n == 0 || v > 0; v /= 10)
            digits[n++] = (char)('0' + v % 10);
        ev->bid.channel = out_put(o, "channel-", 8);
        while (n > 0)
            ev->bid.channel.len++, o->buf[o->used++] = digits[--n];
    }
    url = channel_url(g, slot);
    ev->bid.url = (struct sql_nexmark_str){ url->s, url->len };
    /* The reference's BidGenerator adds FIRST_PERSON_ID to the bidder
     * twice: kept, so that the bidders are its. */
    ev->bid.bidder = bidder + 2 * FIRST_PERSON_ID;
    ev->extra = next_extra(r, o, 8 + 8 + 8 + 8, g->c.avg_bid_size);
}

/* ---- the generator ---- */

void
sql_nexmark_config_default(struct sql_nexmark_config *c)
{
    *c = (struct sql_nexmark_config){
        .first_event_rate = 10000,
        .person_proportion = 1,
        .auction_proportion = 3,
        .bid_proportion = 46,
        .avg_person_size = 200,
        .avg_auction_size = 500,
        .avg_bid_size = 100,
        .hot_auction_ratio = 2,
        .hot_bidders_ratio = 4,
        .hot_sellers_ratio = 4,
        .num_in_flight_auctions = 100,
        .num_active_people = 1000,
        .base_time_ms = 0,
    };
}

int
sql_nexmark_gen_init(struct sql_nexmark_gen *g, const struct sql_nexmark_config *c,
                     const char **why)
{
    int32_t largest = c->avg_person_size;

    memset(g, 0, sizeof *g);
    if (c->person_proportion < 1 || c->auction_proportion < 1 || c->bid_proportion < 1) {
        *why = "each proportion is at least 1";
        return -1;
    }
    if (c->hot_auction_ratio < 1 || c->hot_bidders_ratio < 1 || c->hot_sellers_ratio < 1) {
        *why = "each hot ratio is at least 1";
        return -1;
    }
    if (c->first_event_rate < 1) {
        *why = "first-event.rate is at least 1";
        return -1;
    }
    if (c->num_active_people < 1 || c->num_in_flight_auctions < 1) {
        *why = "the active people and auctions in flight are at least 1";
        return -1;
    }
    if (c->avg_auction_size > largest)
        largest = c->avg_auction_size;
    if (c->avg_bid_size > largest)
        largest = c->avg_bid_size;
    if (c->avg_person_size < 0 || c->avg_auction_size < 0 || c->avg_bid_size < 0 ||
        largest > MAX_AVG_SIZE) {
        *why = "an avg-size is from 0 to 16 MiB";
        return -1;
    }
    g->c = *c;
    g->total = (int64_t)c->person_proportion + c->auction_proportion + c->bid_proportion;
    g->delay_us = 1000000.0 / (double)c->first_event_rate;
    g->cap = 2048 + 2 * (size_t)largest;
    g->buf = malloc(g->cap);
    g->urls = calloc(CHANNELS_NUMBER + NHOT, sizeof *g->urls);
    if (g->buf == NULL || g->urls == NULL)
        abort();
    return 0;
}

void
sql_nexmark_gen_release(struct sql_nexmark_gen *g)
{
    if (g->urls != NULL)
        for (int i = 0; i < CHANNELS_NUMBER + NHOT; i++)
            free(g->urls[i].s);
    free(g->urls);
    free(g->buf);
    memset(g, 0, sizeof *g);
}

/* Event number index + 1 of the generator whose first event id is 1: its
 * id is index + 2. */
enum sql_nexmark_kind
sql_nexmark_kind_of(const struct sql_nexmark_gen *g, int64_t index)
{
    int64_t rem = (index + 2) % g->total;

    if (rem < g->c.person_proportion)
        return SQL_NEXMARK_PERSON;
    if (rem < (int64_t)g->c.person_proportion + g->c.auction_proportion)
        return SQL_NEXMARK_AUCTION;
    return SQL_NEXMARK_BID;
}

void
sql_nexmark_next(struct sql_nexmark_gen *g, int64_t index, struct sql_nexmark_event *ev)
{
    int64_t number = index + 1, id = index + 2;
    struct out o = { g->buf, 0 };
    struct jrand r;

    jr_seed(&r, id);
    ev->kind = sql_nexmark_kind_of(g, index);
    ev->date_time = timestamp_for(g, number);
    if (ev->kind == SQL_NEXMARK_PERSON)
        next_person(g, &r, &o, id, ev);
    else if (ev->kind == SQL_NEXMARK_AUCTION)
        next_auction(g, &r, &o, id, number, ev);
    else
        next_bid(g, &r, &o, id, ev);
}

/* ---- the tables' columns ---- */

static const struct {
    enum sql_nexmark_kind kind;
    const char *name;
    enum sql_nexmark_field field;
    enum sql_nexmark_value value;
} fields[] = {
    { SQL_NEXMARK_PERSON, "id", SQL_NEXMARK_F_ID, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_PERSON, "name", SQL_NEXMARK_F_NAME, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_PERSON, "emailAddress", SQL_NEXMARK_F_EMAIL, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_PERSON, "creditCard", SQL_NEXMARK_F_CREDIT_CARD, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_PERSON, "city", SQL_NEXMARK_F_CITY, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_PERSON, "state", SQL_NEXMARK_F_STATE, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_PERSON, "dateTime", SQL_NEXMARK_F_DATE_TIME, SQL_NEXMARK_TIMESTAMP },
    { SQL_NEXMARK_PERSON, "extra", SQL_NEXMARK_F_EXTRA, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_AUCTION, "id", SQL_NEXMARK_F_ID, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_AUCTION, "itemName", SQL_NEXMARK_F_ITEM_NAME, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_AUCTION, "description", SQL_NEXMARK_F_DESCRIPTION, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_AUCTION, "initialBid", SQL_NEXMARK_F_INITIAL_BID, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_AUCTION, "reserve", SQL_NEXMARK_F_RESERVE, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_AUCTION, "dateTime", SQL_NEXMARK_F_DATE_TIME, SQL_NEXMARK_TIMESTAMP },
    { SQL_NEXMARK_AUCTION, "expires", SQL_NEXMARK_F_EXPIRES, SQL_NEXMARK_TIMESTAMP },
    { SQL_NEXMARK_AUCTION, "seller", SQL_NEXMARK_F_SELLER, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_AUCTION, "category", SQL_NEXMARK_F_CATEGORY, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_AUCTION, "extra", SQL_NEXMARK_F_EXTRA, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_BID, "auction", SQL_NEXMARK_F_AUCTION, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_BID, "bidder", SQL_NEXMARK_F_BIDDER, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_BID, "price", SQL_NEXMARK_F_PRICE, SQL_NEXMARK_BIGINT },
    { SQL_NEXMARK_BID, "channel", SQL_NEXMARK_F_CHANNEL, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_BID, "url", SQL_NEXMARK_F_URL, SQL_NEXMARK_VARCHAR },
    { SQL_NEXMARK_BID, "dateTime", SQL_NEXMARK_F_DATE_TIME, SQL_NEXMARK_TIMESTAMP },
    { SQL_NEXMARK_BID, "extra", SQL_NEXMARK_F_EXTRA, SQL_NEXMARK_VARCHAR },
};

int
sql_nexmark_field_find(enum sql_nexmark_kind kind, const char *name, enum sql_nexmark_value *value)
{
    for (int i = 0; i < NELEM(fields); i++)
        if (fields[i].kind == kind && strcasecmp(fields[i].name, name) == 0) {
            *value = fields[i].value;
            return (int)fields[i].field;
        }
    return -1;
}

const char *
sql_nexmark_field_names(enum sql_nexmark_kind kind)
{
    switch (kind) {
    case SQL_NEXMARK_PERSON:
        return "id, name, emailAddress, creditCard, city, state, dateTime, extra";
    case SQL_NEXMARK_AUCTION:
        return "id, itemName, description, initialBid, reserve, dateTime, expires, seller, "
               "category, extra";
    default:
        return "auction, bidder, price, channel, url, dateTime, extra";
    }
}
