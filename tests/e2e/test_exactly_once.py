"""Exactly-once of WordCount (examples/wordcount) through failures, every
committed record checked (issue 22). WordCount writes an update "word n" for
every word it reads; its output is exactly once when every n = 1 .. final of
every word appears once across the committed part files, and final is the
word's count in the input, which exactly_once.py computes from the input
files independently of the job (WordCount's tokenizer: runs of ASCII letters
and digits, lower-cased).

The input is made here: 8 text files whose word frequencies are skewed as in
natural text (about 40 MB in all; 16 MB against build-asan), and one file
of 10 MB (5 MB) for p1.

- a JobManager and three TaskManagers of two slots: WordCount at p4 with
  checkpoints every 200 ms; once a checkpoint completed, kill -9 of a
  TaskManager that runs tasks of the job; the job restores and ends
  FINISHED; the same at p1 over the single file, and with the tuples
  written as CSV lines (p4) and JSON lines (p2, `--format`);
- stop-with-savepoint mid-run and a resume into the same output folder at
  another parallelism (p4 -> p3, and p2 -> p4 with cancel --withSavepoint),
  and at p1 -> p1: the files committed before the savepoint are still
  there, unchanged, and the counts continue from the savepoint;
- ZooKeeper HA, two JobManagers: kill -9 of the leader after a completed
  checkpoint at p4; the standby recovers the job from its latest checkpoint
  and it ends FINISHED.

WordCount has no rate option, so a run lasts as long as its input takes:
about 2 s for 40 MB at p4 in the Release build. The tests therefore check
that the failure landed while the job ran (a restore counted, output
written both before and after a savepoint) rather than assume it."""

import os
import re
import shutil
import signal
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import exactly_once  # noqa: E402
from clustertest import ClusterTestCase, wait_for  # noqa: E402
from spatetest import BUILD  # noqa: E402
import test_ha  # noqa: E402

WORDCOUNT = os.path.join(BUILD, "examples", "wordcount.so")
TERMINAL = ("FINISHED", "FAILED", "CANCELED")
# The sanitized build runs several times slower: less text (not a fifth: p1
# must still run for a while after its first checkpoint).
ASAN = "asan" in BUILD
MB = 1_000_000
CORPUS_BYTES = 16 * MB if ASAN else 40 * MB
SINGLE_BYTES = 5 * MB if ASAN else 10 * MB
INTERVAL = "200 ms"

# The inputs and their expected counts, made once for the file.
DATA = None


class Inputs:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="spate-e2e-words-")
        self.corpus = os.path.join(self.dir, "corpus")
        exactly_once.write_corpus(self.corpus, 8, CORPUS_BYTES)
        self.corpus_counts = exactly_once.count_words(self.corpus)
        single = os.path.join(self.dir, "single")
        exactly_once.write_corpus(single, 1, SINGLE_BYTES, seed=7)
        self.single = os.path.join(single, "part-00")
        self.single_counts = exactly_once.count_words(self.single)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def setUpModule():
    global DATA
    DATA = Inputs()


def tearDownModule():
    if DATA is not None:
        DATA.close()


class WordCountMixin:
    """Submitting WordCount, following it over REST, checking its output."""

    def submit_wordcount(self, inp, out, parallelism, *conf, savepoint=None, target=None,
                         fmt="text"):
        """`spate run -d` of WordCount with checkpoints every 200 ms; its
        JobID. target: the CLI's -m (else the REST port in use); fmt: its
        --format (text, csv, json)."""
        cmd = [*conf, "-D", f"execution.checkpointing.interval={INTERVAL}",
               "-D", f"state.checkpoints.dir={self.tmp}/checkpoints", "run"]
        if target is not False:
            cmd += ["-m", target or f"127.0.0.1:{self.rest_port}"]
        cmd += ["-d", "-p", str(parallelism)]
        if savepoint is not None:
            cmd += ["-s", savepoint]
        r = self.spate(*cmd, WORDCOUNT, "--input", inp, "--output", out, "--format", fmt,
                       timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        return re.search(r"JobID ([0-9a-f]{32})", r.stdout).group(1)

    def stats(self, jid):
        status, s = self.rest(f"/jobs/{jid}/checkpoints")
        self.assertEqual(status, 200, s)
        return s

    def check_output(self, out, expected, what, parse=exactly_once.parse_word_count):
        """Every committed record of out checked against expected; the
        figures on stderr (ctest's log keeps them)."""
        updates = exactly_once.read_committed(out, parse)
        r = exactly_once.check_rolling_counts(updates, expected)
        sys.stderr.write(f"\n{self.id().split('.')[-1]}: {what}: {r.message(keys=3)}\n")
        if not r.ok:
            self.fail(f"{what}: {r.message()}")
        return r


class WordCountKillTest(WordCountMixin, ClusterTestCase):
    """kill -9 of a TaskManager under WordCount; three TaskManagers of two
    slots, so that the four slots of p4 remain without a replacement."""

    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tms = [self.start_taskmanager(slots=2) for _ in range(3)]
        self.wait_overview(3, slots=6)

    def kill_one_running_the_job(self, jid):
        running = self.taskmanagers_of(jid)
        victim = next((tm for tm in self.tms if self.resource_id(tm) in running), None)
        self.assertIsNotNone(victim, f"no TaskManager of ours runs {jid}: {running}")
        victim.kill()
        self.tms.remove(victim)

    def run_killed(self, inp, expected, parallelism, fmt="text",
                   parse=exactly_once.parse_word_count):
        out = os.path.join(self.tmp, "out")
        jid = self.submit_wordcount(inp, out, parallelism, fmt=fmt)
        self.wait_checkpoint_while_running(jid)
        self.kill_one_running_the_job(jid)
        job = self.wait_state(jid, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        s = self.stats(jid)
        self.assertGreaterEqual(s["counts"]["restored"], 1,
                                "no restore: the kill came after the job's tasks had ended "
                                "(too little input for this machine?)")
        self.assertIsNotNone(s["latest"]["restored"], s)
        self.check_output(out, expected,
                          f"p{parallelism} {fmt}, kill -9 after checkpoint "
                          f"{s['latest']['restored']['id']}, restored {s['counts']['restored']}x",
                          parse)

    def test_p4_8_files_kill9_of_a_taskmanager_every_record_exactly_once(self):
        self.run_killed(DATA.corpus, DATA.corpus_counts, 4)

    def test_p1_single_file_kill9_of_a_taskmanager_every_record_exactly_once(self):
        self.run_killed(DATA.single, DATA.single_counts, 1)

    # The (word, count) tuples written by spate_sink_file as CSV and JSON
    # lines: the same part files and commits, other bytes.
    def test_p4_csv_lines_kill9_of_a_taskmanager_every_record_exactly_once(self):
        self.run_killed(DATA.corpus, DATA.corpus_counts, 4, "csv",
                        exactly_once.parse_word_count_csv)

    def test_p2_json_lines_kill9_of_a_taskmanager_every_record_exactly_once(self):
        self.run_killed(DATA.corpus, DATA.corpus_counts, 2, "json",
                        exactly_once.parse_word_count_json)


class WordCountSavepointTest(WordCountMixin, ClusterTestCase):
    """A savepoint of WordCount mid-run, resumed into the same output folder
    at another parallelism; two TaskManagers of four slots."""

    def setUp(self):
        super().setUp()
        self.start_jobmanager()
        self.tms = [self.start_taskmanager(slots=4) for _ in range(2)]
        self.wait_overview(2, slots=8)
        self.savepoints = os.path.join(self.tmp, "savepoints")

    def committed(self, out):
        """{name: bytes} of the committed part files."""
        files = {}
        for path in exactly_once.committed_files(out):
            with open(path, "rb") as f:
                files[os.path.basename(path)] = f.read()
        return files

    def savepoint_and_resume(self, inp, expected, before, after, how="stop"):
        out = os.path.join(self.tmp, "out")
        jid = self.submit_wordcount(inp, out, before)
        self.wait_checkpoint_while_running(jid)
        if how == "stop":
            cmd, end = ["stop", "-m", f"127.0.0.1:{self.rest_port}", "-p", self.savepoints,
                        jid], "FINISHED"
        else:
            cmd, end = ["cancel", "-m", f"127.0.0.1:{self.rest_port}", "-s", self.savepoints,
                        jid], "CANCELED"
        r = self.spate(*cmd, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        sp = re.search(r"Savepoint completed\. Path: (\S+)", r.stdout).group(1)
        self.assertEqual(self.wait_state(jid, TERMINAL)["state"], end)
        first = self.committed(out)
        written = sum(v.count(b"\n") for v in first.values())
        total = sum(expected.values())
        # Mid-run: output before the savepoint, and some left for after.
        self.assertGreater(written, 0, "nothing committed before the savepoint")
        self.assertLess(written, total, "the job had ended before the savepoint")

        jid2 = self.submit_wordcount(inp, out, after, savepoint=sp)
        job = self.wait_state(jid2, TERMINAL)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        s = self.stats(jid2)
        self.assertTrue(s["latest"]["restored"]["is_savepoint"], s["latest"]["restored"])
        # Nothing written before the savepoint is lost or changed.
        now = self.committed(out)
        gone = sorted(n for n in first if n not in now)
        changed = sorted(n for n in first if n in now and now[n] != first[n])
        self.assertEqual((gone, changed), ([], []),
                         "files committed before the savepoint removed or rewritten")
        self.check_output(out, expected,
                          f"p{before} -> {how} with savepoint after {written} of {total} "
                          f"updates -> p{after}")

    def test_stop_with_savepoint_p4_resumed_at_p3_into_the_same_folder(self):
        self.savepoint_and_resume(DATA.corpus, DATA.corpus_counts, 4, 3)

    def test_cancel_with_savepoint_p2_resumed_at_p4_into_the_same_folder(self):
        self.savepoint_and_resume(DATA.corpus, DATA.corpus_counts, 2, 4, how="cancel")

    def test_stop_with_savepoint_p1_resumed_at_p1_into_the_same_folder(self):
        self.savepoint_and_resume(DATA.single, DATA.single_counts, 1, 1)


class WordCountHaTest(WordCountMixin, test_ha.OwnZooKeeper, test_ha.HaTestCase):
    """Two JobManagers with ZooKeeper HA (a server of this class's own,
    test_ha's helpers), three TaskManagers of two slots."""

    def test_p4_kill9_of_the_leading_jobmanager_every_record_exactly_once(self):
        jm1, jm2, tms = self.leader_standby_taskmanagers(3)
        out = os.path.join(self.tmp, "out")
        # Through ZooKeeper, as test_ha's jobs: no -m, the CLI asks for the
        # leader's REST endpoint.
        jid = self.submit_wordcount(DATA.corpus, out, 4, *self.ha_args(), target=False)
        self.use_rest_of(jm1)
        self.wait_checkpoint_while_running(jid)
        jm1.popen.send_signal(signal.SIGKILL)
        jm1.popen.wait()
        jm2.wait_log(r"this JobManager was granted leadership", timeout=30)
        m = jm2.wait_log(r"job=" + jid + r" recovered; resuming from '(\S+)'", timeout=60)
        self.assertRegex(m.group(1), r"/chk-\d+/_metadata$")
        self.use_rest_of(jm2)
        wait_for(lambda: (lambda st: st[1] if st[0] == 200 and st[1]["state"] in TERMINAL
                          else None)(self.rest(f"/jobs/{jid}")), 180, "the recovered job to end")
        job = self.job(jid)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))
        self.check_output(out, DATA.corpus_counts,
                          f"p4, kill -9 of the leader, resumed from {m.group(1)}")


if __name__ == "__main__":
    unittest.main()
