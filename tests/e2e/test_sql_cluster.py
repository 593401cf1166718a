"""SQL jobs on a cluster: `spate sql -m` submits INSERT jobs over REST with no
library; a SQL job through kill -9 of a TaskManager with checkpoints writes
every row exactly once into the filesystem sink, and so does a window
aggregate (its accumulators and timers in keyed state), and so does a
window Top-N over it (its rows and timers); a savepoint of a
SQL job resumed at another parallelism continues into the same folder,
every row once; a function in C is loaded by the TaskManagers that run
its calls."""

import os
import re
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import exactly_once  # noqa: E402
from clustertest import BUILD, ClusterTestCase, wait_for  # noqa: E402

TERMINAL = ("FINISHED", "FAILED", "CANCELED")


def ddl(out, rows, rate, parallelism, extra=""):
    """n from 1 to rows (datagen's sequence, rows a second over all
    subtasks), into a CSV folder: n, n * 2 and a word, rows with n % 3 = 0
    left out."""
    return (f"SET 'parallelism.default' = '{parallelism}';\n"
            "SET 'execution.checkpointing.interval' = '200 ms';\n" + extra +
            "CREATE TABLE src (n BIGINT, w VARCHAR) WITH (connector = 'datagen', "
            f"\"rows-per-second\" = '{rate}', \"fields.n.kind\" = 'sequence', "
            f"\"fields.n.start\" = '1', \"fields.n.end\" = '{rows}', \"fields.w.length\" = '4');\n"
            f"CREATE TABLE out (n BIGINT, twice BIGINT, w VARCHAR) WITH (connector = "
            f"'filesystem', path = '{out}', format = 'csv');\n"
            "INSERT INTO out SELECT n, n * 2, upper(w) FROM src WHERE n % 3 <> 0;\n")


T0 = 1704067200000  # 2024-01-01 00:00:00


def window_ddl(out, rows, rate, parallelism):
    """n from 1 to rows and its event time T0 + n - 1 ms (datagen's
    sequences), in one-second windows per n % 4: count, sum, min, max."""
    return (f"SET 'parallelism.default' = '{parallelism}';\n"
            "SET 'execution.checkpointing.interval' = '200 ms';\n"
            "CREATE TABLE src (n BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH "
            f"(connector = 'datagen', \"rows-per-second\" = '{rate}', "
            f"\"fields.n.kind\" = 'sequence', \"fields.n.start\" = '1', "
            f"\"fields.n.end\" = '{rows}', \"fields.ts.kind\" = 'sequence', "
            f"\"fields.ts.start\" = '{T0}', \"fields.ts.end\" = '{T0 + rows - 1}');\n"
            "CREATE TABLE out (ws TIMESTAMP(3), k BIGINT, c BIGINT, total BIGINT, lo BIGINT, "
            f"hi BIGINT) WITH (connector = 'filesystem', path = '{out}', format = 'csv');\n"
            "INSERT INTO out SELECT window_start, n % 4, COUNT(*), SUM(n), MIN(n), MAX(n) "
            "FROM TUMBLE(src, DESCRIPTOR(ts), INTERVAL '1' SECOND) "
            "GROUP BY window_start, window_end, n % 4;\n")


def window_rows(rows):
    """What window_ddl's query gives, computed here."""
    import datetime
    out = {}
    for n in range(1, rows + 1):
        w = (n - 1) // 1000
        c, t, lo, hi = out.get((w, n % 4), (0, 0, n, n))
        out[(w, n % 4)] = (c + 1, t + n, min(lo, n), max(hi, n))
    ws = lambda w: (datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=w)).strftime(
        "%Y-%m-%d %H:%M:%S.000")
    return sorted([ws(w), str(k)] + [str(v) for v in vals] for (w, k), vals in out.items())


def top_n_ddl(out, rows, rate, parallelism):
    """window_ddl's windows, and of each the two groups of the largest sums
    (a window Top-N: its rows in keyed state until the window's end)."""
    script = window_ddl(out, rows, rate, parallelism).split("CREATE TABLE out")[0]
    return script + (
        "CREATE TABLE out (ws TIMESTAMP(3), k BIGINT, total BIGINT, rn BIGINT) WITH "
        f"(connector = 'filesystem', path = '{out}', format = 'csv');\n"
        "INSERT INTO out SELECT window_start, k, total, rn FROM (SELECT *, ROW_NUMBER() OVER "
        "(PARTITION BY window_start, window_end ORDER BY total DESC) AS rn FROM (SELECT "
        "window_start, window_end, n % 4 AS k, SUM(n) AS total FROM TUMBLE(src, "
        "DESCRIPTOR(ts), INTERVAL '1' SECOND) GROUP BY window_start, window_end, n % 4) w) q "
        "WHERE rn <= 2;\n")


def top_n_rows(rows):
    """What top_n_ddl's query gives, computed here."""
    per = {}
    for ws, k, _, total, _, _ in window_rows(rows):
        per.setdefault(ws, []).append((int(total), k))
    out = []
    for ws, groups in per.items():
        groups.sort(reverse=True)
        out += [[ws, k, str(t), str(i + 1)] for i, (t, k) in enumerate(groups[:2])]
    return sorted(out)

class SqlClusterTest(ClusterTestCase):
    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tms = [self.start_taskmanager(slots=2) for _ in range(3)]
        self.wait_overview(3, slots=6)
        self.target = ["-m", f"127.0.0.1:{self.rest_port}"]

    def sql(self, script, timeout=120):
        r = self.spate("sql", *self.target, input=script, timeout=timeout)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        return r.stdout

    def committed_rows(self, out):
        rows = []
        for path in exactly_once.committed_files(out):
            with open(path) as f:
                rows += [line.rstrip("\n").split(",") for line in f]
        return rows

    def check_exactly_once(self, out, rows):
        got = self.committed_rows(out)
        ns = [int(r[0]) for r in got]
        want = [n for n in range(1, rows + 1) if n % 3 != 0]
        dup = len(ns) - len(set(ns))
        missing = sorted(set(want) - set(ns))[:5]
        sys.stderr.write(f"\n{self.id().split('.')[-1]}: {len(ns)} rows committed, "
                         f"{len(want)} expected, {dup} duplicates, missing {missing}\n")
        self.assertEqual(sorted(ns), want)
        for r in got:
            self.assertEqual(int(r[1]), 2 * int(r[0]), r)
            self.assertTrue(len(r[2]) == 4 and r[2].isupper(), r)

    def test_an_insert_over_rest_needs_no_library(self):
        out = os.path.join(self.tmp, "out")
        text = self.sql(ddl(out, 1000, 0, 2, "SET 'table.dml-sync' = 'true';\n"))
        self.assertIn("has finished", text)
        self.check_exactly_once(out, 1000)

    def test_a_select_without_insert_is_refused_on_a_cluster(self):
        script = ddl(os.path.join(self.tmp, "out"), 10, 0, 1).split("INSERT")[0]
        r = self.spate("sql", *self.target, input=script + "SELECT n FROM src;\n", timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not supported: a SELECT's rows from a cluster (-m)", r.stderr)

    def kill9_while_running(self, script):
        """Submits script, kills -9 a TaskManager that runs its job once a
        checkpoint completed; the job must finish after a restore."""
        text = self.sql(script)
        jid = re.search(r"JobID ([0-9a-f]{32})", text).group(1)
        self.wait_checkpoint_while_running(jid)
        victim = self.tms.pop(0)
        ids = set()
        for v in self.job_state(jid)["vertices"]:
            status, d = self.rest(f"/jobs/{jid}/vertices/{v['id']}")
            ids |= {s["taskmanager-id"] for s in d["subtasks"] if s["status"] == "RUNNING"}
        for tm in [victim] + self.tms:
            if tm.wait_log(r"TaskExecutor (\S+) started at").group(1) in ids:
                victim = tm
                break
        if victim in self.tms:
            self.tms.remove(victim)
        victim.kill()
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        status, s = self.rest(f"/jobs/{jid}/checkpoints")
        self.assertGreaterEqual(s["counts"]["restored"], 1, "no restore after the kill")

    def test_kill9_of_a_taskmanager_every_row_exactly_once(self):
        out = os.path.join(self.tmp, "out")
        rows = 60000
        self.kill9_while_running(ddl(out, rows, 10000, 2))
        self.check_exactly_once(out, rows)

    def test_kill9_of_a_taskmanager_every_window_exactly_once(self):
        out = os.path.join(self.tmp, "out")
        rows = 40000
        self.kill9_while_running(window_ddl(out, rows, 8000, 2))
        got = sorted(self.committed_rows(out))
        want = window_rows(rows)
        sys.stderr.write(f"\n{self.id().split('.')[-1]}: {len(got)} window rows committed, "
                         f"{len(want)} expected\n")
        self.assertEqual(got, want)

    def test_kill9_of_a_taskmanager_every_top_n_row_exactly_once(self):
        """A window Top-N's rows and timers restored from a checkpoint:
        each window's top rows committed once."""
        out = os.path.join(self.tmp, "out")
        rows = 40000
        self.kill9_while_running(top_n_ddl(out, rows, 8000, 2))
        got = sorted(self.committed_rows(out))
        want = top_n_rows(rows)
        sys.stderr.write(f"\n{self.id().split('.')[-1]}: {len(got)} top rows committed, "
                         f"{len(want)} expected\n")
        self.assertEqual(got, want)

    def stop_and_resume(self, out, script_at):
        """Runs script_at(rate, parallelism, extra) at p2, stops it with a
        savepoint once a checkpoint completed, resumes it at p3 from the
        savepoint to its end; what was committed before the stop."""
        savepoints = os.path.join(self.tmp, "savepoints")
        text = self.sql(script_at(8000, 2, ""))
        jid = re.search(r"JobID ([0-9a-f]{32})", text).group(1)
        self.wait_checkpoint_while_running(jid)
        r = self.spate("stop", *self.target, "-p", savepoints, jid, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        before = self.committed_rows(out)
        text = self.sql(script_at(0, 3, f"SET 'execution.savepoint.path' = '{sp}';\n"
                                  "SET 'table.dml-sync' = 'true';\n"))
        self.assertIn("has finished", text)
        jid2 = re.search(r"JobID ([0-9a-f]{32})", text).group(1)
        status, s = self.rest(f"/jobs/{jid2}/checkpoints")
        self.assertTrue(s["latest"]["restored"]["is_savepoint"], s)
        return before

    def test_a_savepoint_resumed_at_another_parallelism(self):
        out = os.path.join(self.tmp, "out")
        rows = 40000
        before = self.stop_and_resume(out, lambda rate, p, extra: ddl(out, rows, rate, p, extra))
        self.assertGreater(len(before), 0, "nothing committed before the savepoint")
        self.assertLess(len(before), rows * 2 // 3, "the job had ended before the savepoint")
        self.check_exactly_once(out, rows)

    def test_a_window_aggregate_resumed_at_another_parallelism(self):
        """The windows open at the savepoint (accumulators, timers) go to
        the key groups' new subtasks: every window once."""
        out = os.path.join(self.tmp, "out")
        rows = 40000
        before = self.stop_and_resume(out,
                                      lambda rate, p, extra: extra + window_ddl(out, rows, rate, p))
        want = window_rows(rows)
        self.assertGreater(len(before), 0, "no window committed before the savepoint")
        self.assertLess(len(before), len(want), "the job had ended before the savepoint")
        self.assertEqual(sorted(self.committed_rows(out)), want)

    def test_a_function_in_c_is_loaded_where_its_calls_run(self):
        """CREATE FUNCTION in the client; the job's Calc, in the
        TaskManagers, loads the library itself (it is in their memory maps
        while the job runs, the client gone) and its rows are the
        function's."""
        udfs = os.path.join(BUILD, "tests", "e2e", "jobs", "job_udfs.so")
        lib = os.path.join(self.tmp, "my_udfs.so")
        shutil.copy(udfs, lib)
        out = os.path.join(self.tmp, "out")
        rows = 3000
        script = ("SET 'parallelism.default' = '2';\n"
                  f"CREATE FUNCTION rev(VARCHAR) RETURNS VARCHAR AS '{lib}', 'reverse_text_fn' "
                  "LANGUAGE C;\n"
                  "CREATE TABLE src (n BIGINT, w VARCHAR) WITH (connector = 'datagen', "
                  f"\"rows-per-second\" = '1000', \"fields.n.kind\" = 'sequence', "
                  f"\"fields.n.start\" = '1', \"fields.n.end\" = '{rows}', "
                  "\"fields.w.length\" = '6');\n"
                  "CREATE TABLE out (n BIGINT, w VARCHAR, r VARCHAR) WITH (connector = "
                  f"'filesystem', path = '{out}', format = 'csv');\n"
                  "SET 'execution.checkpointing.interval' = '200 ms';\n"
                  "INSERT INTO out SELECT n, w, rev(w) FROM src;\n")
        text = self.sql(script)
        jid = re.search(r"JobID ([0-9a-f]{32})", text).group(1)
        self.wait_tasks_running(jid)
        ids = self.taskmanagers_of(jid)
        loaded = []
        for tm in self.tms:
            if self.resource_id(tm) in ids:
                with open(f"/proc/{tm.pid}/maps") as f:
                    loaded.append(lib in f.read())
        self.assertTrue(loaded and all(loaded), f"{lib} in the maps of the TaskManagers "
                        f"running the job: {loaded}")
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        got = self.committed_rows(out)
        self.assertEqual(sorted(int(r[0]) for r in got), list(range(1, rows + 1)))
        for r in got:
            self.assertEqual(r[2], r[1][::-1], r)


if __name__ == "__main__":
    unittest.main()
