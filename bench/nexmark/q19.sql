-- Query 19: auction top-10 price (not in the original suite): the 10 bids
-- of highest price of each auction. Top-N: ROW_NUMBER() bounded to 10, the
-- rank in the output (a changelog: each rank a new bid moves is updated).
-- The subquery has an alias (B), which PostgreSQL's grammar needs.

CREATE TABLE nexmark_q19 (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    dateTime  TIMESTAMP(3),
    extra  VARCHAR,
    rank_number  BIGINT
) WITH (
    connector = 'blackhole'
);

INSERT INTO nexmark_q19
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid) B
WHERE rank_number <= 10;
