"""The web dashboard (issue 28) in headless Chromium: a JobManager and a
TaskManager, a running event-time window job, and the dashboard at / on the
REST port showing the job's graph with live rates, a completed checkpoint,
the TaskManager's log and a flame graph; then its cancel button. Driven by
Chromium's DevTools protocol (cdp.py). Screenshots of each page are kept in
build/tests/e2e/artifacts/dashboard/ (of the build under test). Beside it,
the REST server's static files: types, gzip, ETags, and paths that would
leave the web root."""

import gzip
import http.client
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cdp import CHROMIUM, Browser  # noqa: E402
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from spatetest import BUILD, SOURCE  # noqa: E402

JOB = os.path.join(BUILD, "tests", "jobs", "metricsjob.so")
ARTIFACTS = os.path.join(BUILD, "tests", "e2e", "artifacts", "dashboard")


class StaticFilesTest(ClusterTestCase):
    def http(self, method, path, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.rest_port, timeout=15)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def test_files_types_compression_and_caching(self):
        self.start_jobmanager("-D", "web.cancel.enable=false", "-D", "web.refresh-interval=750 ms")
        with open(os.path.join(SOURCE, "web", "index.html"), "rb") as f:
            index = f.read()

        status, h, body = self.http("GET", "/")
        self.assertEqual(status, 200)
        self.assertEqual(body, index, "/ is web/index.html, byte for byte")
        self.assertEqual(h["content-type"], "text/html; charset=utf-8")
        self.assertEqual(h["cache-control"], "no-cache")
        self.assertNotIn("content-encoding", h)
        self.assertIn("default-src 'self'", h["content-security-policy"])
        self.assertEqual(h["x-content-type-options"], "nosniff")
        etag = h["etag"]
        self.assertRegex(etag, r'^"[0-9a-f]{20}"$')

        status, h, body = self.http("GET", "/index.html", {"Accept-Encoding": "br, gzip;q=0.8"})
        self.assertEqual(status, 200)
        self.assertEqual(h["content-encoding"], "gzip")
        self.assertEqual(h["vary"], "Accept-Encoding")
        self.assertLess(len(body), len(index))
        self.assertEqual(gzip.decompress(body), index)
        status, h, _ = self.http("GET", "/", {"Accept-Encoding": "gzip;q=0"})
        self.assertNotIn("content-encoding", h)

        status, h, body = self.http("GET", "/", {"If-None-Match": etag})
        self.assertEqual((status, body), (304, b""))
        self.assertEqual(h["etag"], etag)
        status, h, body = self.http("HEAD", "/js/app.js")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(h["content-type"], "text/javascript; charset=utf-8")
        # Every file of web/, as it is and gzipped, with its type.
        types = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
                 ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
        web = os.path.join(SOURCE, "web")
        served = 0
        for folder, _, names in os.walk(web):
            for name in names:
                if name == "README.md":
                    continue
                path = "/" + os.path.relpath(os.path.join(folder, name), web)
                with open(os.path.join(folder, name), "rb") as f:
                    data = f.read()
                status, h, body = self.http("GET", path)
                self.assertEqual((status, body), (200, data), path)
                self.assertEqual(h["content-type"], types[os.path.splitext(name)[1]], path)
                status, h, body = self.http("GET", path, {"Accept-Encoding": "gzip"})
                self.assertEqual(status, 200, path)
                if h.get("content-encoding") == "gzip":
                    self.assertEqual(gzip.decompress(body), data, path)
                else:
                    self.assertEqual(body, data, path)
                served += 1
        self.assertGreater(served, 5)

        # The REST API keeps its paths and its JSON errors beside the files.
        status, h, _ = self.http("GET", "/overview")
        self.assertEqual((status, h["content-type"]), (200, "application/json; charset=UTF-8"))
        status, _, body = self.http("GET", "/nothing.html")
        self.assertEqual(status, 404)
        self.assertIn(b'"errors"', body)
        status, _, body = self.http("POST", "/index.html")
        self.assertEqual(status, 404)
        # The dashboard's switches as Flink's /config reports them.
        status, config = self.rest("/config")
        self.assertEqual(config["refresh-interval"], 750)
        self.assertEqual(config["features"]["web-cancel"], False)
        self.assertEqual(config["features"]["web-submit"], False)

    def test_paths_outside_the_web_root_are_refused(self):
        self.start_jobmanager()
        secret = os.path.join(self.tmp, "secret.txt")
        with open(secret, "w") as f:
            f.write("not for the browser\n")
        rel = os.path.relpath(secret, "/")
        for path in ("/../../../../../../" + rel, "/js/../../../../../../" + rel,
                     "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/" + rel,
                     "/js/..%2f..%2f..%2f..%2f..%2f..%2f..%2f" + rel.replace("/", "%2f"),
                     "/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "/js/%2e%2e/index.html",
                     "/./index.html", "/js/./app.js", "/..%5c..%5cetc%5cpasswd", "/.."):
            status, h, body = self.http("GET", path)
            self.assertEqual(status, 404, (path, body))
            self.assertNotIn(b"not for the browser", body, path)
            self.assertNotIn(b"root:", body, path)
            self.assertTrue(h["content-type"].startswith("application/json"), (path, h))
            self.assertIn(b"web root", body, path)


@unittest.skipIf(CHROMIUM is None, "Debian's chromium is not installed "
                 "(scripts/install-deps.sh installs it)")
class DashboardTest(ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        # This run's screenshots only (each test adds its own).
        shutil.rmtree(ARTIFACTS, ignore_errors=True)
        os.makedirs(ARTIFACTS)

    def setUp(self):
        super().setUp()
        self.browser = None
        # The browser's profile apart: its binary files are no test logs.
        self.profile = tempfile.mkdtemp(prefix="spate-chromium-")

    def tearDown(self):
        if self.browser is not None:
            self.browser.close()
        shutil.rmtree(self.profile, ignore_errors=True)
        super().tearDown()

    def show(self, hash_path):
        self.browser.navigate(f"http://127.0.0.1:{self.rest_port}/#{hash_path}")

    def js(self, expression):
        return self.browser.eval(expression)

    def shot(self, name):
        path = self.browser.screenshot(os.path.join(ARTIFACTS, name))
        print(f"screenshot: {path}", file=sys.stderr)

    def wait_js(self, expression, what, timeout=60):
        return wait_for(lambda: self.js(expression), timeout, what, interval=0.2)

    def vertex_figures(self):
        """{vertex id: {field: data-value}} of the graph's vertices."""
        return self.js("""(() => {
            const out = {};
            for (const g of document.querySelectorAll('#dataflow .vertex')) {
                const f = {};
                for (const t of g.querySelectorAll('text[data-field]'))
                    f[t.dataset.field] = t.dataset.value === undefined ? t.textContent
                        : Number(t.dataset.value);
                out[g.dataset.vertex] = f;
            }
            return out;
        })()""")

    def test_a_running_window_job_in_the_dashboard(self):
        self.start_jobmanager("-D", "web.refresh-interval=500 ms",
                              "-D", "execution.checkpointing.interval=500 ms",
                              "-D", f"state.checkpoints.dir={self.tmp}/checkpoints")
        tm = self.start_taskmanager(slots=2)
        self.wait_overview(1, slots=2)
        jid = self.run_detached("-p", "2", JOB, "eventtime", "200000")
        vertices = {v["name"]: v["id"] for v in self.wait_tasks_running(jid)["vertices"]}
        source = next(i for n, i in vertices.items() if n.startswith("Readings"))
        window = next(i for n, i in vertices.items() if n.startswith("Counts"))
        tmid = self.rest("/taskmanagers")[1]["taskmanagers"][0]["id"]
        self.browser = Browser(self.profile,
                               os.path.join(self.tmp, "chromium.out"))

        # Overview: the cluster's figures and the running job.
        self.show("/overview")
        self.wait_js("document.querySelector('[data-field=jobs-running]')?.textContent === '1'",
                     "the overview to count one running job")
        self.wait_js("document.querySelector('#running-jobs')?.textContent.includes('eventtime')",
                     "the running job in the overview's list")
        self.assertEqual(self.js("document.querySelector('[data-field=slots-total]').textContent"),
                         "2")
        # web.submit.enable is off: no page to submit from.
        self.assertTrue(self.js("document.querySelector('#nav-submit').hidden"))
        self.shot("overview.png")

        # The job's graph: both vertices, their parallelism, and rates that
        # are not zero and change from one refresh to the next.
        self.show(f"/job/{jid}")
        first = wait_for(lambda: (lambda f: f if f.get(source, {}).get("records-out-rate", 0) > 0
                                  and f.get(window, {}).get("records-in-rate", 0) > 0 else None)(
            self.vertex_figures()), 60, "non-zero rates in the graph", interval=0.2)
        self.assertEqual(set(first), {source, window}, first)
        for vid in (source, window):
            self.assertEqual(first[vid]["parallelism"], 2, first[vid])
        wait_for(lambda: (lambda f: f[source]["records-out-rate"] > 0
                          and (f[source]["records-out-rate"], f[window]["records-in-rate"])
                          != (first[source]["records-out-rate"], first[window]["records-in-rate"]))(
            self.vertex_figures()), 30, "the graph's rates to change (a live refresh)", interval=0.2)
        figures = wait_for(lambda: (lambda f: f if isinstance(f[window]["watermark"], (int, float))
                                    else None)(self.vertex_figures()), 30,
                           "the window vertex's low watermark", interval=0.2)
        # The job's event time starts at 0 and moves 1 ms a reading.
        self.assertGreater(figures[window]["watermark"], 0)
        self.assertNotIn("No Watermark", self.js(
            f"document.querySelector('[data-vertex=\"{window}\"] [data-field=watermark]')"
            ".textContent"))
        self.assertIn("Busy (max):", self.js(
            f"document.querySelector('[data-vertex=\"{window}\"] [data-field=busy]').textContent"))
        self.wait_js("document.querySelector('#job-overview table')?.textContent.includes('Counts')",
                     "the vertex table")
        self.shot("job-graph.png")

        # Checkpoints: a completed one in the history.
        self.show(f"/job/{jid}/checkpoints")
        self.wait_js("[...document.querySelectorAll('#checkpoint-history tbody tr')]"
                     ".some(r => r.textContent.includes('COMPLETED'))",
                     "a completed checkpoint in the dashboard's history")
        # A checkpoint's details: each vertex's acknowledgements, then each subtask's.
        cid = self.js("(() => { const r = [...document.querySelectorAll('#checkpoint-history "
                      "tbody tr')].find(r => r.textContent.includes('COMPLETED')); r.click(); "
                      "return Number(r.cells[0].textContent); })()")
        self.wait_js(f"document.querySelector('#checkpoint-details h2')?.textContent === "
                     f"'Checkpoint {cid}' && document.querySelectorAll('#checkpoint-details > "
                     "table tbody tr').length === 2", "the checkpoint's two vertices")
        self.js("document.querySelector('#checkpoint-details > table tbody tr').click()")
        rows = self.wait_js("(() => { const r = document.querySelectorAll('#checkpoint-subtasks "
                            "tbody tr'); return r.length ? [...r].map(x => x.cells[1].textContent)"
                            " : null; })()", "the vertex's subtasks in the checkpoint")
        self.assertEqual(len(rows), 2, rows)
        self.shot("checkpoints.png")

        # The TaskManager: its list, then its log.
        self.show("/taskmanagers")
        self.wait_js(f"document.querySelector('#taskmanager-list')?.textContent.includes('{tmid}')",
                     "the TaskManager in the list")
        self.show(f"/taskmanager/{tmid}/metrics")
        self.wait_js("(t => t?.includes('0 free of 2') && t.includes('Status.Process.Memory.RSS'))"
                     "(document.querySelector('#taskmanager-metrics')?.textContent)",
                     "the TaskManager's slots (both taken) and metrics")
        self.show(f"/taskmanager/{tmid}/logs/{os.path.basename(tm.log)}")
        self.wait_js(f"document.querySelector('#log-text')?.textContent"
                     f".includes('TaskExecutor {tmid} started')", "the TaskManager's log")
        self.shot("taskmanager-log.png")
        self.show(f"/taskmanager/{tmid}/thread-dump")
        self.wait_js("document.querySelector('#thread-dump')?.textContent.length > 0",
                     "the TaskManager's thread dump")

        # The window vertex's flame graph: the window operator's functions.
        self.show(f"/job/{jid}/flamegraph/{window}")
        # A sample without them (the threads waiting for input, on a busy
        # machine): Sample Again, as a user would.
        frames = self.wait_js("(() => { const n = [...document.querySelectorAll('#flamegraph "
                              ".frame')].map(f => f.dataset.name).filter(n => "
                              "n.startsWith('window_')); if (n.length) return n; "
                              "document.querySelector('#flame-sample')?.click(); return null; })()",
                              "the window operator's functions in the flame graph")
        print(f"window frames: {sorted(set(frames))}", file=sys.stderr)
        self.shot("flamegraph.png")
        # A click zooms into a frame: it spans the whole width.
        width = self.js("document.querySelector('#flamegraph svg').getAttribute('width')")
        self.js(f"document.querySelector('#flamegraph .frame[data-name=\"{frames[0]}\"]')"
                ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
        self.wait_js(f"document.querySelector('#flamegraph .frame[data-name=\"{frames[0]}\"] rect')"
                     f"?.getAttribute('width') === '{width}'", "the zoomed frame at full width")
        self.shot("flamegraph-zoomed.png")

        # The job's other tabs: its (empty) exception history, its configuration.
        self.show(f"/job/{jid}/exceptions")
        entries = self.rest(f"/jobs/{jid}/exceptions")[1]["exceptionHistory"]["entries"]
        if entries:  # a restart on a loaded machine: the page shows what the API has
            print(f"the job's exceptions: {[e['stacktrace'][:200] for e in entries]}",
                  file=sys.stderr)
            self.wait_js(f"document.querySelector('#job-exceptions')?.textContent"
                         f".includes({json.dumps(entries[-1]['exceptionName'])})",
                         "the job's exceptions")
        else:
            self.wait_js("document.querySelector('#job-exceptions')?.textContent === "
                         "'No exceptions.'", "the job's exceptions: none")
        self.show(f"/job/{jid}/configuration")
        self.wait_js("document.querySelector('#job-configuration')?.textContent"
                     ".includes('restart-strategy')", "the job's configuration")

        # The JobManager's configuration.
        self.show("/jobmanager/config")
        self.wait_js("document.querySelector('#jobmanager-config')?.textContent"
                     ".includes('web.refresh-interval')", "the JobManager's configuration")
        self.assertEqual(self.browser.page_errors(), [])

        # Cancel (web.cancel.enable is on by default): asked, confirmed, done.
        self.show(f"/job/{jid}")
        self.wait_js("!!document.querySelector('#cancel-job')", "the cancel button")
        self.js("document.querySelector('#cancel-job').click()")
        self.assertEqual(self.job(jid)["state"], "RUNNING", "one click only asks")
        self.js("document.querySelector('#cancel-job').click()")
        self.wait_state(jid, ("CANCELED",), timeout=60)
        self.wait_js("document.querySelector('.head .state')?.textContent === 'CANCELED'",
                     "the job shown CANCELED")
        self.assertFalse(self.js("!!document.querySelector('#cancel-job')"))
        self.shot("job-canceled.png")
        self.show("/jobs/completed")
        self.wait_js("(t => t?.includes('eventtime') && t.includes('CANCELED'))(document"
                     ".querySelector('#view table')?.textContent)", "the job among the completed")
        self.assertEqual(self.js("document.querySelectorAll('#view table tbody tr').length"), 1)
        self.assertEqual(self.browser.page_errors(), [])

    def test_submit_a_job_from_the_dashboard(self):
        """web.submit.enable: a job library uploaded through the page's file
        chooser, run with arguments and a parallelism, its page opened."""
        self.start_jobmanager("-D", "web.submit.enable=true")
        self.start_taskmanager(slots=2)
        self.wait_overview(1, slots=2)
        self.browser = Browser(self.profile, os.path.join(self.tmp, "chromium.out"))
        self.show("/submit")
        self.wait_js("!!document.querySelector('#jar-file') && "
                     "!document.querySelector('#nav-submit').hidden", "the submit page")
        # The file as a user picks it in the chooser.
        doc = self.browser.call("DOM.getDocument")["root"]["nodeId"]
        node = self.browser.call("DOM.querySelector", nodeId=doc, selector="#jar-file")["nodeId"]
        self.browser.call("DOM.setFileInputFiles", nodeId=node, files=[JOB])
        self.js("document.querySelector('#upload-form').requestSubmit()")
        self.wait_js("document.querySelector('#jar-list')?.textContent.includes('metricsjob.so')",
                     "the uploaded library in the list")
        self.js("document.querySelector('#jar-list button.run').click()")
        self.wait_js("!!document.querySelector('#run-form')", "the run form")
        self.js("document.querySelector('#program-args').value = 'eventtime 2000';"
                "document.querySelector('#parallelism').value = '2';"
                "document.querySelector('#run-form').requestSubmit()")
        jid = self.wait_js("(m => m && m[1])(location.hash.match(/^#\\/job\\/([0-9a-f]{32})/))",
                           "the new job's page")
        job = self.wait_tasks_running(jid)
        self.assertEqual(job["name"], "eventtime")
        self.assertEqual([v["parallelism"] for v in job["vertices"]], [2, 2])
        self.wait_js("document.querySelector('[data-field=job-name]')?.textContent === 'eventtime'",
                     "the job's name on its page")
        self.shot("submitted.png")
        self.assertEqual(self.browser.page_errors(), [])

    def test_cancel_under_rest_authentication(self):
        """rest.authentication on: reading needs nothing, so the dashboard
        shows the job as before; its cancel is refused (401), and the page
        asks for the token, asks again after a wrong one, and cancels with
        the right one, which it then keeps for the tab's session."""
        tokens = os.path.join(self.tmp, "tokens")
        fd = os.open(tokens, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("dashboard-token\n")
        auth = ["-D", f"rest.authentication.token-file={tokens}"]
        self.start_jobmanager(*auth)
        self.start_taskmanager(slots=2)
        self.wait_overview(1, slots=2)
        r = self.spate(*auth, "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOB,
                       "eventtime", "1000")
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = r.stdout.split("JobID ")[1].split()[0]
        self.wait_tasks_running(jid)
        self.browser = Browser(self.profile, os.path.join(self.tmp, "chromium.out"))
        self.show(f"/job/{jid}")
        self.wait_js("document.querySelector('[data-field=job-name]')?.textContent === "
                     "'eventtime'", "the job's page, read without a token")
        self.wait_js("!!document.querySelector('#cancel-job')", "the cancel button")
        self.js("document.querySelector('#cancel-job').click()")
        self.js("document.querySelector('#cancel-job').click()")
        self.wait_js("document.querySelector('#sign-in')?.open", "the sign-in dialog")
        self.assertIn("Unauthorized", self.js(
            "document.querySelector('#sign-in [data-field=auth-reason]').textContent"))
        self.shot("sign-in.png")
        self.js("document.querySelector('#auth-token').value = 'wrong-token';"
                "document.querySelector('#sign-in form').requestSubmit()")
        # Refused again: a new dialog, empty, saying why.
        self.wait_js("document.querySelector('#sign-in')?.open && "
                     "document.querySelector('#auth-token').value === ''", "the dialog again")
        self.assertEqual(self.job(jid)["state"], "RUNNING")
        self.js("document.querySelector('#auth-token').value = 'dashboard-token';"
                "document.querySelector('#sign-in form').requestSubmit()")
        self.wait_state(jid, ("CANCELED",), timeout=60)
        self.wait_js("document.querySelector('.head .state')?.textContent === 'CANCELED'",
                     "the job shown CANCELED")
        self.assertFalse(self.js("!!document.querySelector('#sign-in')"))
        self.assertEqual(self.js("sessionStorage.getItem('spate.authorization')"),
                         "Bearer dashboard-token")
        self.shot("canceled-with-token.png")
        # The browser reports the two refused requests, and nothing else.
        errors = self.browser.page_errors()
        self.assertEqual(len(errors), 2, errors)
        for e in errors:
            self.assertIn("401", e)


if __name__ == "__main__":
    unittest.main()
