"""End-to-end tests of jobs on the embedded mini cluster (`spate run --local`):
WordCount against counts computed here, parameters from args, every
partitioning call and chaining control (plan and result), cancel, failing
user functions, bad job libraries, and task.cancellation.timeout."""

import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from spatetest import BUILD, SPATE, SpateTestCase, sink_lines, wait_for  # noqa: E402

WORDCOUNT = os.path.join(BUILD, "examples", "wordcount.so")
TESTJOBS = os.path.join(BUILD, "tests", "jobs", "testjobs.so")
NOMAIN = os.path.join(BUILD, "tests", "unit", "testnomain.so")


def generate_text(path, size, seed=1):
    """About size bytes of lines of words: mixed case, digits, punctuation."""
    r = random.Random(seed)
    vocab = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                     for _ in range(r.randint(1, 10))) for _ in range(3000)]
    seps = [" ", " ", " ", ", ", "; ", " -- ", "... ", "'", "\t"]
    written = 0
    with open(path, "w") as f:
        while written < size:
            words = []
            for _ in range(r.randint(1, 14)):
                w = r.choice(vocab)
                if r.random() < 0.2:
                    w = w.capitalize()
                elif r.random() < 0.05:
                    w = w.upper()
                words.append(w + r.choice(seps))
            line = "".join(words).rstrip() + r.choice([".", "!", "?", ""]) + "\n"
            f.write(line)
            written += len(line)


def expected_counts(path):
    with open(path) as f:
        return collections.Counter(w.lower() for w in re.findall(r"[A-Za-z0-9]+", f.read()))


def output_lines(path):
    """The lines of a text-file sink: its folder's committed part files."""
    return sink_lines(path)


class JobsTest(SpateTestCase):
    def run_job(self, library, *args, p=None, tms=1, conf=(), timeout=120):
        """spate run --local ... --json; returns (CompletedProcess, result JSON)."""
        result = os.path.join(self.tmp, "result.json")
        cmd = ["-D", f"local.number-taskmanager={tms}"]
        for c in conf:
            cmd += ["-D", c]
        cmd += ["run", "--local", "--json", result]
        if p is not None:
            cmd += ["-p", str(p)]
        r = self.spate(*cmd, library, *args, timeout=timeout)
        with open(result) as f:
            return r, json.load(f)

    def assert_finished(self, r, res):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(res["state"], "FINISHED")
        self.assertIn("has finished", r.stdout)
        self.assertEqual(res["slots_free"], res["slots_total"])

    def vertices(self, res):
        return res["plan"]["nodes"]

    # ---- WordCount ----

    def check_wordcount(self, p, tms):
        text = os.path.join(self.tmp, "text.txt")
        out = os.path.join(self.tmp, "counts")
        generate_text(text, 10 * 1024 * 1024)
        expected = expected_counts(text)
        r, res = self.run_job(WORDCOUNT, "--input", text, "--output", out, p=p, tms=tms)
        self.assert_finished(r, res)
        final, updates = {}, 0
        for part, line in output_lines(out):
            word, count = line.split(" ")
            final[word] = int(count)  # the last line of a word holds its count
            updates += 1
        self.assertEqual(final, dict(expected))
        self.assertEqual(updates, sum(expected.values()))
        acc = res["accumulators"]
        self.assertEqual(acc["Tokenizer.numRecordsOut"], sum(expected.values()))
        self.assertEqual(acc["Keyed Aggregation.numRecordsIn"], sum(expected.values()))
        for v in self.vertices(res):
            self.assertEqual(v["parallelism"], p)
        return res

    def test_wordcount_10mb_p1(self):
        self.check_wordcount(1, 1)

    def test_wordcount_10mb_p4_two_taskmanagers(self):
        res = self.check_wordcount(4, 2)
        # The hash exchange crossed the TaskManagers: each connected to the other.
        self.assertEqual(len(res["taskmanagers"]), 2)
        for tm in res["taskmanagers"]:
            self.assertGreater(tm["data_connections_out"], 0)
            self.assertGreater(tm["data_connections_in"], 0)

    def test_wordcount_prints_to_stdout(self):
        r = self.spate("run", "--local", WORDCOUNT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("to 1\n", r.stdout)
        self.assertIn("Job has been submitted with JobID", r.stdout)
        self.assertIn("Job Runtime:", r.stdout)

    # ---- parameters ----

    def test_map_parameter_from_args_on_two_taskmanagers(self):
        out = os.path.join(self.tmp, "scaled")
        r, res = self.run_job(TESTJOBS, "params", "--factor", "7", "--count", "5000",
                              "--output", out, p=2, tms=2)
        self.assert_finished(r, res)
        values = sorted(int(line) for _, line in output_lines(out))
        self.assertEqual(values, [7 * i for i in range(5000)])
        self.assertEqual(len({part for part, _ in output_lines(out)}), 2)
        for tm in res["taskmanagers"]:
            self.assertGreater(tm["data_connections_out"] + tm["data_connections_in"], 0)

    # ---- partitioning and chaining ----

    def partition(self, how, p=4, chain="default", group=False, count=2000):
        out = os.path.join(self.tmp, f"routed-{how}-{chain}")
        args = ["partition", "--how", how, "--count", str(count), "--output", out,
                "--chain", chain]
        if group:
            args.append("--group")
        r, res = self.run_job(TESTJOBS, *args, p=p, tms=2)
        self.assert_finished(r, res)
        routed = [tuple(int(x) for x in line.split(" ")) for _, line in output_lines(out)]
        return res, routed

    def exchange(self, res, into):
        """The ship strategy of the input of the vertex whose first operator is `into`."""
        for v in self.vertices(res):
            if v["operators"][0]["name"] == into:
                self.assertEqual(len(v["inputs"]), 1)
                return v["inputs"][0]["ship_strategy"]
        self.fail(f"no vertex starts with {into}: {self.vertices(res)}")

    def test_forward(self):
        res, routed = self.partition("forward", chain="disable")
        self.assertEqual(self.exchange(res, "Route"), "FORWARD")
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))
        self.assertTrue(all(src == dst for src, dst, _ in routed))

    def test_rebalance(self):
        res, routed = self.partition("rebalance")
        self.assertEqual(self.exchange(res, "Route"), "REBALANCE")
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))
        per = collections.Counter((src, dst) for src, dst, _ in routed)
        sent = collections.Counter(src for src, _, _ in routed)
        # Round robin: each source sends its records evenly to the 4 targets.
        self.assertEqual(len(per), 8)
        for (src, dst), n in per.items():
            self.assertIn(n, (sent[src] // 4, (sent[src] + 3) // 4), (src, dst, n, sent[src]))

    def test_rescale(self):
        res, routed = self.partition("rescale")
        self.assertEqual(self.exchange(res, "Route"), "RESCALE")
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))
        # Two sources, four targets: source 0 feeds 0 and 1, source 1 feeds 2 and 3.
        self.assertEqual({(src, dst) for src, dst, _ in routed},
                         {(0, 0), (0, 1), (1, 2), (1, 3)})

    def test_shuffle(self):
        res, routed = self.partition("shuffle")
        self.assertEqual(self.exchange(res, "Route"), "SHUFFLE")
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))
        per = collections.Counter(dst for _, dst, _ in routed)
        self.assertEqual(set(per), {0, 1, 2, 3})  # random, so every target gets some

    def test_broadcast(self):
        res, routed = self.partition("broadcast")
        self.assertEqual(self.exchange(res, "Route"), "BROADCAST")
        self.assertEqual(collections.Counter(v for _, _, v in routed),
                         collections.Counter({v: 4 for v in range(2000)}))
        self.assertEqual({(v, dst) for _, dst, v in routed},
                         {(v, d) for v in range(2000) for d in range(4)})

    def test_global(self):
        res, routed = self.partition("global")
        self.assertEqual(self.exchange(res, "Route"), "GLOBAL")
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))
        self.assertEqual({dst for _, dst, _ in routed}, {0})

    def chain_shape(self, res):
        return [[op["name"] for op in v["operators"]] for v in self.vertices(res)]

    def test_chaining_default_chains_forward_operators(self):
        res, routed = self.partition("none")
        self.assertEqual(self.chain_shape(res),
                         [["Numbers", "Route", "Sink: Text File"]])
        self.assertEqual(self.vertices(res)[0]["chained_edges"],
                         [{"from": "Numbers", "to": "Route"},
                          {"from": "Route", "to": "Sink: Text File"}])
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))
        self.assertTrue(all(src == dst for src, dst, _ in routed))

    def test_disable_chaining_on_an_operator(self):
        res, routed = self.partition("none", chain="disable")
        self.assertEqual(self.chain_shape(res),
                         [["Numbers"], ["Route"], ["Sink: Text File"]])
        self.assertEqual(self.exchange(res, "Route"), "FORWARD")
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))

    def test_start_new_chain(self):
        res, routed = self.partition("none", chain="new-chain")
        self.assertEqual(self.chain_shape(res), [["Numbers"], ["Route", "Sink: Text File"]])
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))

    def test_disable_chaining_for_the_job(self):
        res, routed = self.partition("none", chain="env")
        self.assertEqual(self.chain_shape(res),
                         [["Numbers"], ["Route"], ["Sink: Text File"]])
        for v in self.vertices(res):
            self.assertEqual(v["chained_edges"], [])
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))

    def test_slot_sharing_group(self):
        res, routed = self.partition("rebalance", p=2, group=True)
        groups = {v["operators"][0]["name"]: v["slot_sharing_group"] for v in self.vertices(res)}
        self.assertEqual(groups, {"Numbers": "default", "Route": "other"})
        # Two groups of parallelism 2 need four slots; the cluster was sized for them.
        self.assertEqual(res["slots_total"], 4)
        self.assertEqual(sorted(v for _, _, v in routed), list(range(2000)))

    # ---- cancel, failure, bad libraries ----

    def test_cancel_unbounded_job_frees_every_slot(self):
        out = open(os.path.join(self.tmp, "run.out"), "w+")
        self.addCleanup(out.close)
        p = subprocess.Popen([SPATE, "-D", "local.number-taskmanager=2", "run", "--local",
                              "-p", "4", "--json", os.path.join(self.tmp, "result.json"),
                              TESTJOBS, "unbounded"],
                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(p)

        def text():
            out.seek(0)
            return out.read()
        wait_for(lambda: "is RUNNING" in text(), what="the job to run")
        p.send_signal(signal.SIGINT)
        self.assertEqual(p.wait(timeout=60), 1, text())
        self.assertIn("has been cancelled", text())
        self.assertIn("Slots free: 4 of 4", text())
        with open(os.path.join(self.tmp, "result.json")) as f:
            res = json.load(f)
        self.assertEqual(res["state"], "CANCELED")
        self.assertEqual((res["slots_free"], res["slots_total"]), (4, 4))

    def test_task_threads_run_as_sched_batch_unless_configured_off(self):
        """Task threads are SCHED_BATCH (taskmanager.tasks.batch-scheduling),
        the RPC and network I/O threads keep the default policy; with the
        key false, task threads do too."""
        for batch in (True, False):
            out = open(os.path.join(self.tmp, f"run-{batch}.out"), "w+")
            self.addCleanup(out.close)
            key = f"taskmanager.tasks.batch-scheduling={'true' if batch else 'false'}"
            p = subprocess.Popen([SPATE, "-D", key, "run", "--local", "-p", "2", TESTJOBS,
                                  "unbounded"],
                                 stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.procs.append(p)

            def policies():
                """{thread name: policy} of the process's threads."""
                found = {}
                for tid in os.listdir(f"/proc/{p.pid}/task"):
                    try:
                        with open(f"/proc/{p.pid}/task/{tid}/comm") as f:
                            name = f.read().strip()
                        found.setdefault(name, set()).add(os.sched_getscheduler(int(tid)))
                    except (FileNotFoundError, ProcessLookupError):
                        pass
                return found

            def text():
                out.seek(0)
                return out.read()
            wait_for(lambda: "is RUNNING" in text(), what="the job to run")
            names = {"Source: 1", "Source: 2", "Map 1", "Map 2"}  # once their vertex is known

            def named():
                found = policies()
                return found if names <= found.keys() else None
            found = wait_for(named, what="the task threads")
            want = os.SCHED_BATCH if batch else os.SCHED_OTHER
            for name in names:
                self.assertEqual(found[name], {want}, f"{name}: {found}")
            for name in ("rpc", "net-io"):
                self.assertEqual(found[name], {os.SCHED_OTHER}, found)
            p.send_signal(signal.SIGINT)
            self.assertEqual(p.wait(timeout=60), 1)

    def test_failing_function_fails_the_job_with_its_text(self):
        r, res = self.run_job(TESTJOBS, "fail", "--at", "42")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(res["state"], "FAILED")
        self.assertIn("record 42 is poison", res["error"])
        self.assertIn("has failed", r.stdout)
        self.assertIn("record 42 is poison", r.stderr)
        self.assertEqual(res["slots_free"], res["slots_total"])

    def test_library_without_job_main(self):
        r = self.spate("run", "--local", NOMAIN)
        self.assertEqual(r.returncode, 1)
        self.assertIn("spate_job_main", r.stderr)
        self.assertIn("testnomain.so", r.stderr)

    def test_file_that_is_not_elf(self):
        path = os.path.join(self.tmp, "job.so")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho not a library\n")
        r = self.spate("run", "--local", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a job library: not an ELF shared object", r.stderr)
        r = self.spate("run", "--local", os.path.join(self.tmp, "missing.so"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing.so", r.stderr)

    def test_function_outside_the_job_library(self):
        r = self.spate("run", "--local", TESTJOBS, "outside")
        self.assertEqual(r.returncode, 1)
        self.assertIn("is outside the job library", r.stderr)
        self.assertIn("abort", r.stderr)
        self.assertNotIn("Job has been submitted", r.stdout)

    def test_task_that_ignores_cancel_ends_its_taskmanager(self):
        out = open(os.path.join(self.tmp, "run.out"), "w+")
        self.addCleanup(out.close)
        p = subprocess.Popen([SPATE, "-D", "task.cancellation.timeout=300ms", "run", "--local",
                              TESTJOBS, "stuck"],
                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(p)

        def text():
            out.seek(0)
            return out.read()
        wait_for(lambda: "Hang: entered" in text(), what="the task to hang")
        p.send_signal(signal.SIGINT)
        self.assertEqual(p.wait(timeout=60), 2, text())
        self.assertIn("did not stop within task.cancellation.timeout (300 ms)", text())


if __name__ == "__main__":
    unittest.main()
