#!/usr/bin/env python3
"""prometheus_bench: what a Prometheus scrape costs a TaskManager. A
JobManager and a TaskManager (4 slots, the Prometheus reporter on) run
metricsjob's event-time job at parallelism 4 at a low rate; rounds
alternate 5 s without scrapes (the baseline: the process's own CPU) and 5 s
of back-to-back scrapes, and the CPU the TaskManager spent beyond its
baseline, per scrape, is the figure. Scraped once a second, as Prometheus
does, the reporter costs that much CPU time per second.

    bench/prometheus_bench.py [BUILD]     (default: build/)

Last line: a JSON object. On a shared machine window_bench's throughput
spreads by far more than this cost; this measures the cost itself."""

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
SPATE = os.path.join(BUILD, "bin", "spate")
JOB = os.path.join(BUILD, "tests", "jobs", "metricsjob.so")
ROUNDS = int(os.environ.get("PROMETHEUS_BENCH_ROUNDS", "5"))


def wait_log(path, pattern, timeout=30):
    deadline = time.monotonic() + timeout
    rx = re.compile(pattern)
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            m = rx.search(f.read())
        if m:
            return m
        time.sleep(0.05)
    sys.exit(f"prometheus_bench: no '{pattern}' in {path} after {timeout} s")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    tmp = tempfile.mkdtemp(prefix="spate-prometheus-bench-")
    procs = []

    def start(args, name):
        log = os.path.join(tmp, name)
        with open(log, "w") as out:
            p = subprocess.Popen([SPATE, *args], stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        procs.append(p)
        return p, log

    try:
        jm, jm_log = start(["-D", "jobmanager.rpc.port=0", "-D", "rest.port=0", "jobmanager"],
                           "jobmanager.log")
        m = wait_log(jm_log, r"rpc at 127\.0\.0\.1:(\d+), REST at http://[\d.]+:(\d+)")
        rpc, rest = m.group(1), m.group(2)
        tm, tm_log = start(["-D", f"jobmanager.rpc.port={rpc}",
                            "-D", "taskmanager.numberOfTaskSlots=4",
                            "-D", "metrics.reporter.prom.factory.class=prometheus",
                            "-D", "metrics.reporter.prom.port=0", "taskmanager"],
                           "taskmanager.log")
        port = int(wait_log(tm_log, r"serving http://127\.0\.0\.1:(\d+)/metrics").group(1))
        wait_log(jm_log, r"cluster now has 1 TaskManagers")
        r = subprocess.run([SPATE, "run", "-m", f"127.0.0.1:{rest}", "-d", "-p", "4", JOB,
                            "eventtime", "200"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            sys.exit(f"prometheus_bench: the job did not start: {r.stderr}")
        url = f"http://127.0.0.1:{port}/metrics"

        def scrape():
            with urllib.request.urlopen(url, timeout=10) as resp:
                return resp.read()
        # Every task registered: the series of 4 subtasks of 2 chains.
        deadline = time.monotonic() + 30
        while scrape().count(b"flink_taskmanager_job_task_numRecordsIn{") < 8:
            if time.monotonic() > deadline:
                sys.exit("prometheus_bench: the tasks' metrics did not appear")
            time.sleep(0.1)
        body = scrape()
        series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
        rounds = []
        for i in range(ROUNDS):
            c0, t0 = cpu_seconds(tm.pid), time.monotonic()
            time.sleep(5)
            idle = (cpu_seconds(tm.pid) - c0) / (time.monotonic() - t0)
            n, c0, t0 = 0, cpu_seconds(tm.pid), time.monotonic()
            while time.monotonic() - t0 < 5:
                scrape()
                n += 1
            wall = time.monotonic() - t0
            busy = cpu_seconds(tm.pid) - c0
            per = (busy - idle * wall) / n
            rounds.append({"baseline_cpu_ms_per_s": idle * 1000, "scrapes": n,
                           "cpu_us_per_scrape": per * 1e6})
            print(f"prometheus_bench: round {i + 1}: baseline {idle * 1000:.1f} ms/s, "
                  f"{n} scrapes, {per * 1e6:.0f} us of CPU each", file=sys.stderr)
        per = statistics.median(r["cpu_us_per_scrape"] for r in rounds)
        print(json.dumps({"bench": "prometheus_bench", "series": series,
                          "bytes_per_scrape": len(body), "cpu_us_per_scrape": per,
                          "cpu_share_scraped_every_second": per / 1e6,
                          "baseline_cpu_ms_per_s": statistics.median(
                              r["baseline_cpu_ms_per_s"] for r in rounds),
                          "rounds": rounds}))
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
