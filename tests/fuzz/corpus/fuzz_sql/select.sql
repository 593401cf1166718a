SELECT a + 1, CASE WHEN f THEN s ELSE 'no' END, COALESCE(d, 1.5), x / 0 FROM t WHERE s LIKE '%a_' AND a IN (1, -2, NULL);
