"""End-to-end tests of the example jobs (examples/) as a user runs them:
the click count's windows and late clicks (`spate run --local`) against
what this file computes from the same generated CSV; the custom source on
the Source API (examples/number_source) on a cluster through a kill -9 of
a TaskManager, every number committed exactly once; the custom sink on the
Sink API (examples/ledger_sink) the same way, every number in its ledgers
exactly once."""

import collections
import os
import random
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase  # noqa: E402
import exactly_once  # noqa: E402
from spatetest import BUILD, SPATE, SpateTestCase, sink_lines, wait_for  # noqa: E402

CLICK_COUNT = os.path.join(BUILD, "examples", "click_count.so")
NUMBER_SOURCE = os.path.join(BUILD, "examples", "number_source.so")
LEDGER_SINK = os.path.join(BUILD, "examples", "ledger_sink.so")

WINDOW_MS = 10000
BOUND_MS = 2000


def generate_clicks(path, n, seed=7):
    """n clicks, mostly in time order, some a little out of order (within
    the bound) and some late (past their window's end by more than the
    bound); a header and malformed lines among them. Returns the clicks
    in file order as (user, url, time_ms)."""
    r = random.Random(seed)
    users = ["ann", "bob", "cho", "dee", "eve"]
    clicks, lines, t = [], ["user,url,event_time"], 0
    for i in range(n):
        t += r.randint(0, 400)
        ts = t
        roll = r.random()
        if roll < 0.1:
            ts = max(0, t - r.randint(0, BOUND_MS))          # out of order, in time
        elif roll < 0.15:
            ts = max(0, t - BOUND_MS - WINDOW_MS - r.randint(1, 5000))  # late
        c = (r.choice(users), f"/page/{r.randint(1, 20)}", ts)
        clicks.append(c)
        lines.append(",".join(map(str, c)))
        if i % 97 == 0:
            lines.append(r.choice(["garbage", "ann,/x,not-a-time", ",/y,5", "a,b,1,2"]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return clicks


def expected(clicks):
    """(counts, late) as the job computes them: a watermark of the largest
    time so far minus the bound minus 1 after each click, and a click late
    when its window's last millisecond is at or below the watermark."""
    counts, late, wm = collections.Counter(), [], None
    for user, url, ts in clicks:
        start = ts - ts % WINDOW_MS
        if wm is not None and start + WINDOW_MS - 1 <= wm:
            late.append(f"{user},{url},{ts}")
        else:
            counts[(user, start)] += 1
        wm = max(wm if wm is not None else ts - BOUND_MS - 1, ts - BOUND_MS - 1)
    lines = [f"{u},{s},{s + WINDOW_MS},{c}" for (u, s), c in counts.items()]
    return sorted(lines), sorted(late)


class ClickCountTest(SpateTestCase):
    def spate_here(self, *args, timeout=120):
        """`spate args...` run in the test's folder, as a user runs it in
        the folder of their data."""
        return subprocess.run([SPATE, *args], capture_output=True, text=True, cwd=self.tmp,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def test_counts_and_late_clicks_from_a_csv_file(self):
        clicks = generate_clicks(os.path.join(self.tmp, "clicks.csv"), 3000)
        want_counts, want_late = expected(clicks)
        self.assertGreater(len(want_late), 50, "the input must hold late clicks")
        r = self.spate_here("run", "--local", "-p", "1", CLICK_COUNT, "--input", "clicks.csv",
                            "--output", "out", "--window-ms", str(WINDOW_MS),
                            "--out-of-orderness-ms", str(BOUND_MS))
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertIn("- malformed: 31", r.stdout)
        got_counts = sorted(line for _, line in sink_lines(os.path.join(self.tmp, "out", "counts")))
        got_late = sorted(line for _, line in sink_lines(os.path.join(self.tmp, "out", "late")))
        self.assertEqual(len(got_counts), len(want_counts))
        self.assertEqual(got_counts, want_counts)
        self.assertEqual(got_late, want_late)
        # Each sink shows its own name.
        self.assertIn("- Sink: Counts.numRecordsIn: %d" % len(want_counts), r.stdout)
        self.assertIn("- Sink: Late clicks.numRecordsIn: %d" % len(want_late), r.stdout)

    def test_bad_arguments_are_clear_errors(self):
        r = self.spate("run", "--local", CLICK_COUNT)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("click_count: which clicks? --input is missing", r.stderr)
        r = self.spate("run", "--local", CLICK_COUNT, "--input", "x", "--window-ms", "0")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--window-ms needs a positive number of milliseconds", r.stderr)
        r = self.spate("run", "--local", CLICK_COUNT, "--input",
                       os.path.join(self.tmp, "missing.csv"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("missing.csv", r.stderr + r.stdout)


def committed_numbers(out):
    """Every number in the committed part files of out, in file order."""
    numbers = []
    for path in exactly_once.committed_files(out):
        with open(path) as f:
            numbers += [int(line) for line in f]
    return numbers


class Kill9TestCase(ClusterTestCase):
    """A cluster of 3 TaskManagers of 2 slots, and an example job run on it
    at p3 through a kill -9 of a TaskManager that runs it."""

    COUNT = 60000

    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tms = [self.start_taskmanager(slots=2) for _ in range(3)]
        self.wait_overview(3, slots=6)

    def run_through_kill9(self, what, job, args, numbers_of, out):
        """Runs job with args at p3, kills a TaskManager of it once a
        checkpoint completed and some output was committed, and asserts
        that numbers_of(out) holds each of 0 .. COUNT-1 once after the
        restored job finished."""
        r = self.spate("-D", "execution.checkpointing.interval=200 ms",
                       "-D", f"state.checkpoints.dir={self.tmp}/checkpoints",
                       "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "3",
                       job, "--count", str(self.COUNT), *args, "--output", out, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.wait_checkpoint_while_running(jid)
        wait_for(lambda: os.path.isdir(out) and numbers_of(out), 60,
                 f"output of {what} committed before the kill", interval=0.1)
        running = self.taskmanagers_of(jid)
        victim = next(tm for tm in self.tms if self.resource_id(tm) in running)
        victim.kill()
        job = self.wait_state(jid, ("FINISHED", "FAILED", "CANCELED"))
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        status, s = self.rest(f"/jobs/{jid}/checkpoints")
        self.assertGreaterEqual(s["counts"]["restored"], 1,
                                "no restore: the kill came after the job had ended")
        numbers = numbers_of(out)
        dup = len(numbers) - len(set(numbers))
        lost = set(range(self.COUNT)) - set(numbers)
        sys.stderr.write(f"\n{what} p3, kill -9, restored from checkpoint "
                         f"{s['latest']['restored']['id']}: {len(numbers)} committed, "
                         f"{dup} twice, {len(lost)} lost\n")
        self.assertEqual(dup, 0, "numbers committed twice")
        self.assertEqual(sorted(lost)[:10], [], f"{len(lost)} numbers lost")
        self.assertEqual(len(numbers), self.COUNT)


class NumberSourceTest(Kill9TestCase):
    """The custom source of examples/number_source: its split enumerator
    runs in the JobMaster, its readers in the tasks; the job restored from
    its latest checkpoint (the enumerator's unassigned splits, the readers'
    split positions, the splits handed out since given back)."""

    def test_p3_kill9_of_a_taskmanager_every_number_exactly_once(self):
        # 3 readers at 2000 numbers a second: about 10 s of input.
        self.run_through_kill9("number_source", NUMBER_SOURCE,
                               ["--splits", "24", "--rate", "2000"], committed_numbers,
                               os.path.join(self.tmp, "out"))


def ledger_numbers(out):
    """The numbers in every ledger of examples/ledger_sink, in order."""
    numbers = []
    for name in sorted(os.listdir(out)):
        if name.startswith("ledger-") and name.endswith(".txt"):
            with open(os.path.join(out, name)) as f:
                numbers += [int(line) for line in f]
    return numbers


class LedgerSinkTest(Kill9TestCase):
    """The custom two-phase-commit sink of examples/ledger_sink: its
    writers stage batches, its committers append them to the ledgers once
    their checkpoint completes; the job restored from its latest checkpoint
    (its committables committed, the batches no completed checkpoint
    prepared deleted)."""

    def test_p3_kill9_of_a_taskmanager_every_number_once_in_the_ledgers(self):
        out = os.path.join(self.tmp, "ledger")
        # 6000 numbers a second over the 3 subtasks: about 10 s of input.
        self.run_through_kill9("ledger_sink", LEDGER_SINK, ["--rate", "6000"], ledger_numbers,
                               out)
        leftovers = [n for n in os.listdir(out) if n.startswith(".batch-")]
        self.assertEqual(leftovers, [], "batches left uncommitted at the end")


class LedgerSinkArgumentsTest(SpateTestCase):
    def test_a_missing_output_is_a_clear_error(self):
        r = self.spate("run", "--local", LEDGER_SINK)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ledger_sink: --output DIR is missing", r.stderr)


if __name__ == "__main__":
    unittest.main()
