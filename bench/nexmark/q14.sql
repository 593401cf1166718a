-- Query 14: calculation (not in the original suite): a bid's price
-- converted, its time of day named, and a user-defined function in C
-- (count_char, examples/nexmark_udf/) over its extra; the bids with a
-- converted price between 1,000,000 and 50,000,000. Flink's query creates
-- the function from a Java class; spate's, in PostgreSQL's form, from a C
-- library: ${NEXMARK_UDF} is build/examples/nexmark_udf.so. spate's
-- DECIMAL has 18 digits at most: the price is a DECIMAL(18, 3) where
-- Flink's sink declares DECIMAL(23, 3).

CREATE FUNCTION count_char(VARCHAR, VARCHAR) RETURNS BIGINT
    AS '${NEXMARK_UDF}', 'count_char' LANGUAGE C;

CREATE TABLE nexmark_q14 (
    auction BIGINT,
    bidder BIGINT,
    price  DECIMAL(18, 3),
    bidTimeType VARCHAR,
    dateTime TIMESTAMP(3),
    extra VARCHAR,
    c_counts BIGINT
) WITH (
  connector = 'blackhole'
);

INSERT INTO nexmark_q14
SELECT
    auction,
    bidder,
    0.908 * price as price,
    CASE
        WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
        WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    dateTime,
    extra,
    count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
