"""The cluster end to end (issue 4): a JobManager and TaskManagers as real
processes, the REST API, and seed 004's slot flow driven by testjobs'
`slots` job (N subtasks, a slot each). Test names cite the seed step or
message they stand for."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, wait_for  # noqa: E402


class ClusterTest(ClusterTestCase):
    def test_three_taskmanagers_overview_seed004_s2_3_slot_report(self):
        jm = self.start_jobmanager()
        tms = [self.start_taskmanager(slots=2) for _ in range(3)]
        o = self.wait_overview(3, slots=6, available=6)
        self.assertEqual(o["jobs-running"], 0)
        # The same with the /v1 prefix, and Flink's field names.
        status, body = self.rest("/v1/overview")
        self.assertEqual(status, 200)
        for key in ("taskmanagers", "slots-total", "slots-available", "jobs-running",
                    "jobs-finished", "jobs-cancelled", "jobs-failed", "flink-version"):
            self.assertIn(key, body)
        status, body = self.rest("/taskmanagers")
        self.assertEqual(status, 200)
        self.assertEqual(len(body["taskmanagers"]), 3)
        tm = body["taskmanagers"][0]
        for key in ("id", "path", "dataPort", "slotsNumber", "freeSlots", "hardware",
                    "timeSinceLastHeartbeat", "totalResource", "freeResource"):
            self.assertIn(key, tm)
        self.assertEqual(tm["slotsNumber"], 2)
        status, one = self.rest(f"/v1/taskmanagers/{tm['id']}")
        self.assertEqual(status, 200, one)
        self.assertEqual(one["id"], tm["id"])
        self.assertEqual(one["allocatedSlots"], [])
        status, cfg = self.rest("/config")
        self.assertEqual(status, 200)
        self.assertIn("features", cfg)
        self.assertIn("refresh-interval", cfg)
        status, jobs = self.rest("/jobs/overview")
        self.assertEqual((status, jobs), (200, {"jobs": []}))
        # Seed 004 §2.1-2.3 in the logs: registration, then the slot report.
        for t in tms:
            t.wait_log(r"registered at the ResourceManager .* under registration id")
        self.assertEqual(jm.count(r"registered TaskManager [0-9a-f]{32} at .* with 2 slots"), 3)

    def test_rest_errors(self):
        self.start_jobmanager()
        for path in ("/nosuch", "/v1/nosuch", "/jobs/overview/extra"):
            status, body = self.rest(path)
            self.assertEqual(status, 404, path)
            self.assertEqual(body, {"errors": [f"Not found: {path}"]})
        status, body = self.rest("/taskmanagers/0123456789abcdef0123456789abcdef")
        self.assertEqual(status, 404)
        self.assertIn("Could not find TaskManager", body["errors"][0])
        status, body = self.rest("/taskmanagers/not-an-id")
        self.assertEqual(status, 404)
        status, body = self.rest("/jobs/0123456789abcdef0123456789abcdef")
        self.assertEqual(status, 404)
        self.assertIn("not found", body["errors"][0])
        for bad in ("zzz", "0123", "g123456789abcdef0123456789abcdef"):
            status, body = self.rest(f"/jobs/{bad}")
            self.assertEqual(status, 400, bad)
            self.assertIn("errors", body)
        status, body = self.rest("/overview", method="DELETE")
        self.assertEqual(status, 405)
        self.assertIn("errors", body)

    def test_slot_flow_seed004_s2_4_request_slot_s2_5_offer_slots(self):
        jm = self.start_jobmanager()
        for _ in range(3):
            self.start_taskmanager(slots=2)
        self.wait_overview(3, slots=6, available=6)
        go = os.path.join(self.tmp, "go")
        jid = self.submit_job(8, "--until", go)
        # 8 asked, 6 free: 6 granted (their tasks SCHEDULED), 2 wait; no
        # task is deployed before every one has its slot.
        wait_for(lambda: self.job(jid)["tasks"]["scheduled"] == 6, 20, "6 tasks with slots")
        job = self.job(jid)
        self.assertEqual((job["tasks"]["created"], job["tasks"]["running"]), (2, 0), job)
        self.assertEqual(job["state"], "RUNNING")
        self.assertEqual(self.overview()["slots-available"], 0)
        # A fourth TaskManager joins: the waiting requests get its slots.
        self.start_taskmanager(slots=2)
        wait_for(lambda: self.job(jid)["tasks"]["running"] == 8, 20, "8 tasks running")
        jm.wait_log(r"job=" + jid + r" deploying 8 tasks")
        # The job ends; its slots are free again.
        with open(go, "w"):
            pass
        wait_for(lambda: self.job(jid)["state"] == "FINISHED", 20, "job finished")
        self.wait_overview(4, slots=8, available=8)
        status, body = self.rest("/jobs/overview")
        self.assertEqual(body["jobs"][0]["jid"], jid)
        self.assertEqual(body["jobs"][0]["state"], "FINISHED")
        self.assertEqual(self.overview()["jobs-finished"], 1)

    def test_slot_request_timeout(self):
        jm = self.start_jobmanager("-D", "slot.request.timeout=1500 ms")
        self.start_taskmanager(slots=2)
        self.wait_overview(1, slots=2, available=2)
        jid = self.submit_job(3)
        wait_for(lambda: self.job(jid)["state"] == "FAILED", 30, "job failed")
        body = self.job(jid)
        self.assertIn("within slot.request.timeout (1500 ms", body["failure"])
        jm.wait_log(r"job=" + jid + r" job 'Slots' is failing: could not allocate a slot .* "
                    r"slot\.request\.timeout")
        # The two slots it held are free again.
        self.wait_overview(1, slots=2, available=2)
        self.assertEqual(self.overview()["jobs-failed"], 1)

    def test_delete_cluster_stops_taskmanagers_seed000_StopCluster(self):
        jm = self.start_jobmanager()
        tms = [self.start_taskmanager(slots=1) for _ in range(2)]
        self.wait_overview(2)
        status, _ = self.rest("/cluster", method="DELETE")
        self.assertEqual(status, 200)
        for p in [jm, *tms]:
            wait_for(lambda p=p: not p.alive(), 20, f"{p.log} to exit")
            self.assertEqual(p.popen.returncode, 0, p.log)
        for t in tms:
            self.assertIn("the cluster is shutting down (DELETE /cluster)", t.text())

    def test_stop_cluster_command_stops_every_process_seed000_StopCluster(self):
        jm = self.start_jobmanager()
        tms = [self.start_taskmanager(slots=1) for _ in range(2)]
        self.wait_overview(2)
        r = self.spate("stop-cluster", "-m", f"127.0.0.1:{self.rest_port}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Stopping the cluster at http://127.0.0.1:", r.stdout)
        for p in [jm, *tms]:
            wait_for(lambda p=p: not p.alive(), 20, f"{p.log} to exit")
            self.assertEqual(p.popen.returncode, 0, p.log)
        for t in tms:
            self.assertIn("the cluster is shutting down (DELETE /cluster)", t.text())
            # The access log: each TaskManager names the JobManager's
            # address that stopped it; the JobManager, the REST client.
            t.wait_log(r"(?m)rpc: access: te\.stop_task_executor from 127\.0\.0\.1:\d+$")
        jm.wait_log(r"access: DELETE /cluster from 127\.0\.0\.1:\d+")
        jm.wait_log(r"(?m)rpc: access: dispatcher\.shutdown_cluster from in-process$")
        # Nothing answers any more: a clear error, not a hang.
        r = self.spate("stop-cluster", "-m", f"127.0.0.1:{self.rest_port}")
        self.assertEqual(r.returncode, 1)
        self.assertIn("spate stop-cluster:", r.stderr)

    def test_sigterm_stops_the_jobmanager_only(self):
        """As Flink's: SIGTERM to a JobManager stops that process; its
        TaskManagers keep running, and register with the JobManager that
        comes up at its address. Without high availability its running job
        is not kept (nothing stores it): the TaskManager ends the job's tasks
        when the JobMaster goes, and its slot is free for the next."""
        jm = self.start_jobmanager()
        port = self.rpc_port
        tm = self.start_taskmanager(slots=1)
        self.wait_overview(1)
        jid = self.submit_job(1, "--run-ms", "600000")
        wait_for(lambda: self.job(jid)["state"] == "RUNNING", 60, "the job running")
        jm.signal(signal.SIGTERM)
        wait_for(lambda: not jm.alive(), 20, "the JobManager to exit")
        self.assertEqual(jm.popen.returncode, 0, jm.log)
        jm.wait_log(r"stopping this JobManager only; its TaskManagers keep running")
        jm.wait_log(r"JobManager stopped")
        self.assertNotIn("rm.stop_cluster", jm.text())
        tm.wait_log(r"JobMaster \S+ of job " + jid + r" lost")
        self.start_jobmanager(rpc_port=port)
        self.wait_overview(1, slots=1, available=1)
        self.assertTrue(tm.alive())
        self.assertNotIn("the cluster is shutting down", tm.text())
        status, body = self.rest("/jobs/overview")
        self.assertEqual((status, body["jobs"]), (200, []))

    def test_the_access_log_names_the_peer_of_each_control(self):
        """Every control between processes (registrations, slots, deploying
        and cancelling tasks) is in the access log of the process that
        serves it, with its peer; periodic traffic and queries are not."""
        jm = self.start_jobmanager()
        tm = self.start_taskmanager(slots=1)
        self.wait_overview(1)
        jid = self.submit_job(1, "--run-ms", "600000")
        wait_for(lambda: self.job(jid)["state"] == "RUNNING", 60, "the job running")
        self.spate("savepoint", "-m", f"127.0.0.1:{self.rest_port}", jid,
                   os.path.join(self.tmp, "savepoints"), timeout=60)
        jm.wait_log(r"access: POST /jobs/" + jid + r"/savepoints from 127\.0\.0\.1:\d+")
        status, _ = self.rest(f"/jobs/{jid}?mode=cancel", method="PATCH")
        self.assertEqual(status, 202)
        wait_for(lambda: self.job(jid)["state"] == "CANCELED", 60, "the job canceled")
        jm.wait_log(r"access: PATCH /jobs/" + jid + r" from 127\.0\.0\.1:\d+")
        # The TaskManager's address, the JobManager's, or this process (a
        # JobMaster beside its ResourceManager, REST beside the Dispatcher).
        peer, inside = r"127\.0\.0\.1:\d+", "in-process"
        for proc, method, who in [(jm, "rm.register_task_executor", peer),
                                  (jm, "jm.register_task_manager", peer),
                                  (tm, "te.request_slot", peer), (tm, "te.submit_task", peer),
                                  (tm, "te.cancel_task", peer), (tm, "te.free_slot", peer),
                                  (jm, "rm.register_job_master", inside),
                                  (jm, "dispatcher.trigger_savepoint", inside),
                                  (jm, "dispatcher.cancel_job", inside)]:
            proc.wait_log(r"(?m)rpc: access: " + method.replace(".", r"\.") + " from " + who
                          + "$")
        for proc, method in [(jm, "rm.send_slot_report"), (jm, "jm.update_task_execution_state"),
                             (tm, "te.request_metric_dump"), (jm, "dispatcher.request_job")]:
            self.assertNotIn("access: " + method, proc.text())


class ScriptsTest(ClusterTestCase):
    def test_start_and_stop_cluster_scripts(self):
        import re
        import subprocess
        from clustertest import SPATE
        from spatetest import SOURCE
        conf = os.path.join(self.tmp, "conf")
        logs = os.path.join(self.tmp, "log")
        os.makedirs(conf)
        with open(os.path.join(conf, "config.yaml"), "w") as f:
            f.write(f"jobmanager.rpc.port: 0\nrest.port: 0\nenv.log.dir: {logs}\n"
                    "taskmanager.numberOfTaskSlots: 2\n")
        with open(os.path.join(conf, "workers"), "w") as f:
            f.write("# two here\nlocalhost\n127.0.0.1\n")
        env = dict(os.environ, SPATE_CONF_DIR=conf, SPATE_BIN=SPATE)

        def start():
            """Runs start-cluster.sh: its processes' pid files and REST port."""
            r = subprocess.run([os.path.join(SOURCE, "bin", "start-cluster.sh")], env=env,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            pids = {}
            for name in os.listdir(logs):
                if name.endswith(".pid"):
                    with open(os.path.join(logs, name)) as f:
                        pids[name] = int(f.read())
            return pids, int(re.search(r"http://[\d.]+:(\d+)", r.stdout).group(1))
        pids, self.rest_port = start()
        self.assertEqual(sorted(pids), ["spate-jobmanager-0.pid", "spate-taskmanager-0.pid",
                                        "spate-taskmanager-1.pid"])
        try:
            self.wait_overview(2, slots=4)
            r = subprocess.run([os.path.join(SOURCE, "bin", "stop-cluster.sh")], env=env,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            for pid in pids.values():
                self.assertFalse(os.path.exists(f"/proc/{pid}") and
                                 open(f"/proc/{pid}/stat").read().split()[2] != "Z")
            self.assertEqual([n for n in os.listdir(logs) if n.endswith(".pid")], [])
            self.assertTrue(any(n.startswith("spate-taskmanager-0-") for n in os.listdir(logs)))
            # A second start appends to the logs (log.file), as Flink's
            # does, and its wait reads only its own start's line.
            jm_log = next(os.path.join(logs, n) for n in os.listdir(logs)
                          if n.startswith("spate-jobmanager-0-") and n.endswith(".log"))
            pids, second = start()
            self.assertNotEqual(second, self.rest_port, "the first start's line was read")
            self.rest_port = second
            self.wait_overview(2, slots=4)
            r = subprocess.run([os.path.join(SOURCE, "bin", "stop-cluster.sh")], env=env,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(jm_log) as f:
                self.assertEqual(f.read().count("JobManager started"), 2)
            self.assertTrue(os.path.exists(jm_log[:-len(".log")] + ".out"))
        finally:
            for pid in pids.values():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


if __name__ == "__main__":
    unittest.main()
