-- Query 4: average price for a category: the average of the winning bid
-- prices (each auction's highest bid within its lifetime) of each
-- category. A regular join (the lifetime's bounds are no interval of
-- event times: expires is no rowtime), a GROUP BY whose changelog (-U/+U
-- as an auction's highest bid grows) feeds a GROUP BY that retracts: AVG
-- takes the old value back out before it adds the new. The Nexmark
-- repository writes the join with a comma (FROM auction A, bid B WHERE
-- ...); spate's is the same join written with JOIN ... ON.

CREATE TABLE nexmark_q4 (
  id BIGINT,
  final BIGINT
) WITH (
  connector = 'blackhole'
);

INSERT INTO nexmark_q4
SELECT
    Q.category,
    AVG(Q.final)
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A JOIN bid B
    ON A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
