"""Changelogs end to end (issue 27): operators that consume updates, each
query's changelog applied and compared with sqlite3's result of the same
query (sqloracle.py). GROUP BY over a GROUP BY (its -U/+U taken back out
of COUNT, SUM, AVG, MIN and MAX, a group whose last row goes deleted);
GROUP BY over outer joins (their padded rows retracted); regular joins of
updating queries (a -U/-D removes the row from the join's state and
retracts what it joined, an outer row it was the last match of padded
again); NULL keys and values on every path; rows behind the watermark,
which operators without windows keep. Then what the planner refuses, with
its reason."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import sqlwindows as W  # noqa: E402
from sqloracle import Oracle, Table, norm_rows  # noqa: E402
from test_sql_joins import COLUMNS_A, COLUMNS_B, COLUMNS_C, rows_a, rows_b, rows_c  # noqa: E402

COLUMNS_E = [("id", "INT", "INTEGER"), ("k", "INT", "INTEGER"), ("v", "BIGINT", "INTEGER"),
             ("ts", "TIMESTAMP(3)", "TEXT")]


def rows_e():
    """20 rows on event time, a watermark 1 s behind; rows 6 and 13 come
    a minute late, one with a NULL key."""
    out = []
    for i in range(20):
        sec = i * 2 - (60 if i in (6, 13) else 0)
        out.append((i, None if i == 13 else i % 4, (i * 13) % 7 - 2,
                    f"2024-03-01 10:{1 + sec // 60:02d}:{sec % 60:02d}.000"))
    return out


# Each a query of spate and sqlite alike, its changelog applied at
# parallelism 2.
OVER_AGGREGATES = [
    "SELECT c, COUNT(*) FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q GROUP BY c",
    "SELECT SUM(c), COUNT(*), MAX(c), MIN(c) FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q",
    "SELECT m, COUNT(k) FROM (SELECT k, MAX(x) AS m FROM a GROUP BY k) q GROUP BY m",
    "SELECT k % 3, SUM(t) FROM (SELECT k, SUM(y) AS t FROM b GROUP BY k) q GROUP BY k % 3",
    "SELECT MAX(t), MIN(t) FROM (SELECT k, SUM(y) AS t FROM b GROUP BY k) q",
    "SELECT COUNT(DISTINCT c) FROM (SELECT s, COUNT(*) AS c FROM a GROUP BY s) q",
    "SELECT c, MAX(s), MIN(s) FROM (SELECT s, COUNT(*) AS c FROM a GROUP BY s) q GROUP BY c",
    "SELECT c, COUNT(*) FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k HAVING COUNT(*) > 2) q "
    "GROUP BY c",
    "SELECT AVG(m) FROM (SELECT k, MAX(x) AS m FROM a GROUP BY k) q",
    "SELECT k, c FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q WHERE c > 2",
    "SELECT c * 10, k FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q",
    "SELECT COUNT(*) FILTER (WHERE c > 3), SUM(c) FILTER (WHERE c <= 3) "
    "FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q",
    "SELECT COUNT(*), SUM(n) FROM (SELECT c, COUNT(*) AS n FROM "
    "(SELECT k, COUNT(*) AS c FROM a GROUP BY k) q GROUP BY c) r",
    "WITH q AS (SELECT k, SUM(y) AS t FROM b GROUP BY k) SELECT t > 0, COUNT(*) FROM q "
    "GROUP BY t > 0",
    "SELECT s IS NULL, MIN(c), MAX(c) FROM (SELECT s, COUNT(*) AS c FROM a GROUP BY s) q "
    "GROUP BY s IS NULL",
    "SELECT SUM(m), COUNT(m), COUNT(*) FROM (SELECT k, MAX(y) AS m FROM b GROUP BY k) q",
    "SELECT c, SUM(x), AVG(x) FROM (SELECT s, COUNT(*) AS c, MIN(x) AS x FROM a GROUP BY s) q "
    "GROUP BY c",
]

OVER_JOINS = [
    "SELECT a.k, COUNT(*), SUM(b.y) FROM a JOIN b ON a.k = b.k GROUP BY a.k",
    "SELECT a.k, COUNT(b.id), MAX(b.y), MIN(b.t) FROM a LEFT JOIN b ON a.k = b.k GROUP BY a.k",
    "SELECT b.k, COUNT(*), COUNT(a.id) FROM a RIGHT JOIN b ON a.k = b.k GROUP BY b.k",
    "SELECT COUNT(*), COUNT(a.id), COUNT(b.id) FROM a FULL JOIN b ON a.k = b.k",
    "SELECT a.s, SUM(b.y), AVG(a.x) FROM a LEFT JOIN b ON a.k = b.k GROUP BY a.s",
    "SELECT b.id IS NULL, COUNT(*) FROM a LEFT JOIN b ON a.k = b.k GROUP BY b.id IS NULL",
    "SELECT c.name, COUNT(*) FROM a JOIN b ON a.k = b.k LEFT JOIN c ON b.id = c.cid "
    "GROUP BY c.name",
    "SELECT COUNT(DISTINCT b.k), COUNT(DISTINCT a.s) FROM a LEFT JOIN b ON a.k = b.k AND b.y > 0",
    "SELECT MAX(b.y), MIN(b.y), MAX(a.s) FROM a FULL JOIN b ON a.k = b.k AND a.id + 90 < b.id",
    "SELECT a.k, MAX(a.id) FROM a LEFT JOIN b ON a.k = b.k WHERE b.id IS NULL GROUP BY a.k",
    "SELECT k, COUNT(*), COUNT(k) FROM (SELECT a.k AS k FROM a LEFT JOIN b ON a.k = b.k) q "
    "GROUP BY k",
    "SELECT t, COUNT(*) FROM (SELECT b.k, SUM(b.y) AS t FROM a RIGHT JOIN b ON a.k = b.k "
    "GROUP BY b.k) q GROUP BY t",
]

JOINS_OF_UPDATES = [
    "SELECT q.k, q.c, r.t FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q "
    "JOIN (SELECT k, SUM(y) AS t FROM b GROUP BY k) r ON q.k = r.k",
    "SELECT a.id, q.c FROM a JOIN (SELECT k, COUNT(*) AS c FROM b GROUP BY k) q ON a.k = q.k",
    "SELECT a.id, q.c FROM a LEFT JOIN (SELECT k, COUNT(*) AS c FROM b GROUP BY k) q "
    "ON a.k = q.k",
    "SELECT q.k, b.id FROM (SELECT k, MAX(x) AS m FROM a GROUP BY k) q RIGHT JOIN b "
    "ON q.k = b.k AND q.m > 2",
    "SELECT q.k, r.k, q.c, r.c FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q "
    "FULL JOIN (SELECT k, COUNT(*) AS c FROM b GROUP BY k) r ON q.k = r.k AND q.c <= r.c",
    "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k "
    "JOIN (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q ON a.k = q.k AND q.c > 1",
    "SELECT q.k, r.k FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q "
    "JOIN (SELECT k, COUNT(*) AS c FROM b GROUP BY k) r ON q.c = r.c",
    "SELECT COUNT(*), SUM(q.c) FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q "
    "JOIN b ON q.k = b.k",
    "SELECT a.s, q.n FROM a JOIN (SELECT s, COUNT(*) AS n FROM a GROUP BY s) q ON a.s = q.s "
    "WHERE q.n > 1",
    "SELECT q.aid, q.bid, c.name FROM (SELECT a.id AS aid, b.id AS bid FROM a "
    "LEFT JOIN b ON a.k = b.k) q LEFT JOIN c ON q.bid = c.cid",
    "SELECT COUNT(*) FROM (SELECT a.id AS aid, b.id AS bid FROM a LEFT JOIN b ON a.k = b.k) q "
    "JOIN c ON q.bid = c.cid",
    "SELECT c.cid, q.m FROM c FULL JOIN (SELECT k, MAX(y) AS m FROM b GROUP BY k) q "
    "ON c.cid = q.m + 100",
    "SELECT z.id, c.name FROM (SELECT * FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY k "
    "ORDER BY y DESC, id) AS r FROM b) q WHERE r <= 1) z JOIN c ON z.id = c.cid",
]

# RANK() and DENSE_RANK() (ties share a number; the top holds every row
# tied at its last one), and Top-N over updating queries (a -U/-D takes a
# row out of the top, the next one comes in), and a GROUP BY over a Top-N
# (a join over one is with the joins of updating queries).
TOP_N = [
    "SELECT * FROM (SELECT id, k, x, RANK() OVER (PARTITION BY k ORDER BY x DESC) AS r FROM a) q "
    "WHERE r <= 2",
    "SELECT * FROM (SELECT id, k, x, DENSE_RANK() OVER (PARTITION BY k ORDER BY x DESC) AS r "
    "FROM a) q WHERE r <= 2",
    "SELECT id, s FROM (SELECT id, s, RANK() OVER (ORDER BY s) AS r FROM a) q WHERE r <= 3",
    "SELECT * FROM (SELECT id, y % 3 AS m, DENSE_RANK() OVER (PARTITION BY k % 2 ORDER BY y % 3) "
    "AS r FROM b) q WHERE r <= 2",
    "SELECT * FROM (SELECT id, DENSE_RANK() OVER (PARTITION BY k % 2 ORDER BY "
    "COALESCE(ABS(y % 3), 0)) AS r FROM b) q WHERE r <= 2",
    "SELECT * FROM (SELECT id, RANK() OVER (PARTITION BY k % 2 ORDER BY "
    "COALESCE(ABS(y % 3), 0)) AS r FROM b) q WHERE r <= 2",
    "SELECT id, r FROM (SELECT id, RANK() OVER (PARTITION BY k ORDER BY y, t) AS r FROM b) q "
    "WHERE r <= 1",
    "SELECT * FROM (SELECT k, c, RANK() OVER (ORDER BY c DESC) AS r FROM "
    "(SELECT k, COUNT(*) AS c FROM a GROUP BY k) s) q WHERE r <= 2",
    "SELECT k, c FROM (SELECT k, c, ROW_NUMBER() OVER (ORDER BY c DESC, k) AS r FROM "
    "(SELECT k, COUNT(*) AS c FROM a GROUP BY k) s) q WHERE r <= 3",
    "SELECT * FROM (SELECT k, t, DENSE_RANK() OVER (PARTITION BY k % 2 ORDER BY t) AS r FROM "
    "(SELECT k, SUM(y) AS t FROM b GROUP BY k) s) q WHERE r <= 2",
    "SELECT * FROM (SELECT a.id, b.id AS bid, ROW_NUMBER() OVER (PARTITION BY a.k "
    "ORDER BY b.id DESC, a.id) AS r FROM a LEFT JOIN b ON a.k = b.k) q WHERE r <= 2",
    "SELECT r, COUNT(*) FROM (SELECT * FROM (SELECT id, k, RANK() OVER (PARTITION BY k "
    "ORDER BY y) AS r FROM b) q WHERE r <= 2) z GROUP BY r",
]



def window_ranks(rows, size_ms, n, dense):
    """Per tumbling window of size_ms over e: the count of each k, those
    numbered n at most by RANK() (dense: DENSE_RANK()) of the count,
    descending, as window_start, window_end, k, count, rank. Late rows
    are dropped by the window aggregate below the rank."""
    wins, dropped = W.windows(rows, 3, 1000, "tumble", size_ms=size_ms, key=lambda r: r[1])
    assert dropped == 2, "the late rows come late"
    per, out = {}, []
    for s, e, k, rs in wins:
        per.setdefault((s, e), []).append((k, len(rs)))
    for (s, e), groups in per.items():
        groups.sort(key=lambda g: -g[1])
        rank = 0
        for i, (k, c) in enumerate(groups):
            if i == 0 or c != groups[i - 1][1]:
                rank = rank + 1 if dense else i + 1
            if rank <= n:
                out.append([W.text_of(s), W.text_of(e), k, c, rank])
    return out


# Rows a minute behind the watermark: late for a window, not for these.
LATE = [
    "SELECT c, COUNT(*) FROM (SELECT k, COUNT(*) AS c FROM e GROUP BY k) q GROUP BY c",
    "SELECT k, SUM(v), MIN(v), MAX(v) FROM e GROUP BY k",
    "SELECT q.k, q.t, a.id FROM (SELECT k, SUM(v) AS t FROM e GROUP BY k) q "
    "LEFT JOIN a ON q.k = a.k AND a.id < 10",
]


class ChangelogTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sql-changelog-")
        cls.oracle = Oracle(cls.tmp, [
            Table("a", COLUMNS_A, rows_a()),
            Table("b", COLUMNS_B, rows_b()),
            Table("c", COLUMNS_C, rows_c()),
            Table("e", COLUMNS_E, rows_e(), "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND"),
        ])
        # a watermark after every row: the late rows are behind it
        cls.oracle.ddl.insert(0, "SET 'pipeline.auto-watermark-interval' = '0';")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_all(self, queries, retracts="each"):
        """Each query's changelog against sqlite. retracts "each": every
        query's changelog holds retractions (-U or -D; an aggregate's
        groups of more than one row make them whatever the order of its
        input); "any": one of them does (a join's depend on the order its
        two inputs interleave in)."""
        retracting = 0
        for q in queries:
            with self.subTest(query=q):
                kinds, _ = self.oracle.run_changelog(q)
                retracting += bool(kinds & {"-U", "-D"})
                if retracts == "each":
                    self.assertTrue(kinds & {"-U", "-D"}, f"no retraction in {kinds}: {q}")
                self.oracle.check_changelog(self, q)
        self.assertGreater(retracting, 0, "no query retracted a row")

    def test_the_inputs_hold_what_the_queries_must_handle(self):
        a, b, e = rows_a(), rows_b(), rows_e()
        self.assertIn(None, [r[1] for r in a])
        self.assertIn(None, [r[3] for r in b])
        late = [r for r in e if r[3] < "2024-03-01 10:01:00"]
        self.assertEqual(len(late), 2, "two rows behind the watermark")

    def test_aggregates_over_aggregates(self):
        self.check_all(OVER_AGGREGATES)

    def test_aggregates_over_joins(self):
        self.check_all(OVER_JOINS)

    def test_joins_of_updating_queries(self):
        self.check_all(JOINS_OF_UPDATES, retracts="any")

    def test_rank_dense_rank_and_top_n_over_updates(self):
        self.check_all(TOP_N)

    def test_rank_and_dense_rank_per_window(self):
        """A window Top-N by RANK() and DENSE_RANK(): each window's rows
        once, those tied at the last number all in; against Python."""
        agg = ("SELECT window_start, window_end, k, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE e, "
               "DESCRIPTOR(ts), INTERVAL '{s}' SECOND)) GROUP BY window_start, window_end, k")
        rows = self.oracle.tables[3].rows
        self.assertNotEqual(norm_rows(window_ranks(rows, 20000, 2, False)),
                            norm_rows(window_ranks(rows, 20000, 2, True)),
                            "ties where RANK and DENSE_RANK differ")
        for size, n, fn in [(10, 1, "RANK"), (10, 2, "DENSE_RANK"), (20, 2, "RANK"),
                            (20, 2, "DENSE_RANK")]:
            q = (f"SELECT * FROM (SELECT *, {fn}() OVER (PARTITION BY window_start, window_end "
                 f"ORDER BY n DESC) AS r FROM ({agg.format(s=size)}) w) q WHERE r <= {n}")
            with self.subTest(query=q):
                self.oracle.check(self, q, lambda t, size=size, n=n, fn=fn: window_ranks(
                    t[3].rows, size * 1000, n, fn == "DENSE_RANK"))

    def test_late_rows_are_kept_without_windows(self):
        self.check_all(LATE, retracts="any")

    def test_what_cannot_consume_updates_is_refused(self):
        cases = [
            ("SELECT * FROM (SELECT id, RANK() OVER (ORDER BY x) AS rn FROM a) q WHERE rn > 2",
             "not supported: ROW_NUMBER() without an upper bound on 'rn'"),
            (f"CREATE TABLE h (k INT) WITH (connector = 'filesystem', path = '{self.tmp}/h', "
             "format = 'csv');\nINSERT INTO h SELECT k FROM (SELECT k, COUNT(*) AS c FROM a "
             "GROUP BY k) q WHERE c > 1",
             "updates its rows (Join: an outer join, or GroupAggregate or Rank without a "
             "window, below it)"),
            (f"CREATE TABLE g (k INT, c BIGINT, rn BIGINT) WITH (connector = 'filesystem', "
             f"path = '{self.tmp}/g', format = 'csv');\nINSERT INTO g SELECT * FROM (SELECT k, c, "
             "DENSE_RANK() OVER (ORDER BY c DESC) AS rn FROM (SELECT k, COUNT(*) AS c FROM a "
             "GROUP BY k) q) r WHERE rn <= 2",
             "takes insertions only, and this query updates its rows (Rank: a Top-N without a "
             "window)"),
            ("SELECT k FROM (SELECT k, COUNT(*) AS c FROM a GROUP BY k) q UNION ALL "
             "SELECT k FROM a", "not supported: UNION ALL of an updating query"),
            (f"CREATE TABLE f (c BIGINT, n BIGINT) WITH (connector = 'filesystem', "
             f"path = '{self.tmp}/f', format = 'csv');\nINSERT INTO f SELECT c, COUNT(*) FROM "
             "(SELECT k, COUNT(*) AS c FROM a GROUP BY k) q GROUP BY c",
             "takes insertions only, and this query updates its rows"),
        ]
        for select, want in cases:
            with self.subTest(select=select):
                self.assertIn(want, self.oracle.refusal(self, select))


if __name__ == "__main__":
    unittest.main()
