"""spate SQL against an oracle: each query runs in spate (spate sql --local,
a CSV file in, CREATE TABLE ... AS SELECT into a CSV folder out) and in
Python's sqlite3 over the same rows, and the results must be equal as
multisets, NULLs included (sqloracle.py). Then the errors: a syntax error's
line, column and caret, an unknown table or column with the nearest name,
"not supported: ...", type mismatches naming both types, a prompt that
survives every error."""

import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import termios
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import spatetest  # noqa: E402
import sqlwindows as W  # noqa: E402
from sqloracle import Oracle, Table  # noqa: E402


def rows_t():
    """40 rows with NULL in every column somewhere, negatives, zero, the
    empty string and strings with commas and quotes."""
    words = ["alpha", "Beta", "gamma", "", "delta,x", 'q"uote', "ALPHA", "al%pha", "a_b",
             "zeta"]
    rows = []
    for i in range(40):
        a = None if i % 7 == 3 else (i * 37) % 23 - 11
        b = None if i % 11 == 5 else (i * 1000003) % 99991 - 50000
        x = None if i % 9 == 4 else round(((i * 7919) % 1000) / 8.0 - 60.0, 3)
        s = None if i % 8 == 6 else words[(i * 3) % len(words)]
        f = None if i % 10 == 9 else (i % 3 == 0)
        rows.append((i, a, b, x, s, f))
    return rows


def rows_e():
    """30 rows of DECIMAL, DATE and TIMESTAMP(3), NULLs in each column."""
    import datetime
    rows = []
    for i in range(30):
        d = None if i % 6 == 2 else f"{((i * 7919) % 4000 - 1500) / 100:.2f}"
        day = None if i % 7 == 4 else (datetime.date(2024, 1, 1) +
                                       datetime.timedelta(days=(i * 13) % 120)).isoformat()
        ts = None if i % 8 == 5 else (
            datetime.datetime(2024, 2, 27, 0, 0) +
            datetime.timedelta(milliseconds=(i * 98765431) % (86400000 * 5))
        ).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        rows.append((i, d, day, ts))
    return rows


COLUMNS_E = [("id", "INT", "INTEGER"), ("d", "DECIMAL(10, 2)", "REAL"), ("day", "DATE", "TEXT"),
             ("ts", "TIMESTAMP(3)", "TEXT")]

# DECIMAL, DATE and TIMESTAMP: spate's query and sqlite's (its dates and
# timestamps are text in the same form; None: the same text).
TIME_QUERIES = [
    ("SELECT id, d FROM e", None),
    ("SELECT id, d + 1.25 FROM e", None),
    ("SELECT id, d * 2 FROM e", None),
    ("SELECT id, d * d FROM e", None),
    ("SELECT id, d - id FROM e", None),
    ("SELECT id FROM e WHERE d > 10.5", None),
    ("SELECT id FROM e WHERE d BETWEEN -5 AND 5", None),
    ("SELECT id, CAST(d AS INT) FROM e", "SELECT id, CAST(d AS INTEGER) FROM e"),
    ("SELECT id, CAST(d AS DOUBLE PRECISION) / 4 FROM e", "SELECT id, d / 4.0 FROM e"),
    ("SELECT id, day FROM e", None),
    ("SELECT id FROM e WHERE day >= DATE '2024-02-01'",
     "SELECT id FROM e WHERE day >= '2024-02-01'"),
    ("SELECT id, day - 1 FROM e", "SELECT id, date(day, '-1 day') FROM e"),
    ("SELECT id, day + 30 FROM e", "SELECT id, date(day, '+30 day') FROM e"),
    ("SELECT id, EXTRACT(YEAR FROM day), EXTRACT(MONTH FROM day), EXTRACT(DAY FROM day) "
     "FROM e", "SELECT id, CAST(strftime('%Y', day) AS INTEGER), CAST(strftime('%m', day) AS "
     "INTEGER), CAST(strftime('%d', day) AS INTEGER) FROM e"),
    ("SELECT id, ts FROM e", None),
    ("SELECT id, EXTRACT(HOUR FROM ts), EXTRACT(MINUTE FROM ts) FROM e",
     "SELECT id, CAST(strftime('%H', ts) AS INTEGER), CAST(strftime('%M', ts) AS INTEGER) "
     "FROM e"),
    ("SELECT id FROM e WHERE ts < TIMESTAMP '2024-03-01 00:00:00'",
     "SELECT id FROM e WHERE ts < '2024-03-01 00:00:00.000'"),
    ("SELECT id, ts + INTERVAL '1' HOUR FROM e",
     "SELECT id, strftime('%Y-%m-%d %H:%M:%f', ts, '+1 hour') FROM e"),
    ("SELECT id, ts - INTERVAL '90 seconds' FROM e",
     "SELECT id, strftime('%Y-%m-%d %H:%M:%f', ts, '-90 seconds') FROM e"),
    ("SELECT id, CAST(ts AS DATE) FROM e", "SELECT id, date(ts) FROM e"),
    ("SELECT id, CAST(day AS TIMESTAMP) FROM e", "SELECT id, day || ' 00:00:00.000' FROM e"),
    ("SELECT id, COALESCE(day, DATE '2000-01-01') FROM e",
     "SELECT id, COALESCE(day, '2000-01-01') FROM e"),
    ("SELECT id, CASE WHEN ts IS NULL THEN d ELSE d * 10 END FROM e", None),
]

COLUMNS = [("id", "INT", "INTEGER"), ("a", "INT", "INTEGER"), ("b", "BIGINT", "INTEGER"),
           ("x", "DOUBLE PRECISION", "REAL"), ("s", "VARCHAR", "TEXT"),
           ("f", "BOOLEAN", "INTEGER")]

# Expressions, each checked as SELECT id, <expr> FROM t.
EXPRESSIONS = [
    "a", "b", "x", "s", "f", "a + 1", "a - b", "a * 3", "a / 4", "a % 5", "-a", "b / 7",
    "b % 13", "a * b", "x + 1.5", "x - a", "x * 2", "x / 4", "a / 0", "x / 0", "b % 0",
    "a + b * 2 - 7", "(a + 3) * (a - 3)", "abs(a)", "abs(x)", "a = 1", "a <> 1", "a < 0",
    "a <= 0", "a > b", "a >= 3", "x > 10", "x < a", "s = 'alpha'", "s <> 'alpha'",
    "s < 'b'", "s >= 'gamma'", "a = b", "f", "NOT f", "f AND a > 0", "f OR a > 0",
    "NOT (a > 0 OR x < 0)", "(a > 0) AND (x > 0)", "a IS NULL", "a IS NOT NULL",
    "s IS NULL", "f IS NULL", "x IS NOT NULL", "a IN (1, 2, 3, -5)", "a NOT IN (1, 2, 3)",
    "s IN ('alpha', 'Beta', '')", "a IN (1, NULL)", "a NOT IN (1, NULL)",
    "a BETWEEN -3 AND 3", "a NOT BETWEEN -3 AND 3", "x BETWEEN 0 AND 50",
    "s LIKE 'al%'", "s LIKE '%a'", "s LIKE '_eta'", "s NOT LIKE '%l%'", "s LIKE '%'",
    "s LIKE 'a_b'", "CASE WHEN a > 0 THEN 'pos' WHEN a < 0 THEN 'neg' ELSE 'zero' END",
    "CASE WHEN a > 0 THEN a END", "CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' END",
    "CASE WHEN f THEN x ELSE a END", "CASE WHEN s IS NULL THEN 'none' ELSE s END",
    "COALESCE(a, b)", "COALESCE(a, 0)", "COALESCE(s, 'n/a')", "COALESCE(a, b, id)",
    "COALESCE(x, a)", "NULLIF(a, 1)", "NULLIF(s, '')", "upper(s)", "lower(s)",
    "length(s)", "substr(s, 2, 3)", "substr(s, 1, 1)", "substr(s, 3)", "trim(s)",
    "replace(s, 'a', 'A')", "s || '!'", "s || s", "'<' || s || '>'", "CAST(a AS BIGINT)",
    "CAST(x AS INT)", "CAST(a AS DOUBLE PRECISION)", "CAST(a AS VARCHAR)",
    "CAST(b AS VARCHAR)", "round(x)", "round(x, 1)", "floor(x)", "ceil(x)", "sqrt(abs(x))",
    "power(a, 2)", "mod(a, 3)", "a + 0.5", "x * a + b", "a > 0 AND b > 0 AND f",
    "a > 0 OR b > 0 OR f", "NOT NOT f", "(a IS NULL) = (b IS NULL)", "a * 2 = b",
    "CASE WHEN a IS NULL THEN NULL ELSE a * 2 END", "id % 2 = 0", "-x", "x <> x",
    "COALESCE(NULLIF(a, 0), -1)", "upper(lower(s)) = upper(s)", "length(s || s)",
]

# Filters, each checked as SELECT id, s FROM t WHERE <pred>.
FILTERS = [
    "a > 0", "a < 0 OR b > 0", "f", "NOT f", "f IS NULL", "s LIKE '%a%'", "a IS NULL",
    "a BETWEEN 1 AND 5", "s IN ('alpha', 'zeta')", "x > 0 AND x < 20", "a = b",
    "COALESCE(a, 0) = 0", "CASE WHEN f THEN a > 0 ELSE b > 0 END", "length(s) > 4",
    "s = ''", "id % 3 = 1", "a IN (1, NULL)", "NOT (a IN (1, NULL))", "x IS NULL OR x > 50",
    "upper(s) = 'ALPHA'", "a > 0 AND NOT f", "b / 1000 > 10", "s <> 'alpha'",
    "a NOT BETWEEN -5 AND 5", "substr(s, 1, 1) = 'a'", "f = TRUE", "f <> FALSE",
    "a * a > 50", "x < a", "id < 0",
]

# Whole queries (select lists with aliases, *, nested views, subqueries).
QUERIES = [
    ("SELECT * FROM t", None),
    ("SELECT id, a AS first, b AS second FROM t WHERE a > b", None),
    ("SELECT t.id, t.s FROM t WHERE t.a IS NOT NULL", None),
    ("SELECT q.id FROM t AS q WHERE q.x > 0", None),
    ("SELECT id, k FROM (SELECT id, a + b AS k FROM t) AS sub WHERE k > 0",
     None),
    ("SELECT n * 2 FROM (SELECT a + 1 AS n FROM (SELECT a FROM t WHERE a IS NOT NULL) AS u) "
     "AS v", None),
    ("SELECT id FROM t WHERE 1 = 0", None),
    ("SELECT id, NULL FROM t", "SELECT id, NULL FROM t"),
    ("SELECT id, 'x', 42, 2.5, TRUE FROM t", None),
]


class SqlOracleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sql-")
        cls.oracle = Oracle(cls.tmp, [Table("t", COLUMNS, rows_t()),
                                      Table("e", COLUMNS_E, rows_e())])

    def test_expressions(self):
        for e in EXPRESSIONS:
            with self.subTest(expression=e):
                self.oracle.check(self, f"SELECT id, {e} FROM t")

    def test_filters(self):
        for p in FILTERS:
            with self.subTest(where=p):
                self.oracle.check(self, f"SELECT id, s FROM t WHERE {p}")

    def test_queries(self):
        for q, o in QUERIES:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)

    def test_decimal_date_timestamp(self):
        for q, o in TIME_QUERIES:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)

    def test_views(self):
        """A view planned where it is used: the oracle is the same view in
        sqlite."""
        self.oracle.db.execute("CREATE VIEW IF NOT EXISTS pos AS SELECT id, a, s FROM t "
                               "WHERE a > 0")
        self.oracle.ddl.append("CREATE TEMPORARY VIEW pos AS SELECT id, a, s FROM t WHERE "
                               "a > 0;")
        try:
            for q in ["SELECT * FROM pos", "SELECT id, a * 10 FROM pos WHERE s IS NOT NULL",
                      "SELECT upper(s) FROM pos WHERE a < 5"]:
                with self.subTest(query=q):
                    self.oracle.check(self, q)
        finally:
            self.oracle.ddl.pop()

    def test_a_python_oracle(self):
        """The harness takes a Python function of the rows where sqlite
        cannot be the oracle (windows, later): here a filter, to check the
        harness itself."""
        self.oracle.check(self, "SELECT id FROM t WHERE a > 5",
                          lambda tables: [(r[0],) for r in tables[0].rows
                                          if r[1] is not None and r[1] > 5])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_count(self):
        n = len(EXPRESSIONS) + len(FILTERS) + len(QUERIES) + len(TIME_QUERIES) + 3 + 1
        self.assertGreaterEqual(n, 150, "the suite checks at least 150 queries")
        n = len(GROUP_QUERIES) + len(WINDOW_QUERIES)
        self.assertGreaterEqual(n, 40, "at least 40 of aggregates and windows")


# GROUP BY without a window: spate's changelog (at parallelism 2, through
# the exchange by key), applied, against sqlite's result (None: the same
# SQL). Flink's types: AVG of an INT is an INT (truncated, as sqlite's
# integer division).
GROUP_QUERIES = [
    ("SELECT COUNT(*) FROM t", None),
    ("SELECT COUNT(*), COUNT(a), SUM(a), MIN(a), MAX(a) FROM t", None),
    ("SELECT s, COUNT(*) FROM t GROUP BY s", None),
    ("SELECT f, COUNT(*), SUM(b) FROM t GROUP BY f", None),
    ("SELECT a % 3, COUNT(*), MIN(s), MAX(s) FROM t GROUP BY a % 3", None),
    ("SELECT s, f, COUNT(*), MAX(x) FROM t GROUP BY s, f", None),
    ("SELECT s, AVG(x), SUM(x) FROM t GROUP BY s", None),
    ("SELECT s, COUNT(DISTINCT a), COUNT(DISTINCT f) FROM t GROUP BY s", None),
    ("SELECT f, COUNT(*) FILTER (WHERE a > 0), SUM(b) FILTER (WHERE s IS NOT NULL) FROM t "
     "GROUP BY f", None),
    ("SELECT s, COUNT(*) FROM t GROUP BY s HAVING COUNT(*) > 3", None),
    ("SELECT s, SUM(a) FROM t GROUP BY s HAVING SUM(a) > 0", None),
    ("SELECT s, MIN(a) + MAX(a), COUNT(*) * 2 FROM t GROUP BY s", None),
    ("SELECT upper(s), COUNT(*) FROM t GROUP BY upper(s)", None),
    ("SELECT COUNT(*), SUM(a) FROM t WHERE a > 0", None),
    ("SELECT s, COUNT(*) FROM t WHERE f GROUP BY s", None),
    ("SELECT a IS NULL, COUNT(*), COUNT(b) FROM t GROUP BY a IS NULL", None),
    ("SELECT s FROM t GROUP BY s", None),
    ("SELECT b % 2, MIN(x), MAX(x) FROM t GROUP BY b % 2", None),
    ("SELECT s, AVG(a) FROM t GROUP BY s", "SELECT s, SUM(a) / COUNT(a) FROM t GROUP BY s"),
    ("SELECT COUNT(DISTINCT s) FROM t", None),
    ("SELECT s, COUNT(*) FROM t WHERE id < 0 GROUP BY s", None),
    ("SELECT s, MIN(f), MAX(f) FROM t GROUP BY s", None),
    ("SELECT x > 0, SUM(a), COUNT(x) FROM t GROUP BY x > 0", None),
    ("SELECT CASE WHEN a > 0 THEN 'p' ELSE 'n' END, COUNT(*) FROM t "
     "GROUP BY CASE WHEN a > 0 THEN 'p' ELSE 'n' END", None),
    ("SELECT COUNT(*), SUM(d), MIN(d), MAX(d), AVG(d) FROM e", None),
    ("SELECT MIN(ts), MAX(ts), MIN(day), MAX(day) FROM e", None),
    ("SELECT day IS NULL, COUNT(*), SUM(d) FROM e GROUP BY day IS NULL", None),
    ("SELECT f, SUM(a) AS total FROM t GROUP BY f HAVING MAX(x) > 10 AND COUNT(*) > 2", None),
    # A group that never gets a row emits nothing (Flink's streaming
    # aggregate), where sqlite gives one row of COUNT 0.
    ("SELECT COUNT(*), SUM(a) FROM t WHERE id < 0", lambda tables: []),
    # NOT NULL arguments: no value is still NULL for SUM, MIN and MAX.
    ("SELECT g, MIN(v), MAX(v), SUM(v) FILTER (WHERE v > 1000), COUNT(*) FROM n GROUP BY g",
     None),
    ("SELECT MIN(v), MAX(v) FILTER (WHERE v < 0) FROM n", None),
]

COLUMNS_N = [("g", "INT NOT NULL", "INTEGER"), ("v", "BIGINT NOT NULL", "INTEGER")]


def rows_n():
    return [(i % 3, 50 + (i * 17) % 40) for i in range(20)]


class SqlGroupByTest(unittest.TestCase):
    """GROUP BY without a window: a changelog, checked once applied."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sql-")
        cls.oracle = Oracle(cls.tmp, [Table("t", COLUMNS, rows_t()),
                                      Table("e", COLUMNS_E, rows_e()),
                                      Table("n", COLUMNS_N, rows_n())])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_group_by(self):
        for q, o in GROUP_QUERIES:
            with self.subTest(query=q):
                self.oracle.check_changelog(self, q, o)

    def test_group_by_with_state_in_rocksdb(self):
        """The accumulators in RocksDB (strings of MIN and MAX read back
        from it, COUNT(DISTINCT)'s map state) give the same results."""
        local = os.path.join(self.tmp, "rocksdb")
        self.oracle.args = ["-D", "state.backend.type=rocksdb",
                            "-D", f"state.backend.rocksdb.localdir={local}"]
        try:
            for q, o in [GROUP_QUERIES[k] for k in (2, 4, 7, 8, 10, 21)]:
                with self.subTest(query=q):
                    self.oracle.check_changelog(self, q, o)
        finally:
            self.oracle.args = []
        self.assertTrue(os.path.isdir(local), "RocksDB was not used")

    def test_the_changelog_has_flinks_row_kinds(self):
        kinds, rows = self.oracle.run_changelog("SELECT s, COUNT(*) FROM t GROUP BY s")
        self.assertEqual(kinds, {"+I", "-U", "+U"})
        kinds, _ = self.oracle.run_changelog(
            "SELECT s, COUNT(*) FROM t GROUP BY s HAVING COUNT(*) > 1")
        self.assertIn("-U", kinds)


def rows_w():
    """80 rows of event time, mostly in order: some out of order within the
    watermark's bound (2 s), some far behind it (late), one without a
    time; NULLs in k, v and d."""
    rows, t = [], 1_704_067_200_000  # 2024-01-01 00:00:00
    keys = ["red", "blue", "green", None]
    for i in range(80):
        t += (i * 7919) % 1300
        ts = t
        if i % 9 == 4:
            ts = t - 1500        # out of order, within the bound
        if i % 13 == 7:
            ts = t - 9000        # late
        k = keys[(i * 5) % 4]
        v = None if i % 11 == 3 else (i * 37) % 101
        d = None if i % 7 == 2 else round(((i * 31) % 200) / 8.0 - 10.0, 3)
        rows.append((i, k, v, d, None if i == 40 else W.text_of(ts)))
    return rows


COLUMNS_W = [("id", "INT", "INTEGER"), ("k", "VARCHAR", "TEXT"), ("v", "INT", "INTEGER"),
             ("d", "DOUBLE PRECISION", "REAL"), ("ts", "TIMESTAMP(3)", "TEXT")]
BOUND_MS = 2000
ID, K, V, D, TS = range(5)


def window_ref(kind, size=0, slide=0, gap=0, key=None, where=None, having=None, select=None):
    """The Python reference of a window query: the rows that pass where go
    through the windows; select gives a window's output row from (start,
    end, key, rows); having filters the windows."""
    def oracle(tables):
        rows = [r for r in tables[0].rows if where is None or where(r)]
        ws, _ = W.windows(rows, TS, BOUND_MS, kind, size, slide, gap, key)
        return [select(s, e, k, rs) for s, e, k, rs in ws if having is None or having(rs)]
    return oracle


def ws_we(s, e):
    return [W.text_of(s), W.text_of(e)]


TUMBLE5 = "TUMBLE(w, DESCRIPTOR(ts), INTERVAL '5' SECOND)"
HOP = "HOP(w, ts, INTERVAL '2' SECOND, INTERVAL '6' SECOND)"
SESSION = "SESSION(w, DESCRIPTOR(ts), INTERVAL '3' SECOND)"
BY_K = (lambda r: (r[K],))

WINDOW_QUERIES = [
    (f"SELECT window_start, window_end, COUNT(*) FROM {TUMBLE5} "
     "GROUP BY window_start, window_end",
     window_ref("tumble", 5000, select=lambda s, e, k, rs: ws_we(s, e) + [len(rs)])),
    (f"SELECT window_start, window_end, k, COUNT(*), COUNT(v), SUM(v), MIN(v), MAX(v) "
     f"FROM {TUMBLE5} GROUP BY window_start, window_end, k",
     window_ref("tumble", 5000, key=BY_K, select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [
         W.count(rs), W.count(rs, V), W.agg_sum(rs, V), W.agg_min(rs, V), W.agg_max(rs, V)])),
    (f"SELECT window_start, window_end, k, AVG(d), MAX(d), MIN(d) FROM {TUMBLE5} "
     "GROUP BY window_start, window_end, k",
     window_ref("tumble", 5000, key=BY_K, select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [
         W.agg_avg(rs, D), W.agg_max(rs, D), W.agg_min(rs, D)])),
    (f"SELECT window_start, window_end, MIN(k), MAX(k), COUNT(DISTINCT k) FROM {TUMBLE5} "
     "GROUP BY window_start, window_end",
     window_ref("tumble", 5000, select=lambda s, e, k, rs: ws_we(s, e) + [
         W.agg_min(rs, K), W.agg_max(rs, K), W.count_distinct(rs, K)])),
    (f"SELECT window_start, window_end, COUNT(DISTINCT v), COUNT(*) FILTER (WHERE v > 50) "
     f"FROM {TUMBLE5} GROUP BY window_start, window_end",
     window_ref("tumble", 5000, select=lambda s, e, k, rs: ws_we(s, e) + [
         W.count_distinct(rs, V), sum(1 for r in rs if r[V] is not None and r[V] > 50)])),
    (f"SELECT window_start, window_end, k, SUM(v) FROM {TUMBLE5} "
     "GROUP BY window_start, window_end, k HAVING COUNT(*) > 2",
     window_ref("tumble", 5000, key=BY_K, having=lambda rs: len(rs) > 2,
                select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [W.agg_sum(rs, V)])),
    (f"SELECT window_time, k, COUNT(*) FROM {TUMBLE5} GROUP BY window_start, window_end, k",
     window_ref("tumble", 5000, key=BY_K,
                select=lambda s, e, k, rs: [W.text_of(e - 1)] + list(k) + [len(rs)])),
    (f"SELECT window_start, window_end, COUNT(*) FROM {TUMBLE5} WHERE v IS NOT NULL "
     "GROUP BY window_start, window_end",
     window_ref("tumble", 5000, where=lambda r: r[V] is not None,
                select=lambda s, e, k, rs: ws_we(s, e) + [len(rs)])),
    ("SELECT window_start, window_end, COUNT(*), SUM(v) FROM "
     "TUMBLE(w, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end",
     window_ref("tumble", 60000, select=lambda s, e, k, rs: ws_we(s, e) + [
         len(rs), W.agg_sum(rs, V)])),
    (f"SELECT window_start, window_end, COUNT(*), SUM(v) FROM {HOP} "
     "GROUP BY window_start, window_end",
     window_ref("hop", 6000, 2000, select=lambda s, e, k, rs: ws_we(s, e) + [
         len(rs), W.agg_sum(rs, V)])),
    (f"SELECT window_start, window_end, k, MAX(v), COUNT(DISTINCT v) FROM {HOP} "
     "GROUP BY window_start, window_end, k",
     window_ref("hop", 6000, 2000, key=BY_K, select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [
         W.agg_max(rs, V), W.count_distinct(rs, V)])),
    (f"SELECT window_start, window_end, k, COUNT(*) FROM {HOP} "
     "GROUP BY window_start, window_end, k HAVING SUM(v) > 100",
     window_ref("hop", 6000, 2000, key=BY_K,
                having=lambda rs: (W.agg_sum(rs, V) or 0) > 100,
                select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [len(rs)])),
    (f"SELECT window_start, window_end, k, COUNT(*), SUM(v) FROM {SESSION} "
     "GROUP BY window_start, window_end, k",
     window_ref("session", gap=3000, key=BY_K, select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [
         len(rs), W.agg_sum(rs, V)])),
    (f"SELECT window_start, window_end, k, MIN(v), MAX(v), AVG(d) FROM {SESSION} "
     "GROUP BY window_start, window_end, k",
     window_ref("session", gap=3000, key=BY_K, select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [
         W.agg_min(rs, V), W.agg_max(rs, V), W.agg_avg(rs, D)])),
    (f"SELECT window_start, window_end, k, COUNT(*) FILTER (WHERE v % 2 = 0) FROM {SESSION} "
     "GROUP BY window_start, window_end, k",
     window_ref("session", gap=3000, key=BY_K, select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [
         sum(1 for r in rs if r[V] is not None and r[V] % 2 == 0)])),
    (f"SELECT window_start, SUM(v) * 2 + COUNT(*), k FROM {TUMBLE5} "
     "GROUP BY window_start, window_end, k",
     window_ref("tumble", 5000, key=BY_K, select=lambda s, e, k, rs: [
         W.text_of(s), (W.agg_sum(rs, V) * 2 + len(rs)) if W.agg_sum(rs, V) is not None
         else None] + list(k))),
    (f"SELECT window_start, window_end, v % 3, COUNT(*) FROM {TUMBLE5} "
     "GROUP BY window_start, window_end, v % 3",
     window_ref("tumble", 5000, key=lambda r: (None if r[V] is None else r[V] % 3,),
                select=lambda s, e, k, rs: ws_we(s, e) + list(k) + [len(rs)])),
    # Flink's form, TABLE(TUMBLE(TABLE w, ...)), as it is written there
    ("SELECT window_start, window_end, COUNT(*) FROM TABLE(\n  TUMBLE(TABLE w, DESCRIPTOR(ts), "
     "INTERVAL '5' SECOND)) GROUP BY window_start, window_end",
     window_ref("tumble", 5000, select=lambda s, e, k, rs: ws_we(s, e) + [len(rs)])),
    (f"SELECT window_start, window_end FROM {TUMBLE5} GROUP BY window_start, window_end",
     window_ref("tumble", 5000, select=lambda s, e, k, rs: ws_we(s, e))),
    (f"SELECT window_end, k FROM {SESSION} GROUP BY window_start, window_end, k",
     window_ref("session", gap=3000, key=BY_K,
                select=lambda s, e, k, rs: [W.text_of(e)] + list(k))),
    (f"SELECT window_start, window_end, COUNT(*) FROM "
     "TUMBLE(w, ts, INTERVAL '10' SECOND) WHERE k IS NULL GROUP BY window_start, window_end",
     window_ref("tumble", 10000, where=lambda r: r[K] is None,
                select=lambda s, e, k, rs: ws_we(s, e) + [len(rs)])),
]


class SqlWindowTest(unittest.TestCase):
    """Windows on event time against the Python reference (sqlwindows.py),
    the watermark after each row (pipeline.auto-watermark-interval 0), so
    that which rows are late is decided by the rows alone."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sql-")
        cls.oracle = Oracle(cls.tmp, [Table("w", COLUMNS_W, rows_w(),
                                            "WATERMARK FOR ts AS ts - INTERVAL '2' SECOND")])
        cls.oracle.ddl.insert(0, "SET 'pipeline.auto-watermark-interval' = '0';")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_rows_have_late_ones(self):
        """The reference drops rows, or the windows' late rows go
        unchecked."""
        for kind, args in [("tumble", (5000,)), ("hop", (6000, 2000)),
                           ("session", (0, 0, 3000, BY_K))]:
            _, dropped = W.windows(rows_w(), TS, BOUND_MS, kind, *args)
            self.assertGreater(dropped, 3, kind)

    def test_window_errors_point_at_their_place(self):
        for q, what, at in [
                ("SELECT window_start, COUNT(*) FROM HOP(w, ts, INTERVAL '3' SECOND, "
                 "INTERVAL '10' SECOND) GROUP BY window_start, window_end;",
                 "not supported: a HOP window whose size is no multiple of its slide", "'10'"),
                ("SELECT window_start, COUNT(*) FROM TUMBLE(w, ts, INTERVAL '0' SECOND) "
                 "GROUP BY window_start, window_end;", "a window's size must be positive", "'0'"),
                ("SELECT window_start, COUNT(*) FROM TUMBLE(w, id, INTERVAL '1' SECOND) "
                 "GROUP BY window_start, window_end;",
                 "not supported: a window on 'id': windows are on the event time of 'w', its "
                 "WATERMARK column 'ts'", "id,"),
                ("SELECT k FROM SESSION(w, ts, INTERVAL '1' SECOND) GROUP BY k;",
                 "not supported: a window table function whose rows are not grouped",
                 "SESSION")]:
            with self.subTest(query=q):
                p = run_sql([], "\n".join(self.oracle.ddl) + "\n" + q + "\n")
                self.assertNotEqual(p.returncode, 0, p.stdout)
                self.assertIn(what, p.stderr)
                lines = p.stderr.splitlines()
                i = next(k for k, line in enumerate(lines) if "GROUP BY" in line and
                         not line.startswith("["))
                self.assertEqual(lines[i + 1].index("^"), lines[i].index(at), p.stderr)

    def test_windows(self):
        for q, o in WINDOW_QUERIES:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)


def run_sql(args, script=None, timeout=60):
    return subprocess.run([spatetest.SPATE, "sql", "--local"] + args, input=script,
                          capture_output=True, text=True, timeout=timeout)


class SqlErrorTest(unittest.TestCase):
    DDL = ("CREATE TABLE orders (id INT, customer VARCHAR, amount DOUBLE PRECISION) WITH "
           "(connector = 'datagen', \"number-of-rows\" = '5');\n")

    def error_of(self, script):
        p = run_sql([], self.DDL + script)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("[ERROR]", p.stderr)
        return p.stderr

    def test_a_syntax_error_shows_line_column_and_caret(self):
        err = self.error_of("SELECT id\nFROM orders\nWHER id > 1;\n")
        self.assertIn("line 4, column 6: syntax error at or near \"id\"", err)
        lines = err.splitlines()
        i = next(k for k, l in enumerate(lines) if l.strip() == "WHER id > 1;")
        self.assertEqual(lines[i + 1].index("^"), lines[i].index("id"), err)

    def test_an_unknown_column_names_it_and_the_nearest(self):
        err = self.error_of("SELECT id, custmer FROM orders;")
        self.assertIn("column 'custmer' does not exist in orders; did you mean 'customer'?",
                      err)
        self.assertIn("line 2, column 12", err)

    def test_an_unknown_table_names_it_and_the_nearest(self):
        err = self.error_of("SELECT id FROM order;")
        self.assertIn("syntax error", err)  # ORDER is a keyword
        err = self.error_of("SELECT id FROM ordrs;")
        self.assertIn("table 'ordrs' does not exist; did you mean 'orders'?", err)
        err = self.error_of("DESCRIBE ordres;")
        self.assertIn("did you mean 'orders'?", err)

    def test_partitioned_by_is_read_and_checked(self):
        tbl = ("CREATE TABLE out_t (a INT, dt VARCHAR, hm VARCHAR) PARTITIONED BY ({}) "
               "WITH (connector = 'filesystem', path = '/nonexistent', format = 'csv');")
        err = self.error_of(tbl.format("dt, hour"))
        self.assertIn("the partition column 'hour' is not a column of table 'out_t'", err)
        self.assertIn("line 2, column 52", err)
        err = self.error_of(tbl.format("dt, DT"))
        self.assertIn("table 'out_t' is partitioned by column 'dt' twice", err)
        err = self.error_of(tbl.format("dt,"))
        self.assertIn("a partitioning is PARTITIONED BY (column, ...)", err)
        # Flink's partition commit and rolling options, which the sink's
        # commit at each checkpoint does not follow, are refused.
        err = self.error_of(tbl.format("dt, hm").replace(
            "format = 'csv'", "format = 'csv', \"sink.partition-commit.policy.kind\" = "
            "'success-file'"))
        self.assertIn("not supported: option 'sink.partition-commit.policy.kind' (table "
                      "'out_t'): the filesystem sink rolls and commits each partition's files "
                      "at every checkpoint", err)
        err = self.error_of(tbl.format("a, dt, hm"))
        self.assertIn("table 'out_t': every column is a partition column", err)
        err = self.error_of("CREATE TABLE p (a INT, dt VARCHAR) PARTITIONED BY (dt) "
                            "WITH (connector = 'print');")
        self.assertIn("not supported: PARTITIONED BY (table 'p') on another connector than "
                      "'filesystem'", err)

    def test_an_unknown_function_names_the_nearest(self):
        err = self.error_of("SELECT uper(customer) FROM orders;")
        self.assertIn("function uper() does not exist; did you mean upper()?", err)

    def test_unsupported_constructs_say_not_supported(self):
        for q, what in [("SELECT id FROM orders ORDER BY id;", "not supported: ORDER BY"),
                        ("SELECT id, count(*) FROM orders GROUP BY ROLLUP(id);",
                         "not supported: GROUPING SETS"),
                        ("SELECT window_start, count(*) FROM TUMBLE(orders, id, INTERVAL '1' "
                         "SECOND) GROUP BY window_start, window_end;",
                         "not supported: a window over 'orders', which has no event time"),
                        ("SELECT count(*) OVER () FROM orders;",
                         "not supported: an OVER not ordered by the event time"),
                        ("SELECT customer, count(*) FROM orders GROUP BY 1;",
                         "not supported: GROUP BY a position"),
                        ("CREATE TABLE o (c VARCHAR, n BIGINT) WITH (connector = "
                         "'filesystem', path = '/nonexistent/o', format = 'csv');\n"
                         "INSERT INTO o SELECT customer, count(*) FROM orders GROUP BY customer;",
                         "not supported: table 'o' (connector 'filesystem') takes insertions "
                         "only, and this query updates its rows"),
                        ("SELECT sum(DISTINCT id) FROM orders;",
                         "not supported: DISTINCT in an aggregate other than COUNT"),
                        ("SELECT o.id FROM orders o JOIN orders p ON o.id < p.id;",
                         "not supported: a join whose ON has no equality"),
                        ("SELECT id FROM orders WHERE id IN (SELECT id FROM orders) "
                         "OR id > 1;", "not supported: subqueries"),
                        ("SELECT id FROM orders LIMIT 3;", "not supported: LIMIT"),
                        ("UPDATE orders SET id = 1;", "not supported: UPDATE"),
                        ("SELECT id FROM orders UNION SELECT id FROM orders;",
                         "not supported: UNION"),
                        ("CREATE TABLE k (a INT) WITH (connector = 'jdbc');",
                         "not supported: connector 'jdbc'")]:
            with self.subTest(query=q):
                self.assertIn(what, self.error_of(q))

    def test_a_type_mismatch_names_both_types(self):
        err = self.error_of("SELECT id + customer FROM orders;")
        self.assertIn("cannot apply '+' to INT and VARCHAR", err)
        err = self.error_of("SELECT id FROM orders WHERE customer > 3;")
        self.assertIn("'3'", err) if "'3'" in err else self.assertIn("VARCHAR", err)
        err = self.error_of("SELECT id FROM orders WHERE amount;")
        self.assertIn("WHERE needs a BOOLEAN, not DOUBLE", err)
        err = self.error_of(
            "CREATE TABLE p (id INT, c INT) WITH (connector = 'print');\n"
            "INSERT INTO p SELECT id, customer FROM orders;")
        self.assertIn("type mismatch: column 'c' of 'p' is INT, the query gives VARCHAR", err)
        err = self.error_of("SELECT CASE WHEN id > 1 THEN 'a' ELSE 2 END FROM orders;")
        self.assertIn("VARCHAR and INT", err)

    def test_a_connector_found_by_name_must_exist(self):
        """A connector SQL does not build itself is a plugin found by name
        (kafka: libspate_kafka.so), checked at CREATE TABLE."""
        err = self.error_of("CREATE TABLE k (a INT) WITH (connector = 'nosuch', format = "
                            "'json');")
        self.assertIn("table 'k': unknown connector 'nosuch': cannot load its plugin", err)

    def test_a_bad_literal_names_its_type(self):
        err = self.error_of("SELECT id FROM orders WHERE id > 'abc';")
        self.assertIn("'abc' is not a INT", err)

    def terminal(self, home):
        """spate sql --local at a pseudo-terminal, HOME (its history's
        folder) home: the terminal's fd, the process, and read_until(text)
        that reads until text has come after what the last call waited for,
        and returns all the output so far."""
        master, slave = pty.openpty()
        p = subprocess.Popen([spatetest.SPATE, "sql", "--local"], stdin=slave, stdout=slave,
                             stderr=slave, close_fds=True, env=dict(os.environ, HOME=home))
        os.close(slave)
        out = b""
        seen = 0

        def read_until(text, timeout=30):
            nonlocal out, seen
            deadline = time.monotonic() + timeout
            while (at := out.find(text.encode(), seen)) < 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {text!r}; got {out!r}")
                r, _, _ = select.select([master], [], [], left)
                if r:
                    try:
                        out += os.read(master, 4096)
                    except OSError:
                        raise AssertionError(f"the terminal closed before {text!r}; got {out!r}")
            seen = at + len(text)
            return out

        return master, p, read_until

    def test_the_prompt_keeps_a_history(self):
        """The prompt (libedit) keeps a history across sessions in
        ~/.spate_sql_history, a statement of several lines as one entry:
        the up arrow brings the last statement back, Enter runs it."""
        with tempfile.TemporaryDirectory() as home:
            master, p, read_until = self.terminal(home)
            try:
                read_until("spate sql> ")
                os.write(master, b"CREATE TABLE hist (a INT)\n")
                read_until("        -> ")
                os.write(master, b"WITH (connector = 'blackhole');\n")
                read_until("[INFO] Execute statement succeeded.")
                # Ctrl-D once libedit has the terminal: typed while it was
                # still in canonical mode (libedit prints its prompt before it
                # switches), the line discipline took it for end of file and
                # libedit never saw it
                read_until("spate sql> ")
                spatetest.wait_for(lambda: not termios.tcgetattr(master)[3] & termios.ICANON,
                                   what="libedit to switch the terminal to raw mode")
                os.write(master, b"\x04")  # Ctrl-D: the session ends
                self.assertEqual(p.wait(timeout=30), 0)
            finally:
                os.close(master)
            with open(os.path.join(home, ".spate_sql_history")) as f:
                # libedit's file: strvis-encoded lines (a space is \040)
                lines = f.read().replace("\\040", " ").splitlines()
            self.assertIn("CREATE TABLE hist (a INT) WITH (connector = 'blackhole');", lines)
            master, p, read_until = self.terminal(home)
            try:
                read_until("spate sql> ")
                os.write(master, b"\x1b[A\n")  # up arrow, Enter: the CREATE again
                read_until("[INFO] Execute statement succeeded.")
                os.write(master, b"SHOW TABLES;\n")
                text = read_until("1 row in set").decode(errors="replace")
                self.assertIn("hist", text)
            finally:
                os.close(master)
                p.kill()
                p.wait(timeout=10)

    def test_the_prompt_survives_every_error(self):
        """At a terminal: errors are printed and the prompt goes on; a
        statement may span lines."""
        home = tempfile.mkdtemp(prefix="spate-sql-home-")
        self.addCleanup(subprocess.run, ["rm", "-rf", home], check=False)
        master, p, read_until = self.terminal(home)

        try:
            read_until("spate sql> ")
            for line in ["SELEC 1;\n", "SELECT nope FROM nothing;\n",
                         self.DDL, "SELECT id + customer FROM orders;\n",
                         "DESCRIBE\n", "orders;\n"]:
                os.write(master, line.encode())
            read_until("amount")
            os.write(master, b"SHOW TABLES;\n")
            text = read_until("1 row in set").decode(errors="replace")
            self.assertIn('syntax error at or near "SELEC"', text)
            self.assertIn("table 'nothing' does not exist", text)
            self.assertIn("cannot apply '+' to INT and VARCHAR", text)
            self.assertIn("        -> ", text)  # the continuation prompt
        finally:
            os.close(master)
            p.kill()
            p.wait(timeout=10)


class SqlSessionTest(unittest.TestCase):
    def test_ddl_show_describe_drop_set_explain(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = (
                f"CREATE TABLE src (id BIGINT NOT NULL, name VARCHAR(20), price DECIMAL(10, 2), "
                f"day DATE, ts TIMESTAMP(3)) WITH (connector = 'datagen', "
                f"\"number-of-rows\" = '10');\n"
                f"CREATE TABLE dst (id BIGINT, name VARCHAR) WITH (connector = 'filesystem', "
                f"path = '{tmp}/out', format = 'json');\n"
                "CREATE TEMPORARY VIEW v AS SELECT id, name FROM src WHERE id > 0;\n"
                "SHOW TABLES;\nDESCRIBE src;\n"
                "SET 'parallelism.default' = '2';\nSET;\n"
                "EXPLAIN INSERT INTO dst SELECT id, upper(name) FROM v;\n"
                "DROP VIEW v;\nDROP TABLE IF EXISTS nothing;\nSHOW TABLES;\n")
            p = run_sql([], script)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = p.stdout
            self.assertIn("| src ", out)
            self.assertIn("price                DECIMAL(10, 2)   TRUE", out)
            self.assertIn("id                   BIGINT           FALSE", out)
            self.assertIn("'parallelism.default' = '2'", out)
            self.assertIn("== Logical Plan ==", out)
            self.assertIn("Sink(table=[dst], connector=[filesystem])", out)
            self.assertIn("TableSourceScan(table=[src], connector=[datagen])", out)
            self.assertIn("== JobGraph ==", out)
            self.assertIn('"parallelism": 2', out)
            self.assertTrue(out.rstrip().endswith("2 rows in set"), out)

    def test_explain_of_an_aggregate(self):
        """A grouped query: a Calc of the key and arguments, the exchange by
        key, the aggregate, a Calc of HAVING and the SELECT list."""
        script = ("CREATE TABLE src (k INT, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) "
                  "WITH (connector = 'datagen', \"number-of-rows\" = '10');\n"
                  "EXPLAIN SELECT k, COUNT(*) FROM src GROUP BY k HAVING SUM(v) > 3;\n"
                  "EXPLAIN SELECT window_start, MAX(v) FILTER (WHERE k > 0) FROM "
                  "HOP(src, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND) "
                  "GROUP BY window_start, window_end;\n")
        p = run_sql([], script)
        self.assertEqual(p.returncode, 0, p.stderr)
        plan = [line.strip() for line in p.stdout.splitlines()]
        i = plan.index("GroupAggregate(groupBy=[$g0], select=[COUNT(*), SUM])")
        self.assertIn("Calc(select=[k, EXPR$2], where=[...])", plan[:i])
        self.assertIn("Exchange(distribution=[hash[$key]])", plan[i + 1])
        self.assertTrue(any(line.startswith("Calc(select=[$key, $g0, $a1]") for line in plan),
                        p.stdout)
        self.assertIn("WindowAggregate(window=[HOP(slide=[1000 ms], size=[2000 ms])], "
                      "groupBy=[], select=[MAX FILTER])", plan)
        self.assertIn('"operator": "GroupAggregate"', p.stdout)

    def test_event_time_declared_by_a_watermark(self):
        """WATERMARK FOR ts AS ts - INTERVAL ...: DESCRIBE shows it, the plan
        stamps records in the Calc and a WatermarkAssigner follows; bad
        watermarks are errors at their place."""
        with tempfile.TemporaryDirectory() as tmp:
            with open(f"{tmp}/ev.csv", "w") as f:
                f.write("1,2024-01-01 00:00:05.000\n2,2024-01-01 00:00:01.000\n3,\n")
            ddl = ("CREATE TABLE ev (id INT, ts TIMESTAMP(3),\n"
                   "  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (connector = "
                   f"'filesystem', path = '{tmp}/ev.csv', format = 'csv');\n")
            p = run_sql(["-p", "1"], ddl + "DESCRIBE ev;\nEXPLAIN SELECT id FROM ev;\n"
                        "SELECT id, ts FROM ev WHERE id < 3;\n")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("ts - 5000 ms", p.stdout)
            self.assertIn("WatermarkAssigner(rowtime=[ts], watermark=[ts - 5000 ms])", p.stdout)
            self.assertIn('"description": "ev -> Calc -> WatermarkAssigner -> Sink: collect"',
                          p.stdout)
            self.assertIn("+I[2, 2024-01-01 00:00:01.000]", p.stdout)
        for wm, what in [("WATERMARK FOR id AS id - 1", "the watermark's column 'id' of 'e' is "
                          "INT, not TIMESTAMP(3)"),
                         ("WATERMARK FOR nope AS nope", "the watermark's column 'nope' is not "
                          "in table 'e'"),
                         ("WATERMARK FOR ts AS ts + INTERVAL '1' SECOND",
                          "not supported: a watermark other than column or column - INTERVAL"),
                         ("WATERMARK FOR ts AS tz", "column 'tz' does not exist in e; did you "
                          "mean 'ts'?"),
                         ("WATERMARK ts AS ts", "a watermark is WATERMARK FOR column AS "
                          "expression")]:
            with self.subTest(watermark=wm):
                p = run_sql([], f"CREATE TABLE e (id INT, ts TIMESTAMP(3), {wm}) WITH "
                                "(connector = 'blackhole');")
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(what, p.stderr)

    def test_watermark_after_a_comment_in_any_case(self):
        """A CREATE TABLE after a comment (bench/nexmark/ddl.sql's) still has
        its WATERMARK taken out, and the watermark's column is folded to
        lower case as PostgreSQL folds the columns' names."""
        p = run_sql([], "-- the table's comment, (with a quote)\n/* and 'another' */\n"
                        "CREATE TABLE e (id INT, eventTime TIMESTAMP(3),\n"
                        "  WATERMARK FOR eventTime AS eventTime - INTERVAL '1' SECOND) WITH "
                        "(connector = 'blackhole');\nDESCRIBE e;\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("eventtime - 1000 ms", p.stdout)

    def test_split_index_and_regexp_extract(self):
        """Flink's SPLIT_INDEX and REGEXP_EXTRACT (Nexmark q21, q22): the
        pieces with empty ones kept, NULL past the last, for an empty
        string and a negative index; a group of the first match, NULL
        without a match or such a group; a pattern that does not compile is
        an error at planning."""
        p = run_sql(["-p", "1"], "CREATE TABLE one (x INT) WITH (connector = 'datagen', "
                    "\"number-of-rows\" = '1');\n"
                    "SELECT SPLIT_INDEX('https://h.com/a/b/i.htm', '/', 3), "
                    "SPLIT_INDEX('a,,b', ',', 1), SPLIT_INDEX('a,,b', ',', 2), "
                    "SPLIT_INDEX('a,,b', ',', 3), SPLIT_INDEX('a::b', '::', 1), "
                    "SPLIT_INDEX('', ',', 0), SPLIT_INDEX('a', ',', -1), "
                    "REGEXP_EXTRACT('q=1&channel_id=77&y', '(&|^)channel_id=([^&]*)', 2), "
                    "REGEXP_EXTRACT('channel_id=5', '(&|^)channel_id=([^&]*)', 2), "
                    "REGEXP_EXTRACT('abc', 'z'), REGEXP_EXTRACT('abc', 'b+c'), "
                    "REGEXP_EXTRACT('abc', '(b)', 5), REGEXP_EXTRACT('abc', '(x)?b', 1) "
                    "FROM one;\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("+I[a, , b, null, b, null, null, 77, 5, null, bc, null, null]", p.stdout)
        # patterns whose literal runs the evaluator looks for before the
        # regular expression: alternatives, quantifiers, escapes, brackets
        p = run_sql(["-p", "1"], "CREATE TABLE one (x INT) WITH (connector = 'datagen', "
                    "\"number-of-rows\" = '1');\n"
                    "SELECT REGEXP_EXTRACT('xbz', 'abc|b'), REGEXP_EXTRACT('yz', 'x*yz'), "
                    "REGEXP_EXTRACT('abbbc', 'ab+c'), REGEXP_EXTRACT('qd', '[a-z]+d'), "
                    "REGEXP_EXTRACT('aab', 'a{2}b'), REGEXP_EXTRACT('w.com', '\\.com'), "
                    "REGEXP_EXTRACT('k=v', '(a|k)=(v|w)', 2), REGEXP_EXTRACT('ab', 'a(x)?b'), "
                    "REGEXP_EXTRACT('a]b', '[]]b'), REGEXP_EXTRACT('zz', '(z)z|q') FROM one;\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("+I[b, yz, abbbc, qd, aab, .com, v, ab, ]b, zz]", p.stdout)
        p = run_sql([], "CREATE TABLE one (x INT) WITH (connector = 'datagen');\n"
                    "SELECT REGEXP_EXTRACT('abc', '(b') FROM one;\n")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("regexp_extract(): pattern '(b':", p.stderr)

    def test_set_refuses_a_bad_value(self):
        p = run_sql([], "SET 'parallelism.default' = 'many';")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("parallelism.default", p.stderr)

    def test_datagen_json_sink_and_print(self):
        """datagen's sequence in, JSON lines out; and a SELECT's rows printed
        with Flink's +I."""
        with tempfile.TemporaryDirectory() as tmp:
            script = (
                "CREATE TABLE g (n BIGINT, w VARCHAR) WITH (connector = 'datagen', "
                "\"fields.n.kind\" = 'sequence', \"fields.n.start\" = '1', "
                "\"fields.n.end\" = '100', \"fields.w.length\" = '5');\n"
                f"CREATE TABLE j (n BIGINT, sq BIGINT, w VARCHAR) WITH (connector = "
                f"'filesystem', path = '{tmp}/j', format = 'json');\n"
                "INSERT INTO j SELECT n, n * n, w FROM g WHERE n % 10 = 0;\n"
                "SELECT n, n IS NULL FROM g WHERE n <= 3;\n")
            p = run_sql(["-p", "1"], script)
            self.assertEqual(p.returncode, 0, p.stderr)
            import json
            rows = []
            for name in os.listdir(f"{tmp}/j"):
                if not name.startswith("."):
                    with open(f"{tmp}/j/{name}") as f:
                        rows += [json.loads(line) for line in f]
            self.assertEqual(sorted(r["n"] for r in rows), list(range(10, 101, 10)))
            self.assertTrue(all(r["sq"] == r["n"] ** 2 and len(r["w"]) == 5 for r in rows))
            for n in (1, 2, 3):
                self.assertIn(f"+I[{n}, false]", p.stdout)

    def test_a_statement_set_is_one_job(self):
        """EXECUTE STATEMENT SET BEGIN ... END (and BEGIN STATEMENT SET; ...
        END;): its INSERTs run as one job."""
        with tempfile.TemporaryDirectory() as tmp:
            script = (
                "CREATE TABLE g (n BIGINT) WITH (connector = 'datagen', "
                "\"fields.n.kind\" = 'sequence', \"fields.n.start\" = '1', "
                "\"fields.n.end\" = '20');\n"
                f"CREATE TABLE a (n BIGINT) WITH (connector = 'filesystem', path = '{tmp}/a', "
                "format = 'csv');\n"
                f"CREATE TABLE b (n BIGINT) WITH (connector = 'filesystem', path = '{tmp}/b', "
                "format = 'csv');\n"
                "EXECUTE STATEMENT SET\nBEGIN\nINSERT INTO a SELECT n FROM g WHERE n % 2 = 0;\n"
                "INSERT INTO b SELECT n * 10 FROM g WHERE n <= 3;\nEND;\n"
                "BEGIN STATEMENT SET;\nINSERT INTO b SELECT -n FROM g WHERE n = 1;\nEND;\n")
            p = run_sql(["-p", "1"], script)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.count("Job has been submitted"), 2, p.stdout)

            def values(d):
                out = []
                for name in os.listdir(d):
                    if not name.startswith("."):
                        with open(os.path.join(d, name)) as f:
                            out += [int(line) for line in f]
                return sorted(out)
            self.assertEqual(values(f"{tmp}/a"), list(range(2, 21, 2)))
            self.assertEqual(values(f"{tmp}/b"), [-1, 10, 20, 30])
        err = run_sql([], "BEGIN STATEMENT SET;\nSHOW TABLES;\n").stderr
        self.assertIn("a statement set holds INSERT statements only (END runs it)", err)
        err = run_sql([], "BEGIN STATEMENT SET;\n").stderr
        self.assertIn("a statement set was not ended: END runs it", err)
        err = run_sql([], "END;\n").stderr
        self.assertIn("END without BEGIN STATEMENT SET", err)

    def test_a_select_prints_rows_as_they_arrive_until_ctrl_c(self):
        """Flink's tableau mode: an endless SELECT prints +I rows as they
        come; SIGINT cancels its job and the client ends normally."""
        with tempfile.TemporaryDirectory() as tmp:
            out_path = os.path.join(tmp, "out")
            with open(out_path, "w") as out:
                p = subprocess.Popen(
                    [spatetest.SPATE, "sql", "--local", "-p", "1", "-e",
                     "CREATE TABLE g (n BIGINT) WITH (connector = 'datagen', "
                     "\"rows-per-second\" = '200', \"fields.n.kind\" = 'sequence', "
                     "\"fields.n.start\" = '1', \"fields.n.end\" = '1000000000');\n"
                     "SELECT n, n * n FROM g;"], stdout=out, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL)
            try:
                spatetest.wait_for(lambda: "+I[5, 25]" in open(out_path).read(), 30,
                                   "the SELECT's fifth row")
                p.send_signal(2)
                self.assertEqual(p.wait(timeout=30), 0, open(out_path).read())
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            text = open(out_path).read()
            self.assertIn("+I[1, 1]", text)
            self.assertIn("[INFO] Query cancelled.", text)

    def test_csv_delimiters_of_source_and_sink_are_their_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(f"{tmp}/in.csv", "w") as f:
                f.write('1;a,b\n2;"x;y"\n3;\n')
            script = (f"CREATE TABLE c (n INT, w VARCHAR) WITH (connector = 'filesystem', "
                      f"path = '{tmp}/in.csv', format = 'csv', \"csv.field-delimiter\" = ';');\n"
                      f"CREATE TABLE o (n INT, w VARCHAR) WITH (connector = 'filesystem', "
                      f"path = '{tmp}/out', format = 'csv', \"csv.field-delimiter\" = '|');\n"
                      "INSERT INTO o SELECT n * 10, w FROM c;\n")
            p = run_sql(["-p", "1"], script)
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = []
            for name in os.listdir(f"{tmp}/out"):
                if not name.startswith("."):
                    with open(f"{tmp}/out/{name}") as f:
                        lines += f.read().splitlines()
            self.assertEqual(sorted(lines), ["10|a,b", "20|x;y", "30|"])
            p = run_sql([], script.replace("'|'", "'||'"))
            self.assertIn("'csv.field-delimiter' is one character", p.stderr)

    def test_a_null_into_a_not_null_column_fails_the_job(self):
        script = ("CREATE TABLE g (n BIGINT) WITH (connector = 'datagen', "
                  "\"number-of-rows\" = '10', \"fields.n.null-rate\" = '0.5');\n"
                  "CREATE TABLE p (n BIGINT NOT NULL) WITH (connector = 'print');\n"
                  "INSERT INTO p SELECT n FROM g;\n")
        p = run_sql(["-p", "1"], script)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("column 'n' is NOT NULL, however, a null value is being written into it",
                      p.stderr)
        p = run_sql(["-p", "1"], script.replace("SELECT n FROM", "SELECT COALESCE(n, 0) FROM"))
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_a_bad_csv_line_fails_the_job_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(f"{tmp}/in.csv", "w") as f:
                f.write("1,ok\nzwei,bad\n")
            ddl = (f"CREATE TABLE c (n INT, w VARCHAR) WITH (connector = 'filesystem', "
                   f"path = '{tmp}/in.csv', format = 'csv'{{}});\n"
                   "CREATE TABLE p (n INT, w VARCHAR) WITH (connector = 'print');\n"
                   "INSERT INTO p SELECT * FROM c;\n")
            p = run_sql(["-p", "1"], ddl.format(""))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("CSV line 'zwei,bad': column 'n': 'zwei' is not a INT", p.stderr)
            p = run_sql(["-p", "1"], ddl.format(", \"csv.ignore-parse-errors\" = 'true'"))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("+I[1, ok]", p.stdout)
            self.assertNotIn("zwei", p.stdout)


# Functions of issue 26's Nexmark queries and scalar functions in C
# (tests/e2e/jobs/udfs.c, examples/nexmark_udf/), each against sqlite with
# the same function written in Python (registered in the oracle's sqlite),
# or against Python: DATE_FORMAT, PROCTIME(), AVG of a DECIMAL.
UDFS = os.path.join(spatetest.BUILD, "tests", "e2e", "jobs", "job_udfs.so")
NEXMARK_UDF = os.path.join(spatetest.BUILD, "examples", "nexmark_udf.so")
FUNCTION_DDL = [
    f"CREATE FUNCTION reverse_text(VARCHAR) RETURNS VARCHAR AS '{UDFS}', 'reverse_text_fn' "
    "LANGUAGE C;",
    f"CREATE FUNCTION len_or_minus_one(TEXT) RETURNS INT AS '{UDFS}', 'len_or_minus_one_fn' "
    "LANGUAGE C;",
    f"CREATE FUNCTION weighted(INT, INT, INT) RETURNS BIGINT AS '{UDFS}', 'weighted_fn' "
    "LANGUAGE C;",
    f"CREATE FUNCTION halve(DOUBLE PRECISION) RETURNS DOUBLE PRECISION AS '{UDFS}', "
    "'halve_fn' LANGUAGE C STRICT;",
    f"CREATE FUNCTION is_positive(DECIMAL(10, 2)) RETURNS BOOLEAN AS '{UDFS}', "
    "'is_positive_fn' LANGUAGE C;",
    f"CREATE FUNCTION next_day(TIMESTAMP(3)) RETURNS TIMESTAMP(3) AS '{UDFS}', 'next_day_fn' "
    "LANGUAGE C;",
    f"CREATE FUNCTION count_char(VARCHAR, VARCHAR) RETURNS BIGINT AS '{NEXMARK_UDF}', "
    "'count_char' LANGUAGE C;",
]


def sqlite_functions(db):
    def strict(f):
        return lambda *a: None if any(v is None for v in a) else f(*a)

    db.create_function("reverse_text", 1, strict(lambda v: v[::-1]))
    db.create_function("len_or_minus_one", 1, lambda v: -1 if v is None else len(v.encode()))
    db.create_function("weighted", 3, strict(lambda a, b, c: a + 10 * b + 100 * c))
    db.create_function("halve", 1, strict(lambda v: v / 2))
    db.create_function("is_positive", 1, strict(lambda v: v > 0))
    db.create_function("count_char", 2, lambda v, c: None if c is None or c == "" else
                       0 if v is None else v.count(c[0]))


def half_up_avg(values, scale=6):
    """AVG of DECIMALs as Flink's: the sum over the count, rounded half up at
    max(6, s) digits."""
    from decimal import ROUND_HALF_UP, Decimal
    v = [Decimal(x) for x in values if x is not None]
    if not v:
        return None
    return str((sum(v) / len(v)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP))


def e_rows(tables):
    return next(t for t in tables if t.name == "e").rows


FUNCTION_QUERIES = [
    ("SELECT id, DATE_FORMAT(ts, 'yyyy-MM-dd') FROM e", "SELECT id, strftime('%Y-%m-%d', ts) "
     "FROM e"),
    ("SELECT id, DATE_FORMAT(ts, 'HH:mm') FROM e", "SELECT id, strftime('%H:%M', ts) FROM e"),
    ("SELECT id, DATE_FORMAT(ts, 'yyyy/MM/dd HH:mm:ss.SSS') FROM e",
     "SELECT id, strftime('%Y/%m/%d %H:%M:%f', ts) FROM e"),
    ("SELECT id, DATE_FORMAT(ts, '''day'' d, ''at'' H') FROM e",
     "SELECT id, 'day ' || CAST(strftime('%d', ts) AS INTEGER) || ', at ' || "
     "CAST(strftime('%H', ts) AS INTEGER) FROM e"),
    ("SELECT id, DATE_FORMAT(day, 'dd.MM.yy') FROM e", "SELECT id, strftime('%d.%m.', day) || "
     "substr(strftime('%Y', day), 3) FROM e"),
    ("SELECT id FROM e WHERE DATE_FORMAT(ts, 'MM') = '02'",
     "SELECT id FROM e WHERE strftime('%m', ts) = '02'"),
    ("SELECT id, PROCTIME() > TIMESTAMP '2020-01-01 00:00:00' FROM e", "SELECT id, 1 FROM e"),
    ("SELECT id, reverse_text(s) FROM t", None),
    ("SELECT id, reverse_text(reverse_text(s)) = s FROM t", None),
    ("SELECT id, len_or_minus_one(s) FROM t", None),
    ("SELECT id, weighted(a, id, 3) FROM t", None),
    ("SELECT id, weighted(a, a, a) FROM t WHERE weighted(a, 1, 1) > 100", None),
    ("SELECT id, halve(x) FROM t", None),
    ("SELECT id, halve(a) FROM t", None),
    ("SELECT id, is_positive(d) FROM e", None),
    ("SELECT id, next_day(ts) FROM e", "SELECT id, strftime('%Y-%m-%d %H:%M:%f', ts, '+1 day') "
     "FROM e"),
    ("SELECT id, count_char(s, 'a') FROM t", None),
    ("SELECT id, count_char(s, s) FROM t", None),
    ("SELECT id, CASE WHEN count_char(s, 'a') > 1 THEN reverse_text(s) ELSE upper(s) END "
     "FROM t", None),
    ("SELECT id, count_char(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm'), '2') FROM e",
     "SELECT id, count_char(strftime('%Y-%m-%d %H:%M', ts), '2') FROM e"),
]

# GROUP BY with the functions above (changelogs, applied).
FUNCTION_GROUP_QUERIES = [
    ("SELECT AVG(d) FROM e", lambda tables: [(half_up_avg([r[1] for r in e_rows(tables)]),)]),
    ("SELECT id % 3, AVG(d) FROM e GROUP BY id % 3",
     lambda tables: [(k, half_up_avg([r[1] for r in e_rows(tables) if r[0] % 3 == k]))
                     for k in range(3)]),
    ("SELECT id % 4, AVG(d) FILTER (WHERE d > 0), COUNT(*) FROM e GROUP BY id % 4",
     lambda tables: [(k, half_up_avg([r[1] for r in e_rows(tables) if r[0] % 4 == k and
                                      r[1] is not None and float(r[1]) > 0]),
                      sum(1 for r in e_rows(tables) if r[0] % 4 == k)) for k in range(4)]),
    ("SELECT AVG(CAST(d AS DECIMAL(12, 8))) FROM e",
     lambda tables: [(half_up_avg([r[1] for r in e_rows(tables)], 8),)]),
    ("SELECT DATE_FORMAT(ts, 'yyyy-MM-dd'), COUNT(*), COUNT(DISTINCT id % 5), "
     "MAX(DATE_FORMAT(ts, 'HH:mm')) FROM e GROUP BY DATE_FORMAT(ts, 'yyyy-MM-dd')",
     "SELECT strftime('%Y-%m-%d', ts), COUNT(*), COUNT(DISTINCT id % 5), "
     "MAX(strftime('%H:%M', ts)) FROM e GROUP BY strftime('%Y-%m-%d', ts)"),
    ("SELECT count_char(s, 'a'), COUNT(*), COUNT(*) FILTER (WHERE a > 0) FROM t "
     "GROUP BY count_char(s, 'a')", None),
]


class SqlFunctionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sql-")
        cls.oracle = Oracle(cls.tmp, [Table("t", COLUMNS, rows_t()),
                                      Table("e", COLUMNS_E, rows_e())])
        cls.oracle.ddl += FUNCTION_DDL
        sqlite_functions(cls.oracle.db)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_count(self):
        self.assertGreaterEqual(len(FUNCTION_QUERIES) + len(FUNCTION_GROUP_QUERIES), 20)

    def test_functions(self):
        for q, o in FUNCTION_QUERIES:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)

    def test_functions_in_group_by(self):
        for q, o in FUNCTION_GROUP_QUERIES:
            with self.subTest(query=q):
                self.oracle.check_changelog(self, q, o)

    def error_of(self, script):
        p = run_sql([], "CREATE TABLE g (n INT) WITH (connector = 'datagen', "
                    "\"number-of-rows\" = '1');\n" + script.replace(";", " FROM g;")
                    if script.startswith("SELECT") else script)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        return p.stderr

    def test_function_errors(self):
        cases = [
            (f"CREATE FUNCTION f(INT) RETURNS INT AS '{self.tmp}/nosuch.so', 'f' LANGUAGE C;",
             f"function f(): cannot load its library '{self.tmp}/nosuch.so': "),
            (f"CREATE FUNCTION f(INT) RETURNS INT AS '{UDFS}', 'nosuch' LANGUAGE C;",
             f"function f(): library '{UDFS}' has no symbol 'nosuch'"),
            (f"CREATE FUNCTION f(INT) RETURNS INT AS '{UDFS}', 'reverse_text_fn' LANGUAGE C;",
             f"function f(): bad signature: 'reverse_text_fn' of '{UDFS}' is (VARCHAR) RETURNS "
             "VARCHAR, not (INT) RETURNS INT as declared"),
            (f"CREATE FUNCTION f(VARCHAR) RETURNS BIGINT AS '{UDFS}', 'reverse_text_fn' "
             "LANGUAGE C;", "not (VARCHAR) RETURNS BIGINT as declared"),
            (f"CREATE FUNCTION f(BIGINT) RETURNS BIGINT AS '{UDFS}', 'from_the_future' "
             "LANGUAGE C;", "is of another version of spate_sql_function"),
            ("CREATE FUNCTION f(INT) RETURNS INT AS 'select $1' LANGUAGE SQL;",
             "not supported: functions in LANGUAGE sql"),
            (f"CREATE FUNCTION f(INT) RETURNS INT AS '{UDFS}' LANGUAGE C;",
             "AS names its library and its symbol"),
            (FUNCTION_DDL[0] + "\n" + FUNCTION_DDL[0], "function 'reverse_text' exists already"),
            (FUNCTION_DDL[0] + "\nCREATE TABLE g (n INT) WITH (connector = 'datagen');\n"
             "SELECT reverse_text('a', 'b') FROM g;",
             "function reverse_text() takes 1 arguments, not 2"),
            ("DROP FUNCTION nosuch;", "function 'nosuch' does not exist"),
            ("CREATE TEMPORARY FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';",
             "not supported: a function from a Java class (Flink's CREATE FUNCTION count_char "
             "AS 'class'); spate's are in C: CREATE FUNCTION count_char(types) RETURNS type AS "
             "'library.so', 'symbol' LANGUAGE C"),
            ("SELECT DATE_FORMAT(TIMESTAMP '2024-01-01 00:00:00', 'yyyy-MM-dd EEE');",
             "not supported: DATE_FORMAT()'s pattern letter E"),
            ("SELECT DATE_FORMAT(TIMESTAMP '2024-01-01 00:00:00', 'yyyy ''open');",
             "not supported: DATE_FORMAT()'s pattern letter ' (a quote not closed)"),
            ("SELECT DATE_FORMAT(1, 'yyyy');", "DATE_FORMAT() needs a TIMESTAMP, not INT"),
            ("SELECT PROCTIME(1);", "PROCTIME() takes no arguments"),
        ]
        for script, want in cases:
            with self.subTest(script=script):
                self.assertIn(want, self.error_of(script))

    def test_drop_function(self):
        p = run_sql([], FUNCTION_DDL[0] + "\nDROP FUNCTION reverse_text;\n"
                    "CREATE TABLE g (n INT) WITH (connector = 'datagen');\n"
                    "SELECT reverse_text('ab') FROM g;\n")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("not supported: function reverse_text()", p.stderr)


if __name__ == "__main__":
    unittest.main()
