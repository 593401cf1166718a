"""Upsert sinks and the planner's refusals (issue 27): updating queries
(GROUP BY without a window: +I, -U/+U; a Top-N without a window: +I, -D)
into

- upsert-kafka on a real broker (kafkaserver.py), exactly once through
  Kafka transactions, also through a kill -9 of the TaskManager that runs
  the sink: a read_committed consumer sees each key's updates once each,
  in order, no -U written, and the topic compacted by key (a tombstone
  deletes) equals the result computed here; key.format raw and
  value.fields-include EXCEPT_KEY; the append-only kafka sink's key.fields,
  and the DataStream Kafka sink's key.fields with key.format;
- the upsert filesystem sink ("sink.changelog-mode" = 'upsert'): its
  compacted file equals the result computed here, deletes removed, also
  after a kill -9 of a TaskManager mid-job (the restore starts its rows
  from the checkpoint's);

and the planner refusing an updating query into a sink that takes
insertions only (naming the sink and the operator), an upsert table
without a PRIMARY KEY, a PRIMARY KEY not NOT ENFORCED."""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import kafkaserver  # noqa: E402
import spatetest  # noqa: E402
from clustertest import ClusterTestCase  # noqa: E402
from kafkaserver import KafkaServer  # noqa: E402
from spatetest import BUILD  # noqa: E402

TOOL = os.path.join(BUILD, "tests", "bin", "kafka_tool")
TERMINAL = ("FINISHED", "FAILED", "CANCELED")
KAFKA = None


def setUpModule():
    global KAFKA
    if kafkaserver.available() is None:
        KAFKA = KafkaServer().start()


def tearDownModule():
    if KAFKA is not None:
        KAFKA.close()


def run_sql(script, timeout=120):
    return subprocess.run([spatetest.SPATE, "sql", "--local"], input=script,
                          capture_output=True, text=True, timeout=timeout)


def source(rows, rate):
    """n from 1 to rows, rate rows a second over both subtasks (0: as fast
    as it goes), checkpoints every 200 ms."""
    return ("SET 'parallelism.default' = '2';\n"
            "SET 'execution.checkpointing.interval' = '200 ms';\n"
            "CREATE TABLE src (n BIGINT) WITH (connector = 'datagen', "
            f"\"rows-per-second\" = '{rate}', \"fields.n.kind\" = 'sequence', "
            f"\"fields.n.start\" = '1', \"fields.n.end\" = '{rows}');\n")


GROUP_BY = "SELECT n % 7, COUNT(*), SUM(n) FROM src GROUP BY n % 7"
# The three largest v of each g; v = n * 37 mod 1000 is distinct for n up
# to 1000 (37 and 1000 are coprime), so the top is one set.
TOP_N = ("SELECT g, n, v FROM (SELECT g, n, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v "
         "DESC) AS rn FROM (SELECT n % 5 AS g, n, (n * 37) % 1000 AS v FROM src) s) q "
         "WHERE rn <= 3")


def group_by_rows(rows):
    """GROUP_BY's result: k -> (count, sum)."""
    out = {}
    for n in range(1, rows + 1):
        c, s = out.get(n % 7, (0, 0))
        out[n % 7] = (c + 1, s + n)
    return out


def top_n_rows(rows):
    """TOP_N's result: n -> (g, v)."""
    per = collections.defaultdict(list)
    for n in range(1, rows + 1):
        per[n % 5].append(((n * 37) % 1000, n))
    return {n: (g, v) for g, l in per.items() for v, n in sorted(l, reverse=True)[:3]}


def tool(*args):
    r = subprocess.run([TOOL, KAFKA.bootstrap, *args], capture_output=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"kafka_tool {' '.join(args)}: {r.stderr.decode(errors='replace')}")
    return r.stdout.decode()


def new_topic():
    topic = f"upsert-{uuid.uuid4().hex[:8]}"
    tool("create", topic, "3")
    return topic


def records(topic):
    """The topic's committed records (read_committed) in partition order:
    (key, value or None for a tombstone)."""
    out = []
    for line in tool("consume", topic, "1000", "read_committed", "keys").splitlines():
        m = re.match(r"(\d+) (\d+) K(.*)\t(NULL|V(.*))$", line)
        if m is None:
            raise AssertionError(f"kafka_tool's line: {line!r}")
        out.append((m.group(3), None if m.group(4) == "NULL" else m.group(5)))
    return out


def upsert_kafka_ddl(topic, cols, key, extra=""):
    return (f"CREATE TABLE o ({cols}, PRIMARY KEY ({key}) NOT ENFORCED) WITH (connector = "
            f"'upsert-kafka', topic = '{topic}', \"properties.bootstrap.servers\" = "
            f"'{KAFKA.bootstrap}', \"value.format\" = 'json'{extra});\n")


EXACTLY_ONCE = (", \"key.format\" = 'json', \"sink.delivery-guarantee\" = 'exactly-once', "
                "\"sink.transactional-id-prefix\" = 'tx-{}'")


def check_each_update_once(test, topic, want):
    """GROUP_BY's records in topic: each key's counts once each, 1, 2, ...
    in order (-U dropped, no tombstone, nothing twice or lost), the last of
    each key the result."""
    counts = collections.defaultdict(list)
    latest = {}
    for key, value in records(topic):
        test.assertIsNotNone(value, f"a tombstone of {key}: GROUP BY deletes nothing")
        row = json.loads(value)
        test.assertEqual(json.loads(key), {"k": row["k"]})
        counts[row["k"]].append(row["c"])
        latest[row["k"]] = (row["c"], row["s"])
    for k, (c, _) in want.items():
        test.assertEqual(counts[k], list(range(1, c + 1)), f"the updates of key {k}")
    test.assertEqual(latest, want)
    sys.stderr.write(f"\n{test.id().split('.')[-1]}: {sum(map(len, counts.values()))} updates "
                     f"of {len(want)} keys, each once, in order\n")


@unittest.skipIf(kafkaserver.available(), kafkaserver.available())
class UpsertKafkaTest(unittest.TestCase):
    def setUp(self):
        self.topic = new_topic()

    def insert(self, table_ddl, query, rows, rate):
        r = run_sql(source(rows, rate) + "SET 'table.dml-sync' = 'true';\n" + table_ddl +
                    f"INSERT INTO o {query};\n")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertIn("has finished", r.stdout)

    def test_an_updating_query_into_upsert_kafka_each_update_once(self):
        """GROUP BY's changelog at p2 with checkpoints into transactions."""
        rows = 3000
        self.insert(upsert_kafka_ddl(self.topic, "k BIGINT, c BIGINT, s BIGINT", "k",
                                     EXACTLY_ONCE.format(self.topic)), GROUP_BY, rows, 1500)
        check_each_update_once(self, self.topic, group_by_rows(rows))

    def test_deletes_are_tombstones_and_the_key_formats(self):
        """A Top-N's -D a tombstone; key.format raw (the key column's text)
        and value.fields-include EXCEPT_KEY (the value without it)."""
        rows = 1000
        self.insert(upsert_kafka_ddl(self.topic, "g BIGINT, n BIGINT, v BIGINT", "n",
                                     ", \"key.format\" = 'raw', \"value.fields-include\" = "
                                     "'EXCEPT_KEY'"), TOP_N, rows, 0)
        table, tombstones = {}, 0
        for key, value in records(self.topic):
            if value is None:
                tombstones += 1
                table.pop(int(key), None)
            else:
                row = json.loads(value)
                self.assertEqual(sorted(row), ["g", "v"], value)
                table[int(key)] = (row["g"], row["v"])
        self.assertGreater(tombstones, 0, "the Top-N deleted no row")
        self.assertEqual(table, top_n_rows(rows))


    def test_the_kafka_sink_writes_key_fields(self):
        """The append-only kafka sink with Flink's key.fields (and
        key.format json, value.fields-include EXCEPT_KEY): each row's key
        columns its record's key."""
        self.insert(f"CREATE TABLE o (n BIGINT, w VARCHAR, d BIGINT) WITH (connector = 'kafka', "
                    f"topic = '{self.topic}', \"properties.bootstrap.servers\" = "
                    f"'{KAFKA.bootstrap}', \"value.format\" = 'json', \"key.fields\" = 'n;w', "
                    "\"key.format\" = 'json', \"value.fields-include\" = 'EXCEPT_KEY');\n",
                    "SELECT n, 'w' || CAST(n % 3 AS VARCHAR), n * 2 FROM src", 100, 0)
        got = sorted(((json.loads(k), json.loads(v)) for k, v in records(self.topic)),
                     key=lambda r: r[0]["n"])
        self.assertEqual(got, [({"n": n, "w": f"w{n % 3}"}, {"d": 2 * n}) for n in range(1, 101)])


class UpsertFilesystemTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spate-upsert-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_the_compacted_file_is_the_result(self):
        """GROUP BY, GROUP BY with HAVING (a +U that HAVING drops deletes
        the row: the sink drops the -U before it) and a Top-N (-D)."""
        for i, (query, cols, key, want) in enumerate([
                (GROUP_BY, "k BIGINT, c BIGINT, s BIGINT", "k",
                 {k: [k, c, s] for k, (c, s) in group_by_rows(1000).items()}),
                (GROUP_BY + " HAVING COUNT(*) % 2 = 0", "k BIGINT, c BIGINT, s BIGINT", "k",
                 {k: [k, c, s] for k, (c, s) in group_by_rows(1000).items() if c % 2 == 0}),
                (TOP_N, "g BIGINT, n BIGINT, v BIGINT", "n",
                 {n: [g, n, v] for n, (g, v) in top_n_rows(1000).items()})]):
            with self.subTest(query=query):
                out = os.path.join(self.tmp, str(i))
                r = run_sql(source(1000, 0) + "SET 'table.dml-sync' = 'true';\n"
                            f"CREATE TABLE o ({cols}, PRIMARY KEY ({key}) NOT ENFORCED) WITH "
                            f"(connector = 'filesystem', path = '{out}', format = 'json', "
                            f"\"sink.changelog-mode\" = 'upsert');\nINSERT INTO o {query};\n")
                self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
                self.assertEqual(os.listdir(out), ["compacted-0"])
                with open(os.path.join(out, "compacted-0")) as f:
                    got = [list(json.loads(line).values()) for line in f]
                self.assertEqual(sorted(got), sorted(want.values()))


class Kill9Test(ClusterTestCase):
    def run_through_kill9(self, table_ddl, query, rows):
        """INSERT INTO o query at p2 (rows at 4000 a second) on a cluster of
        two TaskManagers; once a checkpoint completed, kill -9 of the one
        that runs the sink's first subtask. The job must restore and
        finish."""
        self.start_jobmanager()
        tms = [self.start_taskmanager(slots=2) for _ in range(2)]
        self.wait_overview(2, slots=4)
        r = self.spate("sql", "-m", f"127.0.0.1:{self.rest_port}", timeout=120,
                       input=source(rows, 4000) +
                       "SET 'restart-strategy.type' = 'fixed-delay';\n"
                       "SET 'restart-strategy.fixed-delay.delay' = '200 ms';\n" + table_ddl +
                       f"INSERT INTO o {query};\n")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        jid = re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)
        self.wait_checkpoint_while_running(jid)
        sink = None
        for v in self.job_state(jid)["vertices"]:
            if "Sink: o" in v["name"]:  # chained behind the aggregate at p2
                _, d = self.rest(f"/jobs/{jid}/vertices/{v['id']}")
                sink = d["subtasks"][0]["taskmanager-id"]
        victim = next(tm for tm in tms
                      if tm.wait_log(r"TaskExecutor (\S+) started at").group(1) == sink)
        victim.kill()
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        _, s = self.rest(f"/jobs/{jid}/checkpoints")
        self.assertGreaterEqual(s["counts"]["restored"], 1, "no restore after the kill")

    def test_kill9_the_upsert_file_is_the_result(self):
        """GROUP BY into the upsert file sink: the file at the end is the
        result. The groups (n / 500) fill one after the other, so those
        done before the restored checkpoint get no update after it: a sink
        whose rows did not restore would lose them."""
        out, rows = os.path.join(self.tmp, "out"), 20000
        self.run_through_kill9("CREATE TABLE o (k BIGINT, c BIGINT, s BIGINT, PRIMARY KEY (k) "
                               f"NOT ENFORCED) WITH (connector = 'filesystem', path = '{out}', "
                               "format = 'json', \"sink.changelog-mode\" = 'upsert');\n",
                               "SELECT n / 500, COUNT(*), SUM(n) FROM src GROUP BY n / 500",
                               rows)
        with open(os.path.join(out, "compacted-0")) as f:
            got = {r["k"]: (r["c"], r["s"]) for r in map(json.loads, f)}
        want = {}
        for n in range(1, rows + 1):
            c, t = want.get(n // 500, (0, 0))
            want[n // 500] = (c + 1, t + n)
        self.assertEqual(got, want)

    @unittest.skipIf(kafkaserver.available(), kafkaserver.available())
    def test_kill9_upsert_kafka_each_update_once(self):
        """GROUP BY into upsert-kafka, exactly once: after the restore, no
        update is lost or written twice."""
        topic, rows = new_topic(), 20000
        self.run_through_kill9(upsert_kafka_ddl(topic, "k BIGINT, c BIGINT, s BIGINT", "k",
                                                EXACTLY_ONCE.format(topic)), GROUP_BY, rows)
        check_each_update_once(self, topic, group_by_rows(rows))


@unittest.skipIf(kafkaserver.available(), kafkaserver.available())
class DataStreamKeyTest(ClusterTestCase):
    """The DataStream Kafka sink's key (issue 25): key.fields names a
    tuple's field, key.format says how it is written (the broker and the
    read-back are this file's)."""

    def test_key_format_json_raw_and_string(self):
        self.start_jobmanager()
        self.start_taskmanager(slots=1)
        self.wait_overview(1, slots=1)
        inp = new_topic()
        rows = [{"word": f"w {i}", "n": i} for i in range(5)]
        r = subprocess.run([TOOL, KAFKA.bootstrap, "produce", inp],
                           input="".join(json.dumps(x) + "\n" for x in rows).encode(),
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        for fmt, field, key_of in [("json", "word", lambda x: json.dumps(x["word"])),
                                   ("raw", "word", lambda x: x["word"]),
                                   (None, "n", lambda x: str(x["n"]))]:
            with self.subTest(key_format=fmt, field=field):
                out = new_topic()
                args = ["--source", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                        "--source", f"topic={inp}", "--source", "scan.startup.mode=earliest-offset",
                        "--source", "scan.bounded.mode=latest-offset",
                        "--source", "value.format=json", "--source", "fields=word,n",
                        "--sink", f"properties.bootstrap.servers={KAFKA.bootstrap}",
                        "--sink", f"topic={out}", "--sink", "value.format=json",
                        "--sink", "fields=word,n", "--sink", f"key.fields={field}"]
                if fmt is not None:
                    args += ["--sink", f"key.format={fmt}"]
                r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-p", "1",
                               os.path.join(BUILD, "tests", "e2e", "jobs", "job_kafka.so"),
                               "tuples", *args, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
                got = sorted(records(out))
                self.assertEqual(got, sorted((key_of(x), json.dumps(x, separators=(",", ":")))
                                             for x in rows))


class RefusalTest(unittest.TestCase):
    DDL = source(10, 0)

    def error_of(self, script):
        r = run_sql(self.DDL + script)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("[ERROR]", r.stderr)
        return r.stderr

    def test_an_updating_query_into_an_insert_only_sink(self):
        for sink in ["connector = 'filesystem', path = '/nonexistent/o', format = 'json'",
                     "connector = 'kafka', topic = 't', \"properties.bootstrap.servers\" = "
                     "'127.0.0.1:1', format = 'json'"]:
            connector = re.search(r"connector = '(\w+)'", sink).group(1)
            for query, what, cols in [
                    (GROUP_BY, "GroupAggregate: GROUP BY without a window",
                     "k BIGINT, c BIGINT, s BIGINT"),
                    (TOP_N, "Rank: a Top-N without a window", "g BIGINT, n BIGINT, v BIGINT"),
                    ("SELECT a.n, b.n, 1 FROM src a LEFT JOIN src b ON a.n = b.n",
                     "Join: an outer join, or GroupAggregate or Rank without a window, below it",
                     "a BIGINT, b BIGINT, c INT")]:
                with self.subTest(sink=connector, query=query):
                    err = self.error_of(f"CREATE TABLE o ({cols}) WITH ({sink});\n"
                                        f"INSERT INTO o {query};\n")
                    self.assertIn(f"not supported: table 'o' (connector '{connector}') takes "
                                  "insertions only, and this query updates its rows "
                                  f"({what})", err)
                    self.assertIn("an upsert sink takes the updates", err)

    def test_an_upsert_table_needs_a_primary_key_not_enforced(self):
        for ddl, what in [
                ("(k BIGINT) WITH (connector = 'upsert-kafka', topic = 't', "
                 "\"key.format\" = 'json', \"value.format\" = 'json')",
                 "an 'upsert-kafka' table needs a PRIMARY KEY (...) NOT ENFORCED"),
                ("(k BIGINT) WITH (connector = 'filesystem', path = '/nonexistent', "
                 "format = 'json', \"sink.changelog-mode\" = 'upsert')",
                 "a filesystem table with 'sink.changelog-mode' = 'upsert' needs a PRIMARY"),
                ("(k BIGINT, PRIMARY KEY (k)) WITH (connector = 'upsert-kafka', topic = 't', "
                 "\"key.format\" = 'json', \"value.format\" = 'json')",
                 "a PRIMARY KEY is NOT ENFORCED"),
                ("(k BIGINT, PRIMARY KEY (x) NOT ENFORCED) WITH (connector = 'upsert-kafka', "
                 "topic = 't', \"key.format\" = 'json', \"value.format\" = 'json')",
                 "the PRIMARY KEY's column 'x' is not one of its columns"),
                ("(k BIGINT PRIMARY KEY NOT ENFORCED) WITH (connector = 'upsert-kafka', "
                 "topic = 't', \"value.format\" = 'json')",
                 "an 'upsert-kafka' table needs 'key.format'"),
                ("(k BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH (connector = 'filesystem', "
                 "path = '/nonexistent', format = 'csv', \"sink.changelog-mode\" = 'upsert')",
                 "not supported: an upsert sink's rows in CSV"),
                ("(k BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH (connector = 'upsert-kafka', "
                 "topic = 't', \"key.format\" = 'json', \"value.format\" = 'json', "
                 "\"key.fields\" = 'k')", "key is its PRIMARY KEY: no 'key.fields'"),
                ("(k BIGINT) WITH (connector = 'kafka', topic = 't', format = 'json', "
                 "\"key.fields\" = 'k;x')", "'key.fields' names 'x', which is not one of its"),
                ("(k BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH (connector = 'kafka', "
                 "topic = 't', format = 'json', \"sink.changelog-mode\" = 'upsert')",
                 "is the filesystem connector's (an upsert Kafka table is connector "
                 "'upsert-kafka')"),
                ("(k BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH (connector = 'filesystem', "
                 "path = '/nonexistent', format = 'json', \"sink.changelog-mode\" = 'retract')",
                 "'sink.changelog-mode' is 'insert-only' or 'upsert', not 'retract'"),
                ("(k BIGINT, UNIQUE (k)) WITH (connector = 'blackhole')",
                 "not supported: table constraint UNIQUE")]:
            with self.subTest(ddl=ddl):
                self.assertIn(what, self.error_of(f"CREATE TABLE o {ddl};\n"))


if __name__ == "__main__":
    unittest.main()
