"""The faults of the chaos harness (issue 30), made on a ChaosCluster
(chaoscluster.py) by kind: make(kind, cluster, rng).

A fault is a victim, picked when it is made (the leading JobManager, or a
TaskManager drawn by the schedule's random generator), what is done to it,
and what heals it: a killed process is started again (as a supervisor
would), a stopped one continued, a cut link raised, filter rules removed,
the filled disk emptied. `KINDS` lists every kind; kinds the machine cannot
make (latency without the kernel's netem) are in `UNAVAILABLE` with the
reason."""

import os
import subprocess

# ---- victims ----


def taskmanager(c, rng):
    return rng.choice(c.tms)


def leader(c, rng):
    """The leading JobManager (a live one at random while none leads)."""
    jm = c.leader()
    if jm is None:
        jm = rng.choice([j for j in c.jms if j.alive()] or c.jms)
    return jm


def standby(c, rng):
    lead = c.leader()
    return rng.choice([j for j in c.jms if j is not lead])


def zookeeper(c, rng):
    return c.zk


def checkpoint_disk(c, rng):
    """The checkpoint directory's file system: the small tmpfs a cluster made
    with checkpoint_tmpfs_mb has."""
    return c.checkpoints


# ---- what is done, and undone ----


def jobmanagers(c, rng):
    return c.jms


def cut_from_zookeeper(c, jms):
    for jm in jms:
        c.lab.partition(jm.host, c.zk_host)


def rejoin_zookeeper(c, jms):
    for jm in jms:
        c.lab.unpartition(jm.host, c.zk_host)


def cut_off_jobmanagers(c, node, oneway):
    for jm in c.jms:
        c.lab.partition(node.host, jm.host, oneway=oneway)


def rejoin_jobmanagers(c, node):
    for jm in c.jms:
        c.lab.unpartition(node.host, jm.host)


def fill(c, path):
    subprocess.run(["dd", "if=/dev/zero", f"of={os.path.join(path, '.chaos-fill')}", "bs=1M"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def empty(c, path):
    try:
        os.unlink(os.path.join(path, ".chaos-fill"))
    except FileNotFoundError:
        pass


# kind: (victim, inject(cluster, victim), heal(cluster, victim), what it is)
KINDS = {
    "kill9-taskmanager": (taskmanager, lambda c, n: n.kill(), lambda c, n: n.start(),
                          "kill -9 of a TaskManager, started again at the heal"),
    "kill9-leader": (leader, lambda c, n: n.kill(), lambda c, n: n.start(),
                     "kill -9 of the leading JobManager"),
    "kill9-standby": (standby, lambda c, n: n.kill(), lambda c, n: n.start(),
                      "kill -9 of a standby JobManager"),
    "sigstop-taskmanager": (taskmanager, lambda c, n: n.pause(), lambda c, n: n.resume(),
                            "SIGSTOP of a TaskManager, SIGCONT at the heal"),
    "sigstop-leader": (leader, lambda c, n: n.pause(), lambda c, n: n.resume(),
                       "SIGSTOP of the leading JobManager"),
    "cut-taskmanager": (taskmanager, lambda c, n: n.host.cut(), lambda c, n: n.host.heal(),
                        "a TaskManager's host cut off (link down)"),
    "cut-leader": (leader, lambda c, n: n.host.cut(), lambda c, n: n.host.heal(),
                   "the leading JobManager's host cut off"),
    "partition-leader-zookeeper": (
        leader, lambda c, n: c.lab.partition(n.host, c.zk_host),
        lambda c, n: c.lab.unpartition(n.host, c.zk_host),
        "the leading JobManager cut from ZooKeeper only (it still reaches the TaskManagers)"),
    "partition-jobmanagers-zookeeper": (
        jobmanagers, cut_from_zookeeper, rejoin_zookeeper,
        "every JobManager cut from ZooKeeper: no leader until the heal"),
    "partition-taskmanager-jobmanagers": (
        taskmanager, lambda c, n: cut_off_jobmanagers(c, n, False), rejoin_jobmanagers,
        "a TaskManager cut from every JobManager (it still reaches the other TaskManagers "
        "and ZooKeeper)"),
    "oneway-taskmanager-to-jobmanagers": (
        taskmanager, lambda c, n: cut_off_jobmanagers(c, n, True), rejoin_jobmanagers,
        "what a TaskManager sends the JobManagers is lost; what they send arrives"),
    "loss-taskmanager": (taskmanager, lambda c, n: n.host.loss(20), lambda c, n: n.host.loss(0),
                         "20 % of a TaskManager's packets lost at random"),
    "restart-zookeeper": (zookeeper, lambda c, zk: zk.stop(), lambda c, zk: zk.start(),
                          "ZooKeeper stopped (kill -9), started again at the heal"),
    "full-checkpoint-disk": (checkpoint_disk, fill, empty,
                             "the checkpoint directory's file system filled to the last byte"),
}

UNAVAILABLE = {
    "latency": "added latency needs the kernel's netem queueing discipline, which this "
               "kernel lacks ('tc qdisc add ... netem': \"Specified qdisc kind is unknown\")",
}


class Fault:
    def __init__(self, kind, cluster, rng):
        pick, self._inject, self._heal, self.what = KINDS[kind]
        self.kind = kind
        self.c = cluster
        self.node = pick(cluster, rng)
        if isinstance(self.node, list):
            self.victim = ",".join(n.name for n in self.node)
        else:
            self.victim = getattr(self.node, "name", None) or (
                "zk" if self.node is cluster.zk else str(self.node))

    def describe(self):
        return f"{self.kind} {self.victim}"

    def inject(self):
        self._inject(self.c, self.node)

    def heal(self):
        self._heal(self.c, self.node)


def make(kind, cluster, rng):
    return Fault(kind, cluster, rng)
