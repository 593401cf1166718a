-- Query 9: winning bids (not in the original suite): each auction's bid of
-- the highest price within its lifetime (of equal prices, the earliest),
-- with the auction's columns. A regular join (expires is no rowtime), a
-- Top-1 per auction over it: -D of the winner a higher bid displaces. The
-- Nexmark repository's join is written with a comma (FROM auction A, bid
-- B WHERE ...), spate's with JOIN ... ON; its bid time is dateTime, as in
-- spate's ddl.sql.

CREATE TABLE nexmark_q9 (
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
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  bid_dateTime  TIMESTAMP(3),
  bid_extra  VARCHAR
) WITH (
  connector = 'blackhole'
);

INSERT INTO nexmark_q9
SELECT
    id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
    auction, bidder, price, bid_dateTime, bid_extra
FROM (
   SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
   FROM auction A JOIN bid B
   ON A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
) Q
WHERE rownum <= 1;
