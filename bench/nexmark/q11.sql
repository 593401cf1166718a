-- Query 11: user sessions (not in the original suite): how many bids a
-- bidder made in each session of theirs, a session ending after 10 seconds
-- without a bid. Flink's query groups by SESSION(dateTime, gap) and selects
-- SESSION_START and SESSION_END; spate writes it with the window table
-- function, whose sessions are per group key (here the bidder).

CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (
  connector = 'blackhole'
);

INSERT INTO nexmark_q11
SELECT
    bidder,
    count(*) AS bid_count,
    window_start AS starttime,
    window_end AS endtime
FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
