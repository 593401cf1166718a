-- The Nexmark source in spate SQL. The Nexmark repository's ddl.sql declares
-- one table `nexmark` with the columns event_type and ROW columns person,
-- auction and bid, and the views person, auction and bid over it; spate has
-- no ROW type, so each view is a table of its own over the same generator
-- (option 'table'), with the views' columns (docs/sql.md). The placeholders
-- are the Nexmark repository's: ${TPS}, ${EVENTS_NUM}, ${PERSON_PROPORTION},
-- ${AUCTION_PROPORTION}, ${BID_PROPORTION}, and spate's ${BASE_TIME} (the
-- first event's time, ms since the epoch; Flink takes the wall clock).

CREATE TABLE person (
    id  BIGINT,
    name  VARCHAR,
    emailAddress  VARCHAR,
    creditCard  VARCHAR,
    city  VARCHAR,
    state  VARCHAR,
    dateTime  TIMESTAMP(3),
    extra  VARCHAR,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    connector = 'nexmark',
    table = 'person',
    "first-event.rate" = '${TPS}',
    "next-event.rate" = '${TPS}',
    "events.num" = '${EVENTS_NUM}',
    "person.proportion" = '${PERSON_PROPORTION}',
    "auction.proportion" = '${AUCTION_PROPORTION}',
    "bid.proportion" = '${BID_PROPORTION}',
    "base-time" = '${BASE_TIME}'
);

CREATE TABLE auction (
    id  BIGINT,
    itemName  VARCHAR,
    description  VARCHAR,
    initialBid  BIGINT,
    reserve  BIGINT,
    dateTime  TIMESTAMP(3),
    expires  TIMESTAMP(3),
    seller  BIGINT,
    category  BIGINT,
    extra  VARCHAR,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    connector = 'nexmark',
    table = 'auction',
    "first-event.rate" = '${TPS}',
    "next-event.rate" = '${TPS}',
    "events.num" = '${EVENTS_NUM}',
    "person.proportion" = '${PERSON_PROPORTION}',
    "auction.proportion" = '${AUCTION_PROPORTION}',
    "bid.proportion" = '${BID_PROPORTION}',
    "base-time" = '${BASE_TIME}'
);

CREATE TABLE bid (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    dateTime  TIMESTAMP(3),
    extra  VARCHAR,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    connector = 'nexmark',
    table = 'bid',
    "first-event.rate" = '${TPS}',
    "next-event.rate" = '${TPS}',
    "events.num" = '${EVENTS_NUM}',
    "person.proportion" = '${PERSON_PROPORTION}',
    "auction.proportion" = '${AUCTION_PROPORTION}',
    "bid.proportion" = '${BID_PROPORTION}',
    "base-time" = '${BASE_TIME}'
);
