"""Bounds on every port (issue 29): each resource attack runs against a real
cluster while it serves a job and REST; the attacked process keeps its
memory and file descriptors bounded and its log small."""

import os
import resource
import socket
import struct
import subprocess
import threading
import time
import unittest

from clustertest import SPATE, TESTJOBS, ClusterTestCase, Proc, wait_for
from spatetest import sink_lines

HS = 256


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def read_exactly(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            raise ConnectionError("closed")
        got += chunk
    return got


def closed(s):
    """Whether the peer closed s (reads what is left without blocking)."""
    try:
        while True:
            s.setblocking(False)
            d = s.recv(65536)
            if not d:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def open_idle(port, n, payload=b""):
    """n connections to port that send payload (or nothing) and then wait."""
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            continue
        if payload:
            try:
                s.sendall(payload)
            except OSError:
                pass
        socks.append(s)
    return socks


class Flood:
    """A thread that keeps `width` connections to a port open, opening a new
    one for each the server closes, each sending one byte now and then (a
    slow-loris client), until stopped."""

    def __init__(self, port, width, payload=b"S", source="127.0.0.1"):
        self.port, self.width, self.payload, self.source = port, width, payload, source
        self.stop = threading.Event()
        self.opened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        socks = []
        while not self.stop.is_set():
            alive = []
            for s in socks:
                try:
                    s.send(self.payload)
                    alive.append(s)
                except OSError:
                    s.close()
            socks = alive
            while len(socks) < self.width and not self.stop.is_set():
                try:
                    socks.append(socket.create_connection(("127.0.0.1", self.port), timeout=2,
                                                          source_address=(self.source, 0)))
                    self.opened += 1
                except OSError:
                    break
            self.stop.wait(0.2)
        for s in socks:
            s.close()

    def close(self):
        self.stop.set()
        self.thread.join(10)


class BoundsTest(ClusterTestCase):

    def setUp(self):
        super().setUp()
        self.conf = ["-D", f"security.rpc.secret-file={os.path.join(self.tmp, 'secret')}",
                     "-D", "cluster.connections.max-handshaking=32",
                     "-D", "cluster.connections.handshake-timeout=2 s"]

    def cluster(self, *extra, tms=1, slots=2):
        jm = self.start_jobmanager(*self.conf, *extra)
        tm = [self.start_taskmanager(*self.conf, *extra, slots=slots) for _ in range(tms)]
        self.wait_overview(tms)
        return jm, tm

    def run_job(self, *extra):
        """A job whose shuffle crosses the two TaskManagers' data ports; its
        library comes from the BlobServer."""
        out = os.path.join(self.tmp, f"out-{time.monotonic_ns()}")
        r = self.spate(*self.conf, *extra, "run", "-m", f"127.0.0.1:{self.rest_port}", "-p", "2",
                       TESTJOBS, "partition", "--how", "shuffle", "--count", "3000", "--output",
                       out, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(sink_lines(out)), 3000)

    def assert_small_log(self, proc, limit=200_000):
        self.assertLess(os.path.getsize(proc.log), limit, f"{proc.log} grew")

    def test_idle_connections_on_the_data_port(self):
        jm, tms = self.cluster(tms=2, slots=1)
        port = int(tms[0].wait_log(r"data port [\d.]+:(\d+)").group(1))
        before, base_rss = fds(tms[0].pid), rss_kib(tms[0].pid)
        idle = open_idle(port, 300)
        self.addCleanup(lambda: [s.close() for s in idle])
        # At most max-handshaking of them stay; the oldest went for newer ones.
        wait_for(lambda: fds(tms[0].pid) <= before + 40, 20, "the TaskManager's descriptors bounded")
        self.assertLess(rss_kib(tms[0].pid) - base_rss, 64 * 1024, "the TaskManager's memory")
        tms[0].wait_log(r"connections are in their handshake \(the most kept\); this one is the oldest")
        self.run_job()
        # And none past the handshake deadline (their lines are rate-limited
        # by now: the descriptors tell).
        wait_for(lambda: fds(tms[0].pid) <= before + 4, 20, "the idle connections closed")
        self.assertEqual(self.overview()["taskmanagers"], 2)
        self.assert_small_log(tms[0])

    def test_slow_clients_on_the_blob_port(self):
        jm, tms = self.cluster(tms=2, slots=1)
        port = int(jm.wait_log(r"BlobServer at 127\.0\.0\.1:(\d+)").group(1))
        before, base_rss = fds(jm.pid), rss_kib(jm.pid)
        flood = Flood(port, 100)
        self.addCleanup(flood.close)
        wait_for(lambda: flood.opened >= 100, 20, "the slow clients connected")
        # max-handshaking (32) of them held at a time, and what they sent.
        self.assertLess(fds(jm.pid), before + 32 + 64, "the JobManager's descriptors bounded")
        self.assertLess(rss_kib(jm.pid) - base_rss, 64 * 1024, "the JobManager's memory bounded")
        # Jobs still get their libraries, and REST answers.
        self.run_job()
        self.assertEqual(self.overview()["taskmanagers"], 2)
        flood.close()
        jm.wait_log(r"blob connections are in their handshake \(the most kept\): closing the oldest")
        self.assertTrue(jm.alive())
        self.assert_small_log(jm)

    def test_idle_and_slow_connections_on_the_rpc_port(self):
        jm = self.start_jobmanager(*self.conf)
        before = fds(jm.pid)
        flood = Flood(self.rpc_port, 200)
        self.addCleanup(flood.close)
        wait_for(lambda: flood.opened >= 200, 20, "the slow clients connected")
        # TaskManagers still register through it; jobs and REST run.
        self.start_taskmanager(*self.conf, slots=1)
        self.start_taskmanager(*self.conf, slots=1)
        self.wait_overview(2)
        self.run_job()
        self.assertLess(fds(jm.pid), before + 32 + 64, "the JobManager's descriptors bounded")
        flood.close()
        jm.wait_log(r"connections are in their handshake \(the most kept\); this one is the oldest")
        self.assert_small_log(jm)

    def test_trickled_frames_hold_bounded_memory(self):
        # Without a secret (the default), anyone passes the handshake:
        # 40 connections announce 10 MB frames and trickle them.
        nosecret = ["-D", "security.rpc.secret=", "-D", "rpc.max-buffered=32 mb",
                    "-D", "rpc.frame-timeout=3 s"]
        jm, _ = self.cluster(*nosecret, tms=2, slots=1)
        base = rss_kib(jm.pid)
        socks = []
        for i in range(40):
            s = socket.create_connection(("127.0.0.1", self.rpc_port), timeout=10)
            challenge = read_exactly(s, HS)
            hello = (struct.pack(">IHBB", 0x53505243, 2, 0, 0) + b"spate".ljust(64, b"\0")
                     + os.urandom(32) + bytes(32 + 120))
            s.sendall(hello)
            self.assertEqual(read_exactly(s, HS)[6], 0, "handshake refused")
            # 10 MB announced; 2 MB of it sent (80 MB in all), the rest never.
            body = struct.pack(">BBHQ", 1, 2, 0x0601, 0) + bytes(16) + bytes([10]) + b"dispatcher"
            try:
                s.sendall(struct.pack(">I", 10_000_000) + body + bytes(2_000_000))
            except OSError:
                pass  # closed for passing rpc.max-buffered
            socks.append(s)
            self.assertTrue(challenge)
        self.addCleanup(lambda: [s.close() for s in socks])
        jm.wait_log(r"would hold more than 33554432 bytes \(rpc\.max-buffered\)")
        self.assertLess(rss_kib(jm.pid) - base, 64 * 1024, "the JobManager held the frames")
        # REST answers meanwhile (the frames that fit may still be held:
        # rpc.frame-timeout has not passed on a quick machine), both
        # TaskManagers still registered.
        self.assertEqual(self.overview()["taskmanagers"], 2)
        # The frames that fit are dropped at rpc.frame-timeout: every
        # connection ends.
        wait_for(lambda: all(closed(s) for s in socks), 30, "every trickling connection closed")
        self.run_job(*nosecret)
        self.assertTrue(jm.alive())
        self.assert_small_log(jm)

    def test_authenticated_idle_connections_are_capped_per_peer(self):
        # Past the handshake (no secret: anyone passes it), connections
        # that then say nothing are held; one address may hold at most
        # cluster.connections.max-per-peer of them, the rest are refused
        # busy in the challenge, saying which key, and others still get in.
        nosecret = ["-D", "security.rpc.secret=", "-D", "cluster.connections.max-per-peer=40"]
        jm = self.start_jobmanager(*self.conf, *nosecret)
        before, base_rss = fds(jm.pid), rss_kib(jm.pid)
        held, refused = [], []
        self.addCleanup(lambda: [s.close() for s in held + refused])
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", self.rpc_port), timeout=10,
                                         source_address=("127.0.0.2", 0))
            challenge = read_exactly(s, HS)
            if challenge[6] != 0:
                self.assertIn(b"cluster.connections.max-per-peer", challenge)
                refused.append(s)
                continue
            s.sendall(struct.pack(">IHBB", 0x53505243, 2, 0, 0) + b"spate".ljust(64, b"\0")
                      + os.urandom(32) + bytes(32 + 120))
            self.assertEqual(read_exactly(s, HS)[6], 0, "handshake refused")
            held.append(s)
        self.assertEqual((len(held), len(refused)), (40, 60))
        jm.wait_log(r"refused rpc connection from 127\.0\.0\.2:\d+: busy: 40 connections from "
                    r"127\.0\.0\.2 \(cluster\.connections\.max-per-peer\)")
        self.assertLess(fds(jm.pid), before + 40 + 16, "the JobManager's descriptors bounded")
        self.assertLess(rss_kib(jm.pid) - base_rss, 64 * 1024, "the JobManager's memory bounded")
        # TaskManagers (from 127.0.0.1) register, jobs and REST run.
        self.start_taskmanager(*self.conf, *nosecret, slots=1)
        self.start_taskmanager(*self.conf, *nosecret, slots=1)
        self.wait_overview(2)
        self.run_job(*nosecret)
        self.assertTrue(all(not closed(s) for s in held), "an authenticated idle one was closed")
        self.assertTrue(jm.alive())
        self.assert_small_log(jm)

    def test_slow_clients_on_the_rest_port(self):
        # 300 clients from one address, and 32 from each of nine others,
        # trickle a request's line a byte at a time, each byte well within
        # rest.server.connection-timeout, so that libmicrohttpd's timeout
        # (it counts silence) never ends them.
        jm, _ = self.cluster(tms=1, slots=2)
        base_rss, base_fds = rss_kib(jm.pid), fds(jm.pid)
        floods = [Flood(self.rest_port, 300, payload=b"X", source="127.0.0.2")]
        floods += [Flood(self.rest_port, 32, payload=b"X", source=f"127.0.1.{i}")
                   for i in range(1, 10)]
        for f in floods:
            self.addCleanup(f.close)
        # One address keeps rest.server.per-ip-connection-limit (32); the
        # ten keep rest.server.connection-limit (256) between them, and a
        # new connection pushes out the oldest still sending its request.
        wait_for(lambda: all(f.opened >= min(f.width, 40) for f in floods), 30,
                 "the slow clients connected")
        jm.wait_log(r"sent no whole request: rest\.server\.connection-limit reached")
        # Another client still gets its answers, and jobs run through REST.
        for _ in range(5):
            status, body = self.rest("/overview")
            self.assertEqual(status, 200, body)
            self.assertEqual(body["taskmanagers"], 1)
        self.run_job()
        self.assertLess(fds(jm.pid), base_fds + 256 + 32, "the JobManager's descriptors bounded")
        self.assertLess(rss_kib(jm.pid) - base_rss, 64 * 1024, "the JobManager's memory bounded")
        for f in floods:
            f.close()
        self.assertTrue(jm.alive())
        self.assert_small_log(jm)

    def test_rest_answers_503_without_file_descriptors(self):
        limit = 256

        def low_fds():
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        log = os.path.join(self.tmp, "jm-lowfd.log")
        with open(log, "w") as out:
            # One address holds at most rest.server.per-ip-connection-limit
            # connections: lifted, this one address stands for many.
            p = subprocess.Popen([SPATE, *self.conf, "-D", "jobmanager.rpc.port=0", "-D",
                                  "rest.port=0", "-D", "rest.server.per-ip-connection-limit=1000",
                                  "jobmanager"], stdout=out,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 preexec_fn=low_fds)
        self.procs.append(p)
        jm = Proc(p, log)
        m = jm.wait_log(r"REST at http://[\d.]+:(\d+)")
        self.rest_port = int(m.group(1))
        held = open_idle(self.rest_port, limit + 50)
        self.addCleanup(lambda: [s.close() for s in held])
        # libmicrohttpd fails to accept; the repeats are counted, not
        # written (the issue saw 250 MB in 3 s), and a client still hears
        # why: 503, through a descriptor REST keeps in reserve.
        jm.wait_log(r"rest: Error accepting connection: Too many open files")
        status, body = self.rest("/overview")
        self.assertEqual(status, 503, body)
        self.assertIn("no file descriptor left", body["errors"][0])
        self.assertTrue(jm.alive())
        self.assert_small_log(jm, 100_000)
        for s in held:
            s.close()
        wait_for(lambda: self.rest("/overview")[0] == 200, 30, "REST answering again")


if __name__ == "__main__":
    unittest.main(verbosity=2)
