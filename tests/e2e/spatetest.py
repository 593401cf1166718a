"""Helpers for spate's end-to-end tests: find the build, run spate commands,
start and stop processes by pid, wait for conditions (never bare sleeps).

Tests use 127.0.0.1, ephemeral ports and a temporary directory, and kill only
the processes they started."""

import atexit
import fcntl
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE = os.environ.get("SPATE_SOURCE") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("SPATE_BUILD") or os.path.join(SOURCE, "build")
SPATE = os.path.join(BUILD, "bin", "spate")

RUN_PREFIX = "spate-e2e-run-"


def _sweep_dead_runs(base):
    """Removes the run folders of test processes that died without cleaning
    up (killed by ctest's timeout or by hand): those whose lock can be
    taken. A live process holds its lock; a folder whose lock is not in
    place yet is being made and is left alone."""
    for path in glob.glob(os.path.join(base, RUN_PREFIX + "*")):
        try:
            fd = os.open(os.path.join(path, ".lock"), os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass
        finally:
            os.close(fd)


def _own_run_folder():
    """One folder holds every temporary file of this test process: the
    folders tempfile makes and, through TMPDIR, those of the processes it
    starts. The process holds a lock on it while it lives and removes it
    when it exits; the next test process to start removes it if this one
    was killed (as core/tmp_dir does for the daemons' folders)."""
    base = tempfile.gettempdir()
    path = tempfile.mkdtemp(prefix=RUN_PREFIX, dir=base)
    fd = os.open(os.path.join(path, ".lock.new"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(os.path.join(path, ".lock.new"), os.path.join(path, ".lock"))
    _sweep_dead_runs(base)
    tempfile.tempdir = path
    os.environ["TMPDIR"] = path
    atexit.register(shutil.rmtree, path, True)
    return fd


_RUN_LOCK = _own_run_folder()


def free_port():
    """A port on 127.0.0.1 that was free a moment ago and stays free until
    the test binds it: it is chosen below the kernel's ephemeral range, so no
    process that binds port 0 (every spate process of every test running
    beside this one) can be handed it in the meantime. An ephemeral port
    cannot promise that: a TaskManager once took the port a restarting
    JobManager had freed."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            first = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    low = 10000 if first > 12000 else 1024
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(low, first)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in [{low}, {first}) on 127.0.0.1")


def wait_for(condition, timeout=30.0, what="condition", interval=0.02):
    """Polls condition() until it returns a truthy value, which it returns."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


PART_RX = re.compile(r"^part-(\d+)-(\d+)$")


def sink_parts(path):
    """The committed part files of a text file sink's output folder, as
    [(writer subtask, number, name)] in that order; names that start with
    a dot are in progress or pending, and other names are not the sink's."""
    parts = []
    for name in os.listdir(path):
        m = PART_RX.match(name)
        if m is not None:
            parts.append((int(m.group(1)), int(m.group(2)), name))
    return sorted(parts)


def sink_lines(path):
    """[(part file name, line)] of the committed part files of a text file
    sink's output folder, file by file in sink_parts order."""
    lines = []
    for _, _, name in sink_parts(path):
        with open(os.path.join(path, name)) as f:
            lines += [(name, line.rstrip("\n")) for line in f]
    return lines


def sink_hidden(path):
    """The sink's uncommitted files (in progress or pending) in the folder."""
    return sorted(n for n in os.listdir(path) if n.startswith(".part-"))


class SpateTestCase(unittest.TestCase):
    """A test with its own temporary folder and processes, cleaned up after."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spate-e2e-")
        self.procs = []
        # The processes it starts make their folders (io.tmp.dirs' default)
        # in the test's: gone with it, even after a kill -9.
        self._tmpdir = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = self.tmp

    def tearDown(self):
        if self._tmpdir is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self._tmpdir
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        if self.failed():
            self.print_logs()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def failed(self):
        """The test body failed (tearDown runs after it, with the failure
        already in the result)."""
        result = getattr(getattr(self, "_outcome", None), "result", None)
        return result is not None and any(t is self for t, _ in result.failures + result.errors)

    def print_logs(self, lines=40):
        """A failed test's evidence before its folder goes: the end of every
        process's output, on stderr (what ctest keeps)."""
        for root, _, files in os.walk(self.tmp):
            for name in sorted(files):
                if not (name.endswith(".out") or name.endswith(".log")):
                    continue
                path = os.path.join(root, name)
                try:
                    with open(path, errors="replace") as f:
                        tail = f.readlines()[-lines:]
                except OSError:
                    continue
                sys.stderr.write(f"---- {os.path.relpath(path, self.tmp)} (last {len(tail)} lines)\n")
                sys.stderr.writelines(tail)

    def spate(self, *args, env=None, timeout=60, input=None):
        """Runs `spate args...` to completion; returns the CompletedProcess."""
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run([SPATE, *args], capture_output=True, text=True, env=e,
                              timeout=timeout, input=input, stdin=None if input else subprocess.DEVNULL)

    def start(self, *args, env=None, log_name=None):
        """Starts `spate args...` in the background; killed at tearDown."""
        e = dict(os.environ)
        e.update(env or {})
        out = open(os.path.join(self.tmp, log_name or f"proc{len(self.procs)}.out"), "w")
        p = subprocess.Popen([SPATE, *args], stdout=out, stderr=subprocess.STDOUT, env=e,
                             stdin=subprocess.DEVNULL)
        self.procs.append(p)
        return p
