"""The kill -9 suite of every built-in stateful operator and state kind
(issue 22): testjobs' `operators` job, one generator feeding a branch per
operator kind, each into an exactly-once file sink of its own, run on a
JobManager and TaskManagers on 127.0.0.1:

- p1, a kill -9 of the TaskManager after a checkpoint committed output, a
  replacement started;
- p4 on two TaskManagers, a kill -9 of one after a checkpoint committed
  output, a replacement started;
- p2 on two TaskManagers through three kill -9 in a row, each after a
  checkpoint completed since the last restore, each replaced;
- p4 cancelled with a savepoint mid-run and resumed from it at p3 into the
  same output folders;
- p4 with ZooKeeper HA (a ZooKeeper server of this file's own, test_ha's
  helpers): two JobManagers and two TaskManagers of two slots, the job
  submitted through ZooKeeper, a kill -9 of the leading JobManager (found by
  its log and by REST: the standby answers 503) after a checkpoint committed
  output; the standby leads, recovers the job from the job graph store and
  resumes it from its latest checkpoint; its state and the job's end are
  read through the new leader's REST.

After each, every committed record of every branch is read and compared
with what the source definition gives (computed here, independently of the
job): each expected record exactly once and nothing else. A failure lists
every branch in trouble, with the keys and the records lost or written
twice.

Branches (record i: key i % K, event time i + i // B * G, blocks of B
records with gaps of G ms):
- sum, reduce: keyed rolling sum and reduce, (key, n) for n = 1 .. final;
- {tumbling,sliding,session}-{reduce,aggregate,process}: event-time
  windows, (key, start, end, count, sum of i) per window; count-window: a
  count window (global window, count trigger) with reduce;
- states: a KeyedProcessFunction reading the key's count from a ValueState,
  a ListState, a MapState, a ReducingState and an AggregatingState per
  record, a line per block at an event-time timer, and entries taken at
  processing-time timers (one still pending long after its due time is
  reported: a timer lost; the entries left at the end of input are taken
  by an event-time timer at the end of time);
- connected: a keyed CoProcessFunction with ValueStates (counts over both
  inputs and per input);
- broadcast: a keyed BroadcastProcessFunction: the rules counted in the
  broadcast state, the elements in a ValueState;
- the generator's splits and the sinks' transactions are operator (union)
  list state.

Run with SPATE_E2E_STATE_BACKEND=rocksdb (ctest's
e2e/operator_failover_rocksdb), every test runs with the TaskManagers'
keyed state in RocksDB (clustertest.state_backend_args), and checks that
the operators worked in RocksDB folders of their own. With
SPATE_E2E_CHECKPOINTS_INCREMENTAL=1 besides (ctest's
e2e/operator_failover_rocksdb_incremental: the three kills and the test
below), the checkpoints are incremental: the runs check that shared SST
files were uploaded to the job's shared/ folder and that it went with the
job's checkpoints at its end; and a checkpoint whose shared SST files were
cut short fails the restore after a kill -9 with an error naming one,
while the cluster stays up and runs the next job. With RocksDB, as root:
the RocksDB folders on a small tmpfs of the test's own, filled mid-job: a
task fails naming its folder, the job restarts from its last checkpoint
and, the disk freed, finishes exactly once."""

import collections
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import (INCREMENTAL, STATE_BACKEND, ClusterTestCase, rocksdb_folders,  # noqa: E402
                         wait_for)
from exactly_once import check_rolling_counts  # noqa: E402
from spatetest import BUILD  # noqa: E402
import test_ha  # noqa: E402

TESTJOBS = os.path.join(BUILD, "tests", "jobs", "testjobs.so")
TERMINAL = ("FINISHED", "FAILED", "CANCELED")
# The sanitized build runs several times slower: fewer records, the same
# length in time.
ASAN = "asan" in BUILD
# RocksDB: a slower rate, the job a few seconds longer. A session window
# whose session grows moves its elements to the grown window's namespace,
# element by element (a write each), so the session branches cost a RocksDB
# write per element per record of the session (Flink keeps a merged
# window's state namespace instead).
if ASAN:
    COUNT, RATE = 9_000, 1_000  # 9 s: the first checkpoints come late on a loaded machine
elif STATE_BACKEND == "rocksdb":
    COUNT, RATE = 12_000, 500
else:
    COUNT, RATE = 40_000, 6_000
# The job's parameters, passed to it explicitly.
# overdue: an entry of the states branch still pending after a third of
# its key's records has lost its processing-time timer (its due time is 100
# ms after it, a few dozen of the key's records at the rate).
P = dict(keys=7, block=1000, gap=1000, timer_every=50, timer_delay=100,
         overdue=COUNT // 7 // 3, second_every=3, rule_every=100, tumbling=400, sliding=600,
         slide=200, session_gap=50, count_window=9)
WINDOW_FUNCTIONS = ("reduce", "aggregate", "process")
ASSIGNERS = ("tumbling", "sliding", "session")
BRANCHES = (["sum", "reduce"] +
            [f"{a}-{f}" for a in ASSIGNERS for f in WINDOW_FUNCTIONS] +
            ["count-window", "states", "connected", "broadcast"])


def job_args(out, count=COUNT, rate=RATE):
    args = ["operators", "--count", str(count), "--rate", str(rate), "--output", out]
    for k, v in P.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    return args


# ---- what the source definition gives -----------------------------------------------------


def expected_output(count=COUNT, p=P):
    """{branch: ("rolling", {key: final}) or ("exact", Counter of records)}."""
    keys, block, gap = p["keys"], p["block"], p["gap"]
    per_key = collections.Counter()
    second = collections.Counter()
    blocks = collections.Counter()
    tumbling, sliding = collections.defaultdict(lambda: [0, 0]), collections.defaultdict(
        lambda: [0, 0])
    times = collections.defaultdict(list)
    rules = 0
    size, slide, tsize = p["sliding"], p["slide"], p["tumbling"]
    for i in range(count):
        k, ts = i % keys, i + i // block * gap
        per_key[k] += 1
        if i % p["second_every"] == 0:
            second[k] += 1
        if i % p["rule_every"] == 0:
            rules += 1
        blocks[(k, i // block)] += 1
        w = tumbling[(k, ts - ts % tsize, ts - ts % tsize + tsize)]
        w[0] += 1
        w[1] += i
        # Flink's SlidingEventTimeWindows: starts from the last one down.
        start = ts - ts % slide
        while start > ts - size:
            w = sliding[(k, start, start + size)]
            w[0] += 1
            w[1] += i
            start -= slide
        times[k].append((ts, i))
    sessions = collections.Counter()
    for k, evs in times.items():
        evs.sort()
        first, last, n, total = None, None, 0, 0
        for ts, i in evs:
            if first is not None and ts >= last + p["session_gap"]:
                sessions[(k, first, last + p["session_gap"], n, total)] += 1
                first, n, total = None, 0, 0
            if first is None:
                first = ts
            last, n, total = ts, n + 1, total + i
        sessions[(k, first, last + p["session_gap"], n, total)] += 1
    windows = {
        "tumbling": collections.Counter(k + tuple(v) for k, v in tumbling.items()),
        "sliding": collections.Counter(k + tuple(v) for k, v in sliding.items()),
        "session": sessions,
    }
    out = {"sum": ("rolling", dict(per_key)), "reduce": ("rolling", dict(per_key))}
    for a in ASSIGNERS:
        for f in WINDOW_FUNCTIONS:
            out[f"{a}-{f}"] = ("exact", windows[a])
    cw = p["count_window"]
    out["count-window"] = ("exact", collections.Counter(
        {(k, 0, 0, cw, 0): n // cw for k, n in per_key.items() if n >= cw}))
    # The states branch: per state kind a rolling count per key; the
    # processing-time entries n = timer_every, 2 timer_every, ... (checked
    # as n // timer_every); the block lines exactly.
    states = {}
    for kind in ("value", "list", "map", "reducing", "aggregating"):
        states.update({(kind, k): n for k, n in per_key.items()})
    states.update({("processing-time timer", k): n // p["timer_every"]
                   for k, n in per_key.items() if n >= p["timer_every"]})
    out["states"] = ("states", (states, collections.Counter(
        (2, k, b, n, 0, 0, 0) for (k, b), n in blocks.items())))
    both = {("both inputs", k): per_key[k] + second[k] for k in per_key}
    both.update({("first input", k): n for k, n in per_key.items()})
    both.update({("second input", k): n for k, n in second.items()})
    out["connected"] = ("rolling", both)
    bc = {("rules in broadcast state",): rules}
    bc.update({("element", k): n for k, n in per_key.items()})
    out["broadcast"] = ("rolling", bc)
    return out


# ---- what the sinks committed ---------------------------------------------------------------

_TUPLE = re.compile(r"^\((-?\d+(?:,-?\d+)*)\)$")


def read_records(folder):
    """[tuple of ints] of every committed record of a sink's folder (part
    files whose name starts with a dot are in progress or pending)."""
    records = []
    if not os.path.isdir(folder):
        return records
    for name in sorted(os.listdir(folder)):
        if name.startswith("."):
            continue
        with open(os.path.join(folder, name)) as f:
            for lineno, line in enumerate(f, 1):
                m = _TUPLE.match(line.strip())
                if m is None:
                    raise AssertionError(f"{folder}/{name}:{lineno}: unexpected line {line!r}")
                records.append(tuple(int(x) for x in m.group(1).split(",")))
    return records


def rolling_updates(branch, records, timer_every):
    """{key: [n]} of a branch whose records are rolling counts."""
    updates = collections.defaultdict(list)
    for r in records:
        if branch in ("sum", "reduce"):
            updates[r[0]].append(r[1])
        elif branch == "connected":
            side = ("both inputs", "first input", "second input")[r[0]]
            updates[(side, r[1])].append(r[2])
        elif branch == "broadcast":
            updates[("rules in broadcast state",) if r[0] == 1 else ("element", r[1])].append(r[2])
        elif branch == "states" and r[0] == 1:
            for kind, n in zip(("value", "list", "map", "reducing", "aggregating"), r[2:]):
                updates[(kind, r[1])].append(n)
        elif branch == "states" and r[0] == 3:
            key = ("processing-time timer", r[1])
            updates[key].append(r[2] // timer_every if r[2] % timer_every == 0 else -r[2])
    return dict(updates)


def compare_exact(records, expected, what, limit=6):
    """A message naming the missing and extra records (by key, the first
    field), or None when records is expected exactly."""
    got = collections.Counter(records)
    if got == expected:
        return None
    missing, extra = expected - got, got - expected
    by_key = collections.defaultdict(lambda: ([], []))
    for r, n in missing.items():
        by_key[r[1] if what == "states" else r[0]][0].extend([r] * n)
    for r, n in extra.items():
        by_key[r[1] if what == "states" else r[0]][1].extend([r] * n)
    lines = [f"{sum(expected.values())} records expected, {len(records)} committed, "
             f"{sum(missing.values())} missing, {sum(extra.values())} extra (twice or wrong)"]
    for key in sorted(by_key)[:limit]:
        m, x = by_key[key]
        lines.append(f"  key {key}: missing {sorted(m)[:limit]}{' ...' if len(m) > limit else ''}"
                     f"; extra {sorted(x)[:limit]}{' ...' if len(x) > limit else ''}")
    return "\n".join(lines)


def check_branches(out, expected):
    """{branch: problem} of the branches whose committed output is not
    exactly the expected records; and {branch: records} read."""
    problems, sizes = {}, {}
    for branch in BRANCHES:
        records = read_records(os.path.join(out, branch))
        sizes[branch] = len(records)
        how, want = expected[branch]
        if how == "exact":
            msg = compare_exact(records, want, branch)
        else:
            if how == "states":
                want, blocks = want
                msg = compare_exact([r for r in records if r[0] == 2], blocks, "states")
                msg = f"block timers: {msg}" if msg else None
                lost = sorted({(r[1], r[2]) for r in records if r[0] == 9})
                if lost:
                    msg = ((msg + "\n" if msg else "") +
                           f"{len(lost)} processing-time timers never fired (key, entry n): "
                           f"{lost[:8]}")
                odd = [r for r in records if r[0] not in (1, 2, 3, 9)]
                if odd:
                    msg = (msg + "\n" if msg else "") + f"unexpected records {odd[:5]}"
            else:
                msg = None
            r = check_rolling_counts(rolling_updates(branch, records, P["timer_every"]), want)
            if not r.ok:
                msg = (msg + "\n" if msg else "") + r.message()
        if msg:
            problems[branch] = msg
    return problems, sizes


# ---- the tests ------------------------------------------------------------------------------


class OperatorJob:
    """The `operators` job on a cluster of the test's own: submission,
    its state through REST (self.rest_port), its output checked."""

    expected = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.expected = expected_output()

    def setUp(self):
        super().setUp()
        self.taskmanagers = []
        self.out = os.path.join(self.tmp, "out")
        os.mkdir(self.out)

    def folders(self):
        return ["-D", f"state.checkpoints.dir={self.tmp}/checkpoints",
                "-D", f"state.savepoints.dir={self.tmp}/savepoints"]

    def client_args(self):
        """(options before `run`, options of `run` that name the cluster)."""
        return [], ["-m", f"127.0.0.1:{self.rest_port}"]

    def submit(self, parallelism, savepoint=None, count=COUNT):
        conf, target = self.client_args()
        args = [*conf, "-D", f"state.checkpoints.dir={self.tmp}/checkpoints", "run",
                *target, "-d", "-p", str(parallelism)]
        if savepoint:
            args += ["-s", savepoint]
        r = self.spate(*args, TESTJOBS, *job_args(self.out, count=count), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def job(self, jid):
        status, job = self.rest(f"/jobs/{jid}")
        self.assertEqual(status, 200, job)
        return job

    def checkpoints(self, jid):
        status, s = self.rest(f"/jobs/{jid}/checkpoints")
        self.assertEqual(status, 200, s)
        return s

    def wait_state(self, jid, states, timeout=180.0):
        return wait_for(lambda: (lambda j: j if j["state"] in states else None)(self.job(jid)),
                        timeout, f"job {jid} in {states}")

    def wait_committed(self, jid):
        """Every task runs, a checkpoint completed and the sum branch has
        committed a fifth of its records: the kill or the savepoint comes
        mid-job, with state in every branch."""
        def ok():
            j = self.job(jid)
            if j["state"] in TERMINAL:
                raise AssertionError(f"job {jid} ended {j['state']} before a checkpoint "
                                     f"committed output: {j.get('failure')}")
            t = j.get("tasks", {})
            if j["state"] != "RUNNING" or t.get("running") != t.get("total"):
                return None
            if self.checkpoints(jid)["counts"]["completed"] < 1:
                return None
            return len(read_records(os.path.join(self.out, "sum"))) >= COUNT // 5
        wait_for(ok, 90, f"job {jid} running with a fifth of its output committed")
        if STATE_BACKEND == "rocksdb":
            self.assertTrue(rocksdb_folders(self.tmp),
                            "state.backend.type: rocksdb, but no RocksDB working folder")
        if INCREMENTAL:
            self.assertTrue(self.shared_files(jid),
                            "incremental checkpoints completed, but no shared SST file")

    def shared_files(self, jid):
        """The files of the job's shared/ checkpoint folder."""
        d = os.path.join(self.tmp, "checkpoints", jid, "shared")
        return [os.path.join(d, n) for n in os.listdir(d)] if os.path.isdir(d) else []

    def check_output(self, what, expected=None):
        problems, sizes = check_branches(self.out, expected or self.expected)
        if problems:
            ok = [b for b in BRANCHES if b not in problems]
            self.fail(f"{what}: {len(problems)} of {len(BRANCHES)} branches not exactly once "
                      f"({', '.join(problems)}); exactly once: {', '.join(ok) or 'none'}\n" +
                      "\n".join(f"-- {b} ({sizes[b]} records committed): {m}"
                                for b, m in problems.items()))


class OperatorFailoverTest(OperatorJob, ClusterTestCase):

    def cluster(self, taskmanagers, slots):
        self.start_jobmanager(*self.folders())
        for _ in range(taskmanagers):
            self.taskmanagers.append(self.start_taskmanager(slots=slots))
        self.wait_overview(taskmanagers, slots=slots * taskmanagers)

    def running_the_job(self, jid):
        """The index in self.taskmanagers of one that runs subtasks of jid
        (a replacement may have taken them all, the other one idle)."""
        ids = set()
        for v in self.job(jid)["vertices"]:
            status, d = self.rest(f"/jobs/{jid}/vertices/{v['id']}")
            self.assertEqual(status, 200, d)
            ids |= {s["taskmanager-id"] for s in d["subtasks"] if s["status"] == "RUNNING"}
        for i, tm in enumerate(self.taskmanagers):
            if tm.wait_log(r"TaskExecutor (\S+) started at").group(1) in ids:
                return i
        self.fail(f"no TaskManager of ours runs {jid}: {ids}")

    def kill_and_replace(self, jid, slots):
        self.wait_committed(jid)
        before = self.checkpoints(jid)["counts"]["restored"]
        self.taskmanagers.pop(self.running_the_job(jid)).kill()
        self.assertNotIn(self.job(jid)["state"], TERMINAL, "the kill came after the job's end")
        self.taskmanagers.append(self.start_taskmanager(slots=slots))
        wait_for(lambda: self.checkpoints(jid)["counts"]["restored"] > before, 90,
                 f"job {jid} restored from a checkpoint")

    def test_p1_kill9_of_the_taskmanager(self):
        self.cluster(1, slots=2)
        jid = self.submit(1)
        self.kill_and_replace(jid, slots=2)
        if STATE_BACKEND == "rocksdb":
            # The killed TaskManager's RocksDB folders: its replacement
            # sweeps them at its start (their locks died with it).
            self.taskmanagers[-1].wait_log(
                r"removed '\S*/spate-rocksdb-\S*', left by a process that is gone")
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.check_output("p1 through a kill -9")
        if STATE_BACKEND == "rocksdb":
            wait_for(lambda: not rocksdb_folders(self.tmp), 30,
                     f"no RocksDB folder left of the killed TaskManager or of {jid}'s "
                     f"ended tasks: {rocksdb_folders(self.tmp)}")

    def test_p4_kill9_of_a_taskmanager(self):
        self.cluster(2, slots=2)
        jid = self.submit(4)
        self.kill_and_replace(jid, slots=2)
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.check_output("p4 through a kill -9")

    def test_p2_three_kill9_of_taskmanagers_in_a_row(self):
        # Three times the records: the job outlasts three restores.
        self.cluster(2, slots=2)
        jid = self.submit(2, count=3 * COUNT)
        for kill in range(3):
            # Each kill after a checkpoint that completed since the last
            # restore: state in every branch has moved on from it.
            done = self.checkpoints(jid)["counts"]["completed"]
            wait_for(lambda: self.checkpoints(jid)["counts"]["completed"] > done or
                     self.job(jid)["state"] in TERMINAL, 90,
                     f"a checkpoint of {jid} before kill {kill + 1}")
            self.kill_and_replace(jid, slots=2)
        self.assertGreaterEqual(self.checkpoints(jid)["counts"]["restored"], 3)
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.check_output("p2 through three kill -9 in a row", expected_output(count=3 * COUNT))
        if INCREMENTAL:
            # Its checkpoints were discarded at its end: their shared files too.
            wait_for(lambda: not self.shared_files(jid), 30,
                     f"the shared checkpoint files of {jid} deleted with its checkpoints")

    @unittest.skipUnless(INCREMENTAL, "incremental checkpoints only")
    def test_p1_a_truncated_shared_sst_fails_the_restore_naming_it(self):
        self.cluster(1, slots=2)
        jid = self.submit(1)
        self.wait_committed(jid)
        # Every shared file cut short: the latest checkpoint references some.
        files = self.shared_files(jid)
        for f in files:
            os.truncate(f, 1)
        self.taskmanagers.pop(0).kill()
        self.taskmanagers.append(self.start_taskmanager(slots=2))
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FAILED", "a restore from cut files succeeded")
        failure = str(job.get("failure"))
        self.assertTrue(any(f in failure for f in files),
                        f"the failure names no shared file: {failure}")
        print(f"the job failed as it should: {failure}", file=sys.stderr)
        # The cluster stays up: it runs the next job to its end.
        self.wait_overview(1, slots=2)
        self.out = os.path.join(self.tmp, "out2")
        os.mkdir(self.out)
        jid2 = self.submit(1, count=COUNT // 4)
        job = self.wait_state(jid2, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))

    @unittest.skipUnless(STATE_BACKEND == "rocksdb", "RocksDB's working folders only")
    def test_p1_a_full_disk_fails_the_task_and_the_job_restores(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs under the RocksDB folder needs root")
        # RocksDB's working folders on a tmpfs of their own, which the test
        # fills mid-job; little managed memory, so that memtables flush to
        # it often.
        local = os.path.join(self.tmp, "rocksdb")
        os.makedirs(local)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", local],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest(f"cannot mount a tmpfs (root without CAP_SYS_ADMIN?): {r.stderr}")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.addCleanup(subprocess.run, ["umount", "-l", local])
        self.start_jobmanager(*self.folders())
        self.taskmanagers.append(
            self.start_taskmanager("-D", "taskmanager.memory.managed.size=16m", slots=2))
        self.wait_overview(1, slots=2)
        jid = self.submit(1)
        self.wait_committed(jid)
        filler = os.path.join(local, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * (1 << 20))
                    f.flush()
            except OSError as e:
                self.assertEqual(e.errno, errno.ENOSPC, e)

        def failure():
            status, x = self.rest(f"/jobs/{jid}/exceptions")
            self.assertEqual(status, 200, x)
            for e in x.get("all-exceptions", []):
                if "No space left" in e["exception"] or "no space left" in e["exception"]:
                    return e["exception"]
            if self.job(jid)["state"] in TERMINAL:
                raise AssertionError(f"job {jid} ended without a full disk: "
                                     f"{json.dumps(x)[:2000]}")
            return None
        message = wait_for(failure, 90, f"a task of {jid} failed on the full disk")
        print(f"the task failed as it should: {message}", file=sys.stderr)
        self.assertIn(local, message, "the error names the RocksDB folder")
        os.unlink(filler)
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.assertGreaterEqual(self.checkpoints(jid)["counts"]["restored"], 1,
                                "the job restarted from a checkpoint")
        self.check_output("p1 through a full disk")

    def test_p4_savepoint_resumed_at_p3(self):
        self.cluster(2, slots=2)
        jid = self.submit(4)
        self.wait_committed(jid)
        # Savepoint and cancel as one: no checkpoint commits output past
        # the savepoint between them.
        r = self.spate("cancel", "-m", f"127.0.0.1:{self.rest_port}", "-s",
                       os.path.join(self.tmp, "savepoints"), jid, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "CANCELED")
        jid = self.submit(3, savepoint=sp)
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.assertEqual({v["parallelism"] for v in job["vertices"]}, {3})
        self.check_output("p4 resumed at p3 from a savepoint")


class OperatorHaFailoverTest(OperatorJob, test_ha.OwnZooKeeper, test_ha.HaTestCase):
    """The job through a kill -9 of the leading JobManager with ZooKeeper HA
    (a server of this class's own; test_ha's helpers)."""

    def client_args(self):
        # Through ZooKeeper, as test_ha's jobs: no -m, the CLI asks for the
        # leader's REST endpoint.
        return self.ha_args(), []

    def leader_and_standby(self):
        """Two JobManagers started together: the one that leads (its log,
        and its REST answers where the standby's says 503), the other."""
        jms = [self.start_ha_jobmanager(*self.folders()) for _ in range(2)]
        wait_for(lambda: sum(self.leads(jm) for jm in jms) == 1 and
                 sum("standing by: latch node" in jm.text() for jm in jms) == 1, 30,
                 "one JobManager leading, the other standing by")
        leader, standby = jms if self.leads(jms[0]) else jms[::-1]
        self.use_rest_of(standby)
        status, body = self.rest("/overview")
        self.assertEqual(status, 503, body)
        self.use_rest_of(leader)
        self.assertEqual(self.rest("/overview")[0], 200)
        return leader, standby

    def test_p4_kill9_of_the_leading_jobmanager(self):
        leader, standby = self.leader_and_standby()
        for _ in range(2):
            self.taskmanagers.append(self.start_ha_taskmanager(slots=2))
        self.wait_overview(2, slots=4)
        jid = self.submit(4)
        self.wait_committed(jid)
        latest = self.checkpoints(jid)["latest"]["completed"]["id"]
        committed = len(read_records(os.path.join(self.out, "sum")))
        leader.kill()
        # The kill came mid-job: the sum branch had not committed all of its
        # records (it commits only at checkpoints).
        self.assertLess(committed, COUNT, "the kill came after the job's output was committed")

        standby.wait_log(r"this JobManager was granted leadership", timeout=30)
        standby.wait_log(r"recovered job " + jid + " from the job graph store")
        m = standby.wait_log(r"job=" + jid + r" recovered; resuming from '(\S+/chk-(\d+)/"
                             r"_metadata)'", timeout=60)
        # Its latest checkpoint: the last one completed before the kill, or
        # one completed after it was read.
        self.assertGreaterEqual(int(m.group(2)), latest, m.group(1))
        for tm in self.taskmanagers:
            tm.wait_log(r"registered at the ResourceManager 127\.0\.0\.1:%d/resourcemanager"
                        % standby.rpc_port)
        self.use_rest_of(standby)
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        restored = self.checkpoints(jid)["latest"]["restored"]
        self.assertEqual((restored or {}).get("id"), int(m.group(2)), restored)
        self.check_output(f"p4 through a kill -9 of the leading JobManager, resumed from "
                          f"{m.group(1)}")


class ExpectedOutputTest(unittest.TestCase):
    """The checker against a hand-computed source and doctored outputs."""

    def test_a_small_source_by_hand(self):
        p = dict(P, keys=2, block=4, gap=10, tumbling=5, sliding=6, slide=3, session_gap=3,
                 count_window=2, second_every=2, rule_every=3, timer_every=2)
        # i: 0..5, ts: 0 1 2 3 14 15; key 0: i 0 2 4 (ts 0 2 14); key 1: i 1 3 5 (ts 1 3 15).
        e = expected_output(6, p)
        self.assertEqual(e["sum"], ("rolling", {0: 3, 1: 3}))
        self.assertEqual(set(e["tumbling-reduce"][1]), {
            (0, 0, 5, 2, 2), (0, 10, 15, 1, 4), (1, 0, 5, 2, 4), (1, 15, 20, 1, 5)})
        self.assertEqual(set(e["session-process"][1]), {
            (0, 0, 5, 2, 2), (0, 14, 17, 1, 4), (1, 1, 6, 2, 4), (1, 15, 18, 1, 5)})
        # ts 0 and 2 are in [-3, 3) and [0, 6); ts 14 in [9, 15) and [12, 18).
        self.assertEqual(e["sliding-aggregate"][1][(0, -3, 3, 2, 2)], 1)
        self.assertEqual(e["sliding-aggregate"][1][(0, 9, 15, 1, 4)], 1)
        self.assertEqual(e["sliding-aggregate"][1][(0, 0, 6, 2, 2)], 1)
        self.assertEqual(e["sliding-aggregate"][1][(0, 12, 18, 1, 4)], 1)
        self.assertEqual(e["count-window"][1], collections.Counter({(0, 0, 0, 2, 0): 1,
                                                                    (1, 0, 0, 2, 0): 1}))
        states, blocks = e["states"][1]
        self.assertEqual(states[("list", 1)], 3)
        self.assertEqual(states[("processing-time timer", 0)], 1)
        self.assertEqual(blocks, collections.Counter([(2, 0, 0, 2, 0, 0, 0), (2, 0, 1, 1, 0, 0, 0),
                                                      (2, 1, 0, 2, 0, 0, 0), (2, 1, 1, 1, 0, 0, 0)]))
        self.assertEqual(e["connected"][1][("both inputs", 0)], 6)
        self.assertEqual(e["connected"][1][("second input", 0)], 3)
        self.assertNotIn(("second input", 1), e["connected"][1])
        self.assertEqual(e["broadcast"][1][("rules in broadcast state",)], 2)

    def test_lost_and_repeated_records_are_named_by_branch_and_key(self):
        import tempfile
        e = expected_output(2000, dict(P, block=100, gap=100))
        with tempfile.TemporaryDirectory() as out:
            def write(branch, records):
                os.makedirs(os.path.join(out, branch))
                with open(os.path.join(out, branch, "part-0-0"), "w") as f:
                    f.writelines(f"({','.join(map(str, r))})\n" for r in records)
            for b in BRANCHES:
                how, want = e[b]
                if how == "exact":
                    write(b, list(want.elements()))
            # sum restarted from 0 after a restore: 1..3 again, 4.. lost.
            write("sum", [(k, n) for k, f in e["sum"][1].items() for n in range(1, f - 2)] +
                  [(k, n) for k in e["sum"][1] for n in (1, 2, 3)])
            write("reduce", [(k, n) for k, f in e["reduce"][1].items() for n in range(1, f + 1)])
            states, blocks = e["states"][1]
            write("states", [(1, k, n, n, n, n, n) for k in range(P["keys"])
                             for n in range(1, states[("value", k)] + 1)] +
                  list(blocks.elements()) +
                  [(3, k, n * P["timer_every"], 0, 0, 0, 0) for k in range(P["keys"])
                   for n in range(1, states[("processing-time timer", k)] + 1)])
            write("connected", [(side, key[1], n) + (0,) for key, f in e["connected"][1].items()
                                for side in [("both inputs", "first input",
                                              "second input").index(key[0])]
                                for n in range(1, f + 1)])
            rules = e["broadcast"][1][("rules in broadcast state",)]
            write("broadcast", [(1, 0, n, 0) for n in range(1, rules + 1)] +
                  [(2, k, n, 0) for k in range(P["keys"])
                   for n in range(1, e["broadcast"][1][("element", k)] + 1)])
            problems, _ = check_branches(out, e)
            self.assertEqual(sorted(problems), ["sum"], problems)
            self.assertIn("key 0: 3 missing", problems["sum"])
            self.assertIn("3 extra copies", problems["sum"])
            # A window result twice, one lost.
            os.unlink(os.path.join(out, "session-reduce", "part-0-0"))
            os.rmdir(os.path.join(out, "session-reduce"))
            recs = sorted(e["session-reduce"][1].elements())
            write("session-reduce", recs[1:] + recs[-1:])
            with open(os.path.join(out, "states", "part-0-0"), "a") as f:
                f.write("(9,4,100,3000,0,0,0)\n")
            problems, _ = check_branches(out, e)
            self.assertIn("1 processing-time timers never fired (key, entry n): [(4, 100)]",
                          problems["states"])
            self.assertIn("session-reduce", problems)
            self.assertIn("1 missing, 1 extra", problems["session-reduce"])
            self.assertIn(f"key {recs[0][0]}: missing [{recs[0]}]", problems["session-reduce"])


if __name__ == "__main__":
    unittest.main()
