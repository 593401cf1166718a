"""spate SQL's lookup joins (JOIN t FOR SYSTEM_TIME AS OF s.proctime AS x
ON ...) against an oracle (sqloracle.py): the table a filesystem CSV file
each subtask reads into its memory, INNER and LEFT joins over rows with
NULL keys, duplicate keys and keys only one side has, conditions on either
side in ON, compared with sqlite3's plain join of the same rows (the file
does not change while the job runs, so a lookup as of any time is the
join); at parallelism 1 into a file and at parallelism 2 as a changelog.
Then the file's errors (a bad line named by file and line, or skipped and
counted with csv.ignore-parse-errors) and the planner's refusals."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import spatetest  # noqa: E402
from sqloracle import Oracle, Table  # noqa: E402
import sqlwindows as W  # noqa: E402
from test_sql_joins import (COLUMNS_A, COLUMNS_B, COLUMNS_C, COLUMNS_E, EVENT_TIME,  # noqa: E402
                            ids_and_window, rows_a, rows_b, rows_c)

AS_OF = "FOR SYSTEM_TIME AS OF pa.pt"

# Lookup joins: spate's query and sqlite's (None: spate's with AS_OF taken
# out). pa is a with a PROCTIME() column pt (a view); b and c the tables
# looked up.
LOOKUPS = [
    (f"SELECT pa.id, b.id FROM pa JOIN b {AS_OF} ON pa.k = b.k", None),
    (f"SELECT pa.id, b.t FROM pa LEFT JOIN b {AS_OF} ON pa.k = b.k", None),
    (f"SELECT pa.id, b.id, b.y FROM pa JOIN b {AS_OF} ON pa.k = b.k AND b.y > 0", None),
    (f"SELECT pa.id, b.id, b.y FROM pa LEFT JOIN b {AS_OF} ON pa.k = b.k AND b.y > 0", None),
    (f"SELECT pa.id, b.id FROM pa LEFT JOIN b {AS_OF} ON pa.k = b.k AND pa.x > 0", None),
    (f"SELECT pa.id, b.id FROM pa JOIN b {AS_OF} ON pa.k = b.k WHERE pa.x > 0", None),
    (f"SELECT pa.id, b.id FROM pa JOIN b {AS_OF} ON pa.s = b.t", None),
    (f"SELECT pa.id, b.id FROM pa LEFT JOIN b {AS_OF} ON pa.k = b.k AND pa.s = b.t", None),
    (f"SELECT pa.id, b.id FROM pa JOIN b {AS_OF} ON pa.k + 1 = b.k", None),
    (f"SELECT pa.id, b.id FROM pa JOIN b {AS_OF} ON b.k = pa.k", None),
    (f"SELECT pa.id, c.name FROM pa JOIN c {AS_OF} ON pa.id + 100 = c.cid", None),
    (f"SELECT pa.id, COALESCE(c.name, 'none') FROM pa LEFT JOIN c {AS_OF} "
     "ON pa.id + 100 = c.cid", None),
    (f"SELECT pa.id, pa.s FROM pa LEFT JOIN b {AS_OF} ON pa.k = b.k WHERE b.id IS NULL", None),
    (f"SELECT pa.id, b.id FROM pa JOIN b {AS_OF} ON pa.k = b.k AND pa.id + 90 < b.id", None),
    (f"SELECT pa.id, b.id FROM pa LEFT JOIN b {AS_OF} ON pa.k = b.k "
     "AND (pa.x > 1 OR b.y < 0)", None),
    ("SELECT p.id, q.id FROM pa AS p JOIN b FOR SYSTEM_TIME AS OF p.pt AS q ON p.k = q.k",
     "SELECT p.id, q.id FROM a AS p JOIN b AS q ON p.k = q.k"),
    ("SELECT x.id, c.name FROM (SELECT id, k, PROCTIME() AS pt FROM a WHERE id % 3 <> 1) AS x "
     "JOIN c FOR SYSTEM_TIME AS OF x.pt ON x.k * 2 + 100 = c.cid",
     "SELECT x.id, c.name FROM (SELECT id, k FROM a WHERE id % 3 <> 1) AS x "
     "JOIN c ON x.k * 2 + 100 = c.cid"),
    (f"SELECT pa.id, b.id, UPPER(b.t), pa.x * 2 FROM pa JOIN b {AS_OF} ON pa.k = b.k "
     "WHERE b.t LIKE '%a%'", None),
    (f"SELECT pa.id, b.id, c.name FROM pa JOIN b {AS_OF} ON pa.k = b.k "
     "LEFT JOIN c FOR SYSTEM_TIME AS OF pa.pt ON b.id = c.cid", None),
]


def sqlite_of(q):
    return q.replace(" FOR SYSTEM_TIME AS OF pa.pt", "")


class SqlLookupTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sqllookup-")
        cls.oracle = Oracle(cls.tmp, [
            Table("a", COLUMNS_A, rows_a()), Table("b", COLUMNS_B, rows_b()),
            Table("c", COLUMNS_C, rows_c())])
        cls.oracle.ddl.append("CREATE VIEW pa AS SELECT *, PROCTIME() AS pt FROM a;")
        cls.oracle.db.execute("CREATE VIEW pa AS SELECT * FROM a")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_tables_have_what_lookups_must_handle(self):
        """NULL keys on both sides, keys of one side only, duplicate keys in
        the table looked up: else the queries below check less than they
        say."""
        ka = [r[1] for r in rows_a()]
        kb = [r[1] for r in rows_b()]
        self.assertIn(None, ka)
        self.assertIn(None, kb)
        self.assertTrue(set(ka) - set(kb) - {None})
        self.assertGreater(len(kb), len(set(kb)) + 5)

    def test_lookup_joins_into_a_file(self):
        """A lookup join's rows are insertions: a filesystem sink takes
        them, LEFT joins' too."""
        for q, o in LOOKUPS:
            with self.subTest(query=q):
                self.oracle.check(self, q, o or sqlite_of(q))

    def test_lookup_joins_at_parallelism_2(self):
        """Each subtask reads the whole table: the rows are the same at
        parallelism 2, and only insertions."""
        for q, o in LOOKUPS[:5]:
            with self.subTest(query=q):
                kinds, rows = self.oracle.run_changelog(q, parallelism=2)
                self.assertEqual(kinds, {"+I"}, q)
                self.oracle.check_changelog(self, q, o or sqlite_of(q))

    def test_an_aggregate_over_a_lookup_join(self):
        q = (f"SELECT b.t, COUNT(*), SUM(pa.id) FROM pa JOIN b {AS_OF} ON pa.k = b.k "
             "GROUP BY b.t")
        self.oracle.check_changelog(self, q, sqlite_of(q))

    def test_explain_shows_the_lookup_join(self):
        q = f"EXPLAIN SELECT pa.id, b.id FROM pa LEFT JOIN b {AS_OF} ON pa.k = b.k AND b.y > 0"
        p = subprocess.run([spatetest.SPATE, "sql", "--local"],
                           input="\n".join(self.oracle.ddl) + f"\n{q};\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("LookupJoin(table=[b], joinType=[LeftOuterJoin], keys=[1], where=[...])",
                      p.stdout)
        self.assertNotIn("Exchange", p.stdout.split("== JobGraph ==")[0])


# IN, NOT IN, EXISTS and NOT EXISTS: semi and anti joins, checked as
# changelogs applied (an anti join retracts a row when its first match
# comes) against sqlite's own subqueries; b has NULL keys, so NOT IN over
# its k is never true (SQL's NOT IN).
SUBQUERIES = [
    "SELECT id FROM a WHERE k IN (SELECT k FROM b)",
    "SELECT id, s FROM a WHERE k IN (SELECT k FROM b WHERE y > 0)",
    "SELECT id FROM a WHERE k + 1 IN (SELECT k FROM b) AND x > 0",
    "SELECT id FROM a WHERE s IN (SELECT t FROM b)",
    "SELECT id FROM a WHERE id + 100 IN (SELECT cid FROM c)",
    "SELECT a.id FROM a WHERE EXISTS (SELECT * FROM b WHERE b.k = a.k)",
    "SELECT a.id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.y > 0)",
    "SELECT a.id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.id > a.id + 90)",
    "SELECT id FROM a WHERE k IN (SELECT k FROM b) AND s IN (SELECT t FROM b)",
    "SELECT k, COUNT(*) FROM a WHERE k IN (SELECT k FROM b) GROUP BY k",
    "SELECT id FROM a WHERE k NOT IN (SELECT k FROM b)",
    "SELECT id FROM a WHERE k NOT IN (SELECT k FROM b WHERE k IS NOT NULL)",
    "SELECT id FROM a WHERE id + 100 NOT IN (SELECT cid FROM c)",
    "SELECT id FROM a WHERE k NOT IN (SELECT cid FROM c WHERE cid > 1000)",
    "SELECT a.id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "SELECT a.id, a.s FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.y > 0)",
    "SELECT id FROM a WHERE x > 0 AND NOT EXISTS (SELECT 1 FROM c WHERE c.cid = a.id + 100)",
    "SELECT id FROM a WHERE EXISTS (SELECT 1 FROM c WHERE c.cid > 110)",
    "SELECT id FROM a WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.cid > 1000)",
]


class SqlSubqueryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sqlsubquery-")
        cls.oracle = Oracle(cls.tmp, [
            Table("a", COLUMNS_A, rows_a()), Table("b", COLUMNS_B, rows_b()),
            Table("c", COLUMNS_C, rows_c())])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_semi_and_anti_joins_at_parallelism_2(self):
        for q in SUBQUERIES:
            with self.subTest(query=q):
                self.oracle.check_changelog(self, q)

    def test_a_semi_join_inserts_only_and_an_anti_join_retracts(self):
        """IN: each row once, when its first match comes, into a file (a
        sink of insertions takes it); NOT EXISTS: a row with no match at
        once, retracted (-D) if one comes later (whether one does depends
        on how the two inputs interleave: the rows left do not)."""
        self.oracle.check(self, SUBQUERIES[0])
        kinds, _ = self.oracle.run_changelog(SUBQUERIES[14])
        self.assertLessEqual(kinds, {"+I", "-D"})
        self.assertIn("+I", kinds)
        kinds, _ = self.oracle.run_changelog(SUBQUERIES[5])
        self.assertEqual(kinds, {"+I"})

    def test_explain_shows_semi_and_anti_joins(self):
        p = subprocess.run([spatetest.SPATE, "sql", "--local"],
                           input="\n".join(self.oracle.ddl) + "\nEXPLAIN " + SUBQUERIES[0] +
                           ";\nEXPLAIN " + SUBQUERIES[10] + ";\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Join(joinType=[LeftSemiJoin], keys=[1])", p.stdout)
        self.assertIn("Join(joinType=[LeftAntiJoin], keys=[0], where=[...])", p.stdout)

    def test_errors(self):
        cases = [
            ("SELECT id FROM a WHERE (k, s) IN (SELECT k, t FROM b)",
             "not supported: IN of more than one column"),
            ("SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b JOIN c ON b.id = c.cid "
             "WHERE b.k = a.k)", "not supported: EXISTS over other than one table"),
            ("SELECT id FROM a WHERE k IN (SELECT k FROM b) OR x > 0",
             "not supported: subqueries"),
            ("SELECT id FROM a WHERE k IN (SELECT k FROM b WHERE b.id > a.id)",
             "table 'a' is not in FROM"),
        ]
        for statement, want in cases:
            with self.subTest(statement=statement):
                p = subprocess.run([spatetest.SPATE, "sql", "--local"],
                                   input="\n".join(self.oracle.ddl) + f"\n{statement};\n",
                                   capture_output=True, text=True, timeout=60)
                self.assertNotEqual(p.returncode, 0, p.stdout)
                self.assertIn(want, p.stderr + p.stdout)


def sessions(rows, gap):
    """Each key's sessions (NULL a key as any): [key, start, end, rows],
    a row within gap of the session's last going on it; rows without an
    event time in none."""
    by, out = {}, []
    for r in rows:
        if r[2] is not None:
            by.setdefault(r[1], []).append(r)
    for k, rs in by.items():
        cur = None
        for r in sorted(rs, key=lambda r: W.ms_of(r[2])):
            t = W.ms_of(r[2])
            if cur is None or t >= cur[2]:
                cur = [k, t, t, []]
                out.append(cur)
            cur[2] = t + gap
            cur[3].append(r)
    return out


def session_join(gap, how):
    """A SESSION window join: the rows of a left session and a right one
    of the same key (not NULL), start and end; an outer side's rows of a
    session that met none padded."""
    def oracle(tables):
        left, right = sessions(tables[0].rows, gap), sessions(tables[1].rows, gap)
        out, met = [], set()
        for k, s, e, ls in left:
            match = [i for i, (k2, s2, e2, _) in enumerate(right)
                     if k is not None and (k2, s2, e2) == (k, s, e)]
            for i in match:
                met.add(i)
                out += [ids_and_window(lr, rr, s, e) for lr in ls for rr in right[i][3]]
            if not match and how in ("left", "full"):
                out += [ids_and_window(lr, None, s, e) for lr in ls]
        if how in ("right", "full"):
            out += [ids_and_window(None, rr, s, e) for i, (_, s, e, rs) in enumerate(right)
                    if i not in met for rr in rs]
        return out
    return oracle


def session_rows(side):
    """Bursts of rows 6 s apart, each a session of its key (NULL in one):
    the left side's rows at +0, +0.5, +1.2 s; the right side's at +0,
    +0.8, +1.2 s (the same session), or ending or starting elsewhere (a
    session of other bounds); in event-time order, one row without an
    event time."""
    base = W.ms_of("2024-03-01 10:00:00.000")
    rows = []
    for b in range(12):
        k = None if b == 7 else b % 3
        t0 = base + b * 6000 + (b % 2) * 400
        offs = [0, 500, 1200]
        if side == 1:
            offs = [300, 1200] if b % 5 == 2 else [0, 900] if b % 4 == 3 else [0, 800, 1200]
        rows += [(side * 1000 + b * 10 + i, k, W.text_of(t0 + o)) for i, o in enumerate(offs)]
    rows.sort(key=lambda r: r[2])
    rows.insert(len(rows) // 2, (side * 1000 + 999, 1, None))
    return rows


def session_tvf(table, gap):
    return f"TABLE(SESSION(TABLE {table}, DESCRIPTOR(ts), INTERVAL '{gap}' SECOND))"


SESSION_JOINS = [
    (f"SELECT L.id, R.id, L.window_start, R.window_end FROM {session_tvf('ea', gap)} L "
     f"{how.upper()} JOIN {session_tvf('eb', gap)} R ON L.window_start = R.window_start AND "
     "L.window_end = R.window_end AND L.k = R.k", session_join(gap * 1000, how))
    for gap, how in [(2, "inner"), (2, "left"), (2, "right"), (2, "full"), (1, "inner"),
                     (3, "full")]
]


class SqlSessionJoinTest(unittest.TestCase):
    """Window joins of SESSION windows: each side's sessions per join key,
    joined when their start and end are the same, once the watermark
    passes their end; against Python over the rows (in event-time order
    within the watermark's bound, one without an event time)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sqlsession-")
        cls.oracle = Oracle(cls.tmp, [
            Table("ea", COLUMNS_E, session_rows(0), EVENT_TIME),
            Table("eb", COLUMNS_E, session_rows(1), EVENT_TIME)])
        cls.oracle.ddl.insert(0, "SET 'pipeline.auto-watermark-interval' = '0';")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_sessions_meet_and_miss(self):
        """Sessions of the same bounds on both sides and sessions of one
        side only: else the joins below check less than they say."""
        left, right = (sessions(t.rows, 2000) for t in self.oracle.tables)
        same = {(k, s, e) for k, s, e, _ in left} & {(k, s, e) for k, s, e, _ in right}
        self.assertTrue(same)
        self.assertGreater(len(left), len(same))
        self.assertTrue(any(len(rs) > 1 for *_, rs in left))

    def test_session_window_joins(self):
        for q, o in SESSION_JOINS:
            with self.subTest(query=q):
                self.oracle.check(self, q, o)

    def test_session_window_joins_at_parallelism_2(self):
        for q, o in SESSION_JOINS[:4]:
            with self.subTest(query=q):
                self.oracle.check_changelog(self, q, o)

    def test_sessions_of_other_gaps_are_refused(self):
        q = (f"SELECT L.id FROM {session_tvf('ea', 2)} L JOIN {session_tvf('eb', 3)} R "
             "ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k")
        p = subprocess.run([spatetest.SPATE, "sql", "--local"],
                           input="\n".join(self.oracle.ddl) + f"\n{q};\n",
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("a window join of SESSION windows of different gaps", p.stderr + p.stdout)


class SqlLookupFileTest(unittest.TestCase):
    """The table's file: a bad line, a directory of files, a delimiter."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spate-sqllookup-")
        self.a = os.path.join(self.tmp, "a.csv")
        with open(self.a, "w") as f:
            f.write("".join(f"{i},{i % 4}\n" for i in range(8)))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_sql(self, table_ddl, ok=True):
        script = (f"CREATE TABLE a (id INT, k INT) WITH (connector = 'filesystem', "
                  f"path = '{self.a}', format = 'csv');\n{table_ddl}\n"
                  "SELECT x.id, t.v FROM (SELECT *, PROCTIME() AS pt FROM a) AS x "
                  "JOIN t FOR SYSTEM_TIME AS OF x.pt ON x.k = t.k;\n")
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", "2"], input=script,
                           capture_output=True, text=True, timeout=60)
        if ok:
            self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        return p

    def rows(self, p):
        return sorted(line.split("> ", 1)[-1] for line in p.stdout.splitlines()
                      if "+I[" in line)

    def table(self, path, more=""):
        return (f"CREATE TABLE t (k INT, v VARCHAR) WITH (connector = 'filesystem', "
                f"path = '{path}', format = 'csv'{more});")

    def test_a_bad_line_fails_the_job_naming_file_and_line(self):
        t = os.path.join(self.tmp, "t.csv")
        with open(t, "w") as f:
            f.write("0,zero\n1,one\nnot a number,two\n")
        p = self.run_sql(self.table(t), ok=False)
        out = p.stderr + p.stdout
        self.assertIn(f"lookup table '{t}', line 3", out)
        self.assertIn("column 'k'", out)
        self.assertNotIn("+I[", p.stdout)

    def test_ignore_parse_errors_skips_bad_lines(self):
        t = os.path.join(self.tmp, "t.csv")
        with open(t, "w") as f:
            f.write("0,zero\n1,one,extra\nx,two\n3,three\n")
        p = self.run_sql(self.table(t, ", \"csv.ignore-parse-errors\" = 'true'"))
        self.assertEqual(self.rows(p), ["+I[0, zero]", "+I[3, three]", "+I[4, zero]",
                                        "+I[7, three]"])

    def test_a_directory_of_files_and_a_delimiter(self):
        """Every file of the directory but hidden ones and _ ones (not
        data, as in Flink), the table's csv.field-delimiter."""
        d = os.path.join(self.tmp, "t")
        os.mkdir(d)
        for name, text in [("part-0", "0;zero\n"), ("part-1", "1;one\n2;\"t;wo\"\n"),
                           (".part-2.inprogress", "3;hidden\n"), ("_SUCCESS", "")]:
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        p = self.run_sql(self.table(d, ", \"csv.field-delimiter\" = ';'"))
        self.assertEqual(self.rows(p), ["+I[0, zero]", "+I[1, one]", "+I[2, t;wo]",
                                        "+I[4, zero]", "+I[5, one]", "+I[6, t;wo]"])

    def test_a_missing_file_fails_the_job(self):
        p = self.run_sql(self.table(os.path.join(self.tmp, "nothing.csv")), ok=False)
        self.assertIn("nothing.csv", p.stderr + p.stdout)


class SqlLookupErrorTest(unittest.TestCase):
    """What the planner refuses, and that it says where and why."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="spate-sqllookup-")
        cls.oracle = Oracle(cls.tmp, [Table("a", COLUMNS_A, rows_a()),
                                      Table("b", COLUMNS_B, rows_b())])
        cls.oracle.ddl += [
            "CREATE VIEW pa AS SELECT *, PROCTIME() AS pt FROM a;",
            "CREATE TABLE g (k BIGINT, v VARCHAR) WITH (connector = 'datagen');",
            "CREATE TABLE e (id INT, k INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH "
            f"(connector = 'filesystem', path = '{cls.tmp}/e.csv', format = 'csv');"]

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
        cases = [
            (f"SELECT pa.id FROM pa RIGHT JOIN b {AS_OF} ON pa.k = b.k",
             "a lookup join (FOR SYSTEM_TIME AS OF) other than INNER or LEFT"),
            (f"SELECT pa.id FROM pa FULL JOIN b {AS_OF} ON pa.k = b.k",
             "other than INNER or LEFT"),
            ("SELECT e.id FROM e JOIN b FOR SYSTEM_TIME AS OF e.ts ON e.k = b.k",
             "FOR SYSTEM_TIME AS OF e.ts, which is no PROCTIME() column"),
            ("SELECT pa.id FROM pa JOIN b FOR SYSTEM_TIME AS OF pa.nothing ON pa.k = b.k",
             "FOR SYSTEM_TIME AS OF pa.nothing: no such column of the join's left side"),
            (f"SELECT pa.id FROM pa JOIN g {AS_OF} ON pa.k = g.k",
             "against 'g', which is no filesystem table in CSV"),
            (f"SELECT pa.id FROM pa JOIN nothing {AS_OF} ON pa.k = nothing.k",
             "table 'nothing' does not exist"),
            (f"SELECT pa.id FROM pa JOIN b {AS_OF} ON pa.k = b.k + 1",
             "a lookup join's key that is no column of table 'b'"),
            (f"SELECT pa.id FROM pa JOIN b {AS_OF} ON pa.k < b.k",
             "has no equality of an expression of each side"),
        ]
        for statement, want in cases:
            with self.subTest(statement=statement):
                out = self.error(statement)
                self.assertIn(want, out)
                self.assertIn("line ", out)


if __name__ == "__main__":
    unittest.main()
