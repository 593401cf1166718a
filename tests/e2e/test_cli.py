"""End-to-end tests of the spate command itself: help (spate help, every
command's -h/--help), version, and the configuration every command reads
(file, -D overrides before and after the command's name, clear errors)."""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import ClusterTestCase  # noqa: E402
from spatetest import BUILD, SpateTestCase  # noqa: E402

WORDCOUNT = os.path.join(BUILD, "examples", "wordcount.so")


class CliTest(SpateTestCase):
    def write_conf(self, text):
        d = os.path.join(self.tmp, "conf")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.yaml"), "w") as f:
            f.write(text)
        return d

    def test_version_and_help(self):
        r = self.spate("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^spate \d+\.\d+\.\d+\n$")
        r = self.spate("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: spate", r.stdout)
        self.assertIn("config", r.stdout)

    def test_unknown_command_and_option(self):
        r = self.spate("frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown command 'frobnicate'", r.stderr)
        r = self.spate("--frob")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option '--frob'", r.stderr)

    def test_config_file_and_overrides(self):
        d = self.write_conf("rest:\n  port: 9999\nheartbeat.interval: 2 s\n")
        r = self.spate("--conf-dir", d, "config")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rest.port: 9999  # " + os.path.join(d, "config.yaml") + ":2", r.stdout)
        self.assertIn("heartbeat.timeout: 5 s  # default", r.stdout)
        r = self.spate("--conf-dir", d, "-D", "rest.port=7000", "config", "rest.port")
        self.assertEqual(r.stdout, "7000\n")
        r = self.spate("-Drest.port=7001", "config", "rest.port", env={"SPATE_CONF_DIR": d})
        self.assertEqual(r.stdout, "7001\n")

    def test_bad_value_is_a_clear_error(self):
        r = self.spate("-D", "heartbeat.interval=10 parsecs", "config")
        self.assertEqual(r.returncode, 1)
        self.assertIn("config key 'heartbeat.interval' (-D)", r.stderr)
        self.assertIn("unknown unit 'parsecs'", r.stderr)
        d = self.write_conf("taskmanager:\n  numberOfTaskSlots: many\n")
        r = self.spate("--conf-dir", d, "config")
        self.assertEqual(r.returncode, 1)
        self.assertIn("'taskmanager.numberOfTaskSlots'", r.stderr)
        self.assertIn("config.yaml:2", r.stderr)
        self.assertIn("'many'", r.stderr)

    def test_broken_yaml_and_missing_folder(self):
        d = self.write_conf("rest: [unclosed\n")
        r = self.spate("--conf-dir", d, "config")
        self.assertEqual(r.returncode, 1)
        self.assertIn("config.yaml:", r.stderr)
        r = self.spate("--conf-dir", os.path.join(self.tmp, "nope"), "config")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot open config file", r.stderr)

    def test_log_level_from_environment_is_checked(self):
        r = self.spate("config", env={"SPATE_LOG_LEVEL": "loud"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("unknown log level 'loud'", r.stderr)

    def commands(self):
        """The command names `spate help` lists."""
        r = self.spate("help")
        self.assertEqual(r.returncode, 0, r.stderr)
        section = r.stdout.split("commands:\n", 1)[1].split("\n\n", 1)[0]
        names = [m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*)\b", section, re.M)]
        self.assertIn("savepoint", names)
        self.assertIn("run", names)
        return names, section

    def test_every_command_answers_help_with_its_usage(self):
        names, _ = self.commands()
        for name in names:
            for flag in ("-h", "--help"):
                r = self.spate(name, flag)
                self.assertEqual(r.returncode, 0, f"spate {name} {flag}: {r.stderr}")
                self.assertTrue(r.stdout.startswith(f"usage: spate {name} "),
                                f"spate {name} {flag}: {r.stdout!r}")
                self.assertIn("-h, --help", r.stdout)
                self.assertEqual(r.stderr, "")
            r = self.spate("help", name)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith(f"usage: spate {name} "), r.stdout)
        r = self.spate("savepoint", "--help")
        self.assertIn("-d, --dispose PATH", r.stdout)
        # Help among other arguments, and after -D.
        r = self.spate("savepoint", "-m", "127.0.0.1:1", "-D", "rest.port=1", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("usage: spate savepoint "), r.stdout)
        r = self.spate("help", "frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown command 'frobnicate'", r.stderr)

    def test_help_lines_are_whole(self):
        # Each command's arguments, as its own usage line gives them, appear
        # whole on its line of `spate help`.
        names, section = self.commands()
        for name in names:
            usage = self.spate(name, "--help").stdout.splitlines()[0]
            args = usage[len(f"usage: spate {name} [-D key=value]..."):].strip()
            line = f"  {name} {args}".rstrip()
            self.assertTrue(any(ln == line or ln.startswith(line + "  ")
                                for ln in section.splitlines()),
                            f"{name}'s line {line!r} is not whole in:\n{section}")
        self.assertIn("  run [--local | -m HOST:PORT] [-d] [-p N] [-s SAVEPOINT [-n]] "
                      "[--json FILE] JOB.so [ARGS]\n", section)
        for line in self.spate("help").stdout.splitlines():
            self.assertLessEqual(len(line), 100, line)

    def test_define_after_the_command_name(self):
        r = self.spate("config", "-D", "rest.port=7002", "rest.port")
        self.assertEqual((r.returncode, r.stdout), (0, "7002\n"), r.stderr)
        r = self.spate("config", "-Drest.port=7003", "rest.port")
        self.assertEqual(r.stdout, "7003\n", r.stderr)
        # After the name wins over before it, as the later of two -D.
        r = self.spate("-D", "rest.port=7004", "config", "-D", "rest.port=7005", "rest.port")
        self.assertEqual(r.stdout, "7005\n", r.stderr)
        # A bad value after the name is the same clear error as before it.
        r = self.spate("taskmanager", "-D", "taskmanager.numberOfTaskSlots=many")
        self.assertEqual(r.returncode, 1)
        self.assertIn("'taskmanager.numberOfTaskSlots' (-D)", r.stderr)
        r = self.spate("taskmanager", "-D")
        self.assertEqual(r.returncode, 2)
        self.assertIn("spate taskmanager: -D needs key=value", r.stderr)
        r = self.spate("jobmanager", "--frob")
        self.assertEqual(r.returncode, 2)
        self.assertIn("spate jobmanager: unexpected argument '--frob'", r.stderr)

    def test_define_and_help_after_the_job_are_the_jobs(self):
        r = self.spate("info", WORDCOUNT, "-Dkey=value")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("wordcount: unknown argument '-Dkey=value'", r.stderr)
        r = self.spate("info", "-D", "parallelism.default=3", WORDCOUNT, "--help")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("wordcount: unknown argument '--help'", r.stderr)
        r = self.spate("info", "-D", "parallelism.default=3", WORDCOUNT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"parallelism": 3', r.stdout)


class DefineAfterNameClusterTest(ClusterTestCase):
    """-D after the command's name on a cluster's processes and clients."""

    def test_jobmanager_taskmanager_list_and_run(self):
        jm = self.launch(["jobmanager", "-D", "jobmanager.rpc.port=0", "-D", "rest.port=0",
                          *self.FAST], "jobmanager")
        m = jm.wait_log(r"JobManager started: rpc at 127\.0\.0\.1:(\d+), REST at "
                        r"http://[\d.]+:(\d+)")
        self.rpc_port, self.rest_port = int(m.group(1)), int(m.group(2))
        self.launch(["taskmanager", "-D", f"jobmanager.rpc.port={self.rpc_port}",
                     "-D", "taskmanager.numberOfTaskSlots=3", *self.FAST], "taskmanager")
        self.wait_overview(1, slots=3)
        here = ["-D", "rest.address=127.0.0.1", "-D", f"rest.port={self.rest_port}"]
        r = self.spate("list", *here)
        self.assertEqual(r.returncode, 0, r.stderr)
        # WordCount's bundled text, run on the cluster (rest.address says
        # which) to its end.
        r = self.spate("run", *here, WORDCOUNT, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        m = re.search(r"JobID ([0-9a-f]{32})", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        r = self.spate("list", "-a", *here)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(m.group(1), r.stdout)
        # FINISHED is a terminal status: the job is listed under that
        # heading, in no other section.
        terminated = r.stdout.index("Terminated Jobs")
        self.assertGreater(r.stdout.index(m.group(1)), terminated, r.stdout)
        self.assertEqual(r.stdout.count(m.group(1)), 1, r.stdout)

if __name__ == "__main__":
    unittest.main()
