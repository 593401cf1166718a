"""Scale (issue 4): 1,000 simulated TaskExecutors with 4 slots each, as
actors in one TaskManager process, register through TCP with the
ResourceManager of a separate JobManager process."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase  # noqa: E402


class ClusterScaleTest(ClusterTestCase):
    def test_thousand_task_executors_register(self):
        jm = self.start_jobmanager()
        sim = self.launch(["-D", f"jobmanager.rpc.port={self.rpc_port}",
                           "-D", "taskmanager.numberOfTaskSlots=4", "taskmanager",
                           "--count", "1000"], "taskmanager")
        sim.wait_log(r"TaskManager started with 1000 TaskExecutors")
        self.wait_overview(1000, slots=4000, available=4000, timeout=120)
        status, body = self.rest("/taskmanagers")
        self.assertEqual(len(body["taskmanagers"]), 1000)
        self.assertEqual(len({tm["id"] for tm in body["taskmanagers"]}), 1000)
        # One process, one RPC thread: a thousand actors, not a thousand threads.
        with open(f"/proc/{sim.pid}/status") as f:
            threads = int([l for l in f if l.startswith("Threads:")][0].split()[1])
        self.assertLess(threads, 10)
        self.assertTrue(jm.alive())


if __name__ == "__main__":
    unittest.main()
