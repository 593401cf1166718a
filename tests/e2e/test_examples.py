"""End-to-end tests of the example jobs (examples/) as a user runs them,
`spate run --local`: the click count's windows and late clicks against
what this file computes from the same generated CSV."""

import collections
import os
import random
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from spatetest import BUILD, SPATE, SpateTestCase, sink_lines  # noqa: E402

CLICK_COUNT = os.path.join(BUILD, "examples", "click_count.so")

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


if __name__ == "__main__":
    unittest.main()
