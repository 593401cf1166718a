"""End-to-end tests of savepoints with real processes: a JobManager and two
TaskManagers of four slots on 127.0.0.1, driven with the `spate` CLI and the
REST API. The job is testjobs' `windowed`: a generator with event time and
watermarks -> key_by -> a tumbling event-time window counting per key
(uid "windows") and a KeyedProcessFunction counting per key and period in a
MapState that emits at event-time timers (uid "timers") -> the exactly-once
file sink. Its whole output is known from the index alone, so that the
committed output can be compared with an uninterrupted run's exactly.

- savepoint, cancel, resume with -p 2 and with -p 8 (a copy of the output
  folder each): the final output is an uninterrupted run's, exactly;
- stop --drain fires every pending window and timer (the windows and the
  timers have counted the same records when the job has FINISHED), and its
  savepoint resumes to the same totals; stop without drain resumes at
  another parallelism to an uninterrupted run's output exactly; cancel with
  a savepoint ends CANCELED and resumes;
- the program changed (the timers operator gone, a map added): the resume
  fails naming the uid "timers", and succeeds with -n;
- a path that does not exist, a truncated and a corrupt `_metadata`, a
  missing state file, another max parallelism: each a clear error, and the
  cluster keeps running jobs;
- a savepoint, a stop and a cancel with a savepoint that cannot start (the
  folder cannot be made): each reported, the job keeps running, its
  checkpoints go on, and a stop then works;
- operators without a uid are warned about at resume; a task failing before
  the resumed job's first checkpoint restarts from the savepoint again
  (testjobs' checkpointed job, exactly once);
- dispose (CLI and REST) removes exactly the savepoint's files;
- REST: the savepoint and stop triggers as Flink's asynchronous operations
  (status after the job finished too), errors for a job without a folder,
  /jars/:jarid/run with savepointPath and allowNonRestoredState, POST /jobs
  with savepointPath in its request."""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from spatetest import BUILD, SPATE, sink_hidden, sink_parts  # noqa: E402

TESTJOBS = os.path.join(BUILD, "tests", "jobs", "testjobs.so")
TERMINAL = ("FINISHED", "FAILED", "CANCELED")
# The sanitized build runs several times slower: fewer records per second.
ASAN = "asan" in BUILD
COUNT = 12000 if ASAN else 30000  # about 6 s a run
RATE = 2000 if ASAN else 5000
KEYS = 13
WINDOW = 100
PERIOD = 70
SAVEPOINT_DIR_RX = re.compile(r"savepoint-[0-9a-f]{6}-[0-9a-f]{12}$")


def expected_lines(count=COUNT, keys=KEYS, window=WINDOW, period=PERIOD):
    """{(kind, key, end): count} of an uninterrupted run."""
    out = {}
    for i in range(count):
        key = i * 7919 % keys
        for kind, size in ((1, window), (2, period)):
            k = (kind, key, i // size * size + size)
            out[k] = out.get(k, 0) + 1
    return out


def read_lines(out_dir):
    """[(kind, key, end, count)] of the committed part files (names that
    start with a dot are in progress or pending)."""
    rx = re.compile(r"^\((\d+),(\d+),(\d+),(\d+)\)$")
    lines = []
    for name in os.listdir(out_dir):
        if name.startswith("."):
            continue
        with open(os.path.join(out_dir, name)) as f:
            for line in f:
                m = rx.match(line.strip())
                if m is None:
                    raise AssertionError(f"unexpected line {line!r} in {name}")
                lines.append(tuple(int(g) for g in m.groups()))
    return lines


def multipart(files, fields=()):
    boundary = uuid.uuid4().hex
    out = []
    for name, value in fields:
        out.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\""
                   f"\r\n\r\n{value}\r\n".encode())
    for name, filename, data in files:
        out.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                   f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream"
                   f"\r\n\r\n".encode())
        out.append(data)
        out.append(b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


class SavepointTest(ClusterTestCase):

    def setUp(self):
        super().setUp()
        self.jm = self.start_jobmanager("-D", "web.submit.enable=true")  # for /jars
        self.tms = [self.start_taskmanager(slots=4) for _ in range(2)]
        self.wait_overview(2, slots=8)
        self.savepoints = os.path.join(self.tmp, "savepoints")

    # ---- helpers ----

    def http(self, path, method="GET", body=None, content_type="application/json"):
        data = body if isinstance(body, bytes) else (
            json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest_port}{path}", data=data,
                                     method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def target(self, args):
        """args with -m after the command (its first element)."""
        return [args[0], "-m", f"127.0.0.1:{self.rest_port}", *args[1:]]

    def run_job(self, out, *args, parallelism=4, savepoint=None, allow=False, detached=True,
                conf=(), count=COUNT):
        cmd = [*conf, "run", "-m", f"127.0.0.1:{self.rest_port}", "-p", str(parallelism)]
        if detached:
            cmd.append("-d")
        if savepoint is not None:
            cmd += ["-s", savepoint]
        if allow:
            cmd.append("-n")
        r = self.spate(*cmd, TESTJOBS, "windowed", "--count", str(count), "--rate", str(RATE),
                       "--keys", str(KEYS), "--window", str(WINDOW), "--period", str(PERIOD),
                       "--output", out, *args, timeout=300)
        if detached:
            self.assertEqual(r.returncode, 0, r.stderr)
            return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        return r

    def job_state(self, jid):
        status, job = self.http(f"/jobs/{jid}")
        self.assertEqual(status, 200, job)
        return job

    def wait_state(self, jid, states, timeout=240.0):
        try:
            return wait_for(lambda: (lambda j: j if j["state"] in states else None)(
                self.job_state(jid)), timeout, f"job {jid} in {states}")
        except AssertionError:
            if os.environ.get("SPATE_KEEP"):
                shutil.copytree(self.tmp, os.environ["SPATE_KEEP"], dirs_exist_ok=True)
            raise

    def all_running(self, jid):
        """Whether every task of the job runs (a savepoint needs it)."""
        j = self.job_state(jid)
        if j["state"] in TERMINAL:
            raise AssertionError(f"job {jid} ended {j['state']} too early")
        t = j.get("tasks", {})
        return j["state"] == "RUNNING" and t.get("running") == t.get("total")

    def wait_progress(self, jid, timeout=120.0):
        """Every task runs and a checkpoint has completed (records flow)."""
        def ok():
            if not self.all_running(jid):
                return None
            status, s = self.http(f"/jobs/{jid}/checkpoints")
            return s if status == 200 and s["counts"]["completed"] >= 1 else None
        return wait_for(ok, timeout, f"job {jid} running with a checkpoint")

    def savepoint(self, jid, target=None):
        r = self.spate(*self.target(["savepoint", jid] + ([target] if target else [])),
                       timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        path = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertRegex(path, SAVEPOINT_DIR_RX)
        self.assertTrue(os.path.isfile(os.path.join(path, "_metadata")), path)
        return path

    def cancel(self, jid):
        r = self.spate(*self.target(["cancel", jid]))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_state(jid, ("CANCELED",))

    def cancel_with_savepoint(self, jid, target):
        """`spate cancel -s`: the savepoint and the cancel as one, so that no
        checkpoint (whose completion commits the sink's output past the
        savepoint) comes between them, as it may after `spate savepoint`
        with checkpoints running. The savepoint's path."""
        r = self.spate(*self.target(["cancel", "-s", target, jid]), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        path = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertRegex(path, SAVEPOINT_DIR_RX)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "CANCELED")
        return path

    def check_exact(self, out, expected=None):
        expected = expected if expected is not None else expected_lines()
        lines = read_lines(out)
        got = {}
        for kind, key, end, n in lines:
            self.assertNotIn((kind, key, end), got, f"{(kind, key, end)} twice")
            got[(kind, key, end)] = n
        self.assertEqual(len(got), len(expected), "lines")
        self.assertEqual(got, expected)

    def check_totals(self, out, expected=None):
        """Every record counted exactly once per (kind, key, end), the
        counts of a window cut by a drained stop added up."""
        expected = expected if expected is not None else expected_lines()
        got = {}
        for kind, key, end, n in read_lines(out):
            got[(kind, key, end)] = got.get((kind, key, end), 0) + n
        self.assertEqual(got, expected)

    def uninterrupted_until_savepoint(self, parallelism=4):
        """Runs the job, cancels it with a savepoint: (savepoint, out)."""
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out, parallelism=parallelism)
        self.wait_progress(jid)
        return self.cancel_with_savepoint(jid, self.savepoints), out

    def assert_cluster_runs_jobs(self, sp, out):
        """The cluster is up and still resumes jobs (after bad input)."""
        self.assertEqual(self.overview()["taskmanagers"], 2)
        jid = self.run_job(out, savepoint=sp, parallelism=3)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        self.check_exact(out)

    # ---- tests ----

    def test_savepoint_cancel_resume_at_p2_and_p8_equals_an_uninterrupted_run(self):
        sp, out = self.uninterrupted_until_savepoint(parallelism=4)
        self.assertTrue(self.jm.alive())
        # Each resume continues its own copy of the output as it was.
        out8 = os.path.join(self.tmp, "out8")
        shutil.copytree(out, out8)
        moved = os.path.join(self.tmp, "moved", os.path.basename(sp))
        shutil.copytree(sp, moved)  # a savepoint folder can move
        jid = self.run_job(out, savepoint=sp, parallelism=2)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        self.check_exact(out)
        jid = self.run_job(out8, savepoint=os.path.join(moved, "_metadata"), parallelism=8)
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED")
        self.assertEqual(max(v["parallelism"] for v in job["vertices"]), 8)
        self.check_exact(out8)
        status, s = self.http(f"/jobs/{jid}/checkpoints")
        self.assertEqual(status, 200, s)
        self.assertTrue(s["latest"]["restored"]["is_savepoint"], s["latest"]["restored"])
        self.assertEqual(s["latest"]["restored"]["external_path"],
                         os.path.join(moved, "_metadata"))

    def test_a_resume_into_the_same_output_keeps_what_was_committed_before(self):
        """A job without periodic checkpoints at p1: a savepoint commits its
        output so far, and the job resumed from it at p2 into the same
        folder keeps every file committed before, byte for byte, numbers
        its files past them (every writer subtask), and leaves nothing
        uncommitted; every window result is there exactly once. (Before,
        such a sink truncated its single output file when it opened.)"""
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out, "--interval", "0", parallelism=1)
        wait_for(lambda: self.all_running(jid), 120, f"every task of job {jid} running")

        def committed():
            self.savepoint(jid, self.savepoints)
            return sum(os.path.getsize(os.path.join(out, n)) for _, _, n in sink_parts(out))
        wait_for(committed, 120, "output committed by a savepoint", interval=0.3)
        sp = self.cancel_with_savepoint(jid, self.savepoints)
        before = {}
        for _, _, name in sink_parts(out):
            with open(os.path.join(out, name), "rb") as f:
                before[name] = f.read()
        self.assertTrue(before)
        last = max(n for _, n, _ in sink_parts(out))

        jid = self.run_job(out, "--interval", "0", savepoint=sp, parallelism=2)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        for name, data in before.items():
            with open(os.path.join(out, name), "rb") as f:
                self.assertEqual(f.read(), data, f"{name} changed")
        new = [(w, n) for w, n, name in sink_parts(out) if name not in before]
        self.assertEqual(sorted({w for w, _ in new}), [0, 1])
        self.assertTrue(all(n > last for _, n in new), f"{new} not past part {last}")
        self.assertEqual(sink_hidden(out), [])
        self.check_exact(out)

    def test_stop_with_drain_fires_every_window_and_timer(self):
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out)
        self.wait_progress(jid)
        r = self.spate(*self.target(["stop", "--drain", "-p", self.savepoints, jid]),
                       timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertRegex(sp, SAVEPOINT_DIR_RX)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        # Nothing pending: the windows and the timers fired for every
        # record read before the stop.
        lines = read_lines(out)
        windows = sum(n for kind, _, _, n in lines if kind == 1)
        timers = sum(n for kind, _, _, n in lines if kind == 2)
        self.assertGreater(windows, 0)
        self.assertLess(windows, COUNT)
        self.assertEqual(windows, timers)
        # The drained savepoint resumes: every record counted once overall.
        jid = self.run_job(out, savepoint=sp, parallelism=3)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        self.check_totals(out)

    def test_stop_without_drain_then_resume_gives_an_uninterrupted_runs_output(self):
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out)
        self.wait_progress(jid)
        r = self.spate(*self.target(["stop", "-p", self.savepoints, jid]), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        jid = self.run_job(out, savepoint=sp, parallelism=6)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        self.check_exact(out)

    def test_cancel_with_savepoint_ends_canceled_and_resumes(self):
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out)
        self.wait_progress(jid)
        sp = self.cancel_with_savepoint(jid, self.savepoints)
        jid = self.run_job(out, savepoint=sp, parallelism=2)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        self.check_exact(out)

    def test_changed_program_fails_naming_the_uid_and_resumes_with_n(self):
        sp, out = self.uninterrupted_until_savepoint()
        r = self.run_job(out, "--changed", savepoint=sp, detached=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("uid 'timers'", r.stderr)
        self.assertIn("allow non-restored state", r.stderr)
        self.assertTrue(self.jm.alive())
        jid = self.run_job(out, "--changed", savepoint=sp, allow=True, parallelism=5)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        # The windows resumed their state exactly; the timers are gone.
        want = {k: n for k, n in expected_lines().items() if k[0] == 1}
        got = {}
        for kind, key, end, n in read_lines(out):
            if kind == 1:
                got[(kind, key, end)] = got.get((kind, key, end), 0) + n
        self.assertEqual(got, want)

    def test_bad_savepoints_are_clear_errors_and_the_cluster_stays_up(self):
        sp, out = self.uninterrupted_until_savepoint()
        scratch = os.path.join(self.tmp, "scratch")

        def fails(path, *want, conf=()):
            r = self.run_job(scratch, savepoint=path, detached=False, conf=conf)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            for w in want:
                self.assertIn(w, r.stderr)
            print(r.stderr.strip().splitlines()[-1], file=sys.stderr)
            self.assertTrue(self.jm.alive())
            # A job that cannot resume holds no slot.
            self.wait_overview(2, slots=8, available=8)

        missing = os.path.join(self.tmp, "no-such-savepoint")
        fails(missing, "cannot resume", missing, "no such file")
        # A copy of the savepoint, spoiled one way at a time.
        bad = os.path.join(self.tmp, "bad", os.path.basename(sp))
        shutil.copytree(sp, bad)
        meta = os.path.join(bad, "_metadata")
        with open(meta, "rb") as f:
            good = f.read()
        with open(meta, "wb") as f:
            f.write(good[: len(good) // 2])
        fails(bad, "cannot resume", meta)
        spoiled = bytearray(good)
        spoiled[len(spoiled) // 2] ^= 0xFF
        with open(meta, "wb") as f:
            f.write(bytes(spoiled))
        fails(bad, "cannot resume", meta, "SHA-256 does not match")
        with open(meta, "wb") as f:
            f.write(good)
        state = sorted(n for n in os.listdir(bad) if n != "_metadata")
        self.assertTrue(state, "the savepoint has state files")
        os.unlink(os.path.join(bad, state[0]))
        fails(bad, "cannot resume", state[0])
        fails(sp, "max parallelism 128", "64", conf=("-D", "pipeline.max-parallelism=64"))
        self.assert_cluster_runs_jobs(sp, out)

    def test_dispose_removes_exactly_the_savepoints_files(self):
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out)
        self.wait_progress(jid)
        sp1 = self.savepoint(jid, self.savepoints)
        sp2 = self.savepoint(jid, self.savepoints)
        self.cancel(jid)
        self.assertNotEqual(sp1, sp2)
        other = os.path.join(self.savepoints, "unrelated.txt")
        with open(other, "w") as f:
            f.write("not a savepoint's\n")
        mine = os.path.join(sp1, "notes.txt")
        with open(mine, "w") as f:
            f.write("the user's\n")
        r = self.spate(*self.target(["savepoint", "-d", sp1]))
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertEqual(os.listdir(sp1), ["notes.txt"])  # only the savepoint's files went
        self.assertTrue(os.path.isdir(sp2))
        self.assertTrue(os.path.isfile(other))
        # Over REST, the _metadata's path: the folder goes with its files.
        status, body = self.http("/savepoint-disposal", "POST",
                                 {"savepoint-path": "file:" + os.path.join(sp2, "_metadata")})
        self.assertEqual(status, 202, body)
        done = wait_for(lambda: (lambda s: s if s[1]["status"]["id"] == "COMPLETED" else None)(
            self.http(f"/savepoint-disposal/{body['request-id']}")), 30, "the disposal")
        self.assertNotIn("failure-cause", done[1]["operation"], done)
        self.assertFalse(os.path.exists(sp2))
        self.assertEqual(sorted(os.listdir(self.savepoints)),
                         sorted([os.path.basename(sp1), "unrelated.txt"]))
        # Disposing of what is no savepoint is an error; nothing goes.
        r = self.spate(*self.target(["savepoint", "-d", sp1]))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("_metadata", r.stderr)
        self.assertTrue(os.path.isfile(mine))
        # A path of a scheme no storage reads is refused, naming it.
        status, body = self.http("/savepoint-disposal", "POST",
                                 {"savepoint-path": "s3://bucket/savepoint-1"})
        self.assertEqual(status, 400, body)
        self.assertIn("the scheme 's3' is not supported", body["errors"][0])
        r = self.spate(*self.target(["savepoint", "-d", "s3://bucket/savepoint-1"]))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the scheme 's3' is not supported", r.stderr)

    def test_a_failed_savepoint_or_stop_is_reported_and_the_job_keeps_running(self):
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out)
        self.wait_progress(jid)
        blocker = os.path.join(self.tmp, "a-file")
        with open(blocker, "w") as f:
            f.write("not a folder\n")
        bad = os.path.join(blocker, "savepoints")
        for cmd in (["savepoint", jid, bad], ["stop", "--drain", "-p", bad, jid],
                    ["cancel", "-s", bad, jid]):
            r = self.spate(*self.target(cmd), timeout=120)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn("cannot start the savepoint", r.stderr)
            self.assertIn(bad, r.stderr)
            self.assertEqual(self.job_state(jid)["state"], "RUNNING")
        before = self.http(f"/jobs/{jid}/checkpoints")[1]["counts"]["completed"]
        # Checkpoints go on after the failed stop, and a stop then works.
        wait_for(lambda: self.http(f"/jobs/{jid}/checkpoints")[1]["counts"]["completed"] >
                 before, 60, "a checkpoint after the failed stop")
        r = self.spate(*self.target(["stop", "-p", self.savepoints, jid]), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        jid = self.run_job(out, savepoint=sp, parallelism=4)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        self.check_exact(out)

    def test_derived_uids_warn_and_a_restart_before_the_first_checkpoint_restores_it(self):
        """testjobs' checkpointed job (stateful operators with uids, "To
        key" without): resumed with checkpoints an hour apart and a task
        that fails once, it restarts from the savepoint again."""
        from test_checkpoints import expected_per_key, read_counts
        out = os.path.join(self.tmp, "counts")
        conf = ["-D", f"state.checkpoints.dir={self.tmp}/checkpoints"]
        common = [TESTJOBS, "checkpointed", "--count", str(COUNT), "--rate", str(RATE),
                  "--keys", "10", "--output", out]
        r = self.spate(*conf, "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "4",
                       *common, "--interval", "200", timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.wait_progress(jid)
        sp = self.cancel_with_savepoint(jid, self.savepoints)
        marker = os.path.join(self.tmp, "failed-once")
        r = self.spate(*conf, "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "3",
                       "-s", sp, *common, "--interval", "3600000", "--fail-at",
                       str(COUNT - 1), "--marker", marker, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("operators have no uid", r.stderr)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        self.assertTrue(os.path.exists(marker), "the task failed once")
        self.assertGreaterEqual(self.jm.count(r"restarting \d+ tasks from " + re.escape(sp)), 1)
        self.assertGreaterEqual(self.jm.count(r"has no uid: its id"), 1)
        counts = read_counts(out)
        expected = expected_per_key(range(COUNT), 10)
        self.assertEqual(sorted(counts), sorted(expected))
        for k, n in expected.items():
            self.assertEqual(sorted(counts[k]), list(range(1, n + 1)), f"key {k}")

    def test_rest_savepoint_stop_and_jar_run(self):
        out = os.path.join(self.tmp, "out")
        jid = self.run_job(out)
        self.wait_progress(jid)
        # No folder given and no state.savepoints.dir: a clear error.
        status, body = self.http(f"/jobs/{jid}/savepoints", "POST", {"cancel-job": False})
        self.assertEqual(status, 400, body)
        self.assertIn("state.savepoints.dir", body["errors"][0])
        status, body = self.http(f"/jobs/{jid}/savepoints", "POST",
                                 {"target-directory": "relative/dir"})
        self.assertEqual(status, 400, body)
        self.assertIn("not an absolute path", body["errors"][0])
        status, body = self.http(f"/jobs/{jid}/savepoints", "POST",
                                 {"target-directory": self.savepoints, "cancel-job": False})
        self.assertEqual(status, 202, body)

        def completed(trigger):
            def ok():
                s, b = self.http(f"/jobs/{jid}/savepoints/{trigger}")
                self.assertEqual(s, 200, b)
                return b if b["status"]["id"] == "COMPLETED" else None
            return wait_for(ok, 120, f"savepoint {trigger}")
        res = completed(body["request-id"])
        self.assertRegex(res["operation"]["location"], SAVEPOINT_DIR_RX)
        status, body = self.http(f"/jobs/{jid}/stop", "POST",
                                 {"targetDirectory": self.savepoints, "drain": False})
        self.assertEqual(status, 202, body)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        # The stop's status after the job finished: from the archive.
        sp = completed(body["request-id"])["operation"]["location"]
        self.assertTrue(os.path.isfile(os.path.join(sp, "_metadata")))
        out_jobs = os.path.join(self.tmp, "out-jobs")
        shutil.copytree(out, out_jobs)
        status, body = self.http(f"/jobs/{jid}/savepoints/{uuid.uuid4().hex}")
        self.assertEqual(status, 404, body)
        # /jars/:jarid/run resumes it, at another parallelism.
        with open(TESTJOBS, "rb") as f:
            data, ctype = multipart([("jarfile", "testjobs.so", f.read())])
        status, up = self.http("/jars/upload", "POST", data, ctype)
        self.assertEqual(status, 200, up)
        jar = os.path.basename(up["filename"])
        args = ["windowed", "--count", str(COUNT), "--rate", str(RATE), "--keys", str(KEYS),
                "--window", str(WINDOW), "--period", str(PERIOD), "--output", out]
        status, body = self.http(f"/jars/{jar}/run", "POST",
                                 {"programArgsList": args + ["--changed"], "parallelism": 2,
                                  "savepointPath": sp})
        self.assertEqual(status, 200, body)
        job = self.wait_state(body["jobid"], TERMINAL)
        self.assertEqual(job["state"], "FAILED")
        status, exc = self.http(f"/jobs/{body['jobid']}/exceptions")
        self.assertIn("uid 'timers'", json.dumps(exc))
        status, body = self.http(f"/jars/{jar}/run", "POST",
                                 {"programArgsList": args, "parallelism": 2,
                                  "savepointPath": "file://" + sp,
                                  "allowNonRestoredState": False})
        self.assertEqual(status, 200, body)
        self.assertEqual(self.wait_state(body["jobid"], TERMINAL)["state"], "FINISHED")
        self.check_exact(out)
        # POST /jobs (what `spate run` sends) with savepointPath in its
        # request: the JobGraph of `spate job-graph`, the library.
        rfd, wfd = os.pipe()
        r = subprocess.run([SPATE, "job-graph", "--result-fd", str(wfd), "-p", "3", TESTJOBS,
                            *args[:-1], out_jobs], pass_fds=(wfd,), capture_output=True,
                           timeout=120)
        os.close(wfd)
        with os.fdopen(rfd, "rb") as f:
            res = f.read()
        self.assertEqual(r.returncode, 0, r.stderr)
        graph = res[8:8 + int.from_bytes(res[:8], "big")]
        with open(TESTJOBS, "rb") as f:
            data, ctype = multipart(
                [("file_0", "job.graph", graph), ("file_1", "testjobs.so", f.read())],
                [("request", json.dumps({"jobGraphFileName": "job.graph",
                                         "jobJarFileNames": ["testjobs.so"],
                                         "savepointPath": sp,
                                         "allowNonRestoredState": False}))])
        status, body = self.http("/jobs", "POST", data, ctype)
        self.assertEqual(status, 202, body)
        jid = body["jobUrl"].rsplit("/", 1)[1]
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "FINISHED")
        status, s = self.http(f"/jobs/{jid}/checkpoints")
        self.assertEqual(s["latest"]["restored"]["external_path"], sp)
        self.check_exact(out_jobs)


if __name__ == "__main__":
    unittest.main()
