-- Query 18: find last bid (not in the original suite): each bidder's last
-- bid on each auction. Deduplication: ROW_NUMBER() over event time DESC,
-- bounded to 1 (a changelog: a later bid replaces the one before it). The
-- subquery has an alias (B), which PostgreSQL's grammar needs.

CREATE TABLE nexmark_q18 (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    dateTime  TIMESTAMP(3),
    extra  VARCHAR
) WITH (
    connector = 'blackhole'
);

INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, dateTime, extra
 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
       FROM bid) B
 WHERE rank_number <= 1;
