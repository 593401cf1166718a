"""End-to-end tests of checkpoints and failover with real processes: a
JobManager and TaskManagers on 127.0.0.1, jobs submitted with `spate run -m`
(and one on the mini cluster, `spate run --local`). The job is testjobs'
`checkpointed`: a generator (or numbers in files) -> a count per key in a
ValueState -> the exactly-once file sink, so that the committed output is
exactly the counts 1..n of every key when nothing was lost or written twice.

- three kill -9 of a TaskManager (each after a checkpoint completed since
  the last), a replacement started each time: exactly once, FINISHED; the
  same at least once (nothing lost), and with the file source over split
  files;
- a task failing once on the mini cluster restarts from the checkpoint; a
  failed task restarts its pipelined region only; fixed-delay's attempts;
- a checkpoint that times out is failed and the job keeps running; too many
  failed checkpoints fail the job (restart strategy none);
- a truncated or corrupt `_metadata`, or a missing state file, found at the
  restore after a kill: the job fails with an error naming the file;
- REST: a manual checkpoint (POST, then its status), its details, the
  configuration and the statistics, with Flink's fields."""

import json
import os
import re
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from spatetest import BUILD, sink_hidden, sink_parts  # noqa: E402

TESTJOBS = os.path.join(BUILD, "tests", "jobs", "testjobs.so")
TERMINAL = ("FINISHED", "FAILED", "CANCELED")
# The sanitized build runs several times slower: fewer records, same length.
ASAN = "asan" in BUILD


def read_counts(out_dir):
    """{key: [counts...]} of the committed part files of the sink (files
    whose name starts with a dot are in progress or pending)."""
    counts = {}
    rx = re.compile(r"^\((\d+),(\d+)\)$")
    for name in os.listdir(out_dir):
        if name.startswith("."):
            continue
        with open(os.path.join(out_dir, name)) as f:
            for line in f:
                m = rx.match(line.strip())
                if m is None:
                    raise AssertionError(f"unexpected line {line!r} in {name}")
                counts.setdefault(int(m.group(1)), []).append(int(m.group(2)))
    return counts


def expected_per_key(values, keys):
    n = [0] * keys
    for v in values:
        n[v % keys] += 1
    return {k: n[k] for k in range(keys) if n[k] > 0}


class CheckpointTest(ClusterTestCase):

    def http(self, path, method="GET", body=None):
        """(status, JSON) of a REST call with an optional JSON body."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest_port}{path}", data=data,
                                     method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def cluster(self, taskmanagers=2, *extra):
        jm = self.start_jobmanager(*extra)
        tms = [self.start_taskmanager(slots=2) for _ in range(taskmanagers)]
        self.wait_overview(taskmanagers, slots=2 * taskmanagers)
        return jm, tms

    def submit(self, *args, parallelism=4, conf=()):
        """Submits the checkpointed job detached; returns its id."""
        r = self.spate(*conf, "-D", f"state.checkpoints.dir={self.tmp}/checkpoints", "run",
                       "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", str(parallelism),
                       TESTJOBS, "checkpointed", *args, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def job_state(self, jid):
        status, job = self.http(f"/jobs/{jid}")
        self.assertEqual(status, 200, job)
        return job

    def wait_state(self, jid, states, timeout=60.0):
        return wait_for(lambda: (lambda j: j if j["state"] in states else None)(
            self.job_state(jid)), timeout, f"job {jid} in {states}")

    def wait_running(self, jid, timeout=60.0):
        def running():
            j = self.job_state(jid)
            t = j.get("tasks", {})
            if j["state"] in TERMINAL:
                raise AssertionError(f"job {jid} ended {j['state']}: {j.get('failure')}")
            return j if j["state"] == "RUNNING" and t.get("running") == t.get("total") else None
        return wait_for(running, timeout, f"every task of {jid} running")

    def stats(self, jid):
        status, s = self.http(f"/jobs/{jid}/checkpoints")
        self.assertEqual(status, 200, s)
        return s

    def wait_completed(self, jid, more_than, timeout=60.0):
        """Waits until more than more_than checkpoints completed."""
        def done():
            s = self.stats(jid)
            return s if s["counts"]["completed"] > more_than else None
        return wait_for(done, timeout, f"a checkpoint of {jid} after {more_than}")

    def check_exactly_once(self, out_dir, expected):
        counts = read_counts(out_dir)
        self.assertEqual(sorted(counts), sorted(expected), "keys")
        for k, n in expected.items():
            got = counts[k]
            self.assertEqual(len(got), n, f"key {k}: {len(got)} counts, {n} records")
            self.assertEqual(sorted(got), list(range(1, n + 1)), f"key {k}: lost or twice")

    def check_at_least_once(self, out_dir, expected):
        counts = read_counts(out_dir)
        self.assertEqual(sorted(counts), sorted(expected), "keys")
        for k, n in expected.items():
            self.assertEqual(set(counts[k]) >= set(range(1, n + 1)), True, f"key {k}: lost")

    def kill_three_times(self, jid, tms):
        """Three rounds: a checkpoint completes after the last restore, a
        TaskManager dies by kill -9, a replacement starts, and the job is
        restored from its latest checkpoint."""
        s = self.stats(jid)
        restored, completed = s["counts"]["restored"], s["counts"]["completed"]
        for round in range(3):
            self.wait_running(jid)
            self.wait_completed(jid, completed)
            tms.pop(0).kill()
            tms.append(self.start_taskmanager(slots=2))

            def restored_again():
                st = self.stats(jid)
                return st if st["counts"]["restored"] > restored else None
            s = wait_for(restored_again, 60, f"restore {round + 1} of job {jid}")
            restored, completed = s["counts"]["restored"], s["counts"]["completed"]
        return tms

    # ---- exactly once and at least once under kill -9 -----------------------------------

    def run_killed(self, *job_args, exactly_once=True):
        count, rate = (1_000_000, 50_000) if ASAN else (5_000_000, 250_000)
        keys = 100
        self.cluster()
        out = os.path.join(self.tmp, "out")
        args = ["--count", str(count), "--rate", str(rate), "--keys", str(keys), "--output", out,
                *job_args]
        if not exactly_once:
            args.append("--at-least-once")
        jid = self.submit(*args)
        tms = [p for p in self.taskmanagers]
        self.kill_three_times(jid, tms)
        job = self.wait_state(jid, TERMINAL, timeout=180)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        s = self.stats(jid)
        self.assertGreaterEqual(s["counts"]["restored"], 3)
        self.assertIsNotNone(s["latest"]["restored"])
        expected = expected_per_key(range(count), keys)
        if exactly_once:
            self.check_exactly_once(out, expected)
        else:
            self.check_at_least_once(out, expected)

    def start_taskmanager(self, *extra, slots=2, rpc_port=None):
        p = super().start_taskmanager(*extra, slots=slots, rpc_port=rpc_port)
        self.taskmanagers = getattr(self, "taskmanagers", []) + [p]
        return p

    def test_exactly_once_through_three_kill9_of_a_taskmanager(self):
        self.run_killed()

    def test_at_least_once_loses_nothing_through_three_kill9(self):
        self.run_killed(exactly_once=False)

    def test_file_source_over_split_files_exactly_once_through_kill9(self):
        files, per_file = (8, 25_000) if ASAN else (16, 50_000)
        keys = 50
        data = os.path.join(self.tmp, "in")
        os.mkdir(data)
        values = []
        for f in range(files):
            with open(os.path.join(data, f"part-{f:02d}"), "w") as out:
                for i in range(per_file):
                    v = f * per_file + i
                    values.append(v)
                    out.write(f"{v}\n")
        self.cluster()
        out = os.path.join(self.tmp, "out")
        # Slowed to about 10 s of reading in all, so that the kills land mid-job.
        slow_us = 4 * 10_000_000 // (files * per_file)
        jid = self.submit("--input", data, "--keys", str(keys), "--output", out, "--slow-us",
                          str(slow_us))
        self.kill_three_times(jid, list(self.taskmanagers))
        job = self.wait_state(jid, TERMINAL, timeout=180)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.check_exactly_once(out, expected_per_key(values, keys))

    def test_a_failed_task_restarts_its_pipelined_region_only(self):
        self.cluster()
        out, out2 = os.path.join(self.tmp, "out"), os.path.join(self.tmp, "out2")
        marker = os.path.join(self.tmp, "failed-once")
        count, keys = 60_000, 10
        jid = self.submit("--count", str(count), "--rate", "10000", "--keys", str(keys),
                          "--output", out, "--second-output", out2, "--fail-at", "30000",
                          "--marker", marker, parallelism=2)
        job = self.wait_state(jid, TERMINAL, timeout=120)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.assertTrue(os.path.exists(marker), "the first pipeline failed once")
        self.assertEqual(self.stats(jid)["counts"]["restored"], 1)
        # The failed pipeline's tasks run a second attempt, the other's their first.
        attempts = {}
        for v in job["vertices"]:
            status, d = self.http(f"/jobs/{jid}/vertices/{v['id']}")
            self.assertEqual(status, 200, d)
            attempts[v["name"]] = {s["attempt"] for s in d["subtasks"]}
        self.assertEqual(attempts, {"Source: Generator -> Fail once -> To key": {1},
                                    "Count -> Sink: Text File": {1},
                                    "Source: Generator -> To key 2": {0},
                                    "Count 2 -> Sink: Text File": {0}})
        expected = expected_per_key(range(count), keys)
        self.check_exactly_once(out, expected)
        self.check_exactly_once(out2, expected)

    def test_a_restart_waits_for_slots_until_a_taskmanager_comes(self):
        """A TaskManager dies and none replaces it: the restart's slot requests
        time out (each a failure the restart strategy allows), and are asked
        again until a new TaskManager offers its slots."""
        self.cluster(2, "-D", "slot.request.timeout=1 s")
        out = os.path.join(self.tmp, "out")
        count, keys = 400_000, 20
        jid = self.submit("--count", str(count), "--rate", "40000", "--keys", str(keys),
                          "--output", out)
        self.wait_running(jid)
        self.wait_completed(jid, 0)
        self.taskmanagers[0].kill()

        def slot_timeout():
            status, x = self.http(f"/jobs/{jid}/exceptions")
            return status == 200 and "could not allocate a slot" in json.dumps(x)
        wait_for(slot_timeout, 60, "a slot request of the restart to time out")
        self.assertIn(self.job_state(jid)["state"], ("RESTARTING", "RUNNING"))
        self.start_taskmanager(slots=2)
        job = self.wait_state(jid, TERMINAL, timeout=120)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.check_exactly_once(out, expected_per_key(range(count), keys))

    # ---- checkpoint failures --------------------------------------------------------------

    def test_a_timed_out_checkpoint_is_failed_and_the_job_keeps_running(self):
        self.cluster(1)
        out = os.path.join(self.tmp, "out")
        # Each record takes 300 ms: a barrier waits behind it longer than
        # the 50 ms the checkpoint may take.
        jid = self.submit("--count", "0", "--rate", "20", "--slow-ms", "300", "--output", out,
                          parallelism=1,
                          conf=("-D", "execution.checkpointing.timeout=50 ms",
                                "-D", "execution.checkpointing.tolerable-failed-checkpoints=1000"))
        self.wait_running(jid)

        def failed_twice():
            s = self.stats(jid)
            return s if s["counts"]["failed"] >= 2 else None
        s = wait_for(failed_twice, 60, "two failed checkpoints")
        failed = s["latest"]["failed"]
        self.assertEqual(failed["status"], "FAILED")
        self.assertEqual(failed["className"], "failed")
        self.assertIn("expired", failed["failure_message"])
        self.assertGreater(failed["failure_timestamp"], 0)
        self.assertEqual(self.job_state(jid)["state"], "RUNNING")
        r = self.spate("cancel", "-m", f"127.0.0.1:{self.rest_port}", jid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "CANCELED")

    def test_too_many_failed_checkpoints_fail_the_job(self):
        self.cluster(1)
        out = os.path.join(self.tmp, "out")
        jid = self.submit("--count", "0", "--rate", "20", "--slow-ms", "300", "--output", out,
                          parallelism=1,
                          conf=("-D", "execution.checkpointing.timeout=50 ms",
                                "-D", "execution.checkpointing.tolerable-failed-checkpoints=2",
                                "-D", "restart-strategy.type=none"))
        job = self.wait_state(jid, TERMINAL, timeout=90)
        self.assertEqual(job["state"], "FAILED")
        self.assertIn("tolerable failure threshold (2)", job.get("failure", ""))
        self.assertGreaterEqual(self.stats(jid)["counts"]["failed"], 3)

    # ---- a bad checkpoint at restore --------------------------------------------------------

    def restore_broken(self, damage):
        """A manual checkpoint, damaged by damage(folder), then a kill -9: the
        restore fails the job; returns its failure and the folder."""
        _, tms = self.cluster(1)
        out = os.path.join(self.tmp, "out")
        # Checkpoints on, but none periodic during the test: only the manual one.
        jid = self.submit("--count", "0", "--rate", "1000", "--interval", "3600000", "--output",
                          out, parallelism=2,
                          conf=("-D", "restart-strategy.type=fixed-delay",
                                "-D", "restart-strategy.fixed-delay.attempts=5",
                                "-D", "restart-strategy.fixed-delay.delay=10 ms"))
        self.wait_running(jid)
        status, answer = self.http(f"/jobs/{jid}/checkpoints", "POST", {})
        self.assertEqual(status, 202, answer)
        trigger = answer["request-id"]

        def completed():
            st, a = self.http(f"/jobs/{jid}/checkpoints/{trigger}")
            self.assertEqual(st, 200, a)
            return a if a["status"]["id"] == "COMPLETED" else None
        done = wait_for(completed, 60, "the manual checkpoint")
        self.assertNotIn("failureCause", done["operation"], done)
        folder = os.path.join(self.tmp, "checkpoints", jid,
                              f"chk-{done['operation']['checkpointId']}")
        damage(folder)
        tms[0].kill()
        self.start_taskmanager(slots=2)
        job = self.wait_state(jid, TERMINAL, timeout=60)
        self.assertEqual(job["state"], "FAILED")
        return job.get("failure", ""), folder

    def test_truncated_metadata_at_restore_is_an_error_naming_it(self):
        def truncate(folder):
            os.truncate(os.path.join(folder, "_metadata"), 20)
        failure, folder = self.restore_broken(truncate)
        self.assertIn(os.path.join(folder, "_metadata"), failure)
        self.assertIn("truncated", failure)

    def test_corrupt_metadata_at_restore_is_an_error_naming_it(self):
        def corrupt(folder):
            path = os.path.join(folder, "_metadata")
            with open(path, "r+b") as f:
                data = bytearray(f.read())
                data[len(data) // 2] ^= 0xFF
                f.seek(0)
                f.write(data)
        failure, folder = self.restore_broken(corrupt)
        self.assertIn(os.path.join(folder, "_metadata"), failure)
        self.assertIn("corrupt", failure)

    def test_missing_state_file_at_restore_is_an_error_naming_it(self):
        gone = []

        def remove_one(folder):
            states = sorted(n for n in os.listdir(folder) if n.endswith(".state"))
            self.assertTrue(states, os.listdir(folder))
            gone.append(os.path.join(folder, states[0]))
            os.unlink(gone[0])
        failure, _ = self.restore_broken(remove_one)
        self.assertIn(gone[0], failure)
        self.assertIn("missing", failure)

    # ---- REST -------------------------------------------------------------------------------

    def test_rest_manual_checkpoint_details_config_and_statistics(self):
        self.cluster(1)
        out = os.path.join(self.tmp, "out")
        jid = self.submit("--count", "0", "--rate", "1000", "--interval", "3600000", "--output",
                          out, parallelism=2,
                          conf=("-D", "state.checkpoints.num-retained=2",))
        self.wait_running(jid)
        status, config = self.http(f"/jobs/{jid}/checkpoints/config")
        self.assertEqual(status, 200, config)
        self.assertEqual(config["mode"], "exactly_once")
        self.assertEqual(config["interval"], 3600000)
        self.assertEqual(config["max_concurrent"], 1)
        self.assertEqual(config["tolerable_failed_checkpoints"], 0)
        self.assertEqual(config["externalization"],
                         {"enabled": False, "delete_on_cancellation": True})
        for key in ("interval", "timeout", "min_pause", "state_backend", "checkpoint_storage",
                    "unaligned_checkpoints", "checkpoints_after_tasks_finish"):
            self.assertIn(key, config)
        # A trigger id of the client's, then one of the server's.
        mine = "0123456789abcdef0123456789abcdef"
        status, answer = self.http(f"/jobs/{jid}/checkpoints", "POST", {"triggerId": mine})
        self.assertEqual((status, answer), (202, {"request-id": mine}))
        ids = []
        for trigger in (mine, None):
            if trigger is None:
                status, answer = self.http(f"/jobs/{jid}/checkpoints", "POST", {})
                self.assertEqual(status, 202, answer)
                trigger = answer["request-id"]

            def completed():
                st, a = self.http(f"/jobs/{jid}/checkpoints/{trigger}")
                return a if st == 200 and a["status"]["id"] == "COMPLETED" else None
            ids.append(wait_for(completed, 60, "a manual checkpoint")["operation"]["checkpointId"])
        self.assertLess(ids[0], ids[1])
        status, d = self.http(f"/jobs/{jid}/checkpoints/details/{ids[1]}")
        self.assertEqual(status, 200, d)
        self.assertEqual((d["className"], d["status"], d["id"]), ("completed", "COMPLETED", ids[1]))
        self.assertEqual(d["num_acknowledged_subtasks"], d["num_subtasks"])
        self.assertEqual(d["num_subtasks"], 4)
        self.assertTrue(os.path.isfile(os.path.join(d["external_path"], "_metadata")))
        self.assertFalse(d["discarded"])
        self.assertEqual(len(d["tasks"]), 2)
        for vertex, t in d["tasks"].items():
            self.assertRegex(vertex, r"^[0-9a-f]{32}$")
            self.assertEqual(t["num_acknowledged_subtasks"], 2)
            # Each subtask's sync and async parts and alignment, as its
            # task measured them, and their summary.
            status, st = self.http(f"/jobs/{jid}/checkpoints/details/{ids[1]}/subtasks/{vertex}")
            self.assertEqual(status, 200, st)
            done = [x for x in st["subtasks"] if x["status"] == "completed"]
            self.assertEqual(len(done), 2, st)
            for part, key in (("checkpoint_duration", "sync"), ("checkpoint_duration", "async"),
                              ("alignment", "duration")):
                values = [x["checkpoint" if part == "checkpoint_duration" else part][key]
                          for x in done]
                self.assertTrue(all(isinstance(v, int) and v >= 0 for v in values), st)
                self.assertEqual(st["summary"][part][key]["max"], max(values), st)
                self.assertLessEqual(max(values), d["end_to_end_duration"], st)
        s = self.stats(jid)
        self.assertEqual(s["counts"]["completed"], 2)
        self.assertEqual(s["latest"]["completed"]["id"], ids[1])
        self.assertEqual([h["id"] for h in s["history"]][:2], [ids[1], ids[0]])
        for key in ("state_size", "end_to_end_duration", "checkpointed_size"):
            self.assertIn(key, s["summary"])
        # Unknown ids and malformed ones.
        self.assertEqual(self.http(f"/jobs/{jid}/checkpoints/details/999")[0], 404)
        self.assertEqual(self.http(f"/jobs/{jid}/checkpoints/details/x")[0], 400)
        self.assertEqual(self.http(f"/jobs/{jid}/checkpoints/{'f' * 32}")[0], 404)
        self.assertEqual(self.http(f"/jobs/{jid}/checkpoints/nothex")[0], 400)
        self.assertEqual(self.http(f"/jobs/{'0' * 32}/checkpoints")[0], 404)
        r = self.spate("cancel", "-m", f"127.0.0.1:{self.rest_port}", jid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "CANCELED")
        # The archive keeps the statistics; cancelled, the folders are gone.
        self.assertEqual(self.stats(jid)["counts"]["completed"], 2)
        wait_for(lambda: not os.path.exists(d["external_path"]), 30, "deleted checkpoints")

    def test_a_job_that_sets_no_folder_checkpoints_into_the_clusters(self):
        """The JobManager's state.checkpoints.dir and state.savepoints.dir
        serve a job whose client set neither (before, the client settled
        /tmp/spate-checkpoints into the JobGraph)."""
        chk = os.path.join(self.tmp, "cluster-checkpoints")
        sps = os.path.join(self.tmp, "cluster-savepoints")
        self.cluster(1, "-D", f"state.checkpoints.dir={chk}", "-D", f"state.savepoints.dir={sps}")
        out = os.path.join(self.tmp, "out")
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "1", TESTJOBS,
                       "checkpointed", "--count", "0", "--rate", "100", "--interval", "100",
                       "--output", out, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.wait_running(jid)
        s = self.wait_completed(jid, 0)
        path = s["latest"]["completed"]["external_path"]
        self.assertTrue(path.startswith(os.path.join(chk, jid) + "/"), path)
        self.assertTrue(os.path.isfile(os.path.join(path, "_metadata")), path)
        r = self.spate("cancel", "-m", f"127.0.0.1:{self.rest_port}", "-s", jid)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertTrue(sp.startswith(sps + "/"), sp)

    def run_plain(self, out, *args, conf=()):
        """Submits the checkpointed job detached, p1, from a client whose
        configuration sets nothing of checkpointing but conf; its id."""
        r = self.spate(*conf, "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "1",
                       TESTJOBS, "checkpointed", "--output", out, *args, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def checkpoint_config(self, jid):
        status, config = self.http(f"/jobs/{jid}/checkpoints/config")
        self.assertEqual(status, 200, config)
        return config

    def test_a_job_that_sets_no_interval_takes_the_clusters_checkpointing_and_restarts(self):
        """A JobManager started with -D execution.checkpointing.* and
        restart-strategy.type=none: a job whose code and client set neither
        checkpoints at the cluster's interval and mode, and the loss of its
        TaskManager fails it, as the cluster's strategy says (with checkpoints
        on, spate's default would restart it). Before, the client settled
        "no checkpoints" into the JobGraph and the cluster's keys were
        ignored."""
        chk = os.path.join(self.tmp, "cluster-checkpoints")
        _, tms = self.cluster(1, "-D", "execution.checkpointing.interval=300 ms",
                              "-D", "execution.checkpointing.mode=AT_LEAST_ONCE",
                              "-D", f"state.checkpoints.dir={chk}",
                              "-D", "restart-strategy.type=none")
        jid = self.run_plain(os.path.join(self.tmp, "out"), "--count", "0", "--rate", "100",
                             "--interval", "0")
        self.wait_running(jid)
        self.wait_completed(jid, 1)
        config = self.checkpoint_config(jid)
        self.assertEqual(config["interval"], 300)
        self.assertEqual(config["mode"], "at_least_once")
        tms[0].kill()
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FAILED", job)

    def test_the_clusters_interval_gives_exactly_once_through_a_kill9(self):
        """The cluster's interval reaches the TaskManagers (their sinks
        commit on checkpoints) and the cluster's fixed-delay strategy restarts
        the job from its checkpoint after a kill -9: every count exactly
        once."""
        count, rate = (200_000, 40_000) if ASAN else (1_000_000, 150_000)
        keys = 50
        self.cluster(1, "-D", "execution.checkpointing.interval=300 ms",
                     "-D", f"state.checkpoints.dir={self.tmp}/cluster-checkpoints",
                     "-D", "restart-strategy.type=fixed-delay",
                     "-D", "restart-strategy.fixed-delay.attempts=5",
                     "-D", "restart-strategy.fixed-delay.delay=10 ms")
        out = os.path.join(self.tmp, "out")
        jid = self.run_plain(out, "--count", str(count), "--rate", str(rate), "--keys", str(keys),
                             "--interval", "0")
        self.wait_running(jid)
        self.wait_completed(jid, 0)
        self.taskmanagers[0].kill()
        self.start_taskmanager(slots=2)
        wait_for(lambda: self.stats(jid)["counts"]["restored"] > 0, 60, f"a restore of {jid}")
        job = self.wait_state(jid, TERMINAL, timeout=180)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.assertEqual(self.checkpoint_config(jid)["interval"], 300)
        self.check_exactly_once(out, expected_per_key(range(count), keys))

    def test_what_a_job_sets_wins_over_the_clusters_settings(self):
        """The cluster says every hour with a 7 s timeout: a job whose code
        asks for 100 ms checkpoints at 100 ms, one whose client says
        -D execution.checkpointing.interval=250 ms at 250 ms; both take the
        cluster's timeout, which neither set."""
        self.cluster(1, "-D", "execution.checkpointing.interval=1 h",
                     "-D", "execution.checkpointing.timeout=7 s",
                     "-D", f"state.checkpoints.dir={self.tmp}/cluster-checkpoints")
        by_code = self.run_plain(os.path.join(self.tmp, "out1"), "--count", "0", "--rate", "100",
                                 "--interval", "100")
        by_client = self.run_plain(os.path.join(self.tmp, "out2"), "--count", "0", "--rate",
                                   "100", "--interval", "0",
                                   conf=("-D", "execution.checkpointing.interval=250 ms"))
        for jid, interval in ((by_code, 100), (by_client, 250)):
            self.wait_running(jid)
            self.wait_completed(jid, 1)
            config = self.checkpoint_config(jid)
            self.assertEqual(config["interval"], interval, jid)
            self.assertEqual(config["timeout"], 7000, jid)

    def test_a_job_without_checkpoints_has_none_over_rest(self):
        self.cluster(1)
        out = os.path.join(self.tmp, "out")
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "1", TESTJOBS,
                       "checkpointed", "--count", "0", "--rate", "100", "--interval", "0",
                       "--output", out, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.wait_running(jid)
        self.assertEqual(self.http(f"/jobs/{jid}/checkpoints")[0], 404)
        self.assertEqual(self.http(f"/jobs/{jid}/checkpoints/config")[0], 404)
        status, answer = self.http(f"/jobs/{jid}/checkpoints", "POST", {})
        self.assertEqual(status, 202, answer)
        st, a = self.http(f"/jobs/{jid}/checkpoints/{answer['request-id']}")
        self.assertEqual(st, 200, a)
        self.assertEqual(a["status"]["id"], "COMPLETED")
        self.assertIn("state.checkpoints.dir", a["operation"]["failureCause"]["stack-trace"])


class MiniClusterCheckpointTest(ClusterTestCase):

    def test_a_failing_task_restarts_from_the_checkpoint_exactly_once(self):
        out = os.path.join(self.tmp, "out")
        marker = os.path.join(self.tmp, "failed-once")
        count, keys = 20_000, 7
        r = self.spate("-D", f"state.checkpoints.dir={self.tmp}/checkpoints",
                       "-D", "local.number-taskmanager=2", "run", "--local", "-p", "2",
                       TESTJOBS, "checkpointed", "--count", str(count), "--rate", "5000",
                       "--keys", str(keys), "--output", out, "--fail-at", "9000",
                       "--marker", marker, env={"SPATE_LOG_LEVEL": "info"}, timeout=120)
        logs = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, logs)
        self.assertTrue(os.path.exists(marker), "the task failed once")
        self.assertIn("switched to RESTARTING", logs)
        self.assertRegex(logs, r"restarting 4 tasks from .*/chk-\d+/_metadata")
        counts = read_counts(out)
        expected = expected_per_key(range(count), keys)
        for k, n in expected.items():
            self.assertEqual(sorted(counts[k]), list(range(1, n + 1)), f"key {k}")
        self.assertEqual(sink_hidden(out), [])
        # FINISHED: the job's checkpoints are gone with it.
        self.assertEqual(os.listdir(os.path.join(self.tmp, "checkpoints")), [])

    def test_a_restart_without_a_checkpoint_removes_only_the_failed_attempts_files(self):
        """No checkpoint completes (an hour apart): the failed attempt's
        files were never committed and go; a committed file already in
        the folder stays, and its writer's new files are numbered past it
        (a subtask numbers past its own part files)."""
        out = os.path.join(self.tmp, "out")
        marker = os.path.join(self.tmp, "failed-once")
        count, keys = 20_000, 7
        os.makedirs(out)
        with open(os.path.join(out, "part-1-5"), "w") as f:
            f.write("(99,1)\n")
        r = self.spate("-D", f"state.checkpoints.dir={self.tmp}/checkpoints",
                       "-D", "local.number-taskmanager=2", "run", "--local", "-p", "2",
                       TESTJOBS, "checkpointed", "--count", str(count), "--rate", "5000",
                       "--keys", str(keys), "--interval", "3600000", "--output", out,
                       "--fail-at", "9000", "--marker", marker,
                       env={"SPATE_LOG_LEVEL": "info"}, timeout=120)
        logs = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, logs)
        self.assertTrue(os.path.exists(marker), "the task failed once")
        self.assertIn("switched to RESTARTING", logs)
        self.assertIn("restarting 4 tasks from their initial state", logs)
        self.assertEqual(sink_hidden(out), [])
        with open(os.path.join(out, "part-1-5")) as f:
            self.assertEqual(f.read(), "(99,1)\n")
        parts = [(w, n) for w, n, name in sink_parts(out) if name != "part-1-5"]
        self.assertEqual(sorted({w for w, _ in parts}), [0, 1])
        self.assertTrue(all(n > 5 for w, n in parts if w == 1), parts)
        counts = read_counts(out)
        self.assertEqual(counts.pop(99), [1])
        expected = expected_per_key(range(count), keys)
        for k, n in expected.items():
            self.assertEqual(sorted(counts[k]), list(range(1, n + 1)), f"key {k}")

    def test_fixed_delay_restarts_its_attempts_then_the_job_fails(self):
        r = self.spate("-D", "restart-strategy.type=fixed-delay",
                       "-D", "restart-strategy.fixed-delay.attempts=2",
                       "-D", "restart-strategy.fixed-delay.delay=10 ms", "run", "--local",
                       TESTJOBS, "fail", "--at", "42", env={"SPATE_LOG_LEVEL": "info"},
                       timeout=120)
        logs = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(logs.count("switched to RESTARTING"), 2, logs)
        self.assertIn("recovery is suppressed by the restart strategy fixed-delay", logs)
        self.assertIn("record 42 is poison", logs)
        self.assertIn("switched to FAILED", logs)

    def test_without_checkpoints_a_failing_task_fails_the_job(self):
        out = os.path.join(self.tmp, "out")
        marker = os.path.join(self.tmp, "failed-once")
        r = self.spate("run", "--local", "-p", "2", TESTJOBS, "checkpointed", "--count", "5000",
                       "--interval", "0", "--output", out, "--fail-at", "100", "--marker", marker,
                       timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("failing once at value 100", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
