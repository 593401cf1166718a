"""Helpers for the cluster's end-to-end tests: start a JobManager and
TaskManagers as real processes on 127.0.0.1 (ports chosen by the kernel and
read back from the logs), talk to the REST API, wait for conditions."""

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from spatetest import BUILD, SPATE, SpateTestCase, wait_for  # noqa: E402,F401

TESTJOBS = os.path.join(BUILD, "tests", "jobs", "testjobs.so")

# The keyed state backend of the TaskManagers the tests start: the heap
# (hashmap, the default), or the one SPATE_E2E_STATE_BACKEND names
# (rocksdb). tests/e2e/CMakeLists.txt runs some test files once per
# backend: the same tests, not copies.
STATE_BACKEND = os.environ.get("SPATE_E2E_STATE_BACKEND", "hashmap")
# SPATE_E2E_CHECKPOINTS_INCREMENTAL=1 (with rocksdb): incremental
# checkpoints (execution.checkpointing.incremental), shared SST files in
# the job's checkpoint folder's shared/.
INCREMENTAL = os.environ.get("SPATE_E2E_CHECKPOINTS_INCREMENTAL") == "1"
# SPATE_E2E_ROCKSDB_TIMERS=1 (with rocksdb): the timers in RocksDB too
# (state.backend.rocksdb.timer-service.factory: ROCKSDB).
ROCKSDB_TIMERS = os.environ.get("SPATE_E2E_ROCKSDB_TIMERS") == "1"


def state_backend_args(tmp):
    """A TaskManager's -D options for STATE_BACKEND; RocksDB's working
    folders go under tmp/rocksdb (see rocksdb_folders)."""
    if STATE_BACKEND == "hashmap":
        return []
    args = ["-D", f"state.backend.type={STATE_BACKEND}",
            "-D", f"state.backend.rocksdb.localdir={os.path.join(tmp, 'rocksdb')}"]
    if INCREMENTAL:
        args += ["-D", "execution.checkpointing.incremental=true"]
    if ROCKSDB_TIMERS:
        args += ["-D", "state.backend.rocksdb.timer-service.factory=ROCKSDB"]
    return args


def rocksdb_folders(tmp):
    """The RocksDB working folders of the TaskManagers' running operators
    (none on the heap): one per operator instance with keyed state."""
    d = os.path.join(tmp, "rocksdb")
    return [n for n in os.listdir(d) if n.startswith("spate-rocksdb-")] if os.path.isdir(d) else []


def job_id_of(out):
    """The id `spate run -d` printed ("Job has been submitted with JobID <id>")."""
    m = re.search(r"JobID ([0-9a-f]{32})", out)
    assert m, f"no JobID in {out!r}"
    return m.group(1)


class Proc:
    """A started spate process and its log file."""

    def __init__(self, popen, log):
        self.popen = popen
        self.log = log
        self.pid = popen.pid

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def wait_log(self, pattern, timeout=30.0):
        """Waits for a line matching pattern (a regex); returns the match."""
        rx = re.compile(pattern)
        return wait_for(lambda: rx.search(self.text()), timeout, f"'{pattern}' in {self.log}")

    def count(self, pattern):
        return len(re.findall(pattern, self.text()))

    def alive(self):
        return self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            self.popen.send_signal(sig)

    def kill(self):
        if self.alive():
            self.popen.send_signal(signal.SIGCONT)
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait()


class ClusterTestCase(SpateTestCase):
    """A test with a JobManager and TaskManagers of its own."""

    # Fast enough for tests, the same mechanisms as the defaults.
    FAST = ["-D", "cluster.registration.error-delay=200 ms",
            "-D", "cluster.registration.refused-registration-delay=200 ms"]

    def setUp(self):
        super().setUp()
        self.rpc_port = None
        self.rest_port = None
        self.rest_scheme = "http"
        self.ssl_context = None  # an ssl.SSLContext for a JobManager that speaks HTTPS
        self.nprocs = 0

    def launch(self, args, name):
        self.nprocs += 1
        log = os.path.join(self.tmp, f"{name}-{self.nprocs}.log")
        out = open(log, "w")
        p = subprocess.Popen([SPATE, *args], stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        out.close()
        self.procs.append(p)
        return Proc(p, log)

    def start_jobmanager(self, *extra, rpc_port=0, rest_port=0):
        jm = self.launch(["-D", f"jobmanager.rpc.port={rpc_port}", "-D", f"rest.port={rest_port}",
                          *self.FAST, *extra, "jobmanager"], "jobmanager")
        m = jm.wait_log(r"JobManager started: rpc at 127\.0\.0\.1:(\d+)(?: \(TLS\))?, "
                        r"REST at (https?)://[\d.]+:(\d+)")
        self.rpc_port, self.rest_scheme, self.rest_port = int(m.group(1)), m.group(2), int(m.group(3))
        return jm

    def start_taskmanager(self, *extra, slots=2, rpc_port=None):
        port = rpc_port if rpc_port is not None else self.rpc_port
        return self.launch(["-D", f"jobmanager.rpc.port={port}",
                            "-D", f"taskmanager.numberOfTaskSlots={slots}",
                            *self.FAST, *state_backend_args(self.tmp), *extra, "taskmanager"],
                           "taskmanager")

    def rest(self, path, method="GET"):
        """(status, parsed JSON body) of a REST call."""
        req = urllib.request.Request(f"{self.rest_scheme}://127.0.0.1:{self.rest_port}{path}",
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=15, context=self.ssl_context) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def job_state(self, jid):
        status, job = self.rest(f"/jobs/{jid}")
        self.assertEqual(status, 200, job)
        return job

    def resource_id(self, tm):
        """The resource id of TaskManager tm (a Proc), from its log."""
        return tm.wait_log(r"TaskExecutor (\S+) started at").group(1)

    def taskmanagers_of(self, jid):
        """The resource ids of the TaskManagers that run subtasks of jid."""
        ids = set()
        for v in self.job_state(jid)["vertices"]:
            status, d = self.rest(f"/jobs/{jid}/vertices/{v['id']}")
            self.assertEqual(status, 200, d)
            ids |= {s["taskmanager-id"] for s in d["subtasks"] if s["status"] == "RUNNING"}
        return ids

    def wait_state(self, jid, states, timeout=180.0):
        return wait_for(lambda: (lambda j: j if j["state"] in states else None)(
            self.job_state(jid)), timeout, f"job {jid} in {states}")

    def wait_checkpoint_while_running(self, jid, timeout=60.0):
        """Waits for a completed checkpoint with every task running; fails
        if the job ended first (the failure would land after the job)."""
        def ok():
            j = self.job_state(jid)
            if j["state"] in ("FINISHED", "FAILED", "CANCELED"):
                raise AssertionError(f"job {jid} ended {j['state']} before a checkpoint "
                                     "completed: the input is too small for this machine")
            t = j.get("tasks", {})
            if j["state"] != "RUNNING" or t.get("running") != t.get("total"):
                return None
            status, s = self.rest(f"/jobs/{jid}/checkpoints")
            return s if status == 200 and s["counts"]["completed"] >= 1 else None
        return wait_for(ok, timeout, f"a completed checkpoint of {jid} while it runs")

    def assert_counted_once(self, out, count, keys):
        """testjobs' `checkpointed` job wrote into the folder out, for each
        of its keys, the counts 1..n once each (count records over keys)."""
        counts = {}
        for name in os.listdir(out):
            if name.startswith("."):
                continue
            with open(os.path.join(out, name)) as f:
                for line in f:
                    k, n = re.match(r"^\((\d+),(\d+)\)$", line.strip()).groups()
                    counts.setdefault(int(k), []).append(int(n))
        self.assertEqual(sorted(counts), list(range(keys)))
        for k in range(keys):
            n = count // keys + (1 if k < count % keys else 0)
            self.assertEqual(sorted(counts[k]), list(range(1, n + 1)), f"key {k}")

    def overview(self):
        status, body = self.rest("/overview")
        self.assertEqual(status, 200, body)
        return body

    def wait_overview(self, taskmanagers, slots=None, available=None, timeout=60.0):
        def ok():
            try:
                o = self.overview()
            except OSError:
                return None
            if o["taskmanagers"] != taskmanagers:
                return None
            if slots is not None and o["slots-total"] != slots:
                return None
            if available is not None and o["slots-available"] != available:
                return None
            return o
        return wait_for(ok, timeout, f"{taskmanagers} taskmanagers, {slots} slots, "
                                     f"{available} available")

    def submit_job(self, slots, *args, conf=()):
        """Submits testjobs' `slots` job (slots subtasks, a slot each; args:
        its --run-ms or --until) detached over REST, as a user's job; conf:
        the client's -D options. Returns its id."""
        r = self.spate(*conf, "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", TESTJOBS,
                       "slots", "--slots", str(slots), *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return job_id_of(r.stdout)

    def job(self, jid):
        status, body = self.rest(f"/jobs/{jid}")
        self.assertEqual(status, 200, body)
        return body

    def run_detached(self, *args):
        """Runs `spate run -d args...` on this cluster; the job's id."""
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return job_id_of(r.stdout)

    def wait_tasks_running(self, jid, timeout=60.0):
        """Waits for every task of the job to run; returns its details."""
        def running():
            j = self.job(jid)
            return j if j["tasks"]["running"] == j["tasks"]["total"] else None
        return wait_for(running, timeout, f"every task of {jid} running")
