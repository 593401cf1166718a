"""spate SQL's joins against an oracle (sqloracle.py): regular INNER, LEFT,
RIGHT and FULL OUTER joins over tables with NULL keys, duplicate keys and
keys only one side has, their changelogs (outer joins retract the rows they
padded with NULLs) applied and compared with sqlite3's result of the same
query; interval joins on event time against sqlite3 with the bounds written
as strftime; window joins (TUMBLE, HOP) against Python over the windows of
the rows. The rows of each table come in event-time order within its
watermark's bound (none late in its own stream), so that what a join
emits is decided by the rows alone whatever the order its two inputs
interleave in. Then state in RocksDB, state TTL
(table.exec.state.ttl), the planner's errors, and a join through kill -9
of a TaskManager, every joined row once in the filesystem sink."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import spatetest  # noqa: E402
import sqlwindows as W  # noqa: E402
import test_sql_cluster  # noqa: E402
from clustertest import ClusterTestCase  # noqa: E402
from sqloracle import Oracle, Table  # noqa: E402

WORDS = ["alpha", "beta", "", "gamma", "alpha", "delta,x", 'q"uote', "beta"]


def rows_a():
    """30 rows: keys 0..8 with duplicates, NULL keys, NULL strings."""
    return [(i, None if i % 7 == 3 else i % 9, None if i % 8 == 5 else WORDS[i % len(WORDS)],
             None if i % 10 == 4 else round((i * 37 % 50) / 4.0 - 5.0, 2))
            for i in range(30)]


def rows_b():
    """24 rows: keys 0..11 (some only here), NULL keys."""
    return [(100 + i, None if i % 6 == 4 else (i * 5) % 12,
             None if i % 9 == 7 else WORDS[(i * 3) % len(WORDS)],
             None if i % 11 == 2 else (i * 7919) % 201 - 100)
            for i in range(24)]


def rows_c():
    return [(100 + i, f"c{i}") for i in range(0, 24, 2)]


def ts_rows(n, step_ms, jitter, seed):
    """Rows (id, k, ts) in event-time order but for jitter of at most 2 s,
    under a watermark 3 s behind: none late in its own stream; one row in
    the middle with no event time (in no interval, no window)."""
    base = W.ms_of("2024-03-01 10:00:00.000")
    rows = []
    for i in range(n):
        j = ((i * 7919 + seed) % 5) * jitter
        k = None if (i + seed) % 9 == 4 else (i * 3 + seed) % 5
        rows.append((seed * 1000 + i, k, W.text_of(base + i * step_ms - j)))
    rows.insert(n // 2, (seed * 1000 + 999, 1, None))
    return rows


COLUMNS_A = [("id", "INT", "INTEGER"), ("k", "INT", "INTEGER"), ("s", "VARCHAR", "TEXT"),
             ("x", "DOUBLE", "REAL")]
COLUMNS_B = [("id", "INT", "INTEGER"), ("k", "BIGINT", "INTEGER"), ("t", "VARCHAR", "TEXT"),
             ("y", "BIGINT", "INTEGER")]
COLUMNS_C = [("cid", "INT", "INTEGER"), ("name", "VARCHAR", "TEXT")]
COLUMNS_E = [("id", "INT", "INTEGER"), ("k", "INT", "INTEGER"), ("ts", "TIMESTAMP(3)", "TEXT")]
EVENT_TIME = "WATERMARK FOR ts AS ts - INTERVAL '3' SECOND"

# Regular joins: spate's query and sqlite's (None: the same text).
INNER = [
    ("SELECT a.id, b.id FROM a JOIN b ON a.k = b.k", None),
    ("SELECT a.id, a.s, b.t FROM a INNER JOIN b ON a.k = b.k WHERE a.x > 0", None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.k = b.k AND a.id + 90 < b.id", None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.k = b.k AND a.s = b.t", None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.k + 1 = b.k", None),
    ("SELECT a.id, b.id, b.y FROM a JOIN b ON a.k = b.k AND b.y > 0", None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.k = b.k AND a.x IS NOT NULL", None),
    ("SELECT a.*, b.t FROM a JOIN b ON a.k = b.k", None),
    ("SELECT a.id, b.id FROM a JOIN b ON b.k = a.k", None),
    ("SELECT p.id, q.id FROM a AS p JOIN b AS q ON p.k = q.k", None),
    ("SELECT a.id, b.id, c.name FROM a JOIN b ON a.k = b.k JOIN c ON b.id = c.cid", None),
    ("SELECT a.id, UPPER(b.t), a.x * 2 FROM a JOIN b ON a.k = b.k WHERE b.t LIKE '%a%'", None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.k = b.k AND (a.x > 1 OR b.y < 0)", None),
    ("SELECT q.id, b.id FROM (SELECT id, k FROM a WHERE id % 2 = 0) AS q JOIN b ON q.k = b.k",
     None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.id + 100 = b.id", None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.s = b.t", None),
    ("SELECT a.id, b.id FROM a JOIN b ON a.k = b.k AND a.id + 100 = b.id", None),
    ("SELECT a.id, t, y FROM a JOIN b ON a.k = b.k WHERE y IS NULL OR t IS NULL", None),
]
OUTER = [
    ("SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k", None),
    ("SELECT a.id, b.t FROM a LEFT JOIN b ON a.k = b.k AND b.y > 0", None),
    ("SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k AND a.x > 0", None),
    ("SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k AND a.id + 90 < b.id", None),
    ("SELECT a.id, a.s FROM a LEFT JOIN b ON a.k = b.k WHERE b.id IS NULL", None),
    ("SELECT a.id, COALESCE(b.t, 'none') FROM a LEFT OUTER JOIN b ON a.k = b.k", None),
    ("SELECT a.id, b.id FROM a LEFT JOIN b ON a.s = b.t", None),
    ("SELECT a.id, b.id FROM a RIGHT JOIN b ON a.k = b.k", None),
    ("SELECT a.id, b.id FROM a RIGHT JOIN b ON a.k = b.k AND a.x > 0", None),
    ("SELECT a.id, b.id FROM a RIGHT OUTER JOIN b ON a.k = b.k AND b.y > 0", None),
    ("SELECT a.id, b.id FROM a FULL JOIN b ON a.k = b.k", None),
    ("SELECT a.id, b.id FROM a FULL OUTER JOIN b ON a.k = b.k AND a.id + 90 < b.id", None),
    ("SELECT a.id, b.id FROM a FULL JOIN b ON a.k = b.k WHERE a.id IS NULL OR b.id IS NULL",
     None),
    ("SELECT a.k, b.k, a.s FROM a FULL JOIN b ON a.k = b.k AND a.s = b.t", None),
    ("SELECT a.id, b.id, c.name FROM a JOIN b ON a.k = b.k LEFT JOIN c ON b.id = c.cid", None),
    ("SELECT c.cid, a.id FROM c LEFT JOIN a ON c.cid = a.id + 100", None),
]


def sqlite_ts(col, seconds):
    return f"strftime('%Y-%m-%d %H:%M:%f', {col}, '{seconds:+d} seconds')"


# Interval joins: spate's query and sqlite's.
INTERVAL = [
    ("SELECT ea.id, eb.id FROM ea JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     "eb.ts - INTERVAL '2' SECOND AND eb.ts + INTERVAL '1' SECOND",
     "SELECT ea.id, eb.id FROM ea JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     f"{sqlite_ts('eb.ts', -2)} AND {sqlite_ts('eb.ts', 1)}"),
    ("SELECT ea.id, eb.id, eb.ts FROM ea JOIN eb ON ea.k = eb.k AND ea.ts >= eb.ts AND "
     "ea.ts < eb.ts + INTERVAL '3' SECOND",
     "SELECT ea.id, eb.id, eb.ts FROM ea JOIN eb ON ea.k = eb.k AND ea.ts >= eb.ts AND "
     f"ea.ts < {sqlite_ts('eb.ts', 3)}"),
    ("SELECT ea.id, eb.id FROM ea JOIN eb ON ea.k = eb.k AND eb.ts BETWEEN ea.ts AND "
     "ea.ts + INTERVAL '2' SECOND AND ea.id % 3 <> eb.id % 3",
     "SELECT ea.id, eb.id FROM ea JOIN eb ON ea.k = eb.k AND eb.ts BETWEEN ea.ts AND "
     f"{sqlite_ts('ea.ts', 2)} AND ea.id % 3 <> eb.id % 3"),
    ("SELECT ea.id, eb.id FROM ea LEFT JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     "eb.ts - INTERVAL '1' SECOND AND eb.ts + INTERVAL '1' SECOND",
     "SELECT ea.id, eb.id FROM ea LEFT JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     f"{sqlite_ts('eb.ts', -1)} AND {sqlite_ts('eb.ts', 1)}"),
    ("SELECT ea.id, eb.id FROM ea RIGHT JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     "eb.ts - INTERVAL '1' SECOND AND eb.ts + INTERVAL '2' SECOND",
     "SELECT ea.id, eb.id FROM ea RIGHT JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     f"{sqlite_ts('eb.ts', -1)} AND {sqlite_ts('eb.ts', 2)}"),
    ("SELECT ea.id, eb.id FROM ea FULL JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     "eb.ts AND eb.ts + INTERVAL '2' SECOND",
     "SELECT ea.id, eb.id FROM ea FULL JOIN eb ON ea.k = eb.k AND ea.ts BETWEEN "
     f"eb.ts AND {sqlite_ts('eb.ts', 2)}"),
]


def window_join(kind, size_ms, slide_ms, how, cols):
    """The rows of a window join of ea and eb on k (Python over the rows'
    windows): cols picks the output from (left row, right row, start, end)."""
    def spans(ts):
        ms = W.ms_of(ts)
        if kind == "tumble":
            s = ms - ms % size_ms
            return [(s, s + size_ms)]
        out, s = [], ms - ms % slide_ms
        while s > ms - size_ms:
            out.append((s, s + size_ms))
            s -= slide_ms
        return out

    def oracle(tables):
        ea, eb = tables[3].rows, tables[4].rows
        wins = {}
        for side, rows in ((0, ea), (1, eb)):
            for r in rows:
                for w in spans(r[2]) if r[2] is not None else []:
                    wins.setdefault(w, ([], []))[side].append(r)
        out = []
        for (s, e), (ls, rs) in wins.items():
            matched_l, matched_r = set(), set()
            for i, lr in enumerate(ls):
                for j, rr in enumerate(rs):
                    if lr[1] is not None and lr[1] == rr[1]:
                        matched_l.add(i)
                        matched_r.add(j)
                        out.append(cols(lr, rr, s, e))
            if how in ("left", "full"):
                out += [cols(lr, None, s, e) for i, lr in enumerate(ls) if i not in matched_l]
            if how in ("right", "full"):
                out += [cols(None, rr, s, e) for j, rr in enumerate(rs) if j not in matched_r]
        return out
    return oracle


def ids_and_window(lr, rr, s, e):
    return [lr[0] if lr else None, rr[0] if rr else None,
            W.text_of(s) if lr else None, W.text_of(e) if rr else None]


def tvf(table, kind):
    if kind == "tumble":
        return f"TABLE(TUMBLE(TABLE {table}, DESCRIPTOR(ts), INTERVAL '5' SECOND))"
    return f"TABLE(HOP(TABLE {table}, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))"


WINDOW = [
    (f"SELECT L.id, R.id, L.window_start, R.window_end FROM {tvf('ea', kind)} L {how.upper()} "
     f"JOIN {tvf('eb', kind)} R ON L.window_start = R.window_start AND "
     "L.window_end = R.window_end AND L.k = R.k",
     window_join(kind, 5000 if kind == "tumble" else 6000, 2000, how, ids_and_window))
    for kind, how in [("tumble", "inner"), ("tumble", "left"), ("tumble", "full"),
                      ("hop", "inner"), ("hop", "right")]
]


class SqlJoinTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sqljoin-")
        cls.oracle = Oracle(cls.tmp, [
            Table("a", COLUMNS_A, rows_a()), Table("b", COLUMNS_B, rows_b()),
            Table("c", COLUMNS_C, rows_c()),
            Table("ea", COLUMNS_E, ts_rows(40, 700, 400, 1), EVENT_TIME),
            Table("eb", COLUMNS_E, ts_rows(30, 900, 500, 2), EVENT_TIME)])
        cls.oracle.ddl.insert(0, "SET 'pipeline.auto-watermark-interval' = '0';")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_tables_have_what_joins_must_handle(self):
        """NULL keys on both sides, keys of one side only, duplicates: else
        the queries below check less than they say."""
        ka = [r[1] for r in rows_a()]
        kb = [r[1] for r in rows_b()]
        self.assertIn(None, ka)
        self.assertIn(None, kb)
        self.assertTrue(set(kb) - set(ka) - {None})
        self.assertGreater(len(ka), len(set(ka)) + 5)

    def test_inner_joins_into_a_file(self):
        """Inner joins of insertions are insertions: a filesystem sink
        takes them."""
        for q, o in INNER:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)

    def test_inner_joins_changelog_at_parallelism_2(self):
        for q, o in INNER[:6]:
            with self.subTest(query=q):
                kinds, _ = self.oracle.run_changelog(q)
                self.assertEqual(kinds, {"+I"}, q)
                self.oracle.check_changelog(self, q, o)

    def test_outer_joins_retract_their_padded_rows(self):
        seen = set()
        for q, o in OUTER:
            with self.subTest(query=q):
                kinds, _ = self.oracle.run_changelog(q)
                seen |= kinds
                self.oracle.check_changelog(self, q, o)
        self.assertIn("-D", seen, "no outer join retracted a padded row")

    def test_interval_joins(self):
        """Insertions only, outer ones too: a row padded with NULLs once the
        watermark passed its interval."""
        for q, o in INTERVAL:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)
                kinds, _ = self.oracle.run_changelog(q)
                self.assertEqual(kinds, {"+I"}, q)

    def test_window_joins(self):
        for q, o in WINDOW:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)
                self.oracle.check_changelog(self, q, o)

    def test_join_state_in_rocksdb(self):
        local = os.path.join(self.tmp, "rocksdb")
        self.oracle.args = ["-D", "state.backend.type=rocksdb",
                            "-D", f"state.backend.rocksdb.localdir={local}"]
        try:
            for q, o in [OUTER[0], OUTER[3], OUTER[10], INTERVAL[5], WINDOW[2]]:
                with self.subTest(query=q):
                    self.oracle.check_changelog(self, q, o)
        finally:
            self.oracle.args = []
        self.assertTrue(os.path.isdir(local), "RocksDB was not used")


class SqlJoinTtlTest(unittest.TestCase):
    """table.exec.state.ttl: a regular join forgets a key's rows once they
    are older than the TTL. Nexmark's bids joined with their auctions,
    3000 events at 1000 a second: with no TTL a bid meets the auction made
    seconds before it; with a TTL of 1 ms the auction is gone before nearly
    every bid on it comes."""

    def run_join(self, ttl):
        script = ("SET 'table.exec.state.ttl' = '%s';\n" % ttl +
                  "CREATE TABLE bid (auction BIGINT, price BIGINT) WITH ("
                  "connector = 'nexmark', \"events.num\" = '3000', "
                  "\"first-event.rate\" = '1000');\n"
                  "CREATE TABLE auction (id BIGINT, seller BIGINT) WITH ("
                  "connector = 'nexmark', \"events.num\" = '3000', "
                  "\"first-event.rate\" = '1000');\n"
                  "SELECT auction.id, bid.price FROM bid JOIN auction "
                  "ON bid.auction = auction.id;\n")
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", "1"], input=script,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        return [line for line in p.stdout.splitlines() if "+I[" in line]

    def test_a_ttl_forgets_rows(self):
        forever = self.run_join("0 ms")
        brief = self.run_join("1 ms")
        self.assertGreater(len(forever), 1000)
        self.assertLess(len(brief), len(forever) // 2, "a TTL of 1 ms kept the rows")

    def test_explain_shows_the_ttl(self):
        script = ("SET 'table.exec.state.ttl' = '10 s';\n"
                  "CREATE TABLE t (k INT) WITH (connector = 'datagen', "
                  "\"number-of-rows\" = '1');\n"
                  "EXPLAIN SELECT * FROM t AS x JOIN t AS y ON x.k = y.k;\n")
        p = subprocess.run([spatetest.SPATE, "sql", "--local"], input=script,
                           capture_output=True, text=True, timeout=60)
        self.assertIn("ttl=[10000 ms]", p.stdout, p.stderr + p.stdout)


class SqlJoinErrorTest(unittest.TestCase):
    """What the planner refuses, and that it says where and why."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sqljoin-")
        cls.oracle = Oracle(cls.tmp, [Table("a", COLUMNS_A, rows_a()),
                                      Table("b", COLUMNS_B, rows_b())])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def error(self, statement):
        script = "\n".join(self.oracle.ddl) + f"\n{statement};\n"
        p = subprocess.run([spatetest.SPATE, "sql", "--local"], input=script,
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        return p.stderr + p.stdout

    def test_errors(self):
        out = os.path.join(self.tmp, "out")
        cases = [
            ("SELECT a.id FROM a CROSS JOIN b", "a join without ON"),
            ("SELECT a.id FROM a JOIN b USING (id)", "NATURAL JOIN and JOIN ... USING"),
            ("SELECT a.id FROM a JOIN b ON a.id < b.id", "no equality of an expression"),
            ("SELECT id FROM a JOIN b ON a.k = b.k", "column 'id' is ambiguous"),
            ("SELECT a.id FROM a JOIN b ON a.k = b.k AND k > 1", "column 'k' is ambiguous"),
            ("SELECT a.id FROM a JOIN b ON a.x = b.k", "join keys of types DOUBLE and BIGINT"),
            ("SELECT z.id FROM a JOIN b ON a.k = b.k", "table 'z' is not in FROM"),
            ("SELECT a.id FROM a, b", "more than one table in FROM"),
            (f"CREATE TABLE o (x INT, y INT) WITH (connector = 'filesystem', path = '{out}', "
             "format = 'csv'); INSERT INTO o SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k",
             "takes insertions only"),
            ("SELECT a.id FROM a LEFT JOIN b ON a.k = b.k UNION ALL SELECT id FROM a",
             "UNION ALL of an updating query"),
        ]
        for statement, want in cases:
            with self.subTest(statement=statement):
                self.assertIn(want, self.error(statement))


def join_ddl(out, rows, rate, parallelism):
    """Two datagen sequences, l.n and r.m from 1 to rows, joined on n = 2 m
    (a regular inner join: both sides' rows in keyed state) into a CSV
    folder: (n, m, w) for each m up to rows / 2."""
    return (f"SET 'parallelism.default' = '{parallelism}';\n"
            "SET 'execution.checkpointing.interval' = '200 ms';\n"
            "CREATE TABLE l (n BIGINT) WITH (connector = 'datagen', "
            f"\"rows-per-second\" = '{rate}', \"fields.n.kind\" = 'sequence', "
            f"\"fields.n.start\" = '1', \"fields.n.end\" = '{rows}');\n"
            "CREATE TABLE r (m BIGINT, w VARCHAR) WITH (connector = 'datagen', "
            f"\"rows-per-second\" = '{rate}', \"fields.m.kind\" = 'sequence', "
            f"\"fields.m.start\" = '1', \"fields.m.end\" = '{rows}', "
            "\"fields.w.length\" = '4');\n"
            f"CREATE TABLE out (n BIGINT, m BIGINT, w VARCHAR) WITH (connector = "
            f"'filesystem', path = '{out}', format = 'csv');\n"
            "INSERT INTO out SELECT l.n, r.m, r.w FROM l JOIN r ON l.n = r.m * 2;\n")


class SqlJoinKill9Test(ClusterTestCase):
    """A join through kill -9 of a TaskManager with checkpoints: its keyed
    state (both sides' rows) restored, every joined row exactly once in
    the filesystem sink; a row whose partner came before the checkpoint
    is there only if the state was restored."""

    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tms = [self.start_taskmanager(slots=2) for _ in range(2)]
        self.wait_overview(2, slots=4)
        self.target = ["-m", f"127.0.0.1:{self.rest_port}"]

    sql = test_sql_cluster.SqlClusterTest.sql
    committed_rows = test_sql_cluster.SqlClusterTest.committed_rows
    kill9_while_running = test_sql_cluster.SqlClusterTest.kill9_while_running

    def test_kill9_of_a_taskmanager_every_joined_row_exactly_once(self):
        out = os.path.join(self.tmp, "out")
        rows = 40000
        self.kill9_while_running(join_ddl(out, rows, 8000, 2))
        got = self.committed_rows(out)
        ms = sorted(int(r[1]) for r in got)
        sys.stderr.write(f"\n{self.id().split('.')[-1]}: {len(ms)} joined rows committed, "
                         f"{rows // 2} expected, {len(ms) - len(set(ms))} duplicates\n")
        self.assertEqual(ms, list(range(1, rows // 2 + 1)))
        for r in got:
            self.assertEqual(int(r[0]), 2 * int(r[1]), r)


if __name__ == "__main__":
    unittest.main()
