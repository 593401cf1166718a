-- Query 13: Bounded Side Input Join (not in the original suite). Joins a
-- stream to a bounded side input, modeling basic stream enrichment: a
-- lookup join (FOR SYSTEM_TIME AS OF a PROCTIME() column) against a CSV
-- file, which each subtask reads into its memory when it starts and probes
-- with every bid (docs/sql.md). The Nexmark repository declares the side
-- input with the old connector options ('connector.type', 'connector.path',
-- 'format.type') and selects B.customTime, a column its bid view lacks;
-- here the filesystem connector's options and the bid's dateTime. The
-- placeholder ${SIDE_INPUT} is the file: lines "key,value", keys 0..9999.

CREATE TABLE side_input (
  key BIGINT,
  value VARCHAR
) WITH (
  connector = 'filesystem',
  path = '${SIDE_INPUT}',
  format = 'csv'
);

CREATE TABLE nexmark_q13 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  dateTime  TIMESTAMP(3),
  value  VARCHAR
) WITH (
  connector = 'blackhole'
);

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.dateTime,
    S.value
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.key;
