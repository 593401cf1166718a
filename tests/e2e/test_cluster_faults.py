"""The cluster under faults (issue 4): TaskManagers killed, hung, started
before the JobManager, pointed at a closed port, claiming a live resource
id; the JobManager killed and restarted. Test names cite the seed step or
message they stand for."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from spatetest import free_port  # noqa: E402

# Quick heartbeats keep the hang test short; the mechanism is the default's.
HB = ["-D", "heartbeat.interval=200 ms", "-D", "heartbeat.timeout=1500 ms"]
# A job that restarts after a lost TaskManager (without, it fails).
RESTARTS = ["-D", "restart-strategy.type=fixed-delay",
            "-D", "restart-strategy.fixed-delay.attempts=100",
            "-D", "restart-strategy.fixed-delay.delay=100 ms"]


class ClusterFaultTest(ClusterTestCase):
    def test_killed_taskmanager_is_dropped_connection_lost(self):
        jm = self.start_jobmanager()
        tms = [self.start_taskmanager(slots=2) for _ in range(3)]
        self.wait_overview(3, slots=6)
        tms[0].kill()
        self.wait_overview(2, slots=4, available=4)
        jm.wait_log(r"TaskManager [0-9a-f]{32} at .* lost: connection lost")
        self.assertEqual(jm.count(r"lost: heartbeat timed out"), 0)

    def test_folders_of_killed_processes_are_swept_at_the_next_start(self):
        """Each process's folders in io.tmp.dirs (the test's, through
        TMPDIR) are removed when it stops; those of a process killed by
        kill -9 are removed by the next JobManager or TaskManager to start,
        and those of live processes are kept."""
        def folders(kind):
            return sorted(n for n in os.listdir(self.tmp) if n.startswith(f"spate-{kind}-"))

        jm = self.start_jobmanager()
        tms = [self.start_taskmanager(slots=1) for _ in range(2)]
        self.wait_overview(2, slots=2)
        self.assertEqual(len(folders("blobs")), 1)
        self.assertEqual(len(folders("libraries")), 2)
        killed_libraries = set(folders("libraries"))
        tms[0].kill()
        jm.kill()
        self.assertEqual(set(folders("libraries")), killed_libraries, "nothing removes them yet")
        jm2 = self.start_jobmanager()
        jm2.wait_log(r"removed '.*/spate-blobs-[0-9a-f]{32}', left by a process that is gone")
        self.assertEqual(len(folders("blobs")), 1, "the new JobManager's own")
        self.assertEqual(len(folders("libraries")), 1, "the live TaskManager's")
        self.assertEqual(jm2.count(r"removed '.*/spate-libraries-"), 1)
        # A TaskManager stopped by SIGTERM removes its own.
        tms[1].signal(signal.SIGTERM)
        tms[1].popen.wait(timeout=30)
        self.assertEqual(folders("libraries"), [])

    def test_lost_taskmanager_is_told_to_its_jobmaster(self):
        jm = self.start_jobmanager()
        tms = [self.start_taskmanager(slots=2) for _ in range(2)]
        self.wait_overview(2, slots=4)
        jid = self.submit_job(3, conf=RESTARTS)  # runs until cancelled
        wait_for(lambda: self.job(jid)["tasks"]["running"] == 3, 20, "3 tasks running")
        holder = next(t for t in tms if "allocated slot" in t.text())
        holder.kill()
        # The JobMaster hears of it, restarts the job and asks for those
        # slots again; two slots are left in the cluster, so a task waits.
        jm.wait_log(r"job=" + jid + r" \d+ of \d+ pipelined regions restart in \d+ ms: "
                    r"TaskManager [0-9a-f]{32} was lost")
        wait_for(lambda: (lambda j: j["state"] == "RUNNING" and j["tasks"]["created"] >= 1)(
            self.job(jid)), 20, "the job running again with a task without a slot")

    def test_hung_taskmanager_dropped_after_heartbeat_timeout_seed000_Heartbeat_Disconnect(self):
        jm = self.start_jobmanager(*HB)
        tms = [self.start_taskmanager(*HB, slots=2) for _ in range(3)]
        self.wait_overview(3, slots=6)
        tms[1].signal(signal.SIGSTOP)
        self.wait_overview(2, slots=4)
        jm.wait_log(r"TaskManager [0-9a-f]{32} at .* lost: heartbeat timed out")
        self.assertEqual(jm.count(r"lost: connection lost"), 0)
        # Resumed, it hears it was disconnected (seed 000's Disconnect) and
        # registers again.
        tms[1].signal(signal.SIGCONT)
        self.wait_overview(3, slots=6)
        tms[1].wait_log(r"the ResourceManager disconnected this TaskExecutor")

    def test_taskmanager_shutdown_disconnects_seed000_Disconnect(self):
        jm = self.start_jobmanager()
        tms = [self.start_taskmanager(slots=1) for _ in range(2)]
        self.wait_overview(2)
        tms[0].signal(signal.SIGTERM)
        self.wait_overview(1)
        jm.wait_log(r"TaskManager [0-9a-f]{32} at .* disconnects: TaskManager shutting down")
        wait_for(lambda: not tms[0].alive(), 20, "the TaskManager to exit")
        self.assertEqual(tms[0].popen.returncode, 0)

    def test_taskmanagers_before_jobmanager_and_jobmanager_restart(self):
        # Two ports no other process is handed while the JobManager is down.
        rpc, rest = free_port(), free_port()
        jm = self.start_jobmanager(rpc_port=rpc, rest_port=rest)
        jm.kill()
        tms = [self.start_taskmanager(slots=2) for _ in range(3)]
        for t in tms:
            t.wait_log(r"registration at resource manager .* failed \(attempt \d+\)")
        jm = self.start_jobmanager(rpc_port=rpc, rest_port=rest)
        self.wait_overview(3, slots=6, available=6)
        # Killed and restarted: every TaskManager comes back.
        jm.kill()
        for t in tms:
            t.wait_log(r"ResourceManager .* lost \(connection lost\)")
        jm = self.start_jobmanager(rpc_port=rpc, rest_port=rest)
        self.wait_overview(3, slots=6, available=6)

    def test_closed_port_retries_with_backoff_then_registration_timeout(self):
        closed = free_port()  # nothing listens there
        tm = self.launch(["-D", f"jobmanager.rpc.port={closed}",
                          "-D", "taskmanager.registration.timeout=3 s",
                          "-D", "cluster.registration.error-delay=800 ms", "taskmanager"],
                         "taskmanager")
        tm.wait_log(r"retrying in 800 ms")
        delays = [int(d) for d in __import__("re").findall(r"failed \(attempt \d+\): .*; "
                                                            r"retrying in (\d+) ms", tm.text())]
        # Back-off: the delay grows (100, 200, 400, ...) up to error-delay.
        self.assertGreaterEqual(len(delays), 3, tm.text())
        self.assertEqual(delays[:3], [100, 200, 400])
        self.assertIn("connection lost", tm.text())
        wait_for(lambda: not tm.alive(), 30, "the TaskManager to give up")
        self.assertEqual(tm.popen.returncode, 1)
        self.assertIn("could not register at the ResourceManager", tm.text())
        self.assertIn("within taskmanager.registration.timeout (3000 ms)", tm.text())

    def test_live_resource_id_is_refused(self):
        jm = self.start_jobmanager()
        rid = "00112233445566778899aabbccddeeff"
        self.start_taskmanager("-D", f"taskmanager.resource-id={rid}", slots=2)
        self.wait_overview(1, slots=2)
        second = self.start_taskmanager("-D", f"taskmanager.resource-id={rid}", slots=2)
        second.wait_log(r"refused: resource id " + rid + r" is already registered by a live "
                        r"TaskManager at 127\.0\.0\.1:\d+/taskexecutor")
        jm.wait_log(r"refusing the registration of TaskManager .*resource id " + rid)
        self.assertEqual(self.overview()["taskmanagers"], 1)

    def test_reregistration_replaces_slots_seed004_s2_3(self):
        # The TaskManager gives up on a silent ResourceManager long before the
        # ResourceManager gives up on it, so it registers again while still
        # registered: its slots are replaced, not added.
        jm = self.start_jobmanager("-D", "heartbeat.interval=200 ms",
                                   "-D", "heartbeat.timeout=60 s")
        tm = self.start_taskmanager("-D", "heartbeat.interval=200 ms",
                                    "-D", "heartbeat.timeout=1 s", slots=2)
        self.wait_overview(1, slots=2)
        tm.signal(signal.SIGSTOP)
        jm.signal(signal.SIGSTOP)
        wait_for(lambda: tm.count("registered at the ResourceManager") == 1, 5, "paused")
        tm.signal(signal.SIGCONT)
        # The ResourceManager is silent meanwhile: the TaskManager's deadline passes.
        tm.wait_log(r"ResourceManager .* lost \(heartbeat timed out\)")
        jm.signal(signal.SIGCONT)
        jm.wait_log(r"TaskManager [0-9a-f]{32} at .* registers again: replacing its slots")
        wait_for(lambda: tm.count("registered at the ResourceManager") == 2, 20, "re-registered")
        self.wait_overview(1, slots=2, available=2)


if __name__ == "__main__":
    unittest.main()
