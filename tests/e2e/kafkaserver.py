"""An Apache Kafka broker of its own for a test or benchmark: Kafka 4.x in
KRaft mode (one process, broker and controller) on the installed Java, its
jars from Maven Central in the cache that scripts/install-deps.sh fills
(scripts/kafka/pom.xml, pinned), on 127.0.0.1 with free ports, a temporary
log folder, started and stopped (kill -9) by pid. restart() keeps its ports
and data, as a broker that went away and came back."""

import base64
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

from spatetest import free_port

KAFKA_VERSION = "4.1.1"
KAFKA_LIBS = os.path.join(os.environ.get("SPATE_CACHE", os.path.expanduser("~/.cache/spate")),
                          f"kafka-{KAFKA_VERSION}", "libs")


def available():
    """Why the broker cannot start here, or None."""
    if shutil.which("java") is None:
        return "no java (scripts/install-deps.sh installs it)"
    if not glob.glob(os.path.join(KAFKA_LIBS, "kafka_2.13-*.jar")):
        return f"no Kafka jars in {KAFKA_LIBS} (scripts/install-deps.sh fetches them)"
    return None


def _answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _listens(pid, port):
    """Process pid listens on the TCP port: another process's listener
    there (a port taken between free_port() and the broker's bind) does
    not count."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(f"socket:[{fields[9]}]")
        except OSError:
            pass
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            pass
    return False


class PortTaken(Exception):
    """Another process took a port chosen for the broker before it bound it."""


class KafkaServer:
    """start(), stop() (kill -9 by pid), restart(), close();
    bootstrap is "127.0.0.1:port"."""

    def __init__(self, workdir=None):
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="spate-kafka-")
        self.port = free_port()
        self.controller_port = free_port()
        self.proc = None
        self.logs = os.path.join(self.dir, "data")
        self.cfg = os.path.join(self.dir, "server.properties")
        self.write_cfg()
        self.formatted = False

    def write_cfg(self):
        with open(self.cfg, "w") as f:
            f.write("process.roles=broker,controller\n"
                    "node.id=1\n"
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}\n"
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},"
                    f"CONTROLLER://127.0.0.1:{self.controller_port}\n"
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}\n"
                    "controller.listener.names=CONTROLLER\n"
                    "inter.broker.listener.name=PLAINTEXT\n"
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
                    f"log.dirs={self.logs}\n"
                    "num.partitions=1\n"
                    "offsets.topic.replication.factor=1\n"
                    "offsets.topic.num.partitions=4\n"
                    "transaction.state.log.replication.factor=1\n"
                    "transaction.state.log.min.isr=1\n"
                    "transaction.state.log.num.partitions=4\n"
                    "group.initial.rebalance.delay.ms=0\n"
                    "auto.create.topics.enable=false\n"
                    # Records keep their event times, which the tests set
                    # years back: time-based retention would delete them.
                    "log.retention.ms=-1\n"
                    # Aborted transactions of killed writers end soon.
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000\n"
                    "transaction.max.timeout.ms=900000\n")

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def _java(self, main, *args, log=None):
        cmd = [shutil.which("java"), "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dlog4j2.level=WARN", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-cp", os.path.join(KAFKA_LIBS, "*"), main, *args]
        return subprocess.Popen(cmd, stdout=log or subprocess.DEVNULL,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def start(self, timeout=90.0):
        """On free ports: ports taken meanwhile by another process are
        chosen again (up to 5 times)."""
        for attempt in range(5):
            try:
                return self.start_once(timeout, ports_chosen=True)
            except PortTaken:
                self.port, self.controller_port = free_port(), free_port()
                self.write_cfg()
        raise RuntimeError(f"Kafka found no free ports in 5 attempts; see {self.dir}/kafka.log")

    def start_once(self, timeout, ports_chosen=False):
        why = available()
        if why is not None:
            raise RuntimeError(f"the Kafka broker cannot start: {why}")
        log = open(os.path.join(self.dir, "kafka.log"), "a")
        if not self.formatted:
            cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            # "=": an id that starts with '-' would read as an option.
            fmt = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster}",
                             "-c", self.cfg, log=log)
            if fmt.wait(timeout) != 0:
                log.close()
                raise RuntimeError(f"formatting the Kafka log folder failed; see "
                                   f"{self.dir}/kafka.log")
            self.formatted = True
        self.proc = self._java("kafka.Kafka", self.cfg, log=log)
        log.close()
        deadline = time.monotonic() + timeout
        while not (_answers(self.port) and _listens(self.proc.pid, self.port)):
            if self.proc.poll() is not None:
                if ports_chosen and (_answers(self.port) or _answers(self.controller_port)):
                    raise PortTaken()
                raise RuntimeError(f"Kafka exited with {self.proc.returncode}; see "
                                   f"{self.dir}/kafka.log")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"Kafka did not answer on port {self.port} in {timeout} s")
            time.sleep(0.1)
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def restart(self):
        """On the same ports: its clients know only those."""
        self.stop()
        return self.start_once(90.0)

    def close(self):
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


if __name__ == "__main__":
    # `python3 kafkaserver.py serve`: a broker for a benchmark; prints
    # "bootstrap HOST:PORT" once it answers, stops on SIGTERM or SIGINT.
    import sys
    if sys.argv[1:] != ["serve"]:
        sys.exit("usage: kafkaserver.py serve")
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    server = KafkaServer()
    try:
        server.start()
        print(f"bootstrap {server.bootstrap}", flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    finally:
        server.close()
