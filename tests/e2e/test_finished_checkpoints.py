"""End-to-end tests of checkpoints after some tasks finished (Flink's
FLIP-147) with real processes: a JobManager and TaskManagers on 127.0.0.1,
the job testjobs' `staggered`: three generator sources of parallelism 1 that
end at N/R, 2N/R and 3N/R seconds -> a count per key in a ValueState -> the
exactly-once file sink, whose committed output is exactly the counts 1..n of
every key when nothing was lost or written twice.

- checkpoints go on after the first source finished, until the last one
  ends (the completed checkpoints are listed), and a kill -9 of a
  TaskManager in that phase restores the finished source finished and
  still gives exactly-once output, every committed record checked;
- a savepoint taken while a source has finished succeeds (it was refused:
  "some of the job's tasks have finished"), and the job resumed from it
  gives exactly-once output."""

import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, wait_for  # noqa: E402
import test_checkpoints as tc  # noqa: E402  (a module: its tests are not collected here)

N, RATE, KEYS = 20_000, 10_000, 50  # the sources end after 2, 4 and 6 s
SOURCES = 3


def expected_counts():
    n = {}
    for m in range(SOURCES):
        for i in range((m + 1) * N):
            k = (m * 1_000_000_000 + i) % KEYS
            n[k] = n.get(k, 0) + 1
    return n


class FinishedCheckpointsTest(ClusterTestCase):
    # test_checkpoints' helpers, borrowed (a subclass would run its tests too)
    http = tc.CheckpointTest.http
    cluster = tc.CheckpointTest.cluster
    job_state = tc.CheckpointTest.job_state
    wait_state = tc.CheckpointTest.wait_state
    wait_running = tc.CheckpointTest.wait_running
    stats = tc.CheckpointTest.stats
    check_exactly_once = tc.CheckpointTest.check_exactly_once

    def start_taskmanager(self, *extra, slots=2, rpc_port=None):
        p = super().start_taskmanager(*extra, slots=slots, rpc_port=rpc_port)
        self.taskmanagers = getattr(self, "taskmanagers", []) + [p]
        return p

    def submit_staggered(self, out, *extra, interval=200, savepoint=None):
        cmd = ["-D", f"state.checkpoints.dir={self.tmp}/checkpoints", "run", "-m",
               f"127.0.0.1:{self.rest_port}", "-d", "-p", "2"]
        if savepoint is not None:
            cmd += ["-s", savepoint]
        r = self.spate(*cmd, tc.TESTJOBS, "staggered", "--count", str(N), "--rate", str(RATE),
                       "--keys", str(KEYS), "--sources", str(SOURCES), "--interval",
                       str(interval), "--output", out, *extra, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def sources(self, jid):
        """The source vertices as REST shows them, by name order."""
        job = self.job_state(jid)
        return [v for v in job.get("vertices", []) if v["name"].startswith("Source")]

    def first_source_finished(self, jid):
        """The end time (ms) of the first source vertex that finished while
        another still runs, or None."""
        job = self.job_state(jid)
        if job["state"] in tc.TERMINAL:
            raise AssertionError(f"job {jid} ended {job['state']} too early")
        srcs = [v for v in job.get("vertices", []) if v["name"].startswith("Source")]
        self.assertEqual(len(srcs), SOURCES, srcs)
        ended = [v["end-time"] for v in srcs if v["status"] == "FINISHED"]
        running = [v for v in srcs if v["status"] == "RUNNING"]
        return min(ended) if ended and running else None

    def collect(self, jid, seen):
        """Adds the checkpoints in the history to seen (id -> entry)."""
        for c in self.stats(jid).get("history", []):
            seen[c["id"]] = c
        return seen

    def check_exactly_once_every_record(self, out):
        expected = expected_counts()
        self.check_exactly_once(out, expected)
        total = sum(len(v) for v in tc.read_counts(out).values())
        self.assertEqual(total, SOURCES * (SOURCES + 1) // 2 * N)
        print(f"\ncommitted output: {total} records, each (key, count) exactly once over "
              f"{len(expected)} keys")

    def test_checkpoints_go_on_after_a_source_finished_and_a_kill9_is_exactly_once(self):
        # One TaskManager of two slots runs every task: the kill hits them.
        self.cluster(1)
        out = os.path.join(self.tmp, "out")
        start_ms = int(time.time() * 1000)
        jid = self.submit_staggered(out)
        seen = {}
        self.wait_running(jid)
        first_end = wait_for(lambda: self.collect(jid, seen) and self.first_source_finished(jid),
                             60, "the first source to finish while another runs")

        def completed_after_first_end():
            self.collect(jid, seen)
            done = [c for c in seen.values()
                    if c["status"] == "COMPLETED" and c["trigger_timestamp"] > first_end]
            return len(done) >= 2 and done
        after = wait_for(completed_after_first_end, 60,
                         "two checkpoints completed after the first source finished")
        running = [v["name"] for v in self.sources(jid) if v["status"] == "RUNNING"]
        self.assertTrue(running, "the kill must come while a source still runs")
        # A kill -9 in that phase: the job restores the latest checkpoint, in
        # which the first source is recorded finished.
        restored = self.stats(jid)["counts"]["restored"]
        self.taskmanagers[0].kill()
        self.start_taskmanager(slots=2)
        wait_for(lambda: self.collect(jid, seen) and
                 self.stats(jid)["counts"]["restored"] > restored, 60, "the restore")
        job = wait_for(lambda: self.collect(jid, seen) and (
            lambda j: j if j["state"] in tc.TERMINAL else None)(self.job_state(jid)), 180,
            f"job {jid} to end")
        self.collect(jid, seen)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        last_end = max(v["end-time"] for v in self.sources(jid))
        completed = [c for c in seen.values() if c["status"] == "COMPLETED"]
        print(f"\nfirst source finished at +{first_end - start_ms} ms, last at "
              f"+{last_end - start_ms} ms; completed checkpoints:")
        for c in sorted(seen.values(), key=lambda c: c["id"]):
            if c["status"] == "COMPLETED":
                print(f"  chk-{c['id']}: triggered +{c['trigger_timestamp'] - start_ms} ms, "
                      f"{c['num_acknowledged_subtasks']}/{c['num_subtasks']} subtasks")
        self.assertGreaterEqual(len(after), 2)
        between = [c for c in seen.values() if c["status"] == "COMPLETED"
                   and first_end < c["trigger_timestamp"] < last_end]
        self.assertTrue(between, "checkpoints completed between the first and the last "
                        "source's end")
        self.assertTrue(completed)
        logs = "".join(tm.text() for tm in self.taskmanagers)
        self.assertIn("restored finished", logs, "the finished source was restored finished")
        self.check_exactly_once_every_record(out)

    def test_a_savepoint_while_a_source_has_finished_resumes_exactly_once(self):
        self.cluster(2)
        out = os.path.join(self.tmp, "out")
        savepoints = os.path.join(self.tmp, "savepoints")
        # No periodic checkpoint between the savepoint and the cancel: none
        # commits output past the savepoint.
        jid = self.submit_staggered(out, interval=600_000)
        self.wait_running(jid)
        wait_for(lambda: self.first_source_finished(jid), 60,
                 "the first source to finish while another runs")
        r = self.spate("savepoint", "-m", f"127.0.0.1:{self.rest_port}", jid, savepoints,
                       timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        print(f"\nsavepoint with a source finished: {sp}")
        r = self.spate("cancel", "-m", f"127.0.0.1:{self.rest_port}", jid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.wait_state(jid, tc.TERMINAL)["state"], "CANCELED")
        jid2 = self.submit_staggered(out, interval=600_000, savepoint=sp)
        job = self.wait_state(jid2, tc.TERMINAL, timeout=180)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        logs = "".join(tm.text() for tm in self.taskmanagers)
        self.assertIn("restored finished", logs, "the finished source was restored finished")
        self.check_exactly_once_every_record(out)


if __name__ == "__main__":
    unittest.main()
