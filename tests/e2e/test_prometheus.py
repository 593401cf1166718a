"""The Prometheus reporter end to end (issue 28): a JobManager and two
TaskManagers, each with Flink's `metrics.reporter.prom.*` keys, and a real
Prometheus server (Debian's `prometheus`) that scrapes all three every
second; a PromQL query answers a running job's numRecordsIn rate, with
Flink's metric names and labels."""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, job_id_of, wait_for  # noqa: E402
from spatetest import BUILD, free_port  # noqa: E402

JOB = os.path.join(BUILD, "tests", "jobs", "metricsjob.so")
PROMETHEUS = shutil.which("prometheus")
PROM_URL_RX = r"Prometheus reporter serving http://127\.0\.0\.1:(\d+)/metrics"


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()


@unittest.skipIf(PROMETHEUS is None, "Debian's prometheus is not installed "
                 "(scripts/install-deps.sh installs it)")
class PrometheusTest(ClusterTestCase):
    def reporter(self, proc):
        return int(proc.wait_log(PROM_URL_RX).group(1))

    def start_prometheus(self, targets):
        port = free_port()
        conf = os.path.join(self.tmp, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: spate\n    static_configs:\n"
                    f"      - targets: {json.dumps(targets)}\n")
        log = os.path.join(self.tmp, "prometheus.log")
        with open(log, "w") as out:
            p = subprocess.Popen([PROMETHEUS, f"--config.file={conf}",
                                  f"--storage.tsdb.path={os.path.join(self.tmp, 'tsdb')}",
                                  f"--web.listen-address=127.0.0.1:{port}"],
                                 stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(p)
        return port

    def promql(self, port, query):
        """The result vector of an instant query."""
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
        try:
            _, _, body = http_get(url)
        except OSError:
            return None
        answer = json.loads(body)
        self.assertEqual(answer["status"], "success", answer)
        return answer["data"]["result"]

    def test_prometheus_scrapes_a_jobmanager_and_two_taskmanagers(self):
        prom = ["-D", "metrics.reporter.prom.factory.class="
                      "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"]
        jm = self.start_jobmanager(*prom, "-D", "metrics.reporter.prom.port=0")
        # The TaskManagers share one port range: the second takes the next
        # free port of it.
        lo = free_port()
        tm_range = f"{lo}-{min(lo + 50, 65535)}"
        tms = [self.start_taskmanager("-D", "metrics.reporter.prom.factory.class=prometheus",
                                      "-D", f"metrics.reporter.prom.port={tm_range}", slots=1)
               for _ in range(2)]
        self.wait_overview(2, slots=2)
        ports = [self.reporter(p) for p in [jm, *tms]]
        self.assertEqual(len(set(ports)), 3, ports)
        for port in ports[1:]:
            self.assertTrue(lo <= port <= lo + 50, (port, tm_range))

        jid = self.run_detached("-p", "2", JOB, "eventtime", "2000")
        self.wait_tasks_running(jid)

        # The reporter's own answer: Prometheus' text format, Flink's names.
        status, ctype, text = http_get(f"http://127.0.0.1:{ports[1]}/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        self.assertIn("# TYPE flink_taskmanager_job_task_numRecordsIn gauge", text)
        self.assertEqual(text.count("# TYPE flink_taskmanager_job_task_numRecordsIn "), 1)
        self.assertRegex(text, r'flink_taskmanager_Status_Shuffle_Netty_TotalMemorySegments\{'
                               r'host="[^"]+",tm_id="[0-9a-f]{32}"\} \d+')
        _, _, jm_text = http_get(f"http://127.0.0.1:{ports[0]}/metrics")
        self.assertRegex(jm_text, r'flink_jobmanager_numRegisteredTaskManagers\{host="[^"]+"\} 2')
        self.assertRegex(jm_text, r'flink_jobmanager_numRunningJobs\{host="[^"]+"\} 1')

        port = self.start_prometheus([f"127.0.0.1:{p}" for p in ports])

        def all_up():
            res = self.promql(port, 'up{job="spate"} == 1')
            return res if res is not None and len(res) == 3 else None
        wait_for(all_up, 60, "Prometheus to scrape all three reporters")

        # The windows of both subtasks take records: their summed rate over
        # the last seconds is positive, by job and task name.
        query = ('sum by (job_name, task_name) (rate(flink_taskmanager_job_task_numRecordsIn'
                 f'{{job_id="{jid}",task_name=~"Counts.*"}}[5s]))')

        def rate():
            res = self.promql(port, query)
            return res if res and float(res[0]["value"][1]) > 0 else None
        res = wait_for(rate, 60, f"a positive rate from '{query}'")
        self.assertEqual(len(res), 1, res)
        self.assertEqual(res[0]["metric"]["job_name"], "eventtime")
        self.assertTrue(res[0]["metric"]["task_name"].startswith("Counts"), res)

        # Each subtask is its own series, labelled as Flink labels it.
        series = self.promql(port, f'flink_taskmanager_job_task_numRecordsIn{{job_id="{jid}"}}')
        by_task = {}
        for s in series:
            m = s["metric"]
            for label in ("host", "tm_id", "task_id", "task_attempt_id", "task_attempt_num"):
                self.assertIn(label, m)
            by_task.setdefault(m["task_name"], set()).add((m["subtask_index"], m["tm_id"]))
        # Two chains: "Readings -> Timestamps/Watermarks", "Counts -> Sink: Discard".
        self.assertEqual(len(by_task), 2, by_task)
        for name, subtasks in by_task.items():
            self.assertEqual({i for i, _ in subtasks}, {"0", "1"}, name)
            self.assertEqual(len({tm for _, tm in subtasks}), 2, (name, "one subtask per TM"))

        # The JobManager's gauges and a TaskManager's process figures too.
        tms_up = self.promql(port, "flink_jobmanager_numRegisteredTaskManagers")
        self.assertEqual([float(s["value"][1]) for s in tms_up], [2.0])
        rss = self.promql(port, "flink_taskmanager_Status_Process_Memory_RSS")
        self.assertEqual(len(rss), 2, rss)
        self.assertTrue(all(float(s["value"][1]) > 0 for s in rss), rss)

    def series(self, port, name):
        """{labels text: value} of a family in a reporter's answer."""
        _, _, text = http_get(f"http://127.0.0.1:{port}/metrics")
        rx = re.compile(r"^" + re.escape(name) + r"\{([^}]*)\} (\S+)$", re.M)
        return {m.group(1): float(m.group(2)) for m in rx.finditer(text)}

    def job_gauge(self, port, name, jid):
        for labels, value in self.series(port, f"flink_jobmanager_job_{name}").items():
            if f'job_id="{jid}"' in labels:
                return value
        return None

    def test_job_metrics_checkpoints_and_restarts(self):
        """The JobManager reports each job's gauges with Flink's names:
        uptime, checkpoint counts and figures, numRestarts after a kill -9
        of the TaskManager that ran it."""
        jm = self.start_jobmanager("-D", "metrics.reporter.prom.factory.class=prometheus",
                                   "-D", "metrics.reporter.prom.port=0",
                                   "-D", "execution.checkpointing.interval=200 ms",
                                   "-D", f"state.checkpoints.dir={self.tmp}/checkpoints")
        port = self.reporter(jm)
        tm = self.start_taskmanager(slots=1)
        self.wait_overview(1, slots=1)
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOB, "eventtime", "2000")
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = job_id_of(r.stdout)

        done = wait_for(lambda: (self.job_gauge(port, "numberOfCompletedCheckpoints", jid) or 0)
                        >= 2, 60, "two completed checkpoints in the job's metrics")
        self.assertTrue(done)
        labels = next(k for k in self.series(port, "flink_jobmanager_job_uptime")
                      if f'job_id="{jid}"' in k)
        self.assertIn('job_name="eventtime"', labels)
        self.assertIn("host=", labels)
        self.assertGreater(self.job_gauge(port, "uptime", jid), 0)
        self.assertEqual(self.job_gauge(port, "downtime", jid), 0)
        self.assertEqual(self.job_gauge(port, "numRestarts", jid), 0)
        self.assertGreaterEqual(self.job_gauge(port, "lastCheckpointDuration", jid), 0)
        self.assertGreater(self.job_gauge(port, "lastCheckpointSize", jid), 0)
        self.assertGreaterEqual(self.job_gauge(port, "lastCompletedCheckpointId", jid), 2)
        self.assertEqual(self.job_gauge(port, "numberOfFailedCheckpoints", jid), 0)
        self.assertGreaterEqual(self.job_gauge(port, "totalNumberOfCheckpoints", jid),
                                self.job_gauge(port, "numberOfCompletedCheckpoints", jid))

        # kill -9 of its TaskManager: the job restarts on a new one.
        tm.kill()
        self.start_taskmanager(slots=1)
        wait_for(lambda: (self.job_gauge(port, "numRestarts", jid) or 0) >= 1, 60,
                 "numRestarts to count the restart")
        wait_for(lambda: (self.job_gauge(port, "uptime", jid) or 0) > 0, 60,
                 "the job running again")
        self.assertGreater(self.job_gauge(port, "restartingTime", jid), 0)
        self.assertEqual(self.job_gauge(port, "fullRestarts", jid),
                         self.job_gauge(port, "numRestarts", jid))
        wait_for(lambda: (self.job_gauge(port, "lastCheckpointRestoreTimestamp", jid) or -1) > 0,
                 30, "the restore's timestamp")

        # A cancelled job's group goes with its JobMaster.
        status, _ = self.rest(f"/jobs/{jid}?mode=cancel", method="PATCH")
        self.assertEqual(status, 202)
        wait_for(lambda: self.job_gauge(port, "uptime", jid) is None, 30,
                 "the job's metrics to go")

    def test_bad_reporter_configuration_is_a_clear_error(self):
        r = subprocess.run([os.path.join(BUILD, "bin", "spate"), "-D", "jobmanager.rpc.port=0",
                            "-D", "rest.port=0", "-D",
                            "metrics.reporter.prom.factory.class=com.example.Nope", "jobmanager"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("metrics.reporter.prom.factory.class", r.stderr)
        self.assertIn("com.example.Nope", r.stderr)
        r = subprocess.run([os.path.join(BUILD, "bin", "spate"), "-D", "jobmanager.rpc.port=0",
                            "-D", "rest.port=0", "-D", "metrics.reporter.prom.factory.class=prometheus",
                            "-D", "metrics.reporter.prom.port=90-80", "jobmanager"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("metrics.reporter.prom.port", r.stderr)
        self.assertTrue(re.search(r"90-80", r.stderr), r.stderr)


if __name__ == "__main__":
    unittest.main()
