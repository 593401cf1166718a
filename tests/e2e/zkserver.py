"""A ZooKeeper server of its own for a test or benchmark: Debian's
`zookeeper` package on the installed Java, on 127.0.0.1 with a free port
(spatetest.free_port), a temporary data folder and tickTime=200 (so
sessions may be as short as 400 ms), started and stopped by pid. Never a
system service."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from spatetest import free_port

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"


def four_letter(port, word, timeout=1.0, address="127.0.0.1"):
    """The server's answer to a four-letter word, or None."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(4096)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None


class PortTaken(Exception):
    """Another process took the port chosen for ZooKeeper before it bound it."""


class ZooKeeperServer:
    """start(), stop() (by pid), restart() on the same port and data.

    On a test host of tests/chaos/netlab.py: host (its address, and the
    process started in its namespace) and call (the lab's, to ask it
    "ruok" from the lab's network)."""

    def __init__(self, workdir=None, port=None, tick_ms=200, host=None, call=None):
        self.host = host
        self.address = host.addr if host is not None else "127.0.0.1"
        self.call = call or (lambda fn, *args: fn(*args))
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="spate-zk-")
        # A port of its own choosing may be taken by another test between
        # free_port() and ZooKeeper's bind: start() then tries another.
        self.port_chosen = port is None
        self.port = port or free_port()
        self.tick_ms = tick_ms
        self.proc = None
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.data, exist_ok=True)
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        self.write_cfg()

    def write_cfg(self):
        with open(self.cfg, "w") as f:
            f.write(f"tickTime={self.tick_ms}\n"
                    f"dataDir={self.data}\n"
                    f"clientPort={self.port}\n"
                    f"clientPortAddress={self.address}\n"
                    "admin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok,srvr,stat,cons,conf\n"
                    "maxClientCnxns=0\n")

    def answers(self):
        """This server answers on its port: another test's ZooKeeper on a
        port taken meanwhile would say "imok" too, so its data folder is
        asked for."""
        conf = self.call(four_letter, self.port, "conf", 0.5, self.address)
        return conf is not None and f"dataDir={self.data}" in conf

    @property
    def quorum(self):
        return f"{self.address}:{self.port}"

    def start(self, timeout=60.0):
        for attempt in range(5):
            try:
                return self.start_once(timeout)
            except PortTaken:
                self.port = free_port()
                self.write_cfg()
        raise RuntimeError(f"ZooKeeper found no free port in 5 attempts; see "
                           f"{self.dir}/zookeeper.log")

    def start_once(self, timeout):
        java = shutil.which("java")
        if java is None or not os.path.exists(ZOOKEEPER_JAR):
            raise RuntimeError("ZooKeeper needs Debian's zookeeper package and Java "
                               "(scripts/install-deps.sh installs both)")
        args = [java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                "-cp", ZOOKEEPER_JAR, "org.apache.zookeeper.server.ZooKeeperServerMain", self.cfg]
        log = os.path.join(self.dir, "zookeeper.log")
        if self.host is not None:
            self.proc = self.host.start(args, log)
        else:
            with open(log, "a") as out:
                self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None:
                if self.port_chosen and self.call(four_letter, self.port, "ruok", 0.5,
                                                  self.address) is not None:
                    raise PortTaken()
                raise RuntimeError(f"ZooKeeper exited with {self.proc.returncode}; see "
                                   f"{self.dir}/zookeeper.log")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ZooKeeper did not answer at {self.quorum} in {timeout} s")
            time.sleep(0.05)
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def restart(self):
        """On the same port: its clients know only that one."""
        self.stop()
        return self.start_once(60.0)

    def close(self):
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
