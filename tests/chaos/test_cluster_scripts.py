"""bin/start-cluster.sh and bin/stop-cluster.sh across hosts over ssh, as
Flink's scripts (issue 30): an sshd on each test host (its own host key,
a key made for the test, on the host's address), conf/masters and
conf/workers naming the hosts by address, the scripts run on the `ctl`
host with env.ssh.opts. The JobManager must run in its host's network
namespace and the TaskManagers in theirs, register, and stop again.

Skipped, with the reason, without network namespaces or sshd."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import netlab  # noqa: E402
from spatetest import SOURCE, SPATE, wait_for  # noqa: E402

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
WHY_NOT = netlab.available() or (None if os.path.exists(SSHD) else
                                 "no sshd (openssh-server; scripts/install-deps.sh installs it)")


@unittest.skipIf(WHY_NOT, WHY_NOT)
class ClusterScriptsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spate-scripts-")
        self.lab = netlab.Lab()
        self.pids = []

    def tearDown(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.lab.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def keygen(self, name):
        path = os.path.join(self.tmp, name)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)
        return path

    def sshd(self, host, hostkey, authorized):
        cfg = os.path.join(self.tmp, f"sshd-{host.name}.conf")
        with open(cfg, "w") as f:
            f.write(f"ListenAddress {host.addr}\nPort 22\nHostKey {hostkey}\n"
                    f"AuthorizedKeysFile {authorized}\nPermitRootLogin prohibit-password\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                    f"StrictModes no\nPidFile {self.tmp}/sshd-{host.name}.pid\n")
        # sshd's privilege separation needs its empty directory.
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        host.start([SSHD, "-D", "-e", "-f", cfg], os.path.join(self.tmp, f"sshd-{host.name}.log"))

    def rest(self, addr, path):
        def call():
            with urllib.request.urlopen(f"http://{addr}:8081{path}", timeout=5) as r:
                return json.loads(r.read())
        try:
            return self.lab.call(call)
        except OSError:
            return None

    def test_start_and_stop_a_cluster_of_three_hosts_over_ssh(self):
        jm, tm1, tm2 = (self.lab.host(n) for n in ("jm1", "tm1", "tm2"))
        key = self.keygen("id")
        hostkey = self.keygen("hostkey")
        authorized = os.path.join(self.tmp, "authorized_keys")
        shutil.copy(key + ".pub", authorized)
        for h in (jm, tm1, tm2):
            self.sshd(h, hostkey, authorized)
        conf = os.path.join(self.tmp, "conf")
        logs = os.path.join(self.tmp, "log")
        os.makedirs(conf)
        opts = (f"-i {key} -o BatchMode=yes -o StrictHostKeyChecking=no "
                "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=10")
        with open(os.path.join(conf, "config.yaml"), "w") as f:
            f.write(f"env.log.dir: {logs}\nenv.ssh.opts: \"{opts}\"\n"
                    "jobmanager.rpc.port: 6123\ntaskmanager.numberOfTaskSlots: 2\n")
        with open(os.path.join(conf, "masters"), "w") as f:
            f.write(f"{jm.addr}:8081\n")
        with open(os.path.join(conf, "workers"), "w") as f:
            f.write(f"{tm1.addr}\n{tm2.addr}\n")
        env = dict(os.environ, SPATE_CONF_DIR=conf, SPATE_BIN=SPATE)
        start = os.path.join(SOURCE, "bin", "start-cluster.sh")
        # sshd may take a moment to listen: the script is run again until it
        # reaches every host (a failed start leaves nothing running).
        last = []

        def started():
            r = self.lab.ctl.run([start], env=env, timeout=120)
            last[:] = [r]
            return r if r.returncode == 0 else None
        try:
            r = wait_for(started, 60, "start-cluster.sh over ssh", interval=0.5)
        except AssertionError:
            self.fail(f"start-cluster.sh: {last[0].stdout}{last[0].stderr}" if last else "no run")
        pids = {}
        for name in os.listdir(logs):
            if name.endswith(".pid"):
                with open(os.path.join(logs, name)) as f:
                    pids[name] = int(f.read())
        self.pids = list(pids.values())
        self.assertEqual(sorted(pids), ["spate-jobmanager-0.pid", "spate-taskmanager-0.pid",
                                        "spate-taskmanager-1.pid"], r.stdout + r.stderr)
        self.assertIn(f"REST API and dashboard: http://{jm.addr}:8081", r.stdout)
        # Each process runs on its host: in that host's network namespace.
        self.assertTrue(jm.owns(pids["spate-jobmanager-0.pid"]))
        self.assertTrue(tm1.owns(pids["spate-taskmanager-0.pid"]))
        self.assertTrue(tm2.owns(pids["spate-taskmanager-1.pid"]))
        wait_for(lambda: (self.rest(jm.addr, "/overview") or {}).get("slots-total") == 4, 60,
                 "two TaskManagers registered at the JobManager on jm1")
        tms = self.rest(jm.addr, "/taskmanagers")["taskmanagers"]
        self.assertEqual(sorted(t["path"].split("/")[0].rsplit(":", 1)[0] for t in tms),
                         sorted([tm1.addr, tm2.addr]), tms)

        r = self.lab.ctl.run([os.path.join(SOURCE, "bin", "stop-cluster.sh")], env=env,
                             timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for name, pid in pids.items():
            wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                     open(f"/proc/{pid}/stat").read().split()[2] == "Z", 30, f"{name} stopped")
        self.assertEqual([n for n in os.listdir(logs) if n.endswith(".pid")], [])


if __name__ == "__main__":
    unittest.main()
