/* The Nexmark benchmark's event generator, as the Nexmark repository's
 * Flink generator makes its events (nexmark-flink's NexmarkGenerator,
 * GeneratorConfig and the Person, Auction, Bid, Price and Strings
 * generators): each event a function of its index alone, drawn from
 * java.util.Random seeded with the event's id, so that the same
 * configuration gives the same ids, prices, strings and timestamps in any
 * system. The `nexmark` SQL connector's Calc (sql_calc.c) and the
 * benchmarks' hand-written jobs use it. Plain C with no state shared: a
 * generator belongs to one thread. */
#ifndef SPATE_SQL_SQL_NEXMARK_H
#define SPATE_SQL_SQL_NEXMARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sql_nexmark_kind {
    SQL_NEXMARK_PERSON,
    SQL_NEXMARK_AUCTION,
    SQL_NEXMARK_BID,
};

/* NexmarkConfiguration's fields that shape the events, by the connector's
 * option names (docs/sql.md). */
struct sql_nexmark_config {
    int64_t first_event_rate;  /* first-event.rate: events a second of event time */
    int32_t person_proportion; /* person.proportion */
    int32_t auction_proportion;
    int32_t bid_proportion;
    int32_t avg_person_size; /* person.avg-size, bytes */
    int32_t avg_auction_size;
    int32_t avg_bid_size;
    int32_t hot_auction_ratio; /* bid.hot-ratio.auctions */
    int32_t hot_bidders_ratio; /* bid.hot-ratio.bidders */
    int32_t hot_sellers_ratio; /* auction.hot-ratio.sellers */
    int32_t num_in_flight_auctions;
    int32_t num_active_people;
    int64_t base_time_ms; /* the event time of event number 0 */
};

/* NexmarkConfiguration's defaults (the connector's: bid.proportion 46). */
void sql_nexmark_config_default(struct sql_nexmark_config *c);

struct sql_nexmark_str {
    const char *p;
    size_t len;
};

/* One event; its strings stay valid until the generator's next event. */
struct sql_nexmark_event {
    enum sql_nexmark_kind kind;
    int64_t date_time; /* ms since the epoch */
    struct sql_nexmark_str extra;
    union {
        struct {
            int64_t id;
            struct sql_nexmark_str name, email, credit_card, city, state;
        } person;
        struct {
            int64_t id, initial_bid, reserve, expires, seller, category;
            struct sql_nexmark_str item_name, description;
        } auction;
        struct {
            int64_t auction, bidder, price;
            struct sql_nexmark_str channel, url;
        } bid;
    };
};

struct sql_nexmark_url;

struct sql_nexmark_gen {
    struct sql_nexmark_config c;
    int64_t total; /* the three proportions added */
    double delay_us;
    char *buf; /* the current event's strings */
    size_t cap;
    struct sql_nexmark_url *urls; /* the channels' URLs, made when first drawn */
};

/* The columns of each kind's table, named as Flink's Nexmark views person,
 * auction and bid name them. */
enum sql_nexmark_field {
    SQL_NEXMARK_F_ID,
    SQL_NEXMARK_F_NAME,
    SQL_NEXMARK_F_EMAIL,
    SQL_NEXMARK_F_CREDIT_CARD,
    SQL_NEXMARK_F_CITY,
    SQL_NEXMARK_F_STATE,
    SQL_NEXMARK_F_DATE_TIME,
    SQL_NEXMARK_F_EXTRA,
    SQL_NEXMARK_F_ITEM_NAME,
    SQL_NEXMARK_F_DESCRIPTION,
    SQL_NEXMARK_F_INITIAL_BID,
    SQL_NEXMARK_F_RESERVE,
    SQL_NEXMARK_F_EXPIRES,
    SQL_NEXMARK_F_SELLER,
    SQL_NEXMARK_F_CATEGORY,
    SQL_NEXMARK_F_AUCTION,
    SQL_NEXMARK_F_BIDDER,
    SQL_NEXMARK_F_PRICE,
    SQL_NEXMARK_F_CHANNEL,
    SQL_NEXMARK_F_URL,
    SQL_NEXMARK_F_NFIELDS,
};

/* What a field holds. */
enum sql_nexmark_value { SQL_NEXMARK_BIGINT, SQL_NEXMARK_VARCHAR, SQL_NEXMARK_TIMESTAMP };

/* The field of kind named name (ASCII case ignored), or -1; *value its
 * kind of value. */
int sql_nexmark_field_find(enum sql_nexmark_kind kind, const char *name,
                           enum sql_nexmark_value *value);
/* The kind's field names, comma separated, for errors. */
const char *sql_nexmark_field_names(enum sql_nexmark_kind kind);
/* Field f of ev (of the field's kind): *i for BIGINT and TIMESTAMP (ms),
 * *s for VARCHAR. Inline: the Calc reads each record's columns with it. */
static inline void
sql_nexmark_field_get(const struct sql_nexmark_event *ev, enum sql_nexmark_field f, int64_t *i,
                      struct sql_nexmark_str *s)
{
    switch (f) {
    case SQL_NEXMARK_F_ID:
        *i = ev->kind == SQL_NEXMARK_PERSON ? ev->person.id : ev->auction.id;
        break;
    case SQL_NEXMARK_F_NAME:
        *s = ev->person.name;
        break;
    case SQL_NEXMARK_F_EMAIL:
        *s = ev->person.email;
        break;
    case SQL_NEXMARK_F_CREDIT_CARD:
        *s = ev->person.credit_card;
        break;
    case SQL_NEXMARK_F_CITY:
        *s = ev->person.city;
        break;
    case SQL_NEXMARK_F_STATE:
        *s = ev->person.state;
        break;
    case SQL_NEXMARK_F_DATE_TIME:
        *i = ev->date_time;
        break;
    case SQL_NEXMARK_F_EXTRA:
        *s = ev->extra;
        break;
    case SQL_NEXMARK_F_ITEM_NAME:
        *s = ev->auction.item_name;
        break;
    case SQL_NEXMARK_F_DESCRIPTION:
        *s = ev->auction.description;
        break;
    case SQL_NEXMARK_F_INITIAL_BID:
        *i = ev->auction.initial_bid;
        break;
    case SQL_NEXMARK_F_RESERVE:
        *i = ev->auction.reserve;
        break;
    case SQL_NEXMARK_F_EXPIRES:
        *i = ev->auction.expires;
        break;
    case SQL_NEXMARK_F_SELLER:
        *i = ev->auction.seller;
        break;
    case SQL_NEXMARK_F_CATEGORY:
        *i = ev->auction.category;
        break;
    case SQL_NEXMARK_F_AUCTION:
        *i = ev->bid.auction;
        break;
    case SQL_NEXMARK_F_BIDDER:
        *i = ev->bid.bidder;
        break;
    case SQL_NEXMARK_F_PRICE:
        *i = ev->bid.price;
        break;
    case SQL_NEXMARK_F_CHANNEL:
        *s = ev->bid.channel;
        break;
    case SQL_NEXMARK_F_URL:
        *s = ev->bid.url;
        break;
    default:
        break;
    }
}

/* 0, or -1 with *why set when the configuration cannot generate (a
 * proportion or ratio below 1, a rate of 0). */
int sql_nexmark_gen_init(struct sql_nexmark_gen *g, const struct sql_nexmark_config *c,
                         const char **why);
void sql_nexmark_gen_release(struct sql_nexmark_gen *g);
/* The kind of event number index (0, 1, ...), without making it. */
enum sql_nexmark_kind sql_nexmark_kind_of(const struct sql_nexmark_gen *g, int64_t index);
/* Event number index (0, 1, ...). */
void sql_nexmark_next(struct sql_nexmark_gen *g, int64_t index, struct sql_nexmark_event *ev);

#endif
