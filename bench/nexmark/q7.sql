-- Query 7: highest bid: the bids of the highest price in each 10-second
-- window. A regular join of the bids with their windows' maximum (a window
-- aggregate), keyed by the price, the window's time in the join's condition.

CREATE TABLE nexmark_q7 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  dateTime  TIMESTAMP(3),
  extra  VARCHAR
) WITH (
  connector = 'blackhole'
);

INSERT INTO nexmark_q7
SELECT B.auction, B.bidder, B.price, B.dateTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as dateTime
  FROM TABLE(
          TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime  - INTERVAL '10' SECOND AND B1.dateTime;
