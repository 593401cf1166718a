-- Query 10: log to file system (not in the original suite): every bid into
-- a filesystem table partitioned by its day and its minute, Flink's
-- partition folders path/dt=2015-07-15/hm=00%3A01/ (':' escaped, as Flink
-- does), each line the bid's other columns.
-- Flink's q10 also sets 'sink.partition-commit.*' (a success file once the
-- watermark passes a partition's minute), 'partition.time-extractor.*' and
-- 'sink.rolling-policy.*'; spate rolls and commits each partition's files
-- at every checkpoint (or at the end of input) and writes no success file,
-- and refuses those options rather than ignore them.

CREATE TABLE nexmark_q10 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  dateTime  TIMESTAMP(3),
  extra  VARCHAR,
  dt STRING,
  hm STRING
) PARTITIONED BY (dt, hm) WITH (
  connector = 'filesystem',
  path = '${OUTPUT_DIR}/bid',
  format = 'csv'
);

INSERT INTO nexmark_q10
SELECT auction, bidder, price, dateTime, extra, DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm')
FROM bid;
