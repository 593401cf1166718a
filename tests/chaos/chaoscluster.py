"""A spate cluster across the test hosts of a netlab.Lab, configured by
address as a real deployment is (issue 30): ZooKeeper on host `zk`,
JobManagers with ZooKeeper HA on `jm1`, `jm2`, ..., TaskManagers on `tm1`,
`tm2`, ..., each binding and announcing its host's address on the ports a
deployment would use (no loopback, no ephemeral ports: every host has a
network stack of its own). The harness talks to them from the lab's `ctl`
host. The job whose output is checked is testjobs' `checkpointed` job (a
rolling count per key into the exactly-once file sink) over the shared
file system, as a real cluster shares a checkpoint store.

The checker (check_*) reads what the run left:
- the committed output, record by record (tests/e2e/exactly_once.py):
  nothing lost, nothing twice;
- the leadership history from the JobManagers' logs: grants and
  revocations of leadership, and the completed checkpoints each
  JobManager wrote. A checkpoint id completed by two JobManagers, or a
  JobManager completing a checkpoint after another one completed a later
  one (its writes were not fenced off), is two leaders acting at once."""

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from spatetest import BUILD, SPATE, wait_for  # noqa: E402
from zkserver import ZooKeeperServer  # noqa: E402
import exactly_once  # noqa: E402

TESTJOBS = os.path.join(BUILD, "tests", "jobs", "testjobs.so")
RPC_PORT, REST_PORT, ZK_PORT = 6123, 8081, 2181


class Node:
    """A spate process on a test host (restartable: its log is appended)."""

    def __init__(self, cluster, host, role):
        self.cluster = cluster
        self.host = host
        self.role = role
        self.log = os.path.join(cluster.tmp, f"{host.name}.log")
        self.proc = None
        self.stopped = False  # SIGSTOP sent, no SIGCONT yet

    @property
    def name(self):
        return self.host.name

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        assert not self.alive(), f"{self.name} runs already"
        c = self.cluster
        addr = self.host.addr
        if self.role == "jobmanager":
            where = ["-D", f"jobmanager.rpc.address={addr}", "-D", f"jobmanager.bind-host={addr}",
                     "-D", f"jobmanager.rpc.port={RPC_PORT}", "-D", f"rest.address={addr}",
                     "-D", f"rest.bind-address={addr}", "-D", f"rest.port={REST_PORT}"]
        else:
            where = ["-D", f"taskmanager.host={addr}", "-D", f"taskmanager.bind-host={addr}",
                     "-D", f"taskmanager.numberOfTaskSlots={c.slots}"]
        self.proc = self.host.start([SPATE, *c.conf(), *where, self.role], self.log)
        self.stopped = False
        return self

    def kill(self):
        """kill -9 (and SIGCONT first, so a stopped process dies at once)."""
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.stopped = False

    def pause(self):
        if self.alive():
            self.proc.send_signal(signal.SIGSTOP)
            self.stopped = True

    def resume(self):
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait_log(self, pattern, timeout=60.0, after=0):
        """A match of pattern in the log at or after offset `after`."""
        rx = re.compile(pattern)
        return wait_for(lambda: rx.search(self.text(), after), timeout,
                        f"'{pattern}' in {self.log}")


class ChaosCluster:
    def __init__(self, lab, tmp, jobmanagers=2, taskmanagers=3, slots=2, session="2 s",
                 checkpoint_tmpfs_mb=0, extra=()):
        self.lab = lab
        self.tmp = tmp
        self.slots = slots
        self.session = session
        self.extra = list(extra)
        self.cluster_id = "/chaos"
        self.storage = os.path.join(tmp, "ha-storage")
        self.checkpoints = os.path.join(tmp, "checkpoints")
        self.checkpoint_tmpfs_mb = checkpoint_tmpfs_mb
        self.mounted = False
        zk_host = lab.host("zk")
        self.zk = ZooKeeperServer(workdir=os.path.join(tmp, "zk"), port=ZK_PORT, host=zk_host,
                                  call=lab.call)
        self.zk_host = zk_host
        self.jms = [Node(self, lab.host(f"jm{i + 1}"), "jobmanager") for i in range(jobmanagers)]
        self.tms = [Node(self, lab.host(f"tm{i + 1}"), "taskmanager")
                    for i in range(taskmanagers)]

    def conf(self):
        return ["-D", "high-availability.type=zookeeper",
                "-D", f"high-availability.zookeeper.quorum={self.zk.quorum}",
                "-D", f"high-availability.cluster-id={self.cluster_id}",
                "-D", f"high-availability.storageDir={self.storage}",
                "-D", f"high-availability.zookeeper.client.session-timeout={self.session}",
                "-D", "high-availability.zookeeper.client.connection-timeout=5 s",
                "-D", "high-availability.zookeeper.client.retry-wait=200 ms",
                "-D", f"state.checkpoints.dir={self.checkpoints}",
                "-D", f"io.tmp.dirs={self.tmp}",
                "-D", "cluster.registration.error-delay=200 ms",
                "-D", "cluster.registration.refused-registration-delay=200 ms",
                *self.extra]

    def start(self):
        os.makedirs(self.zk.dir, exist_ok=True)
        if self.checkpoint_tmpfs_mb:
            # A small file system of its own, which the full-disk fault fills.
            os.makedirs(self.checkpoints, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.checkpoint_tmpfs_mb}m",
                            "spate-chaos", self.checkpoints], check=True)
            self.mounted = True
        self.zk.start()
        for n in self.jms + self.tms:
            n.start()
        return self

    def close(self):
        for n in self.tms + self.jms:
            n.kill()
        self.zk.stop()
        if self.mounted:
            subprocess.run(["umount", self.checkpoints], check=False)
            self.mounted = False

    # ---- talking to the cluster, from the ctl host ----

    def rest(self, node, path, method="GET", timeout=5.0):
        """(status, JSON) of a REST call to node's JobManager, or (None, why)."""
        def call():
            req = urllib.request.Request(f"http://{node.host.addr}:{REST_PORT}{path}",
                                         method=method)
            try:
                with urllib.request.urlopen(req, timeout=timeout) as r:
                    return r.status, json.loads(r.read() or b"{}")
            except urllib.error.HTTPError as e:
                try:
                    return e.code, json.loads(e.read() or b"{}")
                except ValueError:
                    return e.code, {}
            except (OSError, ValueError) as e:
                return None, str(e)
        return self.lab.call(call)

    def leader(self):
        """The JobManager whose REST answers /overview with 200, or None."""
        for jm in self.jms:
            if jm.alive() and not jm.stopped:
                status, _ = self.rest(jm, "/overview", timeout=2.0)
                if status == 200:
                    return jm
        return None

    def spate(self, *args, timeout=120):
        """A spate command run on the ctl host with the cluster's settings."""
        return self.lab.ctl.run([SPATE, *self.conf(), *args], timeout=timeout)

    def wait_ready(self, timeout=90.0):
        """A leader that sees every TaskManager's slots."""
        want = len(self.tms) * self.slots

        def ready():
            jm = self.leader()
            if jm is None:
                return None
            status, o = self.rest(jm, "/overview")
            return jm if status == 200 and o.get("slots-total") == want else None
        return wait_for(ready, timeout, f"a leader with {want} slots", interval=0.2)

    def submit_checkpointed(self, count, rate, keys, out, parallelism, interval_ms=200, conf=()):
        """Submits the checkpointed job detached (conf: the client's -D
        options, e.g. its restart strategy); returns its id."""
        r = self.spate(*conf, "run", "-d", "-p", str(parallelism), TESTJOBS, "checkpointed",
                       "--count", str(count), "--rate", str(rate), "--keys", str(keys),
                       "--interval", str(interval_ms), "--output", out)
        if r.returncode != 0:
            raise AssertionError(f"submission failed: {r.stderr}")
        m = re.search(r"JobID ([0-9a-f]{32})", r.stdout)
        assert m, r.stdout
        return m.group(1)

    def job_state(self, jid):
        jm = self.leader()
        if jm is None:
            return None
        status, body = self.rest(jm, f"/jobs/{jid}")
        return body.get("state") if status == 200 else None

    def all_running(self, jid):
        jm = self.leader()
        if jm is None:
            return False
        status, body = self.rest(jm, f"/jobs/{jid}")
        return (status == 200 and body.get("state") == "RUNNING"
                and body["tasks"]["running"] == body["tasks"]["total"])

    def latest_checkpoint(self, jid):
        """The id of the job's latest completed checkpoint (ids go on across
        a failover: the counter lives in ZooKeeper), 0 before the first, or
        None when no leader answers."""
        jm = self.leader()
        if jm is None:
            return None
        status, s = self.rest(jm, f"/jobs/{jid}/checkpoints")
        if status != 200:
            return None
        latest = (s.get("latest") or {}).get("completed")
        return latest["id"] if latest else 0

    def completed_checkpoints(self, jid):
        jm = self.leader()
        if jm is None:
            return None
        status, s = self.rest(jm, f"/jobs/{jid}/checkpoints")
        return s["counts"]["completed"] if status == 200 else None


# ---- the checker -----------------------------------------------------------------------------

_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z ", re.M)


def _when(line):
    m = _TIME.match(line)
    if m is None:
        return None
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def leadership_history(jms):
    """[(time, jobmanager name, event, detail)] in time order, from the
    logs: 'start' (a process started: it leads nothing yet), 'grant'
    (session id), 'revoke' (why), 'complete' (checkpoint id, job id)."""
    rx = [(re.compile(r"JobManager started: rpc at (\S+)"), "start"),
          (re.compile(r"this JobManager was granted leadership with session id (\w+)"), "grant"),
          (re.compile(r"leadership of this JobManager revoked: (.*)"), "revoke"),
          (re.compile(r"checkpoint: completed checkpoint (\d+) of job (\w+)"), "complete")]
    events = []
    for jm in jms:
        for line in jm.text().splitlines():
            for r, kind in rx:
                m = r.search(line)
                if m:
                    t = _when(line)
                    if t is not None:
                        events.append((t, jm.name, kind, m.groups()))
    events.sort(key=lambda e: e[0])
    return events


def check_single_leader(events):
    """[] when no two JobManagers acted as leader at once, else what broke:
    a checkpoint id completed by two JobManagers; a completion by a
    JobManager that had no leadership then; a completion by a JobManager
    after another JobManager completed a later checkpoint of the job."""
    problems = []
    leading = {}         # name -> session while granted
    by_id = {}           # (job, id) -> name
    last = {}            # job -> (id, name) of the latest completion
    for t, name, kind, detail in events:
        if kind == "grant":
            leading[name] = detail[0]
        elif kind in ("revoke", "start"):
            leading.pop(name, None)
        else:
            cid, job = int(detail[0]), detail[1]
            if name not in leading:
                problems.append(f"{name} completed checkpoint {cid} of {job} at {t:.3f} "
                                f"without leadership")
            other = by_id.get((job, cid))
            if other is not None and other != name:
                problems.append(f"checkpoint {cid} of {job} completed by {other} and {name}")
            by_id[(job, cid)] = name
            prev = last.get(job)
            if prev is not None and prev[1] != name and prev[0] > cid:
                problems.append(f"{name} completed checkpoint {cid} of {job} at {t:.3f} after "
                                f"{prev[1]} completed checkpoint {prev[0]}")
            if prev is None or cid > prev[0]:
                last[job] = (cid, name)
    return problems


def check_output(out, count, keys):
    """check_rolling_counts of the checkpointed job's committed output."""
    expected = [0] * keys
    for v in range(count):
        expected[v % keys] += 1
    want = {k: n for k, n in enumerate(expected) if n > 0}
    return exactly_once.check_rolling_counts(
        exactly_once.read_committed(out, exactly_once.parse_pair), want)
