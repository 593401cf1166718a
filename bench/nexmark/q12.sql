-- Query 12: processing-time windows (not in the original suite): how many
-- bids a bidder makes in each 10 seconds of the wall clock. The view's
-- PROCTIME() column is the time of its rows: the Calc that computes it
-- stamps each row with the wall clock as it goes through, and the window
-- is on that time (docs/sql.md).

CREATE TABLE nexmark_q12 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (
  connector = 'blackhole'
);

CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;

INSERT INTO nexmark_q12
SELECT
    bidder,
    count(*) as bid_count,
    window_start AS starttime,
    window_end AS endtime
FROM TABLE(
        TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
