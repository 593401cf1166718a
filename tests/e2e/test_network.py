"""End-to-end tests of the data plane: producer and consumer tasks in
separate processes (build/bin/net_harness), each with a TaskManager's network
environment, on 127.0.0.1 with ephemeral data ports. No loss and bounded
memory under backpressure, peers that die, garbage on the data port."""

import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from spatetest import BUILD, SpateTestCase, wait_for  # noqa: E402

HARNESS = os.path.join(BUILD, "bin", "net_harness")


def partition_id():
    return secrets.token_hex(16) + "@" + secrets.token_hex(16)


class Proc:
    """A net_harness process whose stdout and stderr go to files."""

    def __init__(self, test, name, args, env=None):
        self.out_path = os.path.join(test.tmp, name + ".out")
        self.err_path = os.path.join(test.tmp, name + ".err")
        e = dict(os.environ)
        e.update(env or {})
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.p = subprocess.Popen([HARNESS, *args], stdout=out, stderr=err,
                                      stdin=subprocess.DEVNULL, env=e)
        test.procs.append(self.p)

    def out(self):
        with open(self.out_path) as f:
            return f.read()

    def err(self):
        with open(self.err_path) as f:
            return f.read()

    def port(self):
        def find():
            for line in self.out().splitlines():
                if line.startswith("data_port="):
                    return int(line.split("=")[1])
            if self.p.poll() is not None:
                raise AssertionError("net_harness exited early: " + self.err())
            return None
        return wait_for(find, what="the data port")

    def result(self, timeout=60):
        self.p.wait(timeout=timeout)
        for line in self.out().splitlines():
            if line.startswith("{"):
                return json.loads(line)
        return None


class NetworkTest(SpateTestCase):
    def produce(self, pid, *extra, env=None, name="producer"):
        return Proc(self, name, ["produce", "--partition", pid, *extra], env=env)

    def consume(self, pid, port, *extra, env=None, name="consumer"):
        return Proc(self, name, ["consume", "--gate", f"{pid}:0@127.0.0.1:{port}", *extra],
                    env=env)

    def test_no_loss_and_bounded_memory_under_backpressure(self):
        pool_mb, size, records = 16, 1024, 200000
        pid = partition_id()
        prod = self.produce(pid, "--records", str(records), "--size", str(size),
                            "--network-memory-mb", str(pool_mb))
        # A slow consumer: 2 ms asleep after every 200 records.
        cons = self.consume(pid, prod.port(), "--delay-every", "200", "--delay-us", "2000")
        c = cons.result(timeout=100)
        p = prod.result(timeout=30)
        self.assertEqual(cons.p.returncode, 0, cons.err())
        self.assertEqual(prod.p.returncode, 0, prod.err())
        self.assertEqual(c["received"], records, "records lost")
        self.assertEqual(c["order_errors"], 0)
        self.assertGreater(p["back_pressured_ms"], 0, "the producer was never back-pressured")
        pool = p["pool_bytes"]
        self.assertGreaterEqual(records * size, 10 * pool, "sent less than 10 × the pool")
        if "ASAN_OPTIONS" in os.environ:
            return  # ASan's shadow memory and quarantine are not the producer's
        grown_kb = p["rss_peak_kb"] - p["rss_start_kb"]
        print(f"\n  sent {records * size >> 20} MiB through a {pool >> 20} MiB pool; RSS grew "
              f"{grown_kb} KiB; back-pressured {p['back_pressured_ms']} ms", file=sys.stderr)
        self.assertLess(grown_kb, pool // 1024 + 32 * 1024,
                        f"producer RSS grew {grown_kb} KiB with a pool of {pool} bytes")

    def start_pair(self):
        """A producer that never ends and a consumer reading it, connected."""
        pid = partition_id()
        debug = {"SPATE_LOG_LEVEL": "debug"}
        prod = self.produce(pid, "--records", "1000000000000", "--size", "64", env=debug)
        port = prod.port()
        cons = self.consume(pid, port)
        wait_for(lambda: "reads partition" in prod.err(), what="the partition request")
        return pid, port, prod, cons

    def test_a_killed_consumer_fails_its_producer(self):
        pid, _, prod, cons = self.start_pair()
        cons.p.send_signal(signal.SIGKILL)
        cons.p.wait()
        prod.p.wait(timeout=30)
        self.assertNotEqual(prod.p.returncode, 0)
        err = prod.err()
        self.assertIn("producer 0 failed", err)
        self.assertIn(pid, err)
        self.assertIn("consumer at 127.0.0.1:", err)

    def test_a_killed_producer_fails_its_consumer(self):
        pid, port, prod, cons = self.start_pair()
        prod.p.send_signal(signal.SIGKILL)
        prod.p.wait()
        cons.p.wait(timeout=30)
        self.assertNotEqual(cons.p.returncode, 0)
        err = cons.err()
        self.assertIn("consumer 0 failed", err)
        self.assertIn(pid, err)
        self.assertIn(f"producer at 127.0.0.1:{port}", err)

    def garbage(self, port, payload, read_reply=False):
        """Sends payload on a fresh connection; returns once the peer closed it."""
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        try:
            if read_reply:
                # The server's challenge, our hello, the server's reply.
                for i in range(2):
                    if i == 1:
                        s.sendall(payload[0])
                    got = b""
                    while len(got) < 256:
                        chunk = s.recv(256 - len(got))
                        self.assertTrue(chunk, "closed during the handshake")
                        got += chunk
                    self.assertEqual(got[6], 0, "handshake refused")
                payload = payload[1]
            s.sendall(payload)
            while True:
                try:
                    if not s.recv(4096):
                        break
                except ConnectionResetError:
                    break
        finally:
            s.close()

    def test_garbage_on_the_data_port_drops_only_that_connection(self):
        pid = partition_id()
        prod = self.produce(pid, "--records", "100000")
        port = prod.port()
        # Not a spate connection at all.
        self.garbage(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + os.urandom(600))
        wait_for(lambda: "dropping data connection from 127.0.0.1:" in prod.err(),
                 what="the log line")
        self.assertIn("not a spate data connection", prod.err())
        # A correct handshake, then a frame of an unknown type.
        hello = (struct.pack(">IHBB", 0x53504454, 2, 0, 0) + b"/default".ljust(64, b"\0")
                 + os.urandom(32) + bytes(32 + 120))
        frame = struct.pack("<IBBHIIiI", 0, 99, 0, 0, 0, 0, 0, 0)
        self.garbage(port, (hello, frame + os.urandom(100)), read_reply=True)
        wait_for(lambda: "unknown frame type 99" in prod.err(), what="the log line")
        # And nothing else: the producer still serves a real consumer.
        self.assertIsNone(prod.p.poll(), "the producer died")
        cons = self.consume(pid, port)
        c = cons.result()
        self.assertEqual(cons.p.returncode, 0, cons.err())
        self.assertEqual(c["received"], 100000)
        self.assertEqual(c["order_errors"], 0)
        prod.result()
        self.assertEqual(prod.p.returncode, 0, prod.err())

    def test_events_stay_in_order_with_records_across_processes(self):
        pids = [partition_id(), partition_id()]
        prod = Proc(self, "producer", ["produce", "--partition", pids[0], "--partition", pids[1],
                                       "--subpartitions", "2", "--partitioner", "hash",
                                       "--records", "300000", "--size", "40",
                                       "--events", "1013"])
        port = prod.port()
        gates = []
        for s in range(2):
            gates += ["--gate", ",".join(f"{p}:{s}@127.0.0.1:{port}" for p in pids)]
        cons = Proc(self, "consumer", ["consume", *gates])
        c = cons.result()
        prod.result()
        self.assertEqual(cons.p.returncode, 0, cons.err())
        self.assertEqual(c["received"], 600000)
        self.assertEqual(c["order_errors"], 0)
        self.assertEqual(c["event_order_errors"], 0)
        # every producer's events reach both consumers
        self.assertEqual(c["events"], 2 * 2 * (300000 // 1013))


if __name__ == "__main__":
    unittest.main(verbosity=2)
