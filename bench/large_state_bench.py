#!/usr/bin/env python3
"""large_state_bench: keyed state larger than memory in RocksDB, on a
cluster of spate processes (a JobManager, a TaskManager of one slot with
state.backend.type: rocksdb, UNIVERSAL compaction, and
taskmanager.memory.managed.size of LARGE_STATE_MANAGED), running
build/bench/large_state_job.so at parallelism 1: a load that writes each
of K keys once (a V-byte ValueState that does not compress), then changes
at about 1 % of the keys per second. Incremental checkpoints every second,
set by the job itself (execution.checkpointing.incremental).

Runs, in this order:
  1. throughput: the incremental run's job without checkpoints and with
     them, LARGE_STATE_PAIRS pairs interleaved, its changes (K x
     LARGE_STATE_TP_CHANGES of them) at the job's full rate: the changes'
     records/s on the loaded state, change_records_per_s_{none,checkpoints}
     and throughput_overhead_pct (of the medians) -- the issue's "overhead
     against the same job without checkpoints": at 4 GB, 1 % of the keys a
     second is about the most this machine runs, and the load writes every
     key new at its full rate, 100 % of the state in K / rate seconds; the
     load's own load_records_per_s_{none,checkpoints} and
     load_overhead_pct beside it. Each phase timed by the job itself
     (load_ns, changes_ns: its first record to its last, without the job's
     start and end). With checkpoints, the keyed task's synchronous part of
     each (REST's checkpoint_duration.sync: the task waits for RocksDB's
     flush): tp_sync_ms_p50, tp_sync_ms_max, and tp_sync_share_pct, their
     sum over the two phases' time (median of the runs)
  2. incremental: LARGE_STATE_INC_GB of state, then LARGE_STATE_CHANGE_S
     seconds of changes at 1 %/s: bytes each checkpoint added to checkpoint
     storage (its folder and the shared SST files new since the last one,
     read off the disk as checkpoints complete, each logged with its new
     shared files), the data changed per checkpoint (the changes the job
     ran over the measured checkpoints, read off the Update vertex's
     records, x (8 + V)), their ratio (p50, mean, max; every checkpoint after the
     load in inc_checkpoints_after_load); checkpoint durations p50/p99
     (REST statistics); then, once three checkpoints of the changes
     completed and half their time passed, a kill -9 of the
     TaskManager, a new one started: recovery_ms, kill to every task
     RUNNING with the restore counted; the job's checksum checked at its end
  3. large: LARGE_STATE_GB of state, the TaskManager's RSS sampled every
     200 ms over the load and the changes (rss_max_mb, rss_p50_mb), a kill
     -9 after a checkpoint of all of it, recovery_ms and the checksum checked

Every run's checksum (the sum over records of the key's count then, which a
record lost or counted twice changes) is compared with the same sequence
computed here: after a restore, with the suffix of the sequence from the
restored checkpoint's position (the accumulator is the last attempt's). Stderr says what it does; the last line is a JSON object.

    bench/large_state_bench.py [BUILD]     (default: build/)

Knobs: LARGE_STATE_GB (8), LARGE_STATE_INC_GB (4), LARGE_STATE_VALUE_BYTES
(1024), LARGE_STATE_MANAGED (512m), LARGE_STATE_CHANGE_S (30),
LARGE_STATE_PAIRS (1), LARGE_STATE_TP_CHANGES (1: changes per key in the
throughput runs). On a small machine, run the largest sizes its disk
and time allow and say so: the JSON names the sizes it ran."""

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
SPATE = os.path.join(BUILD, "bin", "spate")
JOB = os.path.join(BUILD, "bench", "large_state_job.so")
GB = float(os.environ.get("LARGE_STATE_GB", "8"))
INC_GB = float(os.environ.get("LARGE_STATE_INC_GB", "4"))
V = int(os.environ.get("LARGE_STATE_VALUE_BYTES", "1024"))
MANAGED = os.environ.get("LARGE_STATE_MANAGED", "512m")
CHANGE_S = float(os.environ.get("LARGE_STATE_CHANGE_S", "30"))
PAIRS = int(os.environ.get("LARGE_STATE_PAIRS", "1"))
TP_CHANGES = float(os.environ.get("LARGE_STATE_TP_CHANGES", "1"))
ENTRY = 8 + V  # a key's bytes and its value's
M64 = (1 << 64) - 1


def log(msg):
    print(f"large_state_bench: {msg}", file=sys.stderr, flush=True)


def mix64(z):
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & M64
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def h(seed, j):
    """bench_data.h's bench_h."""
    return mix64((seed * 0xD1B54A32D192ED03 + (j + 1) * 0x9E3779B97F4A7C15) & M64)


def replayed_from(keys, changes, checksum):
    """The job's checksum adds each record's count of its key then. The
    accumulator is the last attempt's: after a restore, it holds the
    records from the restored checkpoint's position j0 on, counted over
    the restored state. Returns the j0 whose suffix of the sequence sums to
    checksum (0: a run without restore), or None: no suffix does, a record
    was lost or counted twice (each record adds at least 1, so the sums
    strictly decrease with j0)."""
    seen, adds = {}, []
    for j in range(keys, keys + changes):
        k = h(5, j) % keys
        seen[k] = seen.get(k, 1) + 1
        adds.append(seen[k])
    tail = sum(adds)
    if checksum >= tail:
        j0 = keys - (checksum - tail)
        return j0 if 0 <= j0 <= keys else None
    for i, a in enumerate(adds):
        tail -= a
        if tail == checksum:
            return keys + i + 1
        if tail < checksum:
            return None
    return None


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"VmRSS:\s+(\d+) kB", f.read())
        return int(m.group(1)) / 1024 if m else None
    except OSError:
        return None


def tree_bytes(path):
    total = 0
    for d, _, files in os.walk(path):
        for n in files:
            try:
                total += os.path.getsize(os.path.join(d, n))
            except OSError:
                pass
    return total


class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.n = 0
        self.ckdir = os.path.join(tmp, "checkpoints")
        jm, jm_log = self.start(["-D", "jobmanager.rpc.port=0", "-D", "rest.port=0",
                                 "-D", f"state.checkpoints.dir={self.ckdir}",
                                 "-D", "restart-strategy.type=fixed-delay",
                                 "-D", "restart-strategy.fixed-delay.attempts=100",
                                 "-D", "restart-strategy.fixed-delay.delay=100 ms",
                                 # every checkpoint's duration (REST keeps 10)
                                 "-D", "web.checkpoints.history=100000",
                                 "jobmanager"], "jobmanager")
        m = self.wait_log(jm_log, r"rpc at 127\.0\.0\.1:(\d+), REST at http://[\d.]+:(\d+)")
        self.rpc, self.rest_port = m.group(1), m.group(2)
        self.tm = None

    def start(self, args, name):
        self.n += 1
        path = os.path.join(self.tmp, f"{name}-{self.n}.log")
        with open(path, "w") as out:
            p = subprocess.Popen([SPATE, *args], stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        self.procs.append(p)
        return p, path

    def wait_log(self, path, pattern, timeout=60):
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            with open(path, errors="replace") as f:
                m = rx.search(f.read())
            if m:
                return m
            time.sleep(0.05)
        sys.exit(f"large_state_bench: no '{pattern}' in {path} after {timeout} s")

    def start_tm(self):
        self.tm, path = self.start(["-D", f"jobmanager.rpc.port={self.rpc}",
                                    "-D", "taskmanager.numberOfTaskSlots=1",
                                    "-D", "state.backend.type=rocksdb",
                                    "-D", f"state.backend.rocksdb.localdir={self.tmp}/rocksdb",
                                    "-D", "state.backend.rocksdb.compaction.style=UNIVERSAL",
                                    "-D", f"taskmanager.memory.managed.size={MANAGED}",
                                    "taskmanager"], "taskmanager")
        self.wait_log(path, r"TaskExecutor \S+ started at")
        self.wait(lambda: self.rest("/overview").get("slots-available") == 1, 60,
                  "the TaskManager's slot")
        return self.tm

    def rest(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}{path}", timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def wait(self, cond, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = cond()
            if v:
                return v
            time.sleep(0.1)
        sys.exit(f"large_state_bench: no {what} after {timeout} s")

    def submit(self, keys, changes, rate, checkpoints):
        conf = []
        if checkpoints:
            conf = ["-D", "execution.checkpointing.interval=1 s",
                    "-D", "execution.checkpointing.incremental=true"]
        r = subprocess.run([SPATE, *conf, "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOB,
                            "--keys", str(keys), "--value-bytes", str(V), "--changes",
                            str(changes), "--change-rate", str(rate)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit(f"large_state_bench: the job did not start: {r.stderr}")
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def job(self, jid):
        return self.rest(f"/jobs/{jid}")

    def finished(self, jid, timeout):
        def done():
            j = self.job(jid)
            if j["state"] in ("FAILED", "CANCELED"):
                sys.exit(f"large_state_bench: job {jid} {j['state']}: {j.get('failure')}")
            return j if j["state"] == "FINISHED" else None
        return self.wait(done, timeout, f"end of job {jid}")

    def accumulator(self, jid, name):
        for a in self.rest(f"/jobs/{jid}/accumulators")["user-task-accumulators"]:
            if a["name"] == name:
                return int(a["value"])
        return None

    def checksum(self, jid):
        return self.accumulator(jid, "checksum")

    def updated(self, jid):
        """Records the keyed Update vertex has read (its TaskManager's
        metrics, as of the last report)."""
        for v in self.job(jid).get("vertices", []):
            if v["name"].startswith("Update"):
                d = self.rest(f"/jobs/{jid}/vertices/{v['id']}")
                return sum(s["metrics"]["read-records"] for s in d.get("subtasks", []))
        return 0

    def running(self, jid):
        j = self.job(jid)
        t = j.get("tasks", {})
        return j["state"] == "RUNNING" and t.get("running") == t.get("total")

    def running_or_exit(self, jid):
        if self.job(jid)["state"] in ("FINISHED", "FAILED", "CANCELED"):
            sys.exit(f"large_state_bench: job {jid} ended before the kill -9: "
                     "more LARGE_STATE_CHANGE_S")
        return True

    def kill_and_recover(self, jid):
        """kill -9 of the TaskManager, a new one: ms to every task running
        again with the restore counted."""
        restored = self.rest(f"/jobs/{jid}/checkpoints")["counts"]["restored"]
        t0 = time.monotonic()
        self.tm.send_signal(signal.SIGKILL)
        self.tm.wait()
        self.start_tm_no_wait()
        self.wait(lambda: self.rest(f"/jobs/{jid}/checkpoints")["counts"]["restored"] > restored
                  and self.running(jid), 1800, f"job {jid} restored")
        return (time.monotonic() - t0) * 1000

    def start_tm_no_wait(self):
        self.tm, _ = self.start(["-D", f"jobmanager.rpc.port={self.rpc}",
                                 "-D", "taskmanager.numberOfTaskSlots=1",
                                 "-D", "state.backend.type=rocksdb",
                                 "-D", f"state.backend.rocksdb.localdir={self.tmp}/rocksdb",
                                 "-D", "state.backend.rocksdb.compaction.style=UNIVERSAL",
                                 "-D", f"taskmanager.memory.managed.size={MANAGED}",
                                 "taskmanager"], "taskmanager")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Sampler(threading.Thread):
    """The TaskManager's RSS every 200 ms, and the bytes each completed
    checkpoint of jid added to checkpoint storage."""

    def __init__(self, cluster, jid):
        super().__init__(daemon=True)
        self.c, self.jid = cluster, jid
        self.rss = []
        self.per_checkpoint = []  # (id, bytes, time, records read by then)
        self.seen = set()
        self.counted = {}  # shared file -> bytes counted
        self.stop_flag = False

    def run(self):
        job_dir = os.path.join(self.c.ckdir, self.jid)
        shared = os.path.join(job_dir, "shared")
        while not self.stop_flag:
            r = rss_mb(self.c.tm.pid)
            if r is not None:
                self.rss.append(r)
            try:
                names = os.listdir(job_dir)
            except OSError:
                names = []
            for n in names:
                m = re.fullmatch(r"chk-(\d+)", n)
                if not m or n in self.seen:
                    continue
                d = os.path.join(job_dir, n)
                if not os.path.exists(os.path.join(d, "_metadata")):
                    continue
                self.seen.add(n)
                added = tree_bytes(d)
                new = []
                try:
                    for f in os.listdir(shared):
                        try:
                            size = os.path.getsize(os.path.join(shared, f))
                        except OSError:
                            continue
                        if size > self.counted.get(f, 0):
                            new.append(f"{f.split('-')[-1]} {size / 1e6:.1f}")
                        added += max(0, size - self.counted.get(f, 0))
                        self.counted[f] = size
                except OSError:
                    pass
                log(f"{n}: {added / 1e6:.1f} MB; new shared files (MB): {', '.join(new)}")
                self.per_checkpoint.append((int(m.group(1)), added, time.monotonic(),
                                            self.c.updated(self.jid)))
            time.sleep(0.2)


def sync_parts(c, jid):
    """The keyed Update task's synchronous part of each completed
    checkpoint of jid (ms, REST's checkpoint_duration.sync): the task
    thread's wait, RocksDB's memtable flush above all."""
    vid = next(v["id"] for v in c.job(jid)["vertices"] if v["name"].startswith("Update"))
    out = []
    for h in c.rest(f"/jobs/{jid}/checkpoints").get("history", []):
        if h.get("status") == "COMPLETED":
            d = c.rest(f"/jobs/{jid}/checkpoints/details/{h['id']}/subtasks/{vid}")
            out += [s["checkpoint"]["sync"] for s in d["subtasks"] if s["status"] == "completed"]
    return out


def durations(c, jid):
    hist = c.rest(f"/jobs/{jid}/checkpoints").get("history", [])
    return [h["end_to_end_duration"] for h in hist if h.get("status") == "COMPLETED"]


def keys_for(gb):
    return max(1000, int(gb * (1 << 30) / ENTRY))


def main():
    tmp = tempfile.mkdtemp(prefix="spate-large-state-bench-")
    out = {"bench": "large_state_bench", "value_bytes": V, "managed_memory": MANAGED,
           "compaction": "UNIVERSAL", "checkpoint_interval_ms": 1000}
    c = None
    try:
        c = Cluster(tmp)
        c.start_tm()
        # 1. throughput: the job without checkpoints and with them, its
        # changes at full rate after its load.
        inc_keys = keys_for(INC_GB)
        tp_changes = max(1, int(inc_keys * TP_CHANGES))
        rates = {False: {"load": [], "change": []}, True: {"load": [], "change": []}}
        sync_ms, sync_share = [], []
        for pair in range(PAIRS):
            for with_ckpt in ((False, True) if pair % 2 == 0 else (True, False)):
                jid = c.submit(inc_keys, tp_changes, 0, with_ckpt)
                c.finished(jid, 7200)
                load_ns = c.accumulator(jid, "load_ns")
                changes_ns = c.accumulator(jid, "changes_ns")
                if not load_ns or not changes_ns:
                    sys.exit(f"large_state_bench: job {jid} timed no phase: "
                             f"load_ns {load_ns}, changes_ns {changes_ns}")
                r = rates[with_ckpt]
                r["load"].append(inc_keys / (load_ns / 1e9))
                r["change"].append(tp_changes / (changes_ns / 1e9))
                n = c.rest(f"/jobs/{jid}/checkpoints")["counts"]["completed"]
                sync = sync_parts(c, jid) if with_ckpt else []
                sync_ms += sync
                if with_ckpt:
                    sync_share.append(100 * sum(sync) / ((load_ns + changes_ns) / 1e6))
                log(f"{inc_keys} keys ({INC_GB} GB), checkpoints "
                    f"{'every second' if with_ckpt else 'none'}: load "
                    f"{r['load'][-1]:.0f} records/s, {tp_changes} changes "
                    f"{r['change'][-1]:.0f} records/s, {n} checkpoints"
                    + (f", the task's synchronous parts {sum(sync)} ms ({sync_share[-1]:.1f} %"
                       f" of the job's phases), each {sorted(sync)} ms" if with_ckpt else ""))
                if replayed_from(inc_keys, tp_changes, c.checksum(jid)) != 0:
                    sys.exit(f"large_state_bench: checksum {c.checksum(jid)} of {jid} is not "
                             "its records'")
        if PAIRS > 0:
            for phase in ("load", "change"):
                none = statistics.median(rates[False][phase])
                ckpt = statistics.median(rates[True][phase])
                out[f"{phase}_records_per_s_none"] = none
                out[f"{phase}_records_per_s_checkpoints"] = ckpt
                out[f"{phase}_overhead_pct"] = 100 * (1 - ckpt / none)
            out["tp_changes"] = tp_changes
            if sync_ms:
                out["tp_sync_ms_p50"] = statistics.median(sync_ms)
                out["tp_sync_ms_max"] = max(sync_ms)
                out["tp_sync_share_pct"] = statistics.median(sync_share)
            out["throughput_overhead_pct"] = out.pop("change_overhead_pct")

        # 2. incremental checkpoints on INC_GB with 1 % of the keys per second.
        rate = inc_keys / 100
        changes = int(rate * CHANGE_S)
        jid = c.submit(inc_keys, changes, rate, True)
        s = Sampler(c, jid)
        s.start()
        # The changes begin once the load is done: its records all counted.
        load_done = c.wait(lambda: c.updated(jid) >= inc_keys and time.monotonic(),
                           7200, "the incremental run's load")
        log(f"incremental run: {inc_keys} keys loaded; {rate:.0f} changes/s for {CHANGE_S} s")
        # The kill once checkpoints of the changes completed: a checkpoint
        # of the load can take longer than the changes' first half.
        c.wait(lambda: c.running_or_exit(jid) and
               sum(1 for (_, _, t, _) in s.per_checkpoint if t > load_done + 2) >= 3 and
               time.monotonic() - load_done > CHANGE_S / 2, 3600,
               "three checkpoints of the changes and half of them")
        n_before = len(s.per_checkpoint)
        recovery = c.kill_and_recover(jid)
        log(f"incremental run: recovered {recovery:.0f} ms after kill -9")
        c.finished(jid, 7200)
        s.stop_flag = True
        s.join()
        j0 = replayed_from(inc_keys, changes, c.checksum(jid))
        # Checkpoints of the changes: after the load's, before the kill.
        measured = [(b, t, r) for (i, b, t, r) in s.per_checkpoint[:n_before]
                    if t > load_done + 2]
        steady = [b for (b, t, r) in measured]
        # The data changed per checkpoint as the job ran it (it may fall
        # behind the rate): the records read from the checkpoint before
        # the first measured one to the last, over the checkpoints.
        before = [r for (i, b, t, r) in s.per_checkpoint[:n_before] if t <= load_done + 2]
        changed, rate_measured = rate * ENTRY, None
        if measured and before:
            t_first = max(t for (i, b, t, r) in s.per_checkpoint[:n_before]
                          if t <= load_done + 2)
            done = measured[-1][2] - max(before[-1], inc_keys)  # changes only
            changed = done * ENTRY / len(measured)
            rate_measured = done / (measured[-1][1] - max(t_first, load_done))
        d = durations(c, jid)
        out.update({
            "inc_state_gb": INC_GB, "inc_keys": inc_keys, "changes_per_s": rate,
            "changes_per_s_measured": rate_measured,
            "changed_bytes_per_checkpoint": changed,
            "inc_checkpoints_measured": len(steady),
            "inc_bytes_per_checkpoint_p50": statistics.median(steady) if steady else None,
            "inc_bytes_per_checkpoint_mean": statistics.mean(steady) if steady else None,
            "inc_bytes_per_checkpoint_max": max(steady) if steady else None,
            "inc_over_changed_p50": statistics.median(steady) / changed if steady else None,
            "inc_over_changed_mean": statistics.mean(steady) / changed if steady else None,
            "checkpoint_ms_p50": statistics.median(d) if d else None,
            "checkpoint_ms_p99": sorted(d)[min(len(d) - 1, int(len(d) * 0.99))] if d else None,
            "inc_checkpoints_after_load": [[i, b] for (i, b, t, r) in s.per_checkpoint[:n_before]
                                           if t > load_done],
            "inc_recovery_ms": recovery, "inc_exactly_once": j0 is not None,
            "inc_restored_at_record": j0})
        log(f"incremental run: {json.dumps(out)}")

        # 3. large: the RSS over a load of GB, a kill -9, recovery.
        keys = keys_for(GB)
        rate = keys / 100
        changes = int(rate * max(CHANGE_S, 20))
        jid = c.submit(keys, changes, rate, True)
        s = Sampler(c, jid)
        s.start()
        t0 = time.monotonic()
        load_done = c.wait(lambda: c.updated(jid) >= keys and time.monotonic(),
                           4 * 3600, "the large run's load")
        done = len(s.seen)
        c.wait(lambda: c.running_or_exit(jid) and len(s.seen) > done, 3600,
               "a checkpoint after the large load")
        rss_run = list(s.rss)
        recovery = c.kill_and_recover(jid)
        c.finished(jid, 7200)
        s.stop_flag = True
        s.join()
        j0 = replayed_from(keys, changes, c.checksum(jid))
        out.update({
            "state_gb": GB, "keys": keys, "load_s": load_done - t0,
            "rss_max_mb": max(rss_run), "rss_p50_mb": statistics.median(rss_run),
            "rss_max_mb_with_restore": max(s.rss),
            "recovery_ms": recovery, "exactly_once": j0 is not None,
            "restored_at_record": j0})
        print(json.dumps(out))
    finally:
        if c is not None:
            c.stop()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
