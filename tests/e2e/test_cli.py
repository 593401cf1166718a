"""End-to-end tests of the spate command itself: help, version, and the
configuration every command reads (file, -D overrides, clear errors)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from spatetest import SpateTestCase  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
