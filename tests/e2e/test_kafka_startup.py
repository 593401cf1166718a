"""Where the Kafka source starts (`scan.startup.mode`) and which topics a
`topic-pattern` reads, against a real broker (kafkaserver.py), every
record the job wrote read back and compared with exactly the records it
had to read (issue 25):

- latest-offset: the records produced before the source started are not
  read, every one produced after is;
- group-offsets: a job commits its offsets to the group when its
  checkpoints complete; a second job of the same group reads exactly the
  records produced after the first one's last commit;
- timestamp: each partition from its first record at or after the time;
- specific-offsets: the partitions named from their offsets, the others
  from the earliest;
- topic-pattern: the topics whose whole name matches, and one created
  mid-job, found by discovery; not those whose name only contains a match.

The jobs are tests/e2e/jobs/kafka.c's copy job (records as they are, from
the source topic into the sink topic).
"""

import os
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import test_kafka as tk  # noqa: E402
from clustertest import wait_for  # noqa: E402
from kafkaserver import KafkaServer  # noqa: E402

T0 = tk.T0


def setUpModule():
    tk.KAFKA = KafkaServer().start()


def tearDownModule():
    if tk.KAFKA is not None:
        tk.KAFKA.close()


def values(records):
    return sorted(v for _, _, v in records)


committed = tk.committed


class KafkaStartupTest(tk.KafkaTestCase):
    """One TaskManager of two slots; every job the copy job."""

    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tm = self.start_taskmanager(slots=2)
        self.wait_overview(1, slots=2)

    def copy(self, inp, out, *source, parallelism=1, bounded=False):
        """Runs the copy job from inp into out, its source with the options
        source (KEY=VALUE); bounded: up to the offsets at its start."""
        args = ["copy", "-c", "200", "--source",
                f"properties.bootstrap.servers={tk.KAFKA.bootstrap}",
                "--sink", f"properties.bootstrap.servers={tk.KAFKA.bootstrap}",
                "--sink", f"topic={out}"]
        if inp is not None:
            args += ["--source", f"topic={inp}"]
        if bounded:
            args += ["--source", "scan.bounded.mode=latest-offset"]
        for kv in source:
            args += ["--source", kv]
        return self.run_detached(tk.JOBS, *args, parallelism=parallelism, conf=tk.NO_RESTART)

    def finished(self, jid):
        job = self.wait_state(jid, tk.TERMINAL, timeout=120)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))

    def test_latest_offset_reads_only_records_produced_after_the_start(self):
        inp = tk.new_topic("latest", 2)
        out = tk.new_topic("latest-out", 1)
        tk.produce(inp, [f"P{i % 2}\tbefore{i}" for i in range(40)])
        jid = self.copy(inp, out, "scan.startup.mode=latest-offset")
        # The reader has resolved its start offsets once it says so.
        self.tm.wait_log(r"subtask 0 reads 2 partitions", timeout=60)
        after = [f"after{i}" for i in range(30)]
        tk.produce(inp, [f"P{i % 2}\t{v}" for i, v in enumerate(after)])
        self.assertEqual(values(self.wait_records(out, len(after), timeout=60)), sorted(after))
        self.cancel(jid)

    def test_group_offsets_start_where_the_group_committed(self):
        inp = tk.new_topic("group", 2)
        out1 = tk.new_topic("group-out1", 1)
        out2 = tk.new_topic("group-out2", 1)
        group = f"g-{uuid.uuid4().hex[:8]}"
        first = [f"first{i}" for i in range(50)]
        tk.produce(inp, [f"P{i % 2}\t{v}" for i, v in enumerate(first)])
        # No committed offset yet: from the earliest (no auto.offset.reset).
        jid = self.copy(inp, out1, "scan.startup.mode=group-offsets",
                        f"properties.group.id={group}")
        self.assertEqual(values(self.wait_records(out1, len(first), timeout=60)),
                         sorted(first))
        # A checkpoint completed after every record was read commits them.
        wait_for(lambda: committed(inp, group) == {0: 25, 1: 25} or None, 60,
                 f"group {group} committed offsets 25 and 25 of {inp}")
        self.cancel(jid)
        self.assertEqual(committed(inp, group), {0: 25, 1: 25})
        second = [f"second{i}" for i in range(40)]
        tk.produce(inp, [f"P{i % 2}\t{v}" for i, v in enumerate(second)])
        jid = self.copy(inp, out2, "scan.startup.mode=group-offsets",
                        f"properties.group.id={group}", bounded=True)
        self.finished(jid)
        self.assertEqual(values(tk.consume(out2)), sorted(second))

    def test_timestamp_starts_each_partition_at_its_first_record_at_or_after(self):
        inp = tk.new_topic("timestamp", 2)
        out = tk.new_topic("timestamp-out", 1)
        lines = [f"t{i}" for i in range(60)]
        # Line i at T0 + 10 i ms, in partition i mod 2.
        tk.produce(inp, [f"P{i % 2}\t{v}" for i, v in enumerate(lines)], ts0=T0, step=10)
        # Exactly line 21's time: line 21 and on (partition 1 from 21,
        # partition 0 from 22).
        jid = self.copy(inp, out, "scan.startup.mode=timestamp",
                        f"scan.startup.timestamp-millis={T0 + 210}", bounded=True)
        self.finished(jid)
        self.assertEqual(values(tk.consume(out)), sorted(lines[21:]))
        # After the last record: nothing.
        out2 = tk.new_topic("timestamp-out2", 1)
        jid = self.copy(inp, out2, "scan.startup.mode=timestamp",
                        f"scan.startup.timestamp-millis={T0 + 10_000}", bounded=True)
        self.finished(jid)
        self.assertEqual(tk.consume(out2), [])

    def test_specific_offsets_start_the_named_partitions_there(self):
        inp = tk.new_topic("specific", 3)
        out = tk.new_topic("specific-out", 1)
        tk.produce(inp, [f"P{p}\tp{p}-{i}" for p in range(3) for i in range(10)])
        jid = self.copy(inp, out, "scan.startup.mode=specific-offsets",
                        "scan.startup.specific-offsets=partition:0,offset:4;"
                        "partition:1,offset:7", parallelism=2, bounded=True)
        self.finished(jid)
        expected = ([f"p0-{i}" for i in range(4, 10)] + [f"p1-{i}" for i in range(7, 10)] +
                    [f"p2-{i}" for i in range(10)])
        self.assertEqual(values(tk.consume(out)), sorted(expected))

    def test_topic_pattern_reads_the_topics_whose_whole_name_matches(self):
        u = uuid.uuid4().hex[:8]
        out = tk.new_topic("pattern-out", 1)
        topics = {}
        for name in (f"pat-{u}-a", f"pat-{u}-b", f"x-pat-{u}-a", f"pat-{u}-ab"):
            tk.tool("create", name, "2")
            topics[name] = [f"{name}/{i}" for i in range(10)]
            tk.produce(name, [f"P{i % 2}\t{v}" for i, v in enumerate(topics[name])])
        jid = self.copy(None, out, f"topic-pattern=pat-{u}-[a-z]",
                        "scan.startup.mode=earliest-offset",
                        "scan.topic-partition-discovery.interval=500 ms")
        wanted = topics[f"pat-{u}-a"] + topics[f"pat-{u}-b"]
        self.assertEqual(values(self.wait_records(out, len(wanted), timeout=60)), sorted(wanted))
        # A matching topic created mid-job: found and read from its start.
        late = f"pat-{u}-c"
        tk.tool("create", late, "1")
        tk.produce(late, [f"{late}/{i}" for i in range(10)])
        wanted += [f"{late}/{i}" for i in range(10)]
        self.assertEqual(values(self.wait_records(out, len(wanted), timeout=60)), sorted(wanted))
        self.assertEqual(self.job_state(jid)["state"], "RUNNING")
        self.cancel(jid)


if __name__ == "__main__":
    unittest.main()
