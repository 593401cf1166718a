"""Test hosts as Linux network namespaces on a bridge (issue 30).

A Lab makes a switch namespace holding a bridge and, per host, a namespace
with one veth link to that bridge and an address of its own on a private
/24 (10.99.0.0/24: the lab's namespaces are isolated, so two labs may use
the same addresses). Nothing is added to the namespace the test runs in:
the harness talks to the hosts from a `ctl` host of the lab, through a
thread that entered its namespace (Lab.call), and starts processes with
`ip netns exec` (Host.start: the pid is the program's own).

Faults, all undone by Lab.close:
- Host.cut() / heal(): the host's link to the bridge down or up (a host
  cut off from every other: the kernel drops what it sends or is sent);
- Lab.partition(a, b, oneway=False) / unpartition(...): nftables rules in
  the hosts' own namespaces that drop a's packets to b (and b's to a);
- Host.loss(percent): nftables drops that share of the host's outgoing
  packets at random (numgen), Host.loss(0) ends it.
Added latency needs the kernel's netem queueing discipline, which this
machine's kernel does not have (`tc qdisc add ... netem` answers
"Specified qdisc kind is unknown"): Lab.has_netem says so, and the faults
that need it are skipped with that reason.

Needs root, iproute2 and nftables (scripts/install-deps.sh installs both)."""

import concurrent.futures
import ctypes
import os
import shutil
import signal
import subprocess
import uuid

CLONE_NEWNET = 0x40000000
SUBNET = "10.99.0"


def _run(*args, check=True):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       stdin=subprocess.DEVNULL)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def available():
    """None when this process can make labs, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed (scripts/install-deps.sh installs it)"
    name = "spchk" + uuid.uuid4().hex[:6]
    r = _run("ip", "netns", "add", name, check=False)
    if r.returncode != 0:
        return f"cannot make a network namespace: {r.stderr.strip()}"
    _run("ip", "netns", "del", name, check=False)
    return None


class Host:
    """A test host: a network namespace with one address on the lab's bridge."""

    def __init__(self, lab, name, index):
        self.lab = lab
        self.name = name
        self.ns = f"{lab.tag}-{name}"
        self.addr = f"{SUBNET}.{index}"
        self.port_if = f"{lab.tag[-6:]}{index}"  # the bridge's side, <= 15 characters
        self.procs = []
        self.nft = False
        self.loss_percent = 0
        self.blocked = set()  # addresses this host drops packets to

    def _setup(self):
        lab = self.lab
        _run("ip", "netns", "add", self.ns)
        _run("ip", "link", "add", "eth0", "netns", self.ns, "type", "veth", "peer", "name",
             self.port_if, "netns", lab.switch)
        _run("ip", "-n", lab.switch, "link", "set", self.port_if, "master", "br0")
        _run("ip", "-n", lab.switch, "link", "set", self.port_if, "up")
        _run("ip", "-n", self.ns, "addr", "add", f"{self.addr}/24", "dev", "eth0")
        _run("ip", "-n", self.ns, "link", "set", "eth0", "up")
        _run("ip", "-n", self.ns, "link", "set", "lo", "up")

    def exec_args(self, args):
        return ["ip", "netns", "exec", self.ns, *args]

    def start(self, args, log, env=None):
        """Starts args on this host, output to the file log; returns the Popen
        (ip netns exec execs the program: its pid is the program's)."""
        with open(log, "a") as out:
            p = subprocess.Popen(self.exec_args(args), stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env)
        self.procs.append(p)
        return p

    def run(self, args, timeout=60, env=None):
        """Runs args on this host to the end; the CompletedProcess."""
        return subprocess.run(self.exec_args(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                              timeout=timeout, env=env)

    def owns(self, pid):
        """Whether process pid runs in this host's network namespace."""
        r = _run("ip", "netns", "identify", str(pid), check=False)
        return r.returncode == 0 and self.ns in r.stdout.split()

    # ---- faults ----

    def cut(self):
        """Cuts the host off: its link to the bridge goes down."""
        _run("ip", "-n", self.lab.switch, "link", "set", self.port_if, "down")

    def heal(self):
        _run("ip", "-n", self.lab.switch, "link", "set", self.port_if, "up")

    def _rules(self):
        """Rewrites this host's nftables table from blocked and loss_percent."""
        if not self.nft:
            _run("ip", "netns", "exec", self.ns, "nft", "add", "table", "inet", "chaos")
            _run("ip", "netns", "exec", self.ns, "nft", "add", "chain", "inet", "chaos", "out",
                 "{ type filter hook output priority 0; policy accept; }")
            self.nft = True
        _run("ip", "netns", "exec", self.ns, "nft", "flush", "chain", "inet", "chaos", "out")
        for addr in sorted(self.blocked):
            _run("ip", "netns", "exec", self.ns, "nft", "add", "rule", "inet", "chaos", "out",
                 "ip", "daddr", addr, "drop")
        if self.loss_percent:
            _run("ip", "netns", "exec", self.ns, "nft", "add", "rule", "inet", "chaos", "out",
                 "ip", "daddr", f"{SUBNET}.0/24", "numgen", "random", "mod", "100", "<",
                 str(self.loss_percent), "drop")

    def block(self, other):
        self.blocked.add(other.addr)
        self._rules()

    def unblock(self, other):
        self.blocked.discard(other.addr)
        self._rules()

    def loss(self, percent):
        """Drops percent % of what this host sends, at random (0: none)."""
        self.loss_percent = int(percent)
        self._rules()

    def kill_all(self):
        """SIGKILL to every process this harness started on the host."""
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.send_signal(signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()


class Lab:
    """A bridge and its hosts; `with Lab() as lab:` removes everything."""

    def __init__(self):
        self.tag = "sp" + uuid.uuid4().hex[:6]
        self.switch = f"{self.tag}-sw"
        self.hosts = {}
        self._next = 10
        _run("ip", "netns", "add", self.switch)
        _run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", self.switch, "link", "set", "br0", "up")
        self.ctl = self.host("ctl")
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, initializer=self._enter, initargs=(self.ctl.ns,))
        self.call(lambda: None)  # enters now: a failure shows here

    @staticmethod
    def _enter(ns):
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"setns into {ns}: {os.strerror(e)}")
        finally:
            os.close(fd)

    def host(self, name):
        """A new host named name (addresses given in order from .10)."""
        assert name not in self.hosts, name
        h = Host(self, name, self._next)
        self._next += 1
        h._setup()
        self.hosts[name] = h
        return h

    def call(self, fn, *args, **kwargs):
        """fn(*args) on a thread inside the ctl host's namespace: sockets it
        opens reach the lab's addresses."""
        return self._pool.submit(fn, *args, **kwargs).result()

    def partition(self, a, b, oneway=False):
        """a's packets to b dropped (and b's to a unless oneway)."""
        a.block(b)
        if not oneway:
            b.block(a)

    def unpartition(self, a, b):
        a.unblock(b)
        b.unblock(a)

    def heal_all(self):
        for h in self.hosts.values():
            h.heal()
            if h.blocked or h.loss_percent:
                h.blocked.clear()
                h.loss_percent = 0
                h._rules()

    @property
    def has_netem(self):
        r = _run("ip", "netns", "exec", self.ctl.ns, "tc", "qdisc", "add", "dev", "lo", "root",
                 "netem", "delay", "1ms", check=False)
        if r.returncode == 0:
            _run("ip", "netns", "exec", self.ctl.ns, "tc", "qdisc", "del", "dev", "lo", "root",
                 check=False)
        return r.returncode == 0

    def close(self):
        for h in self.hosts.values():
            h.kill_all()
        self._pool.shutdown(wait=True)
        for h in self.hosts.values():
            _run("ip", "netns", "del", h.ns, check=False)
        _run("ip", "netns", "del", self.switch, check=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
