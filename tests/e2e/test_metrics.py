"""Metrics over REST end to end (issue 8): a JobManager and TaskManagers as
real processes run job libraries (submitted with `spate run -d` over REST);
the REST API serves the tasks' metrics, back pressure and watermarks with
Flink's paths and JSON."""

import os
import re
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from spatetest import BUILD  # noqa: E402

JOB = os.path.join(BUILD, "tests", "jobs", "metricsjob.so")
MIN_WATERMARK = str(-2**63)


class MetricsTest(ClusterTestCase):
    def start_cluster(self, taskmanagers=2, slots=2):
        self.start_jobmanager("-D", "metrics.fetcher.update-interval=200 ms")
        for _ in range(taskmanagers):
            self.start_taskmanager(slots=slots)
        self.wait_overview(taskmanagers, slots=taskmanagers * slots)

    def submit(self, *args):
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOB, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def get(self, path):
        status, body = self.rest(path)
        self.assertEqual(status, 200, (path, body))
        return body

    def running_vertices(self, jid):
        """Waits until every task of the job runs; its vertices by name."""
        def running():
            job = self.job(jid)
            return job if job["tasks"]["running"] == job["tasks"]["total"] else None
        job = wait_for(running, 30, f"every task of job {jid} running")
        return {v["name"]: v for v in job["vertices"]}

    def metric(self, path, name):
        """The value of metric name at path (a metric handler), or None."""
        for m in self.get(f"{path}?get={name}"):
            if m["id"] == name:
                return m["value"]
        return None

    def start_usermetrics(self, *tm_args):
        """A JobManager, a TaskManager with a Prometheus reporter (and
        tm_args) and the usermetrics job running: the reporter's port, the
        job's id, the ids of its Measure and Counts vertices."""
        self.start_jobmanager("-D", "metrics.fetcher.update-interval=200 ms")
        tm = self.start_taskmanager("-D", "metrics.reporter.prom.factory.class=prometheus",
                                    "-D", "metrics.reporter.prom.port=0", *tm_args, slots=2)
        self.wait_overview(1, slots=2)
        prom = int(tm.wait_log(r"Prometheus reporter serving http://127\.0\.0\.1:(\d+)/metrics")
                   .group(1))
        jid = self.submit("usermetrics")
        vs = self.running_vertices(jid)
        head = next(v["id"] for n, v in vs.items() if "Measure" in n)
        window = next(v["id"] for n, v in vs.items() if n.startswith("Counts"))
        return prom, jid, head, window

    def test_backpressure_busy_time_and_watermarks_of_running_jobs(self):
        self.start_cluster()
        bp = self.submit("backpressure", "1000")  # the sink sleeps 1 ms per record
        et = self.submit("eventtime", "2000")
        bpv = self.running_vertices(bp)
        source, sink = bpv["Numbers"]["id"], bpv["Sink: Slow Sink"]["id"]
        etv = self.running_vertices(et)
        readings = next(v["id"] for n, v in etv.items() if n.startswith("Readings"))
        counts = next(v["id"] for n, v in etv.items() if n.startswith("Counts"))

        # The source waits for buffers the slow sink frees: back pressure,
        # as Flink >= 1.13 derives it from backPressuredTimeMsPerSecond.
        def high():
            b = self.get(f"/jobs/{bp}/vertices/{source}/backpressure")
            return b if b.get("backpressureLevel") == "high" else None
        b = wait_for(high, 30, "the source's back pressure to be high")
        self.assertEqual(b["status"], "ok")
        self.assertGreater(b["end-timestamp"], 0)
        self.assertEqual(len(b["subtasks"]), 1)
        st = b["subtasks"][0]
        self.assertEqual((st["subtask"], st["backpressureLevel"]), (0, "high"))
        self.assertGreater(st["ratio"], 0.5)
        self.assertLessEqual(st["ratio"] + st["idleRatio"] + st["busyRatio"], 1.0 + 1e-9)
        self.assertGreater(
            float(self.metric(f"/jobs/{bp}/vertices/{source}/metrics",
                              "0.backPressuredTimeMsPerSecond")), 500)
        # The sink itself is busy, not back-pressured.
        agg = self.get(f"/jobs/{bp}/vertices/{sink}/subtasks/metrics"
                       "?get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond")
        by_id = {m["id"]: m for m in agg}
        self.assertGreater(by_id["busyTimeMsPerSecond"]["max"], 500)
        self.assertLess(by_id["backPressuredTimeMsPerSecond"]["max"], 100)
        self.assertEqual(self.get(f"/jobs/{bp}/vertices/{sink}/backpressure")
                         ["backpressureLevel"], "ok")
        # A rate-limited source has room: not back-pressured.
        self.assertEqual(self.get(f"/jobs/{et}/vertices/{readings}/backpressure")
                         ["backpressureLevel"], "ok")

        # Watermarks advance at the window's input, in Flink's form.
        def watermark():
            w = self.get(f"/jobs/{et}/vertices/{counts}/watermarks")
            if len(w) == 1 and w[0]["value"] != MIN_WATERMARK:
                self.assertEqual(w[0]["id"], "0.currentInputWatermark")
                return int(w[0]["value"])
            return None
        first = wait_for(watermark, 30, "a watermark at the window")
        later = wait_for(lambda: (w := watermark()) is not None and w > first and w, 30,
                         "the watermark to advance")
        self.assertGreater(later, first)
        # A source has no input: no input watermark (Flink's answer is []),
        # but what it emits is its output watermark.
        self.assertEqual(self.get(f"/jobs/{et}/vertices/{readings}/watermarks"), [])
        out = int(self.metric(f"/jobs/{et}/vertices/{readings}/metrics",
                              "0.currentOutputWatermark"))
        self.assertGreaterEqual(out, first)

    def test_metric_handlers_list_get_aggregate_and_refuse_bad_input(self):
        self.start_cluster(taskmanagers=1, slots=2)
        jid = self.submit("eventtime", "1000")
        vs = self.running_vertices(jid)
        src = next(v["id"] for n, v in vs.items() if n.startswith("Readings"))
        base = f"/jobs/{jid}/vertices/{src}"
        # Without get: the available metrics, Flink's bare [{"id": ...}].
        names = wait_for(lambda: [m["id"] for m in self.get(f"{base}/metrics")], 20,
                         "the source's metrics")
        for n in ("0.numRecordsOut", "0.numRecordsOutPerSecond", "0.busyTimeMsPerSecond",
                  "0.idleTimeMsPerSecond", "0.backPressuredTimeMsPerSecond",
                  "0.accumulatedBusyTimeMs", "0.buffers.outPoolUsage",
                  "0.currentOutputWatermark"):
            self.assertIn(n, names)
        self.assertTrue(all("value" not in m for m in self.get(f"{base}/metrics")))
        # With get: values as text; unknown names are left out.
        got = self.get(f"{base}/metrics?get=0.numRecordsOut,nosuch")
        self.assertEqual([m["id"] for m in got], ["0.numRecordsOut"])
        self.assertGreaterEqual(int(got[0]["value"]), 0)
        # One subtask's own metrics, unprefixed.
        sub = self.get(f"{base}/subtasks/0/metrics?get=numRecordsOut")
        self.assertEqual([m["id"] for m in sub], ["numRecordsOut"])
        self.assertEqual(self.get(f"{base}/subtasks/5/metrics"), [])
        # Aggregated over subtasks: all four, or those asked for.
        agg = self.get(f"{base}/subtasks/metrics?get=numRecordsOut")
        self.assertEqual(set(agg[0]), {"id", "min", "max", "avg", "sum"})
        agg = self.get(f"{base}/subtasks/metrics?get=numRecordsOut&agg=MIN,sum&subtasks=0-3")
        self.assertEqual(set(agg[0]), {"id", "min", "sum"})
        listed = [m["id"] for m in self.get(f"{base}/subtasks/metrics")]
        self.assertIn("busyTimeMsPerSecond", listed)
        # The vertex's details: its subtasks with state, TaskManager, I/O.
        d = self.get(base)
        self.assertEqual((d["id"], d["parallelism"], len(d["subtasks"])), (src, 1, 1))
        s = d["subtasks"][0]
        self.assertEqual(s["status"], "RUNNING")
        tms = self.get("/taskmanagers")["taskmanagers"]
        self.assertEqual(s["taskmanager-id"], tms[0]["id"])
        for k in ("read-bytes", "write-records", "write-records-complete",
                  "accumulated-busy-time", "accumulated-idle-time",
                  "accumulated-backpressured-time"):
            self.assertIn(k, s["metrics"])
        self.assertEqual(set(s["status-duration"]),
                         {"CREATED", "SCHEDULED", "INITIALIZING", "DEPLOYING", "RUNNING"})
        # Counts by every ExecutionState of Flink's (RECONCILING, which spate
        # never enters, too), per vertex and for the job.
        flink_states = {"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING",
                        "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING"}
        job = self.job(jid)
        v = next(v for v in job["vertices"] if v["id"] == src)
        self.assertEqual(set(v["tasks"]), flink_states)
        self.assertEqual((v["tasks"]["RUNNING"], v["tasks"]["RECONCILING"]), (1, 0))
        self.assertEqual(set(job["status-counts"]), flink_states)
        self.assertEqual(sum(job["status-counts"].values()), len(job["vertices"]))
        # A timestamp per JobStatus of Flink's; a running job never finished.
        self.assertEqual(set(job["timestamps"]),
                         {"INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED",
                          "CANCELLING", "CANCELED", "FINISHED", "RESTARTING", "SUSPENDED",
                          "RECONCILING"})
        self.assertGreater(job["timestamps"]["RUNNING"], 0)
        self.assertEqual(job["timestamps"]["FINISHED"], 0)
        self.assertIn("p95", d["aggregated"]["metrics"]["write-records"])
        # The JobManager's and a TaskManager's metrics.
        jm = {m["id"]: m["value"] for m in self.get(
            "/jobmanager/metrics?get=numRegisteredTaskManagers,taskSlotsTotal,numRunningJobs")}
        self.assertEqual(jm, {"numRegisteredTaskManagers": "1", "taskSlotsTotal": "2",
                              "numRunningJobs": "1"})
        tm = [m["id"] for m in self.get(f"/v1/taskmanagers/{tms[0]['id']}/metrics")]
        self.assertIn("Status.Shuffle.Netty.AvailableMemorySegments", tm)
        self.assertEqual(self.get("/taskmanagers/0123456789abcdef0123456789abcdef/metrics"), [])
        # Bad input: a clear error each, what and where.
        for path, want, text in (
                (f"{base}/subtasks/metrics?get=numRecordsOut&agg=median", 400, "'median'"),
                (f"{base}/subtasks/metrics?subtasks=1-x", 400, "'1-x'"),
                (f"{base}/subtasks/x/metrics", 400, "'x'"),
                (f"/jobs/{jid}/vertices/not-a-vertex/metrics", 400, "not-a-vertex"),
                (f"/jobs/{jid}/vertices/0123456789abcdef0123456789abcdef", 404, "not found"),
                (f"/jobs/{jid}/vertices/0123456789abcdef0123456789abcdef/watermarks", 404,
                 "not found"),
                (f"{base}/nosuch", 404, "Not found"),
                ("/taskmanagers/not-an-id/metrics", 404, "not-an-id")):
            status, body = self.rest(path)
            self.assertEqual(status, want, path)
            self.assertIn(text, body["errors"][0], path)
        status, body = self.rest(f"{base}/metrics", method="DELETE")
        self.assertEqual(status, 405)
        # A vertex nobody measured: Flink's "deprecated" back pressure.
        self.assertEqual(
            self.get(f"/jobs/{jid}/vertices/0123456789abcdef0123456789abcdef/backpressure"),
            {"status": "deprecated"})

    def test_a_finished_jobs_vertices_keep_their_record_counts(self):
        self.start_cluster(taskmanagers=1, slots=2)
        jid = self.submit("bounded", "5000")
        wait_for(lambda: self.job(jid)["state"] == "FINISHED", 60, "the job to finish")
        vs = {v["name"]: v for v in self.job(jid)["vertices"]}
        source, sink = vs["Numbers"], vs["Sink: Slow Sink"]
        # Exactly the records: the watermark that ends the input is none.
        self.assertEqual(source["metrics"]["write-records"], 5000)
        self.assertEqual(sink["metrics"]["read-records"], 5000)
        self.assertEqual((source["status"], sink["status"]), ("FINISHED", "FINISHED"))
        self.assertGreater(sink["metrics"]["read-bytes"], 0)
        d = self.get(f"/jobs/{jid}/vertices/{sink['id']}")
        s = d["subtasks"][0]
        self.assertEqual(s["status"], "FINISHED")
        self.assertEqual(s["metrics"]["read-records"], 5000)
        self.assertGreaterEqual(s["end-time"], s["start-time"])
        self.assertEqual(s["duration"], s["end-time"] - s["start-time"])

    def test_user_metrics_and_late_records_over_rest_and_prometheus(self):
        """The C API's counter, gauge, meter and histogram (and a group
        inside the operator's) reach REST under Flink's
        "<subtask>.<operator>.<name>" and the TaskManager's Prometheus
        reporter as flink_taskmanager_job_task_operator_<name> with the
        operator's labels; the window counts the records it drops late."""
        prom, jid, head, window = self.start_usermetrics()
        path = f"/jobs/{jid}/vertices/{head}/metrics"

        def value(name, at=path):
            v = self.metric(at, name)
            return float(v) if v is not None else None
        wait_for(lambda: (value("0.Measure.records") or 0) >= 1000, 60,
                 "the map's user counter to reach 1000")
        names = {m["id"] for m in self.get(path)}
        for n in ["0.Measure.records", "0.Measure.lastTimestamp", "0.Measure.recordsRate",
                  "0.Measure.MyGroup.nested"] + [
                      f"0.Measure.valueHistogram_{p}" for p in
                      ("min", "max", "mean", "median", "stddev", "p75", "p90", "p95", "p98",
                       "p99", "p999")]:
            self.assertIn(n, names)
        # The histogram holds the last 100 values of i % 100: 0..99.
        self.assertEqual(value("0.Measure.valueHistogram_min"), 0)
        self.assertEqual(value("0.Measure.valueHistogram_max"), 99)
        self.assertEqual(value("0.Measure.valueHistogram_mean"), 49.5)
        self.assertEqual(value("0.Measure.valueHistogram_median"), 49.5)
        self.assertAlmostEqual(value("0.Measure.valueHistogram_stddev"), 29.011491, places=5)
        self.assertAlmostEqual(value("0.Measure.valueHistogram_p99"), 98.99, places=6)
        # inc(2) and dec(1) per record: the nested counter equals records
        # between records. A dump reads the two while the task runs on (it
        # once read 1302 against 1300), so some dump must show them equal;
        # a nested counter that missed its dec (2x) or its inc (0) never does.
        def nested_equals_records():
            got = {m["id"]: float(m["value"]) for m in
                   self.get(f"{path}?get=0.Measure.records,0.Measure.MyGroup.nested")}
            return got["0.Measure.MyGroup.nested"] == got["0.Measure.records"]
        wait_for(nested_equals_records, 30, "a dump with the nested counter equal to records")
        wait_for(lambda: (value("0.Measure.recordsRate") or 0) > 0, 30, "the meter's rate")
        self.assertGreater(value("0.Measure.lastTimestamp"), 0)
        # One in ten readings is 5 s late: the window drops and counts it.
        wait_for(lambda: (value("0.Counts.numLateRecordsDropped",
                                f"/jobs/{jid}/vertices/{window}/metrics") or 0) > 0, 60,
                 "the window to count late records")

        # The TaskManager's Prometheus reporter: Flink's operator scope.
        _, _, text = http_get(f"http://127.0.0.1:{prom}/metrics")
        op = r'\{[^}]*job_id="' + jid + r'"[^}]*operator_id="[0-9a-f]{32}",operator_name="%s"'
        self.assertIn("# TYPE flink_taskmanager_job_task_operator_records gauge", text)
        self.assertRegex(text, r"flink_taskmanager_job_task_operator_records" + op % "Measure"
                         + r"\} \d+")
        self.assertRegex(text, r"flink_taskmanager_job_task_operator_MyGroup_nested"
                         + op % "Measure" + r"\} \d+")
        self.assertIn("# TYPE flink_taskmanager_job_task_operator_valueHistogram summary", text)
        self.assertRegex(text, r"flink_taskmanager_job_task_operator_valueHistogram"
                         + op % "Measure" + r',quantile="0.5"\} 49.5\n')
        self.assertRegex(text, r"flink_taskmanager_job_task_operator_valueHistogram_count"
                         + op % "Measure" + r"\} \d+")
        self.assertRegex(text, r"flink_taskmanager_job_task_operator_numLateRecordsDropped"
                         + op % "Counts" + r"\} [1-9]\d*")
        for label in ("task_name", "subtask_index", "tm_id", "job_name"):
            self.assertRegex(text, r"flink_taskmanager_job_task_operator_records\{[^}]*"
                             + label + "=")
        # REST-only parts of the histogram are no series of their own.
        self.assertNotIn("valueHistogram_min", text)

    def test_operator_watermarks_of_one_and_two_inputs(self):
        """Flink's operator-scope watermark gauges beside the task's: each
        operator's currentInputWatermark and currentOutputWatermark, and a
        two-input operator's currentInput1Watermark and
        currentInput2Watermark, the least of which is its input's."""
        self.start_cluster(taskmanagers=1, slots=3)
        jid = self.submit("twoinputs")
        vs = self.running_vertices(jid)
        both = next(v["id"] for n, v in vs.items() if n.startswith("Both"))
        ahead = next(v["id"] for n, v in vs.items() if n.startswith("Ahead"))
        path = f"/jobs/{jid}/vertices/{both}/metrics"
        names = ["0.Both.currentInput1Watermark", "0.Both.currentInput2Watermark",
                 "0.Both.currentInputWatermark", "0.Both.currentOutputWatermark",
                 "0.currentInputWatermark"]

        def read():
            got = {m["id"]: int(m["value"]) for m in self.get(f"{path}?get={','.join(names)}")}
            return got if len(got) == len(names) and got[names[1]] > -2**63 else None
        w = wait_for(read, 30, "the co-map's watermarks")
        # Behind's event time is 100 s behind Ahead's.
        self.assertGreater(w["0.Both.currentInput1Watermark"],
                           w["0.Both.currentInput2Watermark"] + 50000)
        self.assertGreaterEqual(w["0.Both.currentInputWatermark"],
                                w["0.Both.currentInput2Watermark"])
        self.assertLess(w["0.Both.currentInputWatermark"],
                        w["0.Both.currentInput1Watermark"])
        # A map passes its input's watermark on: what it emitted is
        # at least what it had when read before.
        later = wait_for(lambda: (x := read()) and
                         x["0.Both.currentOutputWatermark"] >= w["0.Both.currentInputWatermark"]
                         and x, 30, "the co-map's output watermark")
        self.assertLessEqual(later["0.Both.currentOutputWatermark"],
                             later["0.Both.currentInputWatermark"])
        # A one-input operator (the timestamps/watermarks operator chained
        # after the source): its input has no watermark, its output has.
        def operators():
            ops = [m["id"] for m in self.get(f"/jobs/{jid}/vertices/{ahead}/metrics")
                   if m["id"].endswith(".currentOutputWatermark") and m["id"].count(".") == 2]
            return ops if len(ops) == 2 else None  # the source's and the assigner's
        ops = wait_for(operators, 30, "the operator watermarks of the source's chain")

        def assigner_out():
            for n in ops:
                v = int(self.metric(f"/jobs/{jid}/vertices/{ahead}/metrics", n))
                if v > 0:
                    return n, v
            return None
        name, _ = wait_for(assigner_out, 30, "the assigner's output watermark")
        self.assertEqual(self.metric(f"/jobs/{jid}/vertices/{ahead}/metrics",
                                     name.replace("Output", "Input")), MIN_WATERMARK)

    def test_latency_markers_reach_every_operator_over_rest_and_prometheus(self):
        """metrics.latency.interval on: the source emits latency markers,
        every operator after it records a histogram of their latency under
        Flink's name (latency, granularity operator: source_id, operator_id,
        operator_subtask_index) over REST and Prometheus."""
        prom, jid, head, window = self.start_usermetrics("-D", "metrics.latency.interval=50 ms")
        pat = re.compile(r"0\.latency\.source_id\.([0-9a-f]{32})\.operator_id\.([0-9a-f]{32})"
                         r"\.operator_subtask_index\.0\.latency_p99")

        def histograms(vertex):
            found = [pat.fullmatch(m["id"]) for m in
                     self.get(f"/jobs/{jid}/vertices/{vertex}/metrics")]
            return [m for m in found if m]
        # The window's chain: the window and the sink chained after it.
        at_window = wait_for(lambda: len(h := histograms(window)) == 2 and h, 30,
                             "latency histograms of the window and the sink")
        sources = {m.group(1) for m in at_window}
        self.assertEqual(len(sources), 1)  # one source
        self.assertEqual(len({m.group(2) for m in at_window}), 2)
        # The source's chain: the timestamps operator and the map after the
        # source record; the source itself does not.
        at_head = wait_for(lambda: len(h := histograms(head)) == 2 and h, 30,
                           "latency histograms of the chain after the source")
        self.assertEqual({m.group(1) for m in at_head}, sources)
        self.assertNotIn(next(iter(sources)), {m.group(2) for m in at_head})
        name = at_window[0].group(0)[:-len("_p99")]
        got = {m["id"]: float(m["value"]) for m in self.get(
            f"/jobs/{jid}/vertices/{window}/metrics?get=" +
            ",".join(f"{name}_{p}" for p in ("min", "median", "p95", "p99", "max")))}
        self.assertEqual(len(got), 5, got)
        self.assertGreaterEqual(got[f"{name}_min"], 0)
        self.assertLessEqual(got[f"{name}_min"], got[f"{name}_median"])
        self.assertLessEqual(got[f"{name}_median"], got[f"{name}_p95"])
        self.assertLessEqual(got[f"{name}_p99"], got[f"{name}_max"])
        _, _, text = http_get(f"http://127.0.0.1:{prom}/metrics")
        family = "flink_taskmanager_job_latency_source_id_operator_id_operator_subtask_index_latency"
        self.assertIn(f"# TYPE {family} summary", text)
        for q in ("0.5", "0.95", "0.99"):
            self.assertRegex(text, family + r'\{[^}]*job_id="' + jid + r'"[^}]*source_id="'
                             + next(iter(sources)) + r'"[^}]*operator_id="[0-9a-f]{32}",'
                             r'operator_subtask_index="0",quantile="' + q + r'"\} [0-9.e+-]+\n')
        self.assertRegex(text, family + r"_count\{[^}]*\} [1-9]\d*")

    def test_rocksdb_native_metrics_of_a_keyed_operator_over_rest(self):
        """state.backend.rocksdb.metrics.<name>: true reports RocksDB's
        property rocksdb.<name> of a keyed operator's database as its
        gauge "<subtask>.<operator>.rocksdb.<name>"; the others are not
        reported."""
        self.start_jobmanager("-D", "metrics.fetcher.update-interval=200 ms")
        on = ("estimate-num-keys", "cur-size-all-mem-tables", "block-cache-capacity",
              "block-cache-usage", "num-running-compactions")
        self.start_taskmanager("-D", "state.backend.type=rocksdb",
                               "-D", f"state.backend.rocksdb.localdir={self.tmp}/rocksdb",
                               *[a for n in on for a in
                                 ("-D", f"state.backend.rocksdb.metrics.{n}=true")],
                               "-D", "state.backend.rocksdb.metrics.num-snapshots=false",
                               slots=2)
        self.wait_overview(1, slots=2)
        jid = self.submit("usermetrics")
        vs = self.running_vertices(jid)
        window = next(v["id"] for n, v in vs.items() if n.startswith("Counts"))
        path = f"/jobs/{jid}/vertices/{window}/metrics"

        def value(name):
            v = self.metric(path, f"0.Counts.rocksdb.{name}")
            return float(v) if v is not None else None
        # The windows' contents: entries of the operator's database.
        wait_for(lambda: (value("estimate-num-keys") or 0) > 0, 60,
                 "the window's RocksDB to estimate some keys")
        wait_for(lambda: (value("cur-size-all-mem-tables") or 0) > 0, 30,
                 "the window's memtables to hold bytes")
        # The slot's block cache (managed memory), memtables charged to it.
        self.assertGreater(value("block-cache-capacity"), 0)
        self.assertGreater(value("block-cache-usage"), 0)
        self.assertGreaterEqual(value("num-running-compactions"), 0)
        names = {m["id"] for m in self.get(path)}
        rocksdb = {n for n in names if n.startswith("0.Counts.rocksdb.")}
        self.assertEqual(rocksdb, {f"0.Counts.rocksdb.{n}" for n in on},
                         "exactly the metrics switched on")


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()


if __name__ == "__main__":
    unittest.main()
