"""spate SQL's Top-N and deduplication (ROW_NUMBER() OVER (PARTITION BY ...
ORDER BY ...) bounded by rn <= N), OVER aggregates, UNION ALL and WITH
against an oracle (sqloracle.py): each
query's changelog printed by spate at parallelism 2, applied in order
(+I, -U, +U, -D), must leave the rows sqlite3 computes with the same
ROW_NUMBER() over the same rows, NULL partitions and NULL order values
included; a Top-N per window (over a window aggregate) against Python
(sqlwindows.py), its late rows dropped by the window; the exact changelog
of a small Top-N, minimal as Flink's; OVER aggregates (ROWS and RANGE) on
event time against Python, late rows dropped; UNION ALL, WITH and
subqueries against sqlite; the planner's refusals."""

import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import spatetest  # noqa: E402
import sqlwindows as W  # noqa: E402
from sqloracle import Oracle, Table  # noqa: E402

COLUMNS = [("id", "INT", "INTEGER"), ("k", "VARCHAR", "TEXT"), ("g", "INT", "INTEGER"),
           ("v", "INT", "INTEGER"), ("x", "DOUBLE PRECISION", "REAL"),
           ("ts", "TIMESTAMP(3)", "TEXT")]
WATERMARK = "WATERMARK FOR ts AS ts - INTERVAL '2' SECOND"
BOUND_MS = 2000


def rows_r():
    """60 rows: NULL in k, g, v and x somewhere; v repeats (ties broken by
    id in the queries); each ts its own, out of order, some rows more than
    the watermark's 2 s late."""
    keys = ["red", "green", "blue", "", "Red"]
    base = datetime.datetime(2024, 3, 1, 12, 0, 0)
    rows = []
    for i in range(60):
        k = None if i % 9 == 4 else keys[(i * 7) % len(keys)]
        g = None if i % 11 == 3 else (i * 5) % 4
        v = None if i % 7 == 2 else (i * 37) % 29 - 9
        x = None if i % 13 == 6 else round(((i * 7919) % 1000) / 7.0, 3)
        ms = i * 700 + ((i * 7) % 5) * 910 - (6050 if i % 10 == 7 else 0)
        ts = (base + datetime.timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        rows.append((i, k, g, v, x, ts))
    return rows


PARTITIONS = ["", "PARTITION BY k", "PARTITION BY g", "PARTITION BY k, g",
              "PARTITION BY g % 2"]
ORDERS = ["v DESC, id", "v, id", "x DESC, id", "ts", "ts DESC", "v NULLS LAST, id",
          "v DESC NULLS FIRST, id DESC", "upper(k), id DESC"]
BOUNDS = ["rn <= 1", "rn <= 3", "rn < 3", "rn = 1", "5 >= rn"]


def top_n_queries():
    """Partition, order and bound in turn, with and without rn in the
    output (its changelog differs: updates of ranks, or insertions and
    deletions)."""
    out = []
    n = 0
    for p in PARTITIONS:
        for o in ORDERS:
            b = BOUNDS[n % len(BOUNDS)]
            select = "*" if n % 2 == 0 else "id, k, v"
            out.append(f"SELECT {select} FROM (SELECT id, k, g, v, ROW_NUMBER() OVER ({p} "
                       f"ORDER BY {o}) AS rn FROM r) q WHERE {b}")
            n += 1
    return out


# Top-N with more around it: filters below and above, expressions,
# references through the alias, the whole row, deduplication.
QUERIES = [
    "SELECT * FROM (SELECT id, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn "
    "FROM r WHERE v > 0) q WHERE rn <= 2",
    "SELECT q.id, q.rn FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY k ORDER BY x, id) AS rn "
    "FROM r WHERE x IS NOT NULL) q WHERE q.rn <= 2 AND q.id % 2 = 0",
    "SELECT id, rn * 10 FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id DESC) AS rn FROM r) q "
    "WHERE rn <= 4",
    "SELECT * FROM (SELECT id, v + g AS s, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v + g, id) "
    "AS rn FROM r) q WHERE rn <= 3",
    "SELECT id, k FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM r) q "
    "WHERE rn = 1",
    "SELECT id, k, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn "
    "FROM r) q WHERE rn = 1",
    "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g, k ORDER BY ts DESC) AS rn "
    "FROM r) q WHERE rn <= 1",
    "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn "
    "FROM r) q WHERE rn <= 3 AND rn > 1",
    "SELECT id, rn FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v, id) AS rn "
    "FROM r) q WHERE rn <= 10 AND rn <= 2",
    "SELECT id, k, rn FROM (SELECT id, k, ROW_NUMBER() OVER (PARTITION BY substr(k, 1, 1) "
    "ORDER BY x DESC NULLS LAST, id) AS rn FROM r) q WHERE rn <= 2",
    "SELECT id, upper(k) FROM (SELECT id, k, ROW_NUMBER() OVER (PARTITION BY CASE WHEN v > 0 "
    "THEN 'p' ELSE 'n' END ORDER BY id) AS rn FROM r) q WHERE rn < 4",
    "SELECT id, rn FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, id) AS rn "
    "FROM r) q WHERE rn BETWEEN 2 AND 4",
    "SELECT * FROM (SELECT id, x, ROW_NUMBER() OVER (PARTITION BY g ORDER BY x, id) AS rn "
    "FROM (SELECT id, g, x FROM r WHERE g IS NOT NULL) s) q WHERE rn <= 2",
]


# UNION ALL, WITH and subqueries in FROM: final rows, against sqlite.
SET_QUERIES = [
    "SELECT id, k FROM r WHERE v > 0 UNION ALL SELECT id, k FROM r WHERE v < 0",
    "SELECT id FROM r UNION ALL SELECT id FROM r",
    "SELECT k, x FROM r WHERE x > 50 UNION ALL SELECT upper(k), x / 2 FROM r WHERE x <= 50",
    "SELECT id, g FROM r WHERE g = 0 UNION ALL SELECT id, g FROM r WHERE g = 1 UNION ALL "
    "SELECT id, g FROM r WHERE g IS NULL",
    "SELECT * FROM (SELECT id, k FROM r WHERE g = 0 UNION ALL SELECT id, k FROM r WHERE g = 2) u "
    "WHERE k IS NOT NULL",
    "SELECT id FROM (SELECT id, v FROM r UNION ALL SELECT id + 100, v FROM r) u WHERE v > 3",
    "WITH p AS (SELECT id, v FROM r WHERE v > 0) SELECT id, v * 10 FROM p",
    "WITH p AS (SELECT id, v FROM r WHERE v > 0), p2 AS (SELECT id FROM p WHERE id % 2 = 0) "
    "SELECT * FROM p2",
    "WITH p AS (SELECT id, k FROM r) SELECT * FROM p WHERE k = 'red' UNION ALL "
    "SELECT * FROM p WHERE k = 'blue'",
    "WITH p AS (SELECT id, k, g FROM r) SELECT a.id, a.k FROM p AS a WHERE a.g = 1",
    "WITH p AS (SELECT id, x FROM r WHERE x IS NOT NULL) SELECT * FROM (WITH p2 AS "
    "(SELECT id FROM p WHERE x > 70) SELECT id FROM p2) s",
    "SELECT n FROM (SELECT m + 1 AS n FROM (SELECT id * 2 AS m FROM (SELECT id FROM r WHERE "
    "id > 40) a) b) c WHERE n % 3 = 0",
]

# ... and updating or ranked queries over them: changelogs, against sqlite.
SET_CHANGELOG_QUERIES = [
    "WITH p AS (SELECT k, v FROM r WHERE v > 0) SELECT k, COUNT(*), SUM(v) FROM p GROUP BY k",
    "WITH p AS (SELECT id, k, v FROM r WHERE v IS NOT NULL) SELECT * FROM (SELECT id, k, "
    "ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM p) q WHERE rn <= 2",
    "SELECT * FROM (SELECT id, src, ROW_NUMBER() OVER (PARTITION BY src ORDER BY id DESC) AS rn "
    "FROM (SELECT id, 'a' AS src FROM r WHERE g = 1 UNION ALL SELECT id, 'b' FROM r WHERE "
    "g = 2) u) q WHERE rn <= 3",
    "SELECT k, COUNT(*) FROM (SELECT k FROM r WHERE v > 0 UNION ALL SELECT k FROM r WHERE "
    "x > 50) u GROUP BY k",
]

def window_top(rows, size_ms, n, desc=True):
    """Per tumbling window of size_ms: the sums of v per k, the top n by
    the sum (DESC, then k), as window_start, window_end, k, sum, rn. Late
    rows are dropped by the window aggregate below the rank."""
    wins, _ = W.windows(rows, 5, BOUND_MS, "tumble", size_ms=size_ms, key=lambda r: r[1])
    per = {}
    for s, e, k, rs in wins:
        per.setdefault((s, e), []).append((k[0] if isinstance(k, tuple) else k,
                                           W.agg_sum(rs, 3)))
    out = []
    for (s, e), groups in per.items():
        groups = [g for g in groups if g[1] is not None]
        groups.sort(key=lambda g: (-g[1] if desc else g[1], g[0] is not None, g[0] or ""))
        for i, (k, total) in enumerate(groups[:n]):
            out.append([W.text_of(s), W.text_of(e), k, total, i + 1])
    return out


# OVER aggregates: (partition column or None, ROWS or RANGE, how far back:
# rows, seconds, None for unbounded, the calls (kind, column)).
OVER_CASES = [
    ("k", "ROWS", 2, [("SUM", "v"), ("COUNT", "*")]),
    ("k", "ROWS", 0, [("MAX", "x"), ("COUNT", "v")]),
    (None, "ROWS", 3, [("MIN", "v"), ("AVG", "v")]),
    ("g", "ROWS", 1, [("AVG", "x"), ("MAX", "k")]),
    ("k", "ROWS", None, [("SUM", "v"), ("MIN", "k")]),
    ("k", "RANGE", 3, [("SUM", "v"), ("COUNT", "*"), ("MAX", "v")]),
    (None, "RANGE", 2, [("COUNT", "x"), ("AVG", "x")]),
    ("g", "RANGE", 10, [("MIN", "x"), ("SUM", "g")]),
    ("k", "RANGE", None, [("COUNT", "*"), ("MAX", "x")]),
    (None, "RANGE", 1, [("COUNT", "*"), ("SUM", "v")]),
]


def over_sql(part, frame, back, calls):
    p = f"PARTITION BY {part} " if part else ""
    if back is None:
        f = f"{frame} BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    elif frame == "ROWS":
        f = f"ROWS BETWEEN {back} PRECEDING AND CURRENT ROW"
    else:
        f = f"RANGE BETWEEN INTERVAL '{back}' SECOND PRECEDING AND CURRENT ROW"
    items = ", ".join(f"{k}({c}) OVER ({p}ORDER BY ts {f})" for k, c in calls)
    return f"SELECT id, {items} FROM r"


def over_rows(rows, part, frame, back, calls):
    """Flink's OverAggregate on event time over rows in the order they come:
    a row at or below the watermark (max(ts) - bound - 1 after each row)
    is dropped; the others, per partition in order of time (then of
    arrival), each with the aggregates of its frame."""
    names = [c for c, _, _ in COLUMNS]
    kept, wm, max_ts = [], None, None
    for r in rows:
        ts = W.ms_of(r[5])
        if wm is None or ts > wm:
            kept.append((ts, len(kept), r))
        max_ts = ts if max_ts is None else max(max_ts, ts)
        wm = max_ts - BOUND_MS - 1
    parts = {}
    for t in sorted(kept, key=lambda t: (t[0], t[1])):
        parts.setdefault(t[2][names.index(part)] if part else (), []).append(t)
    out = []
    for ordered in parts.values():
        for i, (ts, _, r) in enumerate(ordered):
            if frame == "ROWS":
                frame_rows = ordered[max(0, i - back) if back is not None else 0:i + 1]
            else:
                low = ts - back * 1000 if back is not None else None
                frame_rows = [t for t in ordered if t[0] <= ts and (low is None or t[0] >= low)]
            out.append([r[0]] + [aggregate(k, [t[2] for t in frame_rows], names, c)
                                 for k, c in calls])
    return out


def aggregate(kind, rows, names, col):
    if col == "*":
        return len(rows)
    vals = [r[names.index(col)] for r in rows if r[names.index(col)] is not None]
    if kind == "COUNT":
        return len(vals)
    if not vals:
        return None
    if kind == "SUM":
        return sum(vals)
    if kind == "MIN":
        return min(vals)
    if kind == "MAX":
        return max(vals)
    if col == "x":
        return sum(vals) / len(vals)
    q = abs(sum(vals)) // len(vals)  # an integer AVG is an integer, toward zero
    return q if sum(vals) >= 0 else -q

class SqlRankTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sql-rank-")
        cls.oracle = Oracle(cls.tmp, [Table("r", COLUMNS, rows_r(), WATERMARK)])
        # the watermark after each row, as sqlwindows.py has it
        cls.oracle.ddl.insert(0, "SET 'pipeline.auto-watermark-interval' = '0';")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, q):
        self.assertTrue(self.oracle.sqlite(q), f"the oracle has rows: {q}")
        self.oracle.check_changelog(self, q)

    def test_top_n(self):
        for q in top_n_queries():
            with self.subTest(query=q):
                self.check(q)
        # a WITH query's own name in it is the table it hides (PostgreSQL's
        # scope; sqlite refuses it as circular)
        self.oracle.check(self, "WITH r AS (SELECT id, k FROM r WHERE id < 10) SELECT * FROM r",
                          "SELECT id, k FROM r WHERE id < 10")

    def test_top_n_in_queries(self):
        for q in QUERIES:
            with self.subTest(query=q):
                self.check(q)
        # a WITH query's own name in it is the table it hides (PostgreSQL's
        # scope; sqlite refuses it as circular)
        self.oracle.check(self, "WITH r AS (SELECT id, k FROM r WHERE id < 10) SELECT * FROM r",
                          "SELECT id, k FROM r WHERE id < 10")

    def test_top_n_with_state_in_rocksdb(self):
        """The partitions' rows in RocksDB (strings read back from it) give
        the same changelogs."""
        local = os.path.join(self.tmp, "rocksdb")
        self.oracle.args = ["-D", "state.backend.type=rocksdb",
                            "-D", f"state.backend.rocksdb.localdir={local}"]
        try:
            for q in [QUERIES[k] for k in (0, 4, 5, 9)] + top_n_queries()[::9]:
                with self.subTest(query=q):
                    self.check(q)
        finally:
            self.oracle.args = []
        self.assertTrue(os.path.isdir(local), "RocksDB was not used")

    def test_changelog_is_minimal(self):
        """Flink's changelog of an append-only Top-N: with rn, -U/+U of each
        rank a row moved and +I of a new rank; without, +I of the row and
        -D of the one it pushed out; nothing for a row below the top."""
        t = Table("m", [("id", "INT", "INTEGER"), ("k", "VARCHAR", "TEXT"),
                        ("v", "INT", "INTEGER")],
                  [(1, "a", 10), (2, "a", 30), (3, "b", 20), (4, "a", 20), (5, "a", 1),
                   (6, None, 7), (7, "a", 40)])
        o = Oracle(self.tmp, [t])
        with_rn = ("SELECT * FROM (SELECT id, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v "
                   "DESC) AS rn FROM m) q WHERE rn <= 2")
        self.assertEqual(self.changes(o, with_rn), [
            "+I[1, 10, 1]", "-U[1, 10, 1]", "+U[2, 30, 1]", "+I[1, 10, 2]", "+I[3, 20, 1]",
            "-U[1, 10, 2]", "+U[4, 20, 2]", "+I[6, 7, 1]", "-U[2, 30, 1]", "+U[7, 40, 1]",
            "-U[4, 20, 2]", "+U[2, 30, 2]"])
        without = ("SELECT id, v FROM (SELECT id, v, ROW_NUMBER() OVER (PARTITION BY k ORDER "
                   "BY v DESC) AS rn FROM m) q WHERE rn <= 2")
        self.assertEqual(self.changes(o, without), [
            "+I[1, 10]", "+I[2, 30]", "+I[3, 20]", "+I[4, 20]", "-D[1, 10]", "+I[6, 7]",
            "+I[7, 40]", "-D[4, 20]"])

    def changes(self, oracle, select):
        script = "\n".join(oracle.ddl) + f"\n{select};\n"
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", "1"], input=script,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return [line for line in p.stdout.splitlines() if line[:2] in ("+I", "-U", "+U", "-D")]

    def test_window_top_n(self):
        """A Top-N per window (PARTITION BY window_start, window_end) over a
        window aggregate: final rows, written by the filesystem sink, the
        late rows dropped by the window."""
        agg = ("SELECT window_start, window_end, k, SUM(v) AS total FROM TABLE(TUMBLE(TABLE r, "
               "DESCRIPTOR(ts), INTERVAL '{s}' SECOND)) GROUP BY window_start, window_end, k")
        for size, n in [(5, 1), (5, 2), (10, 3), (3, 2)]:
            q = (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
                 f"window_end ORDER BY total DESC, k) AS rn FROM ({agg.format(s=size)}) w "
                 f"WHERE total IS NOT NULL) q WHERE rn <= {n}")
            with self.subTest(query=q):
                self.oracle.check(self, q, lambda t, size=size, n=n:
                                  window_top(t[0].rows, size * 1000, n))

    def test_union_all_with_subqueries(self):
        for q in SET_QUERIES:
            with self.subTest(query=q):
                self.assertTrue(self.oracle.sqlite(q), f"the oracle has rows: {q}")
                self.oracle.check(self, q)
        for q in SET_CHANGELOG_QUERIES:
            with self.subTest(query=q):
                self.check(q)
        # a WITH query's own name in it is the table it hides (PostgreSQL's
        # scope; sqlite refuses it as circular)
        self.oracle.check(self, "WITH r AS (SELECT id, k FROM r WHERE id < 10) SELECT * FROM r",
                          "SELECT id, k FROM r WHERE id < 10")

    def test_over_aggregates(self):
        """OVER on event time, ROWS and RANGE, bounded and not, partitioned
        by NULL-able columns: final rows (the filesystem sink), late rows
        dropped, against Python."""
        for part, frame, back, calls in OVER_CASES:
            q = over_sql(part, frame, back, calls)
            with self.subTest(query=q):
                self.oracle.check(self, q, lambda t, a=(part, frame, back, calls):
                                  over_rows(t[0].rows, *a))
        q = ("SELECT r.id, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING "
             "AND CURRENT ROW) * 10 AS s FROM r WHERE v > 0")
        self.oracle.check(self, q, lambda t: [
            [row[0], None if row[1] is None else row[1] * 10] for row in over_rows(
                [x for x in t[0].rows if x[3] is not None and x[3] > 0], "k", "ROWS", 1,
                [("SUM", "v")])])

    def error(self, select):
        script = "\n".join(self.oracle.ddl) + f"\n{select};\n"
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", "1"], input=script,
                           capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0, f"accepted: {select}")
        return p.stderr + p.stdout

    def test_refusals(self):
        cases = [
            ("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn "
             "FROM r) q WHERE id > 3", "without an upper bound on 'rn'"),
            ("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY k) AS rn FROM r) q "
             "WHERE rn <= 2", "ROW_NUMBER() without ORDER BY"),
            ("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY v) FROM r) q",
             "ROW_NUMBER() needs a name"),
            ("SELECT * FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY v) AS rn FROM r) q "
             "WHERE rn <= 0", "a Top-N of 0 rows"),
            ("SELECT * FROM (SELECT k, ROW_NUMBER() OVER (ORDER BY COUNT(*)) AS rn FROM r "
             "GROUP BY k) q WHERE rn <= 2", "ROW_NUMBER() in a SELECT with GROUP BY"),
            (f"CREATE TABLE o WITH (connector = 'filesystem', path = '{self.tmp}/o', "
             "format = 'csv') AS SELECT * FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY v) AS rn "
             "FROM r) q WHERE rn <= 2", "updates its rows (Rank: a Top-N without a window"),
            ("SELECT id, ROW_NUMBER() OVER (ORDER BY v) AS rn FROM r",
             "not supported: ROW_NUMBER() outside a subquery bounded in the WHERE above it"),
            ("SELECT id, RANK() OVER (ORDER BY v) AS rn FROM r",
             "not supported: rank() outside a subquery bounded in the WHERE above it"),
            ("SELECT * FROM (SELECT id, NTILE(2) OVER (ORDER BY v) AS rn FROM r) q WHERE rn <= 2",
             "not supported: window function ntile()"),
            ("SELECT id, LAG(v) OVER (ORDER BY ts) FROM r", "not supported: window function lag()"),
            ("SELECT id FROM r UNION SELECT id FROM r", "not supported: UNION without ALL"),
            ("SELECT id FROM r UNION ALL SELECT id, k FROM r",
             "UNION ALL of 1 columns and 2 columns"),
            ("SELECT id FROM r UNION ALL SELECT k FROM r",
             "type mismatch: UNION ALL's column 1 ('id') is INT on the left, VARCHAR on the "
             "right"),
            ("SELECT id FROM r UNION ALL SELECT id FROM r ORDER BY id",
             "not supported: ORDER BY on a stream"),
            ("SELECT id FROM r INTERSECT SELECT id FROM r", "not supported: INTERSECT"),
            ("WITH RECURSIVE p AS (SELECT id FROM r) SELECT * FROM p",
             "not supported: WITH RECURSIVE"),
            ("WITH p AS (SELECT id FROM p) SELECT * FROM p", "table 'p' does not exist"),
            ("WITH p AS (SELECT id FROM p2), p2 AS (SELECT id FROM r) SELECT * FROM p",
             "table 'p2' does not exist"),
            ("WITH p AS (SELECT id FROM r) SELECT * FROM pp", "table 'pp' does not exist"),
            ("SELECT id FROM r WHERE id IN (SELECT g FROM r) OR id > 1",
             "not supported: subqueries"),
            ("SELECT id FROM r WHERE id > 1 OR EXISTS (SELECT g FROM r)",
             "not supported: subqueries"),
            ("SELECT k, c FROM (SELECT k, COUNT(*) AS c FROM r GROUP BY k) s UNION ALL "
             "SELECT k, 1 FROM r", "not supported: UNION ALL of an updating query"),
            ("SELECT id, SUM(v) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) "
             "FROM r", "not supported: this OVER frame"),
            ("SELECT id, SUM(v) OVER (ORDER BY v) FROM r",
             "not supported: an OVER ordered by 'v', which is not the event time"),
            ("SELECT id, SUM(v) OVER (ORDER BY ts DESC) FROM r",
             "not supported: an OVER not ordered by the event time alone, ascending"),
            ("SELECT id, SUM(v) OVER (ORDER BY ts), COUNT(*) OVER (PARTITION BY k ORDER BY ts) "
             "FROM r", "not supported: OVER windows that differ in one SELECT"),
            ("SELECT k, SUM(v) OVER (ORDER BY ts) FROM r GROUP BY k",
             "not supported: OVER aggregates beside GROUP BY"),
            ("SELECT id, COUNT(DISTINCT v) OVER (ORDER BY ts) FROM r",
             "not supported: DISTINCT or FILTER in an OVER aggregate"),
        ]
        for select, want in cases:
            with self.subTest(query=select):
                self.assertIn(want, self.error(select))


if __name__ == "__main__":
    unittest.main(verbosity=2)
