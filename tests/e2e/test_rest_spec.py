"""The REST API against Flink's specification (issue 28): every operation of
Flink's flink-rest-v1-dispatcher.yml (tests/e2e/data/, as JSON) is asked of
a running cluster (a JobManager, two TaskManagers, a checkpointing job, a
savepoint, an uploaded job library), with real ids in its path, and its
answer must carry the fields the spec's response schema declares. The
operations left out are named in LEFT_OUT with the reason."""

import json
import os
import re
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, job_id_of, wait_for  # noqa: E402
from spatetest import BUILD  # noqa: E402
from test_submit import multipart  # noqa: E402

SPEC = os.path.join(os.path.dirname(__file__), "data", "flink-rest-v1-dispatcher.json")
JOB = os.path.join(BUILD, "tests", "jobs", "metricsjob.so")
TESTJOBS = os.path.join(BUILD, "tests", "jobs", "testjobs.so")

# At most 4, each with its reason.
LEFT_OUT = {
}

# Fields a schema declares that Flink itself leaves out of its answers
# (Jackson's NON_NULL, or fields of another variant of a polymorphic type).
OPTIONAL = {
    # JobConfigInfo has a custom serializer: Flink sends "jid", "name" and
    # "execution-config", not the Java field names the generator saw.
    r"getJobConfig\.(jobId|jobName|executionConfigInfo)":
        "Flink's JobConfigInfo serializer writes jid, name, execution-config",
    # @JsonInclude(NON_EMPTY) / NON_NULL in Flink: left out when empty.
    r".*\.other-concurrent-attempts": "Flink: NON_EMPTY, no other attempts run",
    r"getJobVertexBackPressure\.subtasks\[0\]\.attempt-number":
        "Flink: NON_NULL, set only with concurrent attempts",
    # SubtaskCheckpointStatistics' type is its "status" (completed,
    # pending_or_failed); the generator named the discriminator className.
    r"getTaskCheckpointStatistics\.subtasks\[0\]\.className":
        "Flink's JSON type property is status",
}


def resolve(spec, schema):
    while schema is not None and "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def missing_fields(spec, value, schema, where, depth=0):
    """The declared fields value lacks: the schema's required ones, else
    every property; into objects and the first item of arrays, 2 deep."""
    schema = resolve(spec, schema)
    if schema is None or depth > 2:
        return []
    out = []
    if schema.get("type") == "array" and isinstance(value, list):
        if value:
            out += missing_fields(spec, value[0], schema.get("items"), where + "[0]", depth + 1)
        return out
    props = schema.get("properties")
    if not props or not isinstance(value, dict):
        return out
    for name in schema.get("required") or props:
        key = f"{where}.{name}"
        if name not in value:
            if not any(re.fullmatch(p, key) for p in OPTIONAL):  # noqa: B007
                out.append(key)
            continue
        out += missing_fields(spec, value[name], props[name], key, depth + 1)
    return out


class RestSpecTest(ClusterTestCase):
    def http(self, path, method="GET", body=None, content_type="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest_port}{path}", data=body,
                                     method=method)
        if body is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else {}
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw) if raw else {}
            except ValueError:
                return e.code, raw.decode(errors="replace")

    def ok(self, path, method="GET", body=None, content_type="application/json"):
        status, answer = self.http(path, method, body, content_type)
        self.assertLess(status, 300, (method, path, answer))
        return answer

    def wait_running(self, jid):
        def running():
            j = self.ok(f"/jobs/{jid}")
            return j if j["tasks"]["running"] == j["tasks"]["total"] else None
        return wait_for(running, 60, f"every task of {jid} running")

    def test_every_operation_of_the_spec(self):
        spec = json.load(open(SPEC))
        chk, sps = f"{self.tmp}/checkpoints", f"{self.tmp}/savepoints"
        self.start_jobmanager("-D", "web.submit.enable=true",
                              "-D", "execution.checkpointing.interval=200 ms",
                              # The checkpoint whose details are asked for
                              # stays in the statistics however slow the walk.
                              "-D", "web.checkpoints.history=100000",
                              "-D", f"state.checkpoints.dir={chk}",
                              "-D", f"state.savepoints.dir={sps}",
                              "-D", f"io.tmp.dirs={self.tmp}",
                              "-D", "historyserver.log.jobmanager.url-pattern="
                                    "http://logs.example/jm/<jobid>",
                              "-D", "historyserver.log.taskmanager.url-pattern="
                                    "http://logs.example/tm/<jobid>/<tmid>")
        for _ in range(2):
            self.start_taskmanager(slots=2)
        self.wait_overview(2, slots=4)

        # A checkpointing job over both TaskManagers, another to stop.
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "2", JOB,
                       "eventtime", "2000")
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = job_id_of(r.stdout)
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOB, "eventtime", "500")
        self.assertEqual(r.returncode, 0, r.stderr)
        stop_jid = job_id_of(r.stdout)
        job = self.wait_running(jid)
        self.wait_running(stop_jid)
        vid = job["vertices"][-1]["id"]
        tms = self.ok("/taskmanagers")["taskmanagers"]
        tmid = tms[0]["id"]
        cp = wait_for(lambda: self.ok(f"/jobs/{jid}/checkpoints").get("latest", {})
                      .get("completed"), 60, "a completed checkpoint")
        cpid = cp["id"]
        # A completed checkpoint's details per subtask: every one acknowledged.
        d = self.ok(f"/jobs/{jid}/checkpoints/details/{cpid}/subtasks/{vid}")
        self.assertEqual(len(d["subtasks"]), d["num_subtasks"])
        self.assertEqual([s["status"] for s in d["subtasks"]], ["completed"] * d["num_subtasks"])
        self.assertTrue(all(s["ack_timestamp"] >= cp["trigger_timestamp"] for s in d["subtasks"]))
        self.assertEqual(self.http(f"/jobs/{jid}/checkpoints/details/{cpid}/subtasks/"
                                   "0123456789abcdef0123456789abcdef")[0], 404)
        with open(TESTJOBS, "rb") as f:
            body, ctype = multipart({}, [("jarfile", "testjobs.so", f.read())])
        jarid = os.path.basename(self.ok("/jars/upload", "POST", body, ctype)["filename"])
        cp_trigger = self.ok(f"/jobs/{jid}/checkpoints", "POST", {})["request-id"]
        sp_trigger = self.ok(f"/jobs/{jid}/savepoints", "POST",
                             {"target-directory": sps, "cancel-job": False})["request-id"]
        savepoint = wait_for(lambda: self.ok(f"/jobs/{jid}/savepoints/{sp_trigger}")
                             .get("operation", {}).get("location"), 60, "the savepoint")
        # A savepoint is in the statistics as one (latest.savepoint, its
        # history entry), not as the latest completed checkpoint.
        stats = wait_for(lambda: (lambda s: s if s["latest"]["savepoint"] else None)(
            self.ok(f"/jobs/{jid}/checkpoints")), 30, "the savepoint in the statistics")
        sp = stats["latest"]["savepoint"]
        self.assertEqual((sp["is_savepoint"], sp["checkpoint_type"], sp["status"]),
                         (True, "SAVEPOINT", "COMPLETED"))
        self.assertTrue(sp["external_path"].startswith(sps), sp)
        self.assertFalse(stats["latest"]["completed"]["is_savepoint"])
        self.assertIn(sp["id"], [h["id"] for h in stats["history"] if h["is_savepoint"]])
        disposal = self.ok("/savepoint-disposal", "POST",
                           {"savepoint-path": savepoint})["request-id"]
        dataset_trigger = self.ok("/datasets/0123456789abcdef0123456789abcdef", "DELETE")[
            "request-id"]
        rescale_trigger = "0123456789abcdef0123456789abcdef"
        ids = {"jobid": jid, "vertexid": vid, "taskmanagerid": tmid, "checkpointid": str(cpid),
               "jarid": jarid, "subtaskindex": "0", "attempt": "0",
               "datasetid": "0123456789abcdef0123456789abcdef"}
        triggers = {"/jobs/{jobid}/checkpoints/{triggerid}": cp_trigger,
                    "/jobs/{jobid}/savepoints/{triggerid}": sp_trigger,
                    "/savepoint-disposal/{triggerid}": disposal,
                    "/datasets/delete/{triggerid}": dataset_trigger,
                    "/jobs/{jobid}/rescaling/{triggerid}": rescale_trigger}
        requirements = {v["id"]: {"parallelism": {"lowerBound": 1,
                                                  "upperBound": v["parallelism"]}}
                        for v in job["vertices"]}
        bodies = {
            ("post", "/jobs/{jobid}/checkpoints"): {},
            ("post", "/jobs/{jobid}/savepoints"): {"target-directory": sps, "cancel-job": False},
            ("post", "/jobs/{jobid}/stop"): {"targetDirectory": sps, "drain": False},
            ("post", "/savepoint-disposal"): {"savepoint-path": savepoint},
            ("patch", "/jobs/{jobid}/clientHeartbeat"): {"expiredTimestamp": 2**62},
            ("put", "/jobs/{jobid}/resource-requirements"): requirements,
            ("post", "/jars/{jarid}/plan"): {"programArgsList": ["slots", "--slots", "1"]},
            ("post", "/jars/{jarid}/run"): {"programArgsList": ["slots", "--slots", "1",
                                                                "--run-ms", "100"]},
        }
        # Operations whose answer is Flink's refusal, as Flink gives it.
        refused = {
            ("patch", "/jobs/{jobid}/rescaling"): 503,
            ("get", "/jobs/{jobid}/rescaling/{triggerid}"): 503,
            ("put", "/jobs/{jobid}/resource-requirements"): 400,
        }
        # The ones that end what the others need go last, in this order.
        last = [("post", "/jobs/{jobid}/stop"), ("patch", "/jobs/{jobid}"),
                ("delete", "/jars/{jarid}"), ("delete", "/cluster")]
        ops = [(m, p) for p in spec["paths"] for m in spec["paths"][p]]
        self.assertEqual(len(ops), 69)
        self.assertLessEqual(len(LEFT_OUT), 4)
        ops = [o for o in ops if o not in last] + last

        problems, asked = [], 0
        for method, pattern in ops:
            op = spec["paths"][pattern][method]
            if (method, pattern) in LEFT_OUT:
                continue
            path = pattern
            for name, value in ids.items():
                path = path.replace("{" + name + "}", value)
            if "{triggerid}" in path:
                path = path.replace("{triggerid}", triggers[pattern])
            if (method, pattern) == ("post", "/jobs/{jobid}/stop"):
                path = path.replace(jid, stop_jid)
            if (method, pattern) == ("patch", "/jobs/{jobid}"):
                path += "?mode=cancel"
            if (method, pattern) == ("post", "/jars/upload"):
                with open(TESTJOBS, "rb") as f:
                    body, ctype = multipart({}, [("jarfile", "testjobs.so", f.read())])
                status, answer = self.http(path, "POST", body, ctype)
            elif (method, pattern) == ("post", "/jobs"):
                status, answer = self.http_submit_job(path)
            else:
                status, answer = self.http(path, method.upper(), bodies.get((method, pattern)))
            asked += 1
            expected = refused.get((method, pattern))
            if expected is not None:
                if status != expected:
                    problems.append(f"{method.upper()} {path}: {status} (expected Flink's "
                                    f"refusal {expected}): {answer}")
                continue
            if status >= 300:
                problems.append(f"{method.upper()} {path}: {status} {answer}")
                continue
            codes = [c for c in op["responses"] if c.startswith("2")]
            schema = None
            for c in codes:
                content = op["responses"][c].get("content", {}).get("application/json")
                if content is not None:
                    schema = content.get("schema")
            lacks = missing_fields(spec, answer, schema, op["operationId"])
            if lacks:
                problems.append(f"{method.upper()} {path}: lacks {lacks}")
        self.assertEqual(asked, 69 - len(LEFT_OUT))
        self.assertEqual(problems, [], "\n".join(problems))

    def text(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}{path}", timeout=60) as r:
            self.assertTrue(r.headers["Content-Type"].startswith("text/plain"))
            return r.read().decode(errors="replace")

    def test_logs_thread_dumps_metrics_and_config(self):
        """What the operations above return, read closely: log files and
        their text, every thread's native stack, the jobs' metrics, the
        configuration with secrets hidden, a TaskManager's memory."""
        jm = self.start_jobmanager("-D", "security.ssl.rest.key-password=hunter2",
                                   "-D", "execution.checkpointing.interval=200 ms",
                                   "-D", f"state.checkpoints.dir={self.tmp}/checkpoints")
        tm = self.start_taskmanager(slots=2)
        self.wait_overview(1, slots=2)
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOB, "eventtime", "2000")
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = job_id_of(r.stdout)
        self.wait_running(jid)
        tmid = self.ok("/taskmanagers")["taskmanagers"][0]["id"]

        # Logs: the folder each process logs into, and a file's text.
        jm_log, tm_log = os.path.basename(jm.log), os.path.basename(tm.log)
        names = [f["name"] for f in self.ok("/jobmanager/logs")["logs"]]
        self.assertIn(jm_log, names)
        self.assertIn("JobManager started", self.text(f"/jobmanager/logs/{jm_log}"))
        logs = {f["name"]: f for f in self.ok(f"/taskmanagers/{tmid}/logs")["logs"]}
        self.assertIn(tm_log, logs)
        self.assertGreater(logs[tm_log]["size"], 0)
        self.assertGreater(logs[tm_log]["mtime"], 0)
        self.assertIn(f"TaskExecutor {tmid} started",
                      self.text(f"/taskmanagers/{tmid}/logs/{tm_log}"))
        status, err = self.http(f"/taskmanagers/{tmid}/logs/..%2Fetc")
        self.assertIn(status, (400, 404), err)
        status, err = self.http(f"/taskmanagers/{tmid}/logs/nothing.log")
        self.assertEqual(status, 404, err)

        # Thread dumps: every thread by name, with its native frames.
        # Task threads are named after their task ("Counts 1": subtask 1).
        for path, want in (("/jobmanager/thread-dump", "rpc"),
                           (f"/taskmanagers/{tmid}/thread-dump", "Counts 1")):
            infos = self.ok(path)["threadInfos"]
            by_name = {t["threadName"]: t["stringifiedThreadInfo"] for t in infos}
            self.assertIn(want, by_name, (path, sorted(by_name)))
            self.assertIn("rpc", by_name)
            for name, text in by_name.items():
                self.assertTrue(text.startswith(f'"{name}" Id='), text)
            self.assertIn("\tat ", by_name[want])
            self.assertRegex(by_name[want], r"libspate\.so|libc\.so")
        # The processes are unharmed by being sampled.
        self.assertTrue(jm.alive() and tm.alive())
        self.wait_running(jid)

        # The jobs' metrics over REST, one job's and aggregated.
        def job_metrics():
            m = {x["id"]: x["value"] for x in self.ok(f"/jobs/{jid}/metrics?get=numRestarts,"
                                                      "uptime,numberOfCompletedCheckpoints")}
            return m if int(m.get("uptime", "0")) > 0 else None
        m = wait_for(job_metrics, 30, "the job's metrics, set every second")
        self.assertEqual(m["numRestarts"], "0")
        agg = self.ok("/jobs/metrics?get=uptime&agg=max")
        self.assertEqual(agg[0]["id"], "uptime")
        self.assertGreater(agg[0]["max"], 0)
        self.assertEqual(self.ok("/jobs/00000000000000000000000000000000/metrics"), [])
        rss = self.ok("/taskmanagers/metrics?get=Status.Process.Memory.RSS&agg=min")
        self.assertGreater(rss[0]["min"], 0)

        # The configuration, a secret hidden as Flink hides it.
        conf = {e["key"]: e["value"] for e in self.ok("/jobmanager/config")}
        self.assertEqual(conf["execution.checkpointing.interval"], "200 ms")
        self.assertEqual(conf["security.ssl.rest.key-password"], "******")
        self.assertEqual(self.ok(f"/jobs/{jid}/jobmanager/config"), self.ok("/jobmanager/config"))
        env = self.ok("/jobmanager/environment")
        self.assertIn("jobmanager", env["jvm"]["options"])
        self.assertEqual(self.ok(f"/jobs/{jid}/status"), {"status": "RUNNING"})
        # The job's real restart strategy: with checkpoints, spate's default
        # exponential delay (50 ms to 10 s).
        self.assertEqual(self.ok(f"/jobs/{jid}/config")["execution-config"]["restart-strategy"],
                         "Restart with exponential delay: starting at 50 ms, increasing by 1.5, "
                         "with maximum 10000 ms. Delay resets after 3600000 ms with jitter 0.1.")

        # A TaskManager's memory: its network buffers, its resident set.
        d = wait_for(lambda: (lambda d: d if d["metrics"]["heapUsed"] > 0 else None)(
            self.ok(f"/taskmanagers/{tmid}")), 30, "the TaskManager's metrics")
        mc, mt = d["memoryConfiguration"], d["metrics"]
        self.assertEqual(mc["networkMemory"], mt["nettyShuffleMemoryTotal"])
        self.assertEqual(mt["nettyShuffleMemoryTotal"],
                         mt["nettyShuffleMemorySegmentsTotal"] * 32768)
        self.assertGreater(mt["nettyShuffleMemorySegmentsTotal"], 0)

        # A vertex's subtasks, times and TaskManagers.
        job = self.ok(f"/jobs/{jid}")
        vid = job["vertices"][0]["id"]
        st = self.ok(f"/jobs/{jid}/vertices/{vid}/subtasks/0")
        self.assertEqual((st["subtask"], st["status"], st["taskmanager-id"]), (0, "RUNNING", tmid))
        att = self.ok(f"/jobs/{jid}/vertices/{vid}/subtasks/0/attempts/0")
        self.assertEqual({k: att[k] for k in ("subtask", "status", "attempt", "taskmanager-id",
                                              "start-time")},
                         {k: st[k] for k in ("subtask", "status", "attempt", "taskmanager-id",
                                             "start-time")})
        self.assertEqual(self.http(f"/jobs/{jid}/vertices/{vid}/subtasks/0/attempts/7")[0], 404)
        self.assertEqual(self.http(f"/jobs/{jid}/vertices/{vid}/subtasks/9")[0], 404)
        times = self.ok(f"/jobs/{jid}/vertices/{vid}/subtasktimes")["subtasks"][0]
        self.assertLessEqual(times["timestamps"]["DEPLOYING"], times["timestamps"]["RUNNING"])
        tms = self.ok(f"/jobs/{jid}/vertices/{vid}/taskmanagers")["taskmanagers"]
        self.assertEqual([(t["taskmanager-id"], t["status-counts"]["RUNNING"]) for t in tms],
                         [(tmid, 1)])

    def test_flame_graph_of_a_busy_window_job(self):
        """A flame graph of the window vertex of a busy event-time job: the
        sampled stacks of its task threads, merged, name the window
        operator's functions; on-CPU and off-CPU samples split them."""
        self.start_jobmanager()
        self.start_taskmanager(slots=2)
        self.wait_overview(1, slots=2)
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "2", JOB,
                       "eventtime", "400000")
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = job_id_of(r.stdout)
        job = self.wait_running(jid)
        counts = next(v["id"] for v in job["vertices"] if v["name"].startswith("Counts"))

        def names(node, out):
            out.add(node["name"])
            for c in node["children"]:
                self.assertLessEqual(c["value"], node["value"])
                names(c, out)
            return out

        def window_functions():
            g = self.ok(f"/jobs/{jid}/vertices/{counts}/flamegraph")
            self.assertGreater(g["endTimestamp"], 0)
            found = {n for n in names(g["data"], set()) if n.startswith("window_")}
            return (g, found) if found else None
        g, found = wait_for(window_functions, 60, "the window operator's functions in a flame graph")
        self.assertEqual(g["data"]["name"], "root")
        # Each sample is one path from the root: the root counts them all.
        self.assertEqual(g["data"]["value"], sum(c["value"] for c in g["data"]["children"]))
        on = self.ok(f"/jobs/{jid}/vertices/{counts}/flamegraph?type=on_cpu")["data"]["value"]
        off = self.ok(f"/jobs/{jid}/vertices/{counts}/flamegraph?type=off_cpu")["data"]["value"]
        self.assertGreater(on + off, 0)
        self.assertEqual(self.http(f"/jobs/{jid}/vertices/{counts}/flamegraph?type=nope")[0], 400)
        self.assertTrue(self.wait_running(jid))

    def test_a_failing_main_answers_with_its_own_output(self):
        """/jars/:jarid/plan and /run of a main that fails: the answer has
        the job's own words (what it printed), not only how it ended."""
        self.start_jobmanager("-D", "web.submit.enable=true")
        with open(TESTJOBS, "rb") as f:
            body, ctype = multipart({}, [("jarfile", "testjobs.so", f.read())])
        jarid = os.path.basename(self.ok("/jars/upload", "POST", body, ctype)["filename"])
        for op in ("plan", "run"):
            status, answer = self.http(f"/jars/{jarid}/{op}", "POST",
                                       {"programArgsList": ["nosuchjob"]})
            self.assertGreaterEqual(status, 400, answer)
            text = " ".join(answer["errors"])
            self.assertIn("the job's main failed", text)
            self.assertIn("testjobs: which job?", text)
        self.assertEqual(self.ok("/jobs")["jobs"], [])

    def http_submit_job(self, path):
        """POST /jobs as Flink's client sends it: the JobGraph (made by
        `spate job-graph`, the JobManager's plan-only child) and the library
        as multipart parts."""
        import subprocess
        from spatetest import SPATE
        rfd, wfd = os.pipe()
        p = subprocess.Popen([SPATE, "job-graph", "--result-fd", str(wfd), TESTJOBS, "slots",
                              "--slots", "1", "--run-ms", "100"], pass_fds=(wfd,),
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(wfd)
        with os.fdopen(rfd, "rb") as f:
            data = f.read()
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        n = int.from_bytes(data[:8], "big")
        graph = data[8:8 + n]
        with open(TESTJOBS, "rb") as f:
            lib = f.read()
        body, ctype = multipart({"request": json.dumps({"jobGraphFileName": "graph.bin",
                                                        "jobJarFileNames": ["testjobs.so"]})},
                                [("file_0", "graph.bin", graph), ("file_1", "testjobs.so", lib)])
        return self.http(path, "POST", body, ctype)

if __name__ == "__main__":
    unittest.main()
