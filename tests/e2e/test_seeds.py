"""Seed 004's registration, where spate departed from it, with real
processes and a ZooKeeper server of this class's own (see docs/seeds.md):
a TaskManager whose retrieval never names a ResourceManager leader exits
after taskmanager.registration.timeout; the leader session id the
retrieval reports fences the registration, so a ResourceManager answering
as another session is refused and asked again. The unit tests of
tests/unit/taskmanager/test_task_executor.c show the same against a fake
ResourceManager; these show that ZooKeeper's leader information gets there."""

import os
import subprocess
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import test_ha  # noqa: E402
from clustertest import wait_for  # noqa: E402
from test_ha import ZK_PUT, HaTestCase, OwnZooKeeper  # noqa: E402


def leader_info(session, address):
    """ha.proto's LeaderInfo: 1: the session id (16 bytes), 2: the address."""
    assert len(session) == 16 and len(address) < 128
    return b"\x0a\x10" + session + b"\x12" + bytes([len(address)]) + address.encode()


class SeedRegistrationTest(OwnZooKeeper, HaTestCase):
    def test_no_resourcemanager_leader_ends_the_taskmanager_after_the_registration_timeout(self):
        # No JobManager: ZooKeeper never names a ResourceManager leader.
        tm = self.launch([*self.ha_args(), "-D", "taskmanager.registration.timeout=2 s",
                          "taskmanager"], "taskmanager")
        wait_for(lambda: not tm.alive(), 60, "the TaskManager to give up without a leader")
        self.assertEqual(tm.popen.returncode, 1, tm.text())
        self.assertIn("could not register at the ResourceManager (no leader known) within "
                      "taskmanager.registration.timeout (2000 ms)", tm.text())
        self.assertNotIn("connecting to ResourceManager", tm.text())

    def test_a_registration_answered_by_another_leader_session_is_refused(self):
        jm = self.start_ha_jobmanager()
        jm.wait_log(r"this JobManager was granted leadership")
        m = jm.wait_log(r"ResourceManager ([0-9a-f]{32}) granted leadership")
        leading = m.group(1)
        # The TaskManager's cluster (another cluster id) names that
        # ResourceManager's address with a session id that is not its own.
        cluster = "/test-" + uuid.uuid4().hex[:12]
        session = b"ABCDEFGHIJKLMNOP"  # no zero byte: zk_put takes a C string
        address = f"127.0.0.1:{jm.rpc_port}/resourcemanager"
        path = f"/flink{cluster}/leader/resource_manager/connection_info"
        r = subprocess.run([ZK_PUT, test_ha.ZK.quorum, path, leader_info(session, address)],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        args = self.ha_args()
        args[args.index(f"high-availability.cluster-id={self.cluster_id}")] = \
            f"high-availability.cluster-id={cluster}"
        tm = self.launch([*args, "-D", "cluster.registration.refused-registration-delay=100 ms",
                          "taskmanager"], "taskmanager")
        refused = (r"registration at resource manager " + address.replace(".", r"\.") +
                   r" refused: answered by ResourceManager leader session " + leading +
                   r", not by the retrieved leader session " + session.hex())
        tm.wait_log(refused)
        wait_for(lambda: tm.count(refused) >= 3, 30, "the refused registration asked again")
        self.assertNotIn("registered at the ResourceManager", tm.text())
        self.assertTrue(tm.alive())


if __name__ == "__main__":
    unittest.main()
