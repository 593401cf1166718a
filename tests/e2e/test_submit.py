"""Jobs on a real cluster (issue 7): a JobManager and TaskManagers as
processes, jobs submitted with `spate run` over REST (POST /jobs) and with a
plain HTTP client (POST /jars/upload + /jars/:jarid/run), followed through
Flink's REST API, cancelled, failing, refused; the BlobServer's files and
the archive."""

import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import unittest
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from spatetest import BUILD, SPATE, free_port, sink_lines, sink_parts  # noqa: E402

WORDCOUNT = os.path.join(BUILD, "examples", "wordcount.so")
JOBS = os.path.join(BUILD, "tests", "e2e", "jobs")
TERMINAL = ("FINISHED", "FAILED", "CANCELED")


def make_text(path, size):
    """About size bytes of text: words of a 2,000-word vocabulary (letters,
    digits, mixed case) with punctuation; returns the expected counts."""
    rnd = random.Random(7)
    vocab = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyzABC0123") for _ in range(rnd.randint(2, 9)))
             for _ in range(2000)]
    lines = []
    total = 0
    while total < size:
        line = " ".join(rnd.choice(vocab) + rnd.choice(["", "", ",", ".", "--", "!"])
                        for _ in range(12))
        lines.append(line)
        total += len(line) + 1
    text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return collections.Counter(w.lower() for w in re.findall(r"[A-Za-z0-9]+", text))


def read_counts(out_dir):
    """The final count of each word (its last update) and the number of updates."""
    final = {}
    updates = 0
    for _, line in sink_lines(out_dir):
        word, count = line.rsplit(" ", 1)
        final[word] = max(final.get(word, 0), int(count))
        updates += 1
    return final, updates


def multipart(fields, files):
    """A multipart/form-data body: fields {name: text}, files [(name, filename, bytes)]."""
    boundary = uuid.uuid4().hex
    out = []
    for name, value in fields.items():
        out.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n"
                   f"Content-Type: application/json\r\n\r\n".encode() + value.encode() + b"\r\n")
    for name, filename, data in files:
        out.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                   f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                   .encode() + data + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


class SubmitTest(ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.shared = tempfile.mkdtemp(prefix="spate-e2e-submit-")
        cls.text = os.path.join(cls.shared, "text.txt")
        cls.expected = make_text(cls.text, 10 * 1024 * 1024)
        cls.small = os.path.join(cls.shared, "small.txt")
        cls.small_expected = make_text(cls.small, 20000)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.shared, ignore_errors=True)

    # ---- helpers ----

    def cluster(self, *extra, tms=2, slots=2):
        # /jars is off unless asked for (docs/security.md).
        tmp = ["-D", f"io.tmp.dirs={self.tmp}", "-D", "web.submit.enable=true"]
        self.jm = self.start_jobmanager(*tmp, *extra)
        self.tms = [self.start_taskmanager(*tmp, *extra, slots=slots) for _ in range(tms)]
        if tms:
            self.wait_overview(tms, slots=tms * slots, available=tms * slots)
        return self.jm

    def http(self, path, method="GET", body=None, content_type="application/json"):
        """(status, JSON) of a request with an optional body (bytes or a dict)."""
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest_port}{path}", data=body,
                                     method=method)
        if body is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def upload(self, path, name=None):
        with open(path, "rb") as f:
            body, ctype = multipart({}, [("jarfile", name or os.path.basename(path), f.read())])
        status, answer = self.http("/jars/upload", "POST", body, ctype)
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer["status"], "success")
        return os.path.basename(answer["filename"])

    def run_cli(self, *args, timeout=120):
        if args and args[0] in ("list", "cancel"):
            return self.spate(args[0], "-m", f"127.0.0.1:{self.rest_port}", *args[1:],
                              timeout=timeout)
        return self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", *args, timeout=timeout)

    def wait_state(self, jid, states, timeout=60):
        def done():
            status, job = self.http(f"/jobs/{jid}")
            return job if status == 200 and job["state"] in states else None
        return wait_for(done, timeout, f"job {jid} in {states}")

    def wait_all_running(self, jid, timeout=60):
        def running():
            status, job = self.http(f"/jobs/{jid}")
            t = job.get("tasks", {})
            return job if status == 200 and t.get("total") and t["running"] == t["total"] else None
        return wait_for(running, timeout, f"every task of {jid} running")

    def check_counts(self, out_dir, expected):
        final, updates = read_counts(out_dir)
        self.assertEqual(final, dict(expected))
        self.assertEqual(updates, sum(expected.values()))

    def check_job_details(self, jid, parallelism):
        """Flink's fields of /jobs/:jobid and /jobs/overview for a finished job."""
        status, job = self.http(f"/jobs/{jid}")
        self.assertEqual(status, 200, job)
        for key in ("jid", "name", "isStoppable", "state", "start-time", "end-time", "duration",
                    "maxParallelism", "now", "timestamps", "vertices", "status-counts", "plan"):
            self.assertIn(key, job)
        self.assertEqual(job["state"], "FINISHED")
        self.assertGreater(job["timestamps"]["RUNNING"], 0)
        self.assertGreaterEqual(job["timestamps"]["FINISHED"], job["timestamps"]["RUNNING"])
        self.assertEqual(job["duration"], job["end-time"] - job["start-time"])
        self.assertEqual(len(job["vertices"]), 2)
        for v in job["vertices"]:
            for key in ("id", "name", "maxParallelism", "parallelism", "status", "start-time",
                        "end-time", "duration", "tasks", "metrics"):
                self.assertIn(key, v)
            self.assertEqual(v["parallelism"], parallelism)
            self.assertEqual(v["status"], "FINISHED")
            self.assertEqual(v["tasks"]["FINISHED"], parallelism)
            self.assertEqual(sum(v["tasks"].values()), parallelism)
            self.assertGreater(v["start-time"], 0)
        self.assertEqual(job["status-counts"]["FINISHED"], 2)
        self.assertEqual([n["parallelism"] for n in job["plan"]["nodes"]], [parallelism] * 2)
        status, overview = self.http("/jobs/overview")
        row = [j for j in overview["jobs"] if j["jid"] == jid][0]
        self.assertEqual(row["state"], "FINISHED")
        self.assertEqual(row["tasks"]["total"], 2 * parallelism)
        self.assertEqual(row["tasks"]["finished"], 2 * parallelism)
        self.assertEqual(row["tasks"]["running"], 0)
        for key in ("jid", "name", "start-time", "end-time", "duration", "last-modification"):
            self.assertIn(key, row)

    # ---- tests ----

    def test_wordcount_10mb_p4_cli_and_jars_run(self):
        self.cluster()
        out = os.path.join(self.tmp, "out-cli")
        r = self.run_cli("-p", "4", WORDCOUNT, "--input", self.text, "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = re.search(r"Job has been submitted with JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.assertIn(f"Job with JobID {jid} has finished.", r.stdout)
        self.assertRegex(r.stdout, r"Job Runtime: \d+ ms")
        self.assertEqual(sorted(os.listdir(out)), [f"part-{i}-0" for i in range(4)])
        self.check_counts(out, self.expected)
        self.check_job_details(jid, 4)

        # The same job through /jars with a plain HTTP client.
        jar = self.upload(WORDCOUNT)
        status, jars = self.http("/jars")
        self.assertEqual(status, 200)
        self.assertEqual([f["id"] for f in jars["files"]], [jar])
        self.assertEqual(jars["files"][0]["name"], "wordcount.so")
        self.assertEqual(jars["files"][0]["entry"][0]["name"], "spate_job_main")
        status, plan = self.http(f"/jars/{jar}/plan", "POST", {"parallelism": 3})
        self.assertEqual(status, 200, plan)
        self.assertEqual([n["parallelism"] for n in plan["plan"]["nodes"]], [3, 3])
        out2 = os.path.join(self.tmp, "out-rest")
        status, run = self.http(f"/jars/{jar}/run", "POST", {
            "programArgsList": ["--input", self.text, "--output", out2], "parallelism": 4})
        self.assertEqual(status, 200, run)
        jid2 = run["jobid"]
        self.wait_state(jid2, TERMINAL)
        self.check_counts(out2, self.expected)
        self.check_job_details(jid2, 4)
        status, result = self.http(f"/jobs/{jid2}/execution-result")
        self.assertEqual(result["status"]["id"], "COMPLETED")
        res = result["job-execution-result"]
        self.assertEqual(res["application-status"], "SUCCEEDED")
        self.assertEqual(res["accumulator-results"]["Tokenizer.numRecordsOut"],
                         sum(self.expected.values()))
        status, accs = self.http(f"/jobs/{jid2}/accumulators")
        named = {a["name"]: a["value"] for a in accs["user-task-accumulators"]}
        self.assertEqual(named["Sink: Text File.numRecordsIn"], str(sum(self.expected.values())))
        status, cfg = self.http(f"/jobs/{jid2}/config")
        self.assertEqual((cfg["jid"], cfg["name"]), (jid2, "WordCount"))
        self.assertEqual(cfg["execution-config"]["job-parallelism"], 4)
        status, plan = self.http(f"/jobs/{jid2}/plan")
        self.assertEqual(plan["plan"]["jid"], jid2)
        status, jobs = self.http("/jobs")
        self.assertEqual(sorted((j["id"], j["status"]) for j in jobs["jobs"]),
                         sorted([(jid, "FINISHED"), (jid2, "FINISHED")]))
        status, _ = self.http(f"/jars/{jar}", "DELETE")
        self.assertEqual(status, 200)
        self.assertEqual(self.http("/jars")[1]["files"], [])
        status, body = self.http(f"/jars/{jar}/run", "POST", {})
        self.assertEqual(status, 404)
        self.assertIn("was not uploaded", body["errors"][0])

    def test_twenty_jobs_at_once_all_correct_all_archived(self):
        self.cluster()
        procs = []
        for i in range(20):
            out = os.path.join(self.tmp, f"out{i}")
            procs.append((out, subprocess.Popen(
                [SPATE, "run", "-m", f"127.0.0.1:{self.rest_port}", WORDCOUNT, "--input",
                 self.small, "--output", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, stdin=subprocess.DEVNULL)))
        jids = []
        for out, p in procs:
            stdout, stderr = p.communicate(timeout=180)
            self.assertEqual(p.returncode, 0, stderr)
            jids.append(re.search(r"JobID ([0-9a-f]{32})", stdout).group(1))
            self.assertEqual([name for _, _, name in sink_parts(out)], ["part-0-0"])
            final, _ = read_counts(out)
            self.assertEqual(final, dict(self.small_expected))
        self.assertEqual(len(set(jids)), 20)
        status, overview = self.http("/jobs/overview")
        archived = {j["jid"]: j["state"] for j in overview["jobs"]}
        self.assertEqual(archived, {jid: "FINISHED" for jid in jids})
        self.assertEqual(self.overview()["jobs-finished"], 20)
        self.wait_overview(2, slots=4, available=4)

    def test_cancel_with_the_cli_and_with_patch(self):
        self.cluster()
        endless = os.path.join(JOBS, "job_endless.so")
        r = self.run_cli("-d", "-p", "2", endless)
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.wait_all_running(jid)
        listed = self.run_cli("list")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertRegex(listed.stdout, rf"{jid} : Endless \(RUNNING\)")
        c = self.run_cli("cancel", jid)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn(f"Cancelled job {jid}.", c.stdout)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], "CANCELED")

        jar = self.upload(endless)
        status, run = self.http(f"/jars/{jar}/run", "POST", {"parallelism": 2})
        self.assertEqual(status, 200, run)
        jid2 = run["jobid"]
        self.wait_all_running(jid2)
        status, body = self.http(f"/jobs/{jid2}?mode=stop", "PATCH")
        self.assertEqual(status, 400)
        self.assertIn("only mode is 'cancel'", body["errors"][0])
        status, body = self.http(f"/jobs/{jid2}?mode=cancel", "PATCH")
        self.assertEqual(status, 202, body)
        self.assertEqual(self.wait_state(jid2, TERMINAL)["state"], "CANCELED")
        status, result = self.http(f"/jobs/{jid2}/execution-result")
        self.assertEqual(result["job-execution-result"]["application-status"], "CANCELED")
        self.wait_overview(2, slots=4, available=4)
        all_jobs = self.run_cli("list", "-a")
        self.assertIn(f"{jid} : Endless (CANCELED)", all_jobs.stdout)
        self.assertIn(f"{jid2} : Endless (CANCELED)", all_jobs.stdout)
        self.assertIn("No running jobs.", all_jobs.stdout)
        # An attached run cancelled by SIGINT: the CLI cancels the job.
        p = subprocess.Popen([SPATE, "run", "-m", f"127.0.0.1:{self.rest_port}", endless],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
        jid3 = wait_for(lambda: [j["id"] for j in self.http("/jobs")[1]["jobs"]
                                 if j["id"] not in (jid, jid2)], 30, "a third job")[0]
        self.wait_all_running(jid3)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"Job with JobID {jid3} has been cancelled.", stdout)
        self.assertEqual(self.wait_state(jid3, TERMINAL)["state"], "CANCELED")

    def test_failing_job_error_text_in_exceptions(self):
        self.cluster()
        r = self.run_cli(os.path.join(JOBS, "job_failing.so"))
        self.assertEqual(r.returncode, 1)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.assertIn(f"Job with JobID {jid} has failed.", r.stdout)
        self.assertIn("record 500 is poisoned", r.stderr)
        status, exc = self.http(f"/jobs/{jid}/exceptions")
        self.assertEqual(status, 200, exc)
        self.assertIn("record 500 is poisoned", exc["root-exception"])
        self.assertGreater(exc["timestamp"], 0)
        task = "Source: Generator -> Check -> Sink: Unnamed (1/1)"
        self.assertEqual(exc["all-exceptions"][0]["task"], task)
        self.assertIn("record 500 is poisoned", exc["all-exceptions"][0]["exception"])
        self.assertRegex(exc["all-exceptions"][0]["location"], r"^127\.0\.0\.1:\d+$")
        self.assertEqual(exc["exceptionHistory"]["entries"][0]["taskName"], task)
        status, result = self.http(f"/jobs/{jid}/execution-result")
        res = result["job-execution-result"]
        self.assertEqual(res["application-status"], "FAILED")
        self.assertIn("record 500 is poisoned", res["failure-cause"]["stack-trace"])
        self.assertEqual(self.http(f"/jobs/{jid}")[1]["state"], "FAILED")

    def test_bad_libraries_are_clear_errors_and_the_jobmanager_stays(self):
        # Under ASan a crashing main's report (symbolized) takes a while on
        # a loaded machine: more time before the timeout takes it.
        timeout_ms = 5000 if "asan" in BUILD else 1500
        jm = self.cluster("-D", f"web.submit.timeout={timeout_ms} ms", tms=1)
        notelf = os.path.join(self.tmp, "notes.so")
        with open(notelf, "w") as f:
            f.write("this is text, not a shared library\n")
        cases = [
            (os.path.join(JOBS, "job_nomain.so"), 400, "has no spate_job_main"),
            (notelf, 400, "not an ELF shared object"),
            # A sanitizer catches the signal and reports it instead.
            (os.path.join(JOBS, "job_crash.so"), 400,
             "AddressSanitizer: SEGV" if "asan" in BUILD else
             "crashed: its process died of signal 11"),
            (os.path.join(JOBS, "job_forever.so"), 400,
             f"did not return a JobGraph within {timeout_ms} ms (web.submit.timeout): its "
             "process was killed"),
        ]
        for path, code, text in cases:
            jar = self.upload(path)
            for action in ("run", "plan"):
                status, body = self.http(f"/jars/{jar}/{action}", "POST", {})
                self.assertEqual(status, code, (path, action, body))
                self.assertIn(text, body["errors"][0], (path, action))
            self.assertTrue(jm.alive())
        # A child holds its standard descriptors and the result pipe, nothing
        # of the JobManager's.
        jar = self.upload(os.path.join(JOBS, "job_forever.so"))
        seen = jm.count(r"in process \d+")
        done = []
        t = threading.Thread(target=lambda: done.append(
            self.http(f"/jars/{jar}/run", "POST", {})))
        t.start()
        wait_for(lambda: jm.count(r"in process \d+") > seen, 10, "the child to start")
        child = re.findall(r"in process (\d+)", jm.text())[-1]
        # Between its fork and exec, and while a sanitizer starts up, the
        # child may hold more for a moment: it settles on these four.
        wait_for(lambda: sorted(os.listdir(f"/proc/{child}/fd")) == ["0", "1", "2", "3"], 10,
                 "the child to hold its standard descriptors and the pipe only")
        t.join(30)
        self.assertEqual(done[0][0], 400)
        # The children that ran forever were killed and reaped.
        killed = [int(m) for m in re.findall(r"killed process (\d+)", jm.text())]
        self.assertEqual(len(killed), 3)
        for pid in killed:
            self.assertFalse(os.path.exists(f"/proc/{pid}"), pid)
        # Bad arguments to a good library: the job's own words.
        jar = self.upload(WORDCOUNT)
        status, body = self.http(f"/jars/{jar}/run", "POST", {"programArgsList": ["--bogus"]})
        self.assertEqual(status, 400)
        self.assertIn("returned -22", body["errors"][0])
        status, body = self.http(f"/jars/{jar}/run", "POST", {"parallelism": 0})
        self.assertEqual(status, 400)
        self.assertIn("parallelism must be a number", body["errors"][0])
        status, body = self.http(f"/jars/{jar}/run", "POST",
                                 {"jobId": "0123456789abcdef0123456789abcdef"})
        self.assertEqual(status, 400)
        self.assertIn("jobId", body["errors"][0])
        status, body = self.http(f"/jars/{jar}/run", "POST", b"{not json", "application/json")
        self.assertEqual(status, 400)
        self.assertIn("not JSON", body["errors"][0])
        status, body = self.http("/jars/../../etc/passwd/run", "POST", {})
        self.assertEqual(status, 404)
        # A POST /jobs whose library is not ELF is refused before any JobMaster.
        body, ctype = multipart({"request": json.dumps({"jobGraphFileName": "g",
                                                        "jobJarFileNames": ["x.so"]})},
                                [("f0", "g", b"\x00"), ("f1", "x.so", b"text")])
        status, answer = self.http("/jobs", "POST", body, ctype)
        self.assertEqual(status, 400)
        self.assertIn("not an ELF shared object", answer["errors"][0])
        # Still serving, with no job: every attempt was refused before a JobMaster.
        self.assertEqual(self.http("/jobs")[1], {"jobs": []})
        self.assertTrue(jm.alive())

    def test_upload_cap(self):
        self.cluster("-D", "rest.server.max-content-length=20 kb", tms=0)
        big = os.path.join(self.tmp, "big.so")
        with open(big, "wb") as f:
            f.write(b"\x7fELF" + os.urandom(100 * 1024))
        with open(big, "rb") as f:
            body, ctype = multipart({}, [("jarfile", "big.so", f.read())])
        status, answer = self.http("/jars/upload", "POST", body, ctype)
        self.assertEqual(status, 413)
        self.assertIn("more than rest.server.max-content-length allows (20480 bytes)",
                      answer["errors"][0])
        self.assertEqual(self.http("/jars")[1]["files"], [])
        self.assertEqual(os.listdir(self.incoming()), [])
        # The CLI's submission of a library above the cap (25 kB): refused, said so.
        self.assertGreater(os.path.getsize(WORDCOUNT), 20 * 1024)
        r = self.run_cli(WORDCOUNT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("refused the job", r.stderr)
        self.assertIn("rest.server.max-content-length", r.stderr)
        self.assertEqual(self.http("/jobs")[1], {"jobs": []})
        self.assertTrue(self.jm.alive())
        # Below the cap, uploads go through.
        small = os.path.join(self.tmp, "small.so")
        with open(small, "wb") as f:
            f.write(b"\x7fELF" + bytes(8000))
        self.assertEqual(self.upload(small).split("_", 1)[1], "small.so")

    def incoming(self):
        dirs = [d for d in os.listdir(self.tmp) if d.startswith("spate-web-")]
        self.assertEqual(len(dirs), 1)
        return os.path.join(self.tmp, dirs[0], "incoming")

    def test_web_submit_disabled(self):
        self.cluster("-D", "web.submit.enable=false", tms=0)
        with open(WORDCOUNT, "rb") as f:
            body, ctype = multipart({}, [("jarfile", "w.so", f.read())])
        status, answer = self.http("/jars/upload", "POST", body, ctype)
        self.assertEqual(status, 404)
        self.assertIn("web.submit.enable is false", answer["errors"][0])
        for path, method in (("/jars", "GET"), ("/jars/x_w.so/run", "POST"),
                             ("/jars/x_w.so", "DELETE")):
            status, answer = self.http(path, method)
            self.assertEqual(status, 404, path)
        self.assertFalse(self.http("/config")[1]["features"]["web-submit"])

    def test_unreachable_cluster_is_a_clear_error(self):
        port = free_port()
        for args in (["run", "-m", f"127.0.0.1:{port}", WORDCOUNT],
                     ["-D", "rest.address=127.0.0.1", "-D", f"rest.port={port}", "run", WORDCOUNT],
                     ["list", "-m", f"127.0.0.1:{port}"],
                     ["cancel", "-m", f"127.0.0.1:{port}", "0123456789abcdef0123456789abcdef"]):
            r = self.spate(*args)
            self.assertEqual(r.returncode, 1, args)
            self.assertIn(f"cannot reach the JobManager's REST API at http://127.0.0.1:{port}",
                          r.stderr)
            self.assertIn("-m host:port", r.stderr)
        r = self.spate("cancel", "-m", "127.0.0.1:1", "nope")
        self.assertEqual(r.returncode, 2)
        self.assertIn("'nope' is not a job id", r.stderr)
        r = self.spate("run", "-m", "nohostport", WORDCOUNT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("expected host:port", r.stderr)

    def test_run_goes_to_the_configured_cluster_with_the_client_s_paths(self):
        """`spate run JOB.so` with neither -m nor --local submits to the
        cluster the configuration names, as `flink run` does; relative
        --input and --output are the client's folder's, not the
        JobManager's (which runs elsewhere)."""
        self.cluster(tms=1)
        here = os.path.join(self.tmp, "client")
        os.makedirs(here)
        with open(self.small) as src, open(os.path.join(here, "in.txt"), "w") as dst:
            dst.write(src.read())
        r = subprocess.run([SPATE, "-D", "rest.address=127.0.0.1", "-D",
                            f"rest.port={self.rest_port}", "run", WORDCOUNT, "--input", "in.txt",
                            "--output", "out"], cwd=here, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        status, job = self.http(f"/jobs/{jid}")
        self.assertEqual((status, job.get("state")), (200, "FINISHED"), job)
        self.assertIn("Sink: Text File", [v["name"].split(" -> ")[-1] for v in job["vertices"]])
        self.check_counts(os.path.join(here, "out"), self.small_expected)

    def test_run_without_a_cluster_says_how_to_run_locally(self):
        """No cluster configured: `spate run` still goes to the default one
        (localhost:rest.port), and the error says how to run without it;
        execution.target: local runs the job on a mini cluster."""
        conf = os.path.join(self.tmp, "conf")
        os.makedirs(conf)
        with open(os.path.join(conf, "config.yaml"), "w") as f:
            f.write("parallelism.default: 1\n")
        port = free_port()
        r = self.spate("--conf-dir", conf, "-D", f"rest.port={port}", "run", WORDCOUNT)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn(f"cannot reach the JobManager's REST API at http://localhost:{port}",
                      r.stderr)
        self.assertIn("spate run --local", r.stderr)
        r = self.spate("--conf-dir", conf, "-D", f"rest.port={port}", "-D",
                       "execution.target=local", "run", WORDCOUNT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("has finished", r.stdout)

    def test_blobs_leave_with_the_archive(self):
        jm = self.cluster("-D", "jobstore.max-capacity=2", tms=1)
        store = jm.wait_log(r"BlobServer at [\d.:]+ stores in (\S+)").group(1)
        r = self.run_cli(os.path.join(JOBS, "job_failing.so"))
        first = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        blobs = [n for n in os.listdir(store) if n.startswith("blob_")]
        self.assertEqual(len(blobs), 1)
        for i in range(2):
            r = self.run_cli(WORDCOUNT, "--input", self.small, "--output",
                             os.path.join(self.tmp, f"o{i}"))
            self.assertEqual(r.returncode, 0, r.stderr)
        # Two archived WordCounts share one blob; the failing job left the
        # archive and its blob went with it.
        wait_for(lambda: first not in [j["id"] for j in self.http("/jobs")[1]["jobs"]], 10,
                 "the first job to leave the archive")
        self.assertEqual(len(self.http("/jobs")[1]["jobs"]), 2)
        self.assertEqual(self.http(f"/jobs/{first}")[0], 404)
        left = [n for n in os.listdir(store) if n.startswith("blob_")]
        self.assertEqual(len(left), 1)
        self.assertNotEqual(left, blobs)
        jm.wait_log(r"removed blob [0-9a-f]{64}: no job uses it")
        # The TaskManager's copies went when the jobs' tasks ended.
        libs = [d for d in os.listdir(self.tmp) if d.startswith("spate-libraries-")]
        self.assertEqual(len(libs), 1)
        wait_for(lambda: os.listdir(os.path.join(self.tmp, libs[0], "blobs")) == [], 10,
                 "the TaskManager's blob copies to go")


if __name__ == "__main__":
    unittest.main()
