"""End-to-end test of `cmake --install` (what `make install` runs): into a
temporary DESTDIR, the layout is whole, a job builds out of tree with
`cc $(pkg-config --cflags --libs spate)` alone, and the installed spate runs
it with `spate run --local`, finding its library, plugins and conf/ from its
own place."""

import collections
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from spatetest import BUILD, SOURCE, SpateTestCase, sink_lines  # noqa: E402

PREFIX = "/opt/spate"
TEXT = ["the quick brown fox", "jumps over the lazy dog", "The dog sleeps; the fox runs"]


def run(args, env=None, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


class InstallTest(SpateTestCase):
    def setUp(self):
        super().setUp()
        for tool in ("cmake", "cc", "pkg-config"):
            if shutil.which(tool) is None:
                self.fail(f"'{tool}' is not on PATH: the install test needs it")
        self.destdir = os.path.join(self.tmp, "stage")
        env = dict(os.environ, DESTDIR=self.destdir)
        r = run(["cmake", "--install", BUILD, "--prefix", PREFIX], env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.root = self.destdir + PREFIX
        # The installed programs only: nothing of the build tree's.
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("SPATE_") and k != "LD_LIBRARY_PATH"}
        self.env["PKG_CONFIG_PATH"] = os.path.join(self.root, "lib", "pkgconfig")

    def test_layout(self):
        for rel in ("bin/spate", "bin/start-cluster.sh", "bin/stop-cluster.sh",
                    "lib/libspate.so", "lib/plugins/libspate_zookeeper.so",
                    "lib/pkgconfig/spate.pc", "include/spate/spate.h", "include/spate/error.h",
                    "include/spate/export.h", "conf/config.yaml"):
            self.assertTrue(os.path.isfile(os.path.join(self.root, rel)), f"{rel} not installed")
        for rel in ("bin/spate", "bin/start-cluster.sh"):
            self.assertTrue(os.access(os.path.join(self.root, rel), os.X_OK), f"{rel} not executable")
        # The installed spate reads the installed conf/ (bin/../conf).
        r = run([os.path.join(self.root, "bin", "spate"), "config"], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = r.stdout.splitlines()[0]
        self.assertEqual(os.path.realpath(first.split("from ", 1)[1]),
                         os.path.realpath(os.path.join(self.root, "conf")), first)

    def test_spate_loads_no_library_from_the_folder_it_starts_in(self):
        """A libc.so.6 in the current folder is not loaded: the RUNPATH of
        spate, built and installed, is $ORIGIN/../lib and nothing else (an
        empty entry, which CMake's build RUNPATH once ended with, is the
        current folder to the loader)."""
        here = os.path.join(self.tmp, "cwd")
        os.makedirs(here)
        # Any library other than libc under libc's name: the loader would
        # take it and fail on the first libc symbol.
        ldd = run(["ldd", os.path.join(BUILD, "bin", "spate")]).stdout
        lz4 = re.search(r"liblz4\.so\.1 => (\S+)", ldd)
        self.assertIsNotNone(lz4, ldd)
        shutil.copy(lz4.group(1), os.path.join(here, "libc.so.6"))
        for spate in (os.path.join(BUILD, "bin", "spate"),
                      os.path.join(self.root, "bin", "spate")):
            r = subprocess.run([spate, "--version"], capture_output=True, text=True,
                               cwd=here, env=self.env, timeout=60, stdin=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 0, f"{spate}: {r.stderr[-600:]}")
            self.assertTrue(r.stdout.startswith("spate "), r.stdout)

    def test_pkg_config_points_into_the_staged_prefix(self):
        r = run(["pkg-config", "--cflags", "--libs", "spate"], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        flags = r.stdout.split()
        incs = [f[2:] for f in flags if f.startswith("-I")]
        libs = [f[2:] for f in flags if f.startswith("-L")]
        self.assertEqual([os.path.realpath(p) for p in incs],
                         [os.path.realpath(os.path.join(self.root, "include"))], r.stdout)
        self.assertEqual([os.path.realpath(p) for p in libs],
                         [os.path.realpath(os.path.join(self.root, "lib"))], r.stdout)
        self.assertIn("-lspate", flags)

    def test_an_example_built_out_of_tree_runs_on_the_installed_spate(self):
        src = os.path.join(SOURCE, "examples", "wordcount", "wordcount.c")
        job = os.path.join(self.tmp, "job", "wordcount.so")
        os.makedirs(os.path.dirname(job))
        r = run(["pkg-config", "--cflags", "--libs", "spate"], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(["cc", "-shared", "-fPIC", "-o", job, src, *r.stdout.split()], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)

        text = os.path.join(self.tmp, "words.txt")
        with open(text, "w") as f:
            f.write("\n".join(TEXT) + "\n")
        out = os.path.join(self.tmp, "counts")
        r = run([os.path.join(self.root, "bin", "spate"), "run", "--local", job,
                 "--input", text, "--output", out], env=self.env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # Every update "word count"; a word's last line holds its final count.
        final = {}
        for _, line in sink_lines(out):
            m = re.fullmatch(r"(\w+) (\d+)", line)
            self.assertIsNotNone(m, f"not 'word count': {line!r}")
            final[m.group(1)] = max(final.get(m.group(1), 0), int(m.group(2)))
        expected = collections.Counter(re.findall(r"[a-z0-9]+", " ".join(TEXT).lower()))
        self.assertEqual(final, dict(expected))


if __name__ == "__main__":
    unittest.main()
