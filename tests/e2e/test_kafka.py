"""The Kafka connector against a real Apache Kafka broker (4.1.1, KRaft
mode: kafkaserver.py), every output record read back with a read_committed
consumer (tests/bin/kafka_tool) and checked (issue 25):

- kafka_wordcount (words per 1 s event-time window, exactly once) fed
  while it runs, through three kill -9 of TaskManagers: each (window, word)
  once, with the count Python computes from the input;
- a keyed stateful job (a rolling count per word) through three kill -9 of
  TaskManagers: every update "word n" once (exactly_once.py's check);
- a savepoint of the keyed job at p2 resumed at p3: it goes on from the
  savepoint's offsets (every update once across both runs);
- a partition added to the input topic mid-job is found and read, each
  new partition by the one reader Flink's KafkaSourceEnumerator.getSplitOwner
  names;
- a malformed JSON record fails the job naming its topic, partition and
  offset, or is skipped and counted with json.ignore-parse-errors;
- a missing topic and a wrong bootstrap address fail the job with a clear
  error, and the cluster stays up;
- the broker stopped (kill -9) for 30 s mid-job and started again: the job
  recovers and nothing is lost or doubled;
- ZooKeeper HA: kill -9 of the leading JobManager under the keyed job;
- the sink's recovery of a transaction whose commit never happened
  (kafka_sink_check), and of one that had committed;
- the sink's sink.delivery-guarantee none (a checkpoint completes with the
  records still in the producer) beside at-least-once (the barrier waited
  for them), and at-least-once through a kill -9 (every record at least
  once);
- its partitioners, each record's partition read back: fixed (subtask i
  to partition i mod n), round-robin (a subtask's k-th record to k mod n),
  default (a key's murmur2 hash as Kafka's Java client; sticky without a
  key); an unknown partitioner or option refused at submission;
- a bad source option (startup mode, unknown key, specific offsets,
  discovery interval, librdkafka property, format) refused at submission.
"""

import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import exactly_once  # noqa: E402
import test_ha  # noqa: E402
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from kafkaserver import KafkaServer  # noqa: E402
from spatetest import BUILD  # noqa: E402

TOOL = os.path.join(BUILD, "tests", "bin", "kafka_tool")
WORDCOUNT = os.path.join(BUILD, "examples", "kafka_wordcount.so")
JOBS = os.path.join(BUILD, "tests", "e2e", "jobs", "job_kafka.so")
TERMINAL = ("FINISHED", "FAILED", "CANCELED")
# Restarts as often as the faults need, quickly.
RESTART = ["-D", "restart-strategy.type=fixed-delay",
           "-D", "restart-strategy.fixed-delay.attempts=1000",
           "-D", "restart-strategy.fixed-delay.delay=500 ms"]
NO_RESTART = ["-D", "restart-strategy.type=none"]
T0 = 1_700_000_000_000  # the input's first event time (ms)

KAFKA = None


def setUpModule():
    global KAFKA
    KAFKA = KafkaServer().start()


def tearDownModule():
    if KAFKA is not None:
        KAFKA.close()


def tool(*args, input=None, timeout=120):
    r = subprocess.run([TOOL, KAFKA.bootstrap, *args], input=input, capture_output=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"kafka_tool {' '.join(args)}: {r.stderr.decode(errors='replace')}")
    return r.stdout.decode()


def new_topic(name, partitions):
    topic = f"{name}-{uuid.uuid4().hex[:8]}"
    tool("create", topic, str(partitions))
    return topic


def produce(topic, lines, ts0=None, step=None):
    """lines: values, each "P<n>\\t" before it to choose the partition."""
    data = ("\n".join(lines) + "\n").encode()
    if ts0 is None:
        tool("produce", topic, input=data)
    else:
        tool("produce", topic, str(ts0), str(step), input=data)


def consume(topic, idle_ms=1000):
    """Every committed record of topic: [(partition, offset, value)]."""
    out = []
    for line in tool("consume", topic, str(idle_ms), timeout=300).splitlines():
        p, o, v = line.split(" ", 2)
        out.append((int(p), int(o), v))
    return out


def consume_keys(topic):
    """Every committed record of topic: [(partition, key, value)]."""
    out = []
    for line in tool("consume", topic, "1000", "read_committed", "keys",
                     timeout=300).splitlines():
        p, _, kv = line.split(" ", 2)
        k, v = kv.split("\t", 1)
        out.append((int(p), k[1:], v[1:]))
    return out


def committed(topic, group):
    """The group's committed offsets of topic: {partition: offset}, -1 for
    none."""
    return {int(p): int(o) for p, o in
            (line.split() for line in tool("committed", topic, group).splitlines())}


def split_owner(topic, partition, readers):
    """The reader subtask Flink's KafkaSourceEnumerator.getSplitOwner gives
    a partition: a start index from the topic name's Java hashCode, then
    the partitions round-robin from it."""
    h = 0
    for c in topic.encode():
        h = (h * 31 + c) & 0xFFFFFFFF
    return (((h * 31) & 0x7FFFFFFF) % readers + partition) % readers


def murmur2_partition(key, partitions):
    """The partition Kafka's Java client (and librdkafka's murmur2_random)
    gives key: toPositive(murmur2(key)) mod partitions."""
    m, h = 0x5BD1E995, (0x9747B28C ^ len(key)) & 0xFFFFFFFF
    for i in range(0, len(key) - len(key) % 4, 4):
        k = int.from_bytes(key[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[len(key) - len(key) % 4:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


class Feeder:
    """Writes lines into a topic at about `rate` lines a second from a
    thread (a kafka_tool producer fed through its stdin), with event times
    T0 + i * step, line i to partition i mod partitions; then, when tail is
    given, that line into every partition an hour of event time later, so
    that every window of the lines closes."""

    def __init__(self, topic, lines, partitions, rate, step, tail=None):
        self.lines = lines
        self.tail = tail
        self.tail_ts = T0 + len(lines) * step + 3_600_000
        self.partitions = partitions
        self.rate = rate
        self.proc = subprocess.Popen([TOOL, KAFKA.bootstrap, "produce", topic, str(T0),
                                      str(step)], stdin=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        batch = max(1, self.rate // 20)
        try:
            for i in range(0, len(self.lines), batch):
                chunk = "".join(f"P{j % self.partitions}\t{self.lines[j]}\n"
                                for j in range(i, min(i + batch, len(self.lines))))
                self.proc.stdin.write(chunk.encode())
                self.proc.stdin.flush()
                time.sleep(0.05)
            if self.tail is not None:
                self.proc.stdin.write("".join(f"P{p}\tT{self.tail_ts}\t{self.tail}\n"
                                              for p in range(self.partitions)).encode())
            self.proc.stdin.close()
            self.proc.wait(120)
        finally:
            self.done.set()

    def wait(self):
        self.done.wait(600)
        if self.proc.returncode != 0:
            raise AssertionError(f"the feeder failed: {self.proc.stderr.read().decode()}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def word_lines(n, seed=3, vocabulary=50):
    """n lines of 1 to 4 words from a skewed vocabulary, deterministic."""
    import random
    rnd = random.Random(seed)
    words = [f"w{k}" for k in range(vocabulary)]
    weights = [1.0 / (k + 1) for k in range(vocabulary)]
    return [" ".join(rnd.choices(words, weights, k=rnd.randint(1, 4))) for _ in range(n)]


class KafkaTestCase(ClusterTestCase):
    def run_detached(self, library, *args, parallelism, conf=(), savepoint=None):
        cmd = [*conf, "-D", f"state.checkpoints.dir={self.tmp}/checkpoints",
               "-D", f"state.savepoints.dir={self.tmp}/savepoints",
               "run", "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", str(parallelism)]
        if savepoint is not None:
            cmd += ["-s", savepoint]
        r = self.spate(*cmd, library, *args, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def job_state(self, jid):
        status, job = self.rest(f"/jobs/{jid}")
        self.assertEqual(status, 200, job)
        return job

    def wait_state(self, jid, states, timeout=180.0):
        return wait_for(lambda: (lambda j: j if j["state"] in states else None)(
            self.job_state(jid)), timeout, f"job {jid} in {states}")

    def checkpoints(self, jid):
        status, s = self.rest(f"/jobs/{jid}/checkpoints")
        self.assertEqual(status, 200, s)
        return s

    def wait_running_with_checkpoint(self, jid, after=0, timeout=120.0):
        """Every task running and a checkpoint completed with an id above
        after: the checkpoint's id."""
        def ok():
            j = self.job_state(jid)
            if j["state"] in TERMINAL:
                raise AssertionError(f"job {jid} ended {j['state']}: {j.get('failure')}")
            t = j.get("tasks", {})
            if j["state"] != "RUNNING" or t.get("running") != t.get("total"):
                return None
            latest = (self.checkpoints(jid).get("latest") or {}).get("completed")
            return latest["id"] if latest and latest["id"] > after else None
        return wait_for(ok, timeout, f"job {jid} running with a checkpoint after {after}")

    def kill_taskmanagers(self, jid, kills):
        """kills times: a checkpoint completed with every task running, then
        kill -9 of a TaskManager running the job."""
        last = 0
        for _ in range(kills):
            last = self.wait_running_with_checkpoint(jid, after=last)
            running = self.taskmanagers_of(jid)
            victim = next((tm for tm in self.tms if self.resource_id(tm) in running), None)
            self.assertIsNotNone(victim, f"no TaskManager of ours runs {jid}: {running}")
            victim.kill()
            self.tms.remove(victim)
        return self.wait_running_with_checkpoint(jid, after=last)

    def cancel(self, jid):
        r = self.spate("cancel", "-m", f"127.0.0.1:{self.rest_port}", jid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_state(jid, TERMINAL)

    def exceptions(self, jid):
        status, body = self.rest(f"/jobs/{jid}/exceptions")
        self.assertEqual(status, 200, body)
        return json.dumps(body)

    def wait_records(self, topic, n, timeout=180.0):
        """The topic's committed records once there are n of them; then once
        more a while later, so that a record committed twice shows."""
        seen = [0]

        def enough():
            seen[0] = len(consume(topic, 300))
            return seen[0] >= n or None
        try:
            wait_for(enough, timeout, f"{n} committed records in {topic}", interval=1.0)
        except AssertionError as e:
            # The check that follows names what is missing.
            sys.stderr.write(f"\n{e} (there are {seen[0]})\n")
            # What a read_uncommitted reader sees besides, in the log.
            every = tool("consume", topic, "1000", "read_uncommitted").splitlines()
            sys.stderr.write(f"read_uncommitted: {len(every)} records, the first "
                             f"{every[:3]}\n")
        time.sleep(2)
        return consume(topic)


def expected_windows(lines, step, window_ms=1000):
    """{(window start, word): count} of kafka_wordcount over lines (line i
    at T0 + i * step)."""
    counts = collections.Counter()
    for i, line in enumerate(lines):
        ts = T0 + i * step
        for w in re.findall(r"[a-z0-9]+", line.lower()):
            counts[(ts - ts % window_ms, w)] += 1
    return counts


def check_windows(testcase, records, expected):
    seen = collections.Counter()
    wrong = []
    for _, _, v in records:
        r = json.loads(v)
        key = (r["window"], r["word"])
        seen[key] += 1
        if expected.get(key) != r["count"]:
            wrong.append((key, r["count"], expected.get(key)))
    twice = {k: c for k, c in seen.items() if c > 1}
    lost = [k for k in expected if k not in seen]
    sys.stderr.write(f"\n{testcase.id().split('.')[-1]}: {len(expected)} windowed counts "
                     f"expected, {len(records)} committed, {len(lost)} lost, {len(twice)} "
                     f"twice, {len(wrong)} wrong\n")
    testcase.assertEqual((lost[:5], twice, wrong[:5]), ([], {}, []))


class ExactlyOnceKillTest(KafkaTestCase):
    """Three kill -9 of TaskManagers while jobs read and write Kafka; five
    TaskManagers of one slot, so that the two slots of p2 remain."""

    def setUp(self):
        super().setUp()
        self.start_jobmanager(*RESTART)
        self.tms = [self.start_taskmanager(slots=1) for _ in range(5)]
        self.wait_overview(5, slots=5)

    def test_kafka_wordcount_exactly_once_through_three_kills(self):
        words = new_topic("words", 4)
        counts = new_topic("counts", 2)
        step = 2  # ms of event time per line: 500 lines a window
        lines = word_lines(24000)
        jid = self.run_detached(WORDCOUNT, "--brokers", KAFKA.bootstrap, "--input-topic", words,
                                "--output-topic", counts, "--checkpoint-ms", "300",
                                parallelism=2, conf=RESTART)
        feeder = Feeder(words, lines, 4, rate=1500, step=step, tail="end")
        try:
            self.kill_taskmanagers(jid, int(os.environ.get("KILLS", "3")))
            feeder.wait()
        finally:
            feeder.kill()
        # The tail's window stays open: "end" is in no window written.
        expected = expected_windows(lines, step)
        records = self.wait_records(counts, len(expected))
        s = self.checkpoints(jid)
        self.assertGreaterEqual(s["counts"]["restored"], int(os.environ.get("KILLS", "3")), s["counts"])
        self.cancel(jid)
        check_windows(self, records, expected)

    def test_keyed_job_exactly_once_through_three_kills(self):
        words = new_topic("keyed-in", 3)
        out = new_topic("keyed-out", 2)
        lines = word_lines(20000, seed=5)
        jid = self.run_detached(JOBS, *keyed_args(words, out), parallelism=2, conf=RESTART)
        feeder = Feeder(words, lines, 3, rate=1500, step=1)
        try:
            self.kill_taskmanagers(jid, 3)
            feeder.wait()
        finally:
            feeder.kill()
        records = self.wait_records(out, sum(len(line.split()) for line in lines))
        self.cancel(jid)
        check_keyed(self, records, lines, "keyed job, three kills")

def keyed_args(inp, out, guarantee="exactly-once", extra=()):
    """The keyed job's arguments: checkpoints every 300 ms, from the
    earliest offsets of inp into out."""
    return ["keyed", "-c", "300",
            "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
            "--source", f"topic={inp}", "--source", "scan.startup.mode=earliest-offset",
            "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}", "--sink", f"topic={out}",
            "--sink", f"sink.delivery-guarantee={guarantee}",
            "--sink", f"sink.transactional-id-prefix=keyed-{out}", *extra]


def check_keyed(testcase, records, lines, what):
    expected = collections.Counter(w for line in lines for w in line.split())
    updates = collections.defaultdict(list)
    for _, _, v in records:
        word, n = exactly_once.parse_word_count(v.encode())
        updates[word].append(n)
    r = exactly_once.check_rolling_counts(dict(updates), dict(expected))
    sys.stderr.write(f"\n{what}: {r.message(keys=3)}\n")
    testcase.assertTrue(r.ok, r.message())


class KafkaJobsTest(KafkaTestCase):
    """Discovery, rescaling, bad input: two TaskManagers of three slots."""

    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tms = [self.start_taskmanager(slots=3) for _ in range(2)]
        self.wait_overview(2, slots=6)

    def copy_args(self, inp, out, *extra, job="copy"):
        return [job, "-c", "200",
                "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                "--source", f"topic={inp}", "--source", "scan.startup.mode=earliest-offset",
                "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                "--sink", f"topic={out}", *extra]

    def test_a_partition_added_mid_job_is_read_from_its_start(self):
        inp = new_topic("grow", 1)
        out = new_topic("grow-out", 1)
        produce(inp, [f"a{i}" for i in range(100)])
        jid = self.run_detached(JOBS, *self.copy_args(
            inp, out, "--source", "scan.topic-partition-discovery.interval=500 ms"),
            parallelism=2, conf=NO_RESTART)
        self.wait_records(out, 100, timeout=60)
        tool("partitions", inp, "2")
        produce(inp, [f"P1\tb{i}" for i in range(100)])
        values = sorted(v for _, _, v in self.wait_records(out, 200, timeout=60))
        self.assertEqual(values, sorted([f"a{i}" for i in range(100)] +
                                        [f"b{i}" for i in range(100)]))
        logs = "".join(tm.text() for tm in self.tms)
        self.assertRegex(logs, rf"partition discovery: reading new topic '{inp}' partition 1 "
                               r"from offset 0")
        self.assertEqual(self.job_state(jid)["state"], "RUNNING")
        self.cancel(jid)

    def test_partitions_added_mid_job_go_each_to_the_reader_flinks_rule_names(self):
        # A topic whose partition 0 Flink's rule gives to subtask 1 of 3,
        # so that partition mod readers (or any rule from 0) is told apart.
        while True:
            inp = f"owner-{uuid.uuid4().hex[:8]}"
            if split_owner(inp, 0, 3) == 1:
                break
        tool("create", inp, "1")
        out = new_topic("owner-out", 1)
        produce(inp, [f"P0\ta{i}" for i in range(30)])
        jid = self.run_detached(JOBS, *self.copy_args(
            inp, out, "--source", "scan.topic-partition-discovery.interval=500 ms",
            job="tagged"), parallelism=3, conf=NO_RESTART)
        self.wait_records(out, 30, timeout=60)
        tool("partitions", inp, "3")
        produce(inp, [f"P{p}\t{'abc'[p]}{i}" for p in (1, 2) for i in range(30)])
        rows = self.wait_records(out, 90, timeout=60)
        self.cancel(jid)
        readers = collections.defaultdict(set)
        for _, _, v in rows:
            tag, value = v.split(" ", 1)
            readers["abc".index(value[0])].add(int(tag[1:]))
        self.assertEqual(sorted(v.split(" ", 1)[1] for _, _, v in rows),
                         sorted(f"{c}{i}" for c in "abc" for i in range(30)))
        self.assertEqual(dict(readers), {p: {split_owner(inp, p, 3)} for p in range(3)})

    def test_savepoint_at_p2_resumed_at_p3_continues_from_its_offsets(self):
        inp = new_topic("rescale", 3)
        out = new_topic("rescale-out", 2)
        lines = word_lines(9000, seed=11)
        produce(inp, [f"P{i % 3}\t{line}" for i, line in enumerate(lines[:6000])])
        jid = self.run_detached(JOBS, *keyed_args(inp, out), parallelism=2)
        self.wait_running_with_checkpoint(jid)
        r = self.spate("stop", "-m", f"127.0.0.1:{self.rest_port}", "-p",
                       f"{self.tmp}/savepoints", jid, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        before = len(consume(out))
        self.assertGreater(before, 0)
        produce(inp, [f"P{i % 3}\t{line}" for i, line in enumerate(lines[6000:])])
        jid2 = self.run_detached(JOBS, *keyed_args(inp, out), parallelism=3, savepoint=sp)
        total = sum(len(line.split()) for line in lines)
        records = self.wait_records(out, total)
        self.cancel(jid2)
        check_keyed(self, records, lines,
                    f"savepoint at p2 after {before} updates, resumed at p3")

    def json_input(self, topic):
        good = [json.dumps({"word": f"w{i}", "n": i}) for i in range(6)]
        produce(topic, good[:3] + ['{"word": "broken", "n": '] + good[3:])
        return [f"w{i} {i}" for i in range(6)]

    def json_args(self, inp, out, *extra):
        return ["json", "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                "--source", f"topic={inp}", "--source", "scan.startup.mode=earliest-offset",
                "--source", "scan.bounded.mode=latest-offset", "--source", "value.format=json",
                "--source", "fields=word,n", "--sink",
                f"properties.bootstrap.servers={KAFKA.bootstrap}", "--sink", f"topic={out}",
                *extra]

    def test_a_malformed_json_record_fails_the_job_naming_its_offset(self):
        inp = new_topic("json", 1)
        out = new_topic("json-out", 1)
        self.json_input(inp)
        jid = self.run_detached(JOBS, *self.json_args(inp, out), parallelism=1,
                                conf=NO_RESTART)
        job = self.wait_state(jid, TERMINAL, timeout=60)
        self.assertEqual(job["state"], "FAILED")
        self.assertRegex(job.get("failure", "") + self.exceptions(jid),
                         rf"topic '{inp}' partition 0 offset 3 \(json.ignore-parse-errors "
                         r"skips it\): malformed JSON")
        self.wait_overview(2, slots=6, available=6)

    def test_a_malformed_json_record_is_skipped_and_counted_when_told(self):
        inp = new_topic("json-skip", 1)
        out = new_topic("json-skip-out", 1)
        expected = self.json_input(inp)
        jid = self.run_detached(JOBS, *self.json_args(
            inp, out, "--source", "json.ignore-parse-errors=true"), parallelism=1,
            conf=NO_RESTART)
        job = self.wait_state(jid, TERMINAL, timeout=60)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.assertEqual([v for _, _, v in consume(out)], expected)
        logs = "".join(tm.text() for tm in self.tms)
        self.assertRegex(logs, rf"skipped 1 malformed records, the last at topic '{inp}' "
                               r"partition 0 offset 3")

    def test_a_missing_topic_fails_the_job_and_the_cluster_stays_up(self):
        out = new_topic("missing-out", 1)
        jid = self.run_detached(JOBS, *self.copy_args("no-such-topic", out), parallelism=1,
                                conf=NO_RESTART)
        job = self.wait_state(jid, TERMINAL, timeout=60)
        self.assertEqual(job["state"], "FAILED")
        self.assertIn(f"topic 'no-such-topic' does not exist on the brokers "
                      f"'{KAFKA.bootstrap}'", job.get("failure", "") + self.exceptions(jid))
        self.wait_overview(2, slots=6, available=6)

    def test_a_wrong_bootstrap_address_fails_the_job_and_the_cluster_stays_up(self):
        jid = self.run_detached(JOBS, "copy", "--source",
                                "properties.bootstrap.servers=127.0.0.1:1", "--source",
                                "topic=words", "--sink", "properties.bootstrap.servers=127.0.0.1:1",
                                "--sink", "topic=out", parallelism=1, conf=NO_RESTART)
        job = self.wait_state(jid, TERMINAL, timeout=90)
        self.assertEqual(job["state"], "FAILED")
        self.assertRegex(job.get("failure", "") + self.exceptions(jid),
                         r"cannot reach the Kafka brokers '127\.0\.0\.1:1' in 10000 ms")
        self.wait_overview(2, slots=6, available=6)


class KafkaSinkTest(KafkaTestCase):
    """The sink's delivery guarantees none and at-least-once, and its
    partitioners, each record read back; the sink's and the source's
    options checked at submission: two TaskManagers of two slots."""

    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tms = [self.start_taskmanager(slots=2) for _ in range(2)]
        self.wait_overview(2, slots=4)

    def copy_args(self, inp, out, group, guarantee):
        """The copy job at p1 from inp into out, its offsets committed to
        group when a checkpoint completes; the producer holds records up to
        two minutes (linger.ms) unless flushed."""
        return ["copy", "-c", "200",
                "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                "--source", f"topic={inp}", "--source", "scan.startup.mode=earliest-offset",
                "--source", f"properties.group.id={group}",
                "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                "--sink", f"topic={out}", "--sink", f"sink.delivery-guarantee={guarantee}",
                "--sink", "properties.linger.ms=120000"]

    def test_delivery_none_does_not_flush_at_a_checkpoint_at_least_once_does(self):
        values = [f"v{i}" for i in range(50)]
        runs = {}
        for guarantee in ("none", "at-least-once"):
            inp = new_topic(f"{guarantee}-in", 1)
            out = new_topic(f"{guarantee}-out", 1)
            group = f"g-{uuid.uuid4().hex[:8]}"
            produce(inp, values)
            jid = self.run_detached(JOBS, *self.copy_args(inp, out, group, guarantee),
                                    parallelism=1, conf=NO_RESTART)
            runs[guarantee] = (jid, inp, out, group)
        for guarantee, (jid, inp, out, group) in runs.items():
            # The source commits its offsets when a checkpoint completes:
            # once they reach the end, the sink's barrier of that checkpoint
            # came after every record.
            wait_for(lambda: committed(inp, group) == {0: 50} or None, 60,
                     f"{guarantee}: group {group} committed offset 50 of {inp}")
        jid, _, out, _ = runs["at-least-once"]
        # At-least-once: the barrier waited until the broker had them all.
        self.assertEqual(sorted(v for _, _, v in consume(out)), sorted(values))
        self.cancel(jid)
        jid, _, out, _ = runs["none"]
        # None: the checkpoint completed with every record still in the
        # producer (two minutes of linger.ms), none on the broker ...
        self.assertEqual(consume(out), [])
        self.assertEqual(self.job_state(jid)["state"], "RUNNING")
        # ... until the task closes its producer, which sends them.
        self.cancel(jid)
        self.assertEqual(sorted(v for _, _, v in consume(out)), sorted(values))

    def test_at_least_once_loses_nothing_through_a_kill(self):
        inp = new_topic("alo-in", 2)
        out = new_topic("alo-out", 2)
        lines = [f"r{i}" for i in range(6000)]
        jid = self.run_detached(JOBS, "copy", "-c", "3000",
                                "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                                "--source", f"topic={inp}",
                                "--source", "scan.startup.mode=earliest-offset",
                                "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                                "--sink", f"topic={out}",
                                "--sink", "sink.delivery-guarantee=at-least-once",
                                parallelism=2, conf=RESTART)

        def feed(part):
            produce(inp, [f"P{i % 2}\t{v}" for i, v in enumerate(part)])

        def written(n):
            wait_for(lambda: len(consume(out, 300)) >= n or None, 120, f"{n} records in {out}")

        feed(lines[:3000])
        written(3000)
        after = self.wait_running_with_checkpoint(jid)
        # Records written after that checkpoint (likely before the next,
        # 3 s later), then kill -9 of a TaskManager running the job: the
        # restore reads and writes them again; the rest comes meanwhile.
        feed(lines[3000:4000])
        written(4000)
        running = self.taskmanagers_of(jid)
        victim = next(tm for tm in self.tms if self.resource_id(tm) in running)
        victim.kill()
        self.tms.remove(victim)
        feed(lines[4000:])
        self.wait_running_with_checkpoint(jid, after=after)
        records = self.wait_records(out, len(lines))
        restored = self.checkpoints(jid)["counts"]["restored"]
        self.cancel(jid)
        self.assertGreaterEqual(restored, 1)
        seen = collections.Counter(v for _, _, v in records)
        lost = [v for v in lines if v not in seen]
        strange = [v for v in seen if v not in set(lines)]
        twice = sum(c - 1 for c in seen.values())
        sys.stderr.write(f"\nat-least-once through a kill -9 ({restored} restores): "
                         f"{len(lines)} records, {len(records)} written, {len(lost)} lost, "
                         f"{twice} duplicates\n")
        self.assertEqual((lost[:5], strange[:5]), ([], []))

    def tagged(self, inp, out, parallelism, *sink):
        """The tagged job from inp (bounded) into out: each record
        "s<subtask> <value>"; the topic's records [(partition, subtask,
        value)] once it finished."""
        jid = self.run_detached(JOBS, "tagged", "-c", "200",
                                "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                                "--source", f"topic={inp}",
                                "--source", "scan.startup.mode=earliest-offset",
                                "--source", "scan.bounded.mode=latest-offset",
                                "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                                "--sink", f"topic={out}", *sink,
                                parallelism=parallelism, conf=NO_RESTART)
        job = self.wait_state(jid, TERMINAL, timeout=120)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        rows = []
        for p, _, v in consume(out):
            tag, value = v.split(" ", 1)
            rows.append((p, int(tag[1:]), value))
        return rows

    def test_partitioners_place_each_record_where_they_say(self):
        # Three input partitions of 20 records read at p3: each subtask
        # reads one partition, in order, and writes "p<q>-<k>" k-th.
        inp = new_topic("part-in", 3)
        records = [f"p{q}-{k}" for q in range(3) for k in range(20)]
        produce(inp, [f"P{v[1]}\t{v}" for v in records])

        def written(out, *sink):
            rows = self.tagged(inp, out, 3, *sink)
            self.assertEqual(sorted(v for _, _, v in rows), sorted(records))
            return rows

        # fixed: subtask i writes partition i mod 2, and only that one.
        out = new_topic("fixed", 2)
        rows = written(out, "--sink", "sink.partitioner=fixed")
        self.assertEqual([(p, s, v) for p, s, v in rows if p != s % 2], [])
        self.assertEqual({s for _, s, _ in rows}, {0, 1, 2})
        # round-robin: each subtask's k-th record to partition k mod 3.
        out = new_topic("round-robin", 3)
        rows = written(out, "--sink", "sink.partitioner=round-robin")
        self.assertEqual([(p, v) for p, _, v in rows if p != int(v.split("-")[1]) % 3], [])
        # default without a key: sticky, each subtask's records in one
        # partition for sticky.partitioning.linger.ms (15 minutes here).
        out = new_topic("sticky", 3)
        rows = written(out, "--sink", "sink.partitioner=default",
                       "--sink", "properties.sticky.partitioning.linger.ms=900000")
        by_subtask = collections.defaultdict(set)
        for p, s, _ in rows:
            by_subtask[s].add(p)
        self.assertEqual({s: len(ps) for s, ps in by_subtask.items()}, {0: 1, 1: 1, 2: 1},
                         by_subtask)

    def test_default_partitioner_places_a_keyed_record_by_its_key_hash(self):
        inp = new_topic("keyed-part-in", 2)
        out = new_topic("keyed-part-out", 5)
        produce(inp, [f"P{i % 2}\t" + json.dumps({"word": f"w{i % 40}", "n": i})
                      for i in range(200)])
        jid = self.run_detached(JOBS, "tuples", "-c", "200",
                                "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                                "--source", f"topic={inp}",
                                "--source", "scan.startup.mode=earliest-offset",
                                "--source", "scan.bounded.mode=latest-offset",
                                "--source", "value.format=json", "--source", "fields=word,n",
                                "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                                "--sink", f"topic={out}", "--sink", "value.format=json",
                                "--sink", "fields=word,n", "--sink", "key.fields=word",
                                "--sink", "key.format=raw",
                                parallelism=2, conf=NO_RESTART)
        job = self.wait_state(jid, TERMINAL, timeout=120)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        rows = consume_keys(out)
        self.assertEqual(sorted(json.loads(v)["n"] for _, _, v in rows), list(range(200)))
        self.assertEqual([(p, k) for p, k, v in rows if json.loads(v)["word"] != k], [])
        wrong = [(p, k, murmur2_partition(k.encode(), 5)) for p, k, _ in rows
                 if p != murmur2_partition(k.encode(), 5)]
        self.assertEqual(wrong, [])
        self.assertGreater(len({p for p, _, _ in rows}), 2)

    def test_a_bad_sink_option_is_refused_at_submission(self):
        for kv, message in (
                ("sink.partitioner=hash",
                 "kafka sink: 'sink.partitioner' 'hash' is not one of default, fixed, "
                 "round-robin"),
                ("sink.partitioner=org.example.MyPartitioner",
                 "(a partitioner class of Flink's is Java, which spate cannot load)"),
                ("sink.bogus=1", "unsupported option 'sink.bogus'"),
                ("properties.no.such.property=1",
                 "option 'properties.no.such.property' = '1'")):
            r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOBS, "copy",
                           "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                           "--source", "topic=words",
                           "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                           "--sink", "topic=out", "--sink", kv, timeout=120)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn("sink 'Sink: kafka'", r.stderr + r.stdout)
            self.assertIn(message, r.stderr + r.stdout)
        status, jobs = self.rest("/jobs")
        self.assertEqual((status, jobs.get("jobs")), (200, []))

    def test_a_bad_source_option_is_refused_at_submission(self):
        for kvs, message in (
                (["scan.startup.mode=newest"],
                 "kafka source: 'scan.startup.mode' 'newest' is not one of earliest-offset, "
                 "latest-offset, group-offsets, timestamp, specific-offsets"),
                (["scan.bogus=1"], "unsupported option 'scan.bogus'"),
                (["scan.startup.mode=specific-offsets", "scan.startup.specific-offsets=0:42"],
                 "'scan.startup.specific-offsets' '0:42' is not of the form "
                 "partition:0,offset:42;partition:1,offset:300"),
                (["scan.topic-partition-discovery.interval=often"],
                 "'scan.topic-partition-discovery.interval' 'often' is not a duration"),
                (["properties.no.such.property=1"],
                 "option 'properties.no.such.property' = '1'"),
                (["value.format=xml"], "format 'xml' is not one of raw, string, json")):
            args = ["run", "-m", f"127.0.0.1:{self.rest_port}", "-d", JOBS, "copy",
                    "--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                    "--source", "topic=words"]
            for kv in kvs:
                args += ["--source", kv]
            r = self.spate(*args, "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                           "--sink", "topic=out", timeout=120)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn("source 'Source: kafka'", r.stderr + r.stdout)
            self.assertIn(message, r.stderr + r.stdout)
        status, jobs = self.rest("/jobs")
        self.assertEqual((status, jobs.get("jobs")), (200, []))


class BrokerOutageTest(KafkaTestCase):
    """The broker killed for 30 s under a running exactly-once job, then
    started again on its ports and data: a broker of its own."""

    @classmethod
    def setUpClass(cls):
        cls.broker = KafkaServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.close()

    def setUp(self):
        super().setUp()
        self.start_jobmanager(*RESTART)
        self.tms = [self.start_taskmanager(slots=2) for _ in range(2)]
        self.wait_overview(2, slots=4)

    def test_the_job_recovers_after_the_broker_was_down_30_s(self):
        global KAFKA
        module_broker, KAFKA = KAFKA, self.broker
        try:
            inp = new_topic("outage", 2)
            out = new_topic("outage-out", 2)
            lines = word_lines(8000, seed=17)
            produce(inp, [f"P{i % 2}\t{line}" for i, line in enumerate(lines[:4000])])
            jid = self.run_detached(JOBS, *keyed_args(inp, out), parallelism=2, conf=RESTART)
            first = self.wait_running_with_checkpoint(jid)
            self.broker.stop()
            time.sleep(30)  # the outage itself, not a wait for a condition
            self.broker.start()
            produce(inp, [f"P{i % 2}\t{line}" for i, line in enumerate(lines[4000:])])
            self.wait_running_with_checkpoint(jid, after=first, timeout=180)
            total = sum(len(line.split()) for line in lines)
            records = self.wait_records(out, total)
            self.cancel(jid)
            check_keyed(self, records, lines, "broker down 30 s")
        finally:
            KAFKA = module_broker


class KafkaHaTest(KafkaTestCase, test_ha.OwnZooKeeper, test_ha.HaTestCase):
    """Two JobManagers with ZooKeeper HA (a ZooKeeper server of this
    class's own), two TaskManagers of two slots: kill -9 of the leader
    under the keyed job; the standby recovers it from its latest
    checkpoint, and every update is committed once."""

    def test_kill9_of_the_leading_jobmanager_every_update_once(self):
        jm1, jm2, tms = self.leader_standby_taskmanagers(2)
        inp = new_topic("ha-in", 2)
        out = new_topic("ha-out", 2)
        lines = word_lines(12000, seed=23)
        last = None
        for _ in range(30):  # a leadership being settled refuses a submission
            last = self.spate(*self.ha_args(), *RESTART, "-D",
                              f"state.checkpoints.dir={self.tmp}/checkpoints", "run", "-d",
                              "-p", "2", JOBS, *keyed_args(inp, out), timeout=120)
            if last.returncode == 0:
                break
            time.sleep(0.2)
        self.assertEqual(last.returncode, 0, last.stderr)
        jid = re.search(r"JobID ([0-9a-f]{32})", last.stdout).group(1)
        self.use_rest_of(jm1)
        feeder = Feeder(inp, lines, 2, rate=1500, step=1)
        try:
            self.wait_running_with_checkpoint(jid)
            jm1.popen.send_signal(signal.SIGKILL)
            jm1.popen.wait()
            jm2.wait_log(r"this JobManager was granted leadership", timeout=30)
            m = jm2.wait_log(r"job=" + jid + r" recovered; resuming from '(\S+)'", timeout=60)
            self.use_rest_of(jm2)
            feeder.wait()
        finally:
            feeder.kill()
        records = self.wait_records(out, sum(len(line.split()) for line in lines))
        self.cancel(jid)
        check_keyed(self, records, lines, f"kill -9 of the leader, resumed from {m.group(1)}")


class SinkRecoveryTest(unittest.TestCase):
    """The sink's committables restored when the task died between its
    checkpoint's completion and its commit (a window no kill can hit on
    purpose): the transaction is aborted by the restore, its mark is not in
    the group, its records are written again; and when it had committed,
    nothing is written twice."""

    def check(self, how):
        topic = new_topic(f"recovery-{how}", 2)
        r = subprocess.run([os.path.join(BUILD, "tests", "bin", "kafka_sink_check"),
                            KAFKA.bootstrap, topic, f"check-{topic}", how, "500"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        values = sorted(v for _, _, v in consume(topic))
        self.assertEqual(values, sorted(f"r{i}" for i in range(500)))
        return r.stderr

    def test_a_transaction_that_never_committed_is_written_again_once(self):
        log = self.check("lost")
        self.assertIn("had not committed: wrote its 500 records again", log)

    def test_a_committed_transaction_is_not_written_again(self):
        log = self.check("committed")
        self.assertNotIn("wrote its", log)


if __name__ == "__main__":
    unittest.main(verbosity=2)
