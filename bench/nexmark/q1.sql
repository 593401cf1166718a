-- Query 1: currency conversion: each bid's price from dollars to euros.
-- Flink's sink column is DECIMAL(23, 3); spate's DECIMAL holds up to 18
-- digits, which the prices (at most 10^8 dollars, in cents) stay within.

CREATE TABLE nexmark_q1 (
  auction  BIGINT,
  bidder  BIGINT,
  price  DECIMAL(18, 3),
  dateTime  TIMESTAMP(3),
  extra  VARCHAR
) WITH (
  connector = 'blackhole'
);

INSERT INTO nexmark_q1
SELECT
    auction,
    bidder,
    0.908 * price as price, -- convert dollar to euro
    dateTime,
    extra
FROM bid;
