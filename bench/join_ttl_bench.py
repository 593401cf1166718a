#!/usr/bin/env python3
"""join_ttl_bench: the state of a regular join bounded by its TTL
(table.exec.state.ttl). A JobManager and a TaskManager (4 slots) run two
SQL jobs at once over the same unbounded Nexmark events, paced at a fixed
rate: the bids joined with their auctions (q20's join), one job with a TTL
of 10 s, the other (the baseline, in the same run) with none. Both
checkpoint every 5 s; every sample (each 5 s) reads the state size of each
job's latest completed checkpoint over REST. With the TTL the size levels
off once the first rows are 10 s old; without it, it grows with every
event.

    bench/join_ttl_bench.py [BUILD]     (default: build/)

JOIN_TTL_BENCH_SECONDS (600: ten minutes), JOIN_TTL_BENCH_RATE (events a
second, 20000). Last line: a JSON object with the samples and, for each
job, the ratio of its state in the last fifth of the run to that at its
first fifth's end (flat: about 1)."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
SPATE = os.path.join(BUILD, "bin", "spate")
SECONDS = int(os.environ.get("JOIN_TTL_BENCH_SECONDS", "600"))
RATE = int(os.environ.get("JOIN_TTL_BENCH_RATE", "20000"))


def wait_log(path, pattern, timeout=30):
    deadline = time.monotonic() + timeout
    rx = re.compile(pattern)
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            m = rx.search(f.read())
        if m:
            return m
        time.sleep(0.05)
    sys.exit(f"join_ttl_bench: no '{pattern}' in {path} after {timeout} s")


def script(ttl):
    tables = ""
    for name, cols in (("bid", "auction BIGINT, price BIGINT, extra VARCHAR"),
                       ("auction", "id BIGINT, category BIGINT, extra VARCHAR")):
        tables += (f"CREATE TABLE {name} ({cols}) WITH (connector = 'nexmark', "
                   f"\"events.num\" = '0', \"first-event.rate\" = '{RATE}');\n")
    return ("SET 'parallelism.default' = '1';\n"
            "SET 'execution.checkpointing.interval' = '5 s';\n"
            f"SET 'table.exec.state.ttl' = '{ttl}';\n" + tables +
            "CREATE TABLE out (auction BIGINT, price BIGINT, category BIGINT) WITH "
            "(connector = 'blackhole');\n"
            "INSERT INTO out SELECT B.auction, B.price, A.category FROM bid AS B "
            "JOIN auction AS A ON B.auction = A.id;\n")


def main():
    tmp = tempfile.mkdtemp(prefix="spate-join-ttl-bench-")
    procs = []

    def start(args, name):
        log = os.path.join(tmp, name)
        with open(log, "w") as out:
            p = subprocess.Popen([SPATE, *args], stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        procs.append(p)
        return p, log

    def rest(path):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return json.loads(resp.read())

    try:
        jm, jm_log = start(["-D", "jobmanager.rpc.port=0", "-D", "rest.port=0", "jobmanager"],
                           "jobmanager.log")
        m = wait_log(jm_log, r"rpc at 127\.0\.0\.1:(\d+), REST at http://[\d.]+:(\d+)")
        rpc, port = m.group(1), m.group(2)
        start(["-D", f"jobmanager.rpc.port={rpc}", "-D", "taskmanager.numberOfTaskSlots=4",
               "taskmanager"], "taskmanager.log")
        wait_log(jm_log, r"cluster now has 1 TaskManagers")
        jobs = {}
        for name, ttl in (("ttl_10s", "10 s"), ("no_ttl", "0 ms")):
            r = subprocess.run([SPATE, "sql", "-m", f"127.0.0.1:{port}"], input=script(ttl),
                               capture_output=True, text=True, timeout=60)
            m = re.search(r"JobID ([0-9a-f]{32})", r.stdout)
            if r.returncode != 0 or m is None:
                sys.exit(f"join_ttl_bench: the {name} job did not start: {r.stderr}{r.stdout}")
            jobs[name] = m.group(1)
        samples, t0 = [], time.monotonic()
        while time.monotonic() - t0 < SECONDS:
            time.sleep(5)
            sample = {"t_s": round(time.monotonic() - t0, 1)}
            for name, jid in jobs.items():
                latest = rest(f"/jobs/{jid}/checkpoints").get("latest", {}).get("completed")
                sample[name] = latest.get("state_size") if latest else None
                if rest(f"/jobs/{jid}")["state"] != "RUNNING":
                    sys.exit(f"join_ttl_bench: the {name} job is no longer running")
            samples.append(sample)
            print(f"join_ttl_bench: {sample['t_s']:.0f} s: state with a 10 s TTL "
                  f"{sample['ttl_10s']} B, without {sample['no_ttl']} B", file=sys.stderr)
        fifth = max(1, len(samples) // 5)

        def growth(name):
            early = next((s[name] for s in samples[fifth - 1::-1] if s[name]), None)
            late = [s[name] for s in samples[-fifth:] if s[name]]
            return max(late) / early if early and late else None
        print(json.dumps({"bench": "join_ttl_bench", "seconds": SECONDS, "rate": RATE,
                          "ttl_s": 10, "ttl_growth": growth("ttl_10s"),
                          "no_ttl_growth": growth("no_ttl"), "samples": samples}))
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
