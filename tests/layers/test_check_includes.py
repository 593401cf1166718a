#!/usr/bin/env python3
"""Tests of check_includes.py: the real tree passes, and copies of it with
an include planted the wrong way fail with a message naming the file, the
line and both folders.

usage: test_check_includes.py GRAPH_FILE SOURCE_ROOT
(the graph file CMake writes: BUILD/layers.txt)"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, 'check_includes.py')
GRAPH = SOURCE = None


def run_check(graph, root):
    return subprocess.run([sys.executable, CHECK, graph, root], capture_output=True,
                          text=True, timeout=60)


class CheckIncludesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='spate-layers-')
        self.root = os.path.join(self.tmp, 'tree')
        # Only the sources the check reads: src/ and include/.
        for top in ('src', 'include'):
            shutil.copytree(os.path.join(SOURCE, top), os.path.join(self.root, top),
                            ignore=shutil.ignore_patterns('*.md', '*.proto', '*.txt'))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def plant(self, rel, line):
        """Appends an include to a copied file; returns its line number."""
        path = os.path.join(self.root, rel)
        with open(path, encoding='utf-8') as f:
            n = sum(1 for _ in f)
        with open(path, 'a', encoding='utf-8') as f:
            f.write(line + '\n')
        return n + 1

    def layer(self, name):
        with open(GRAPH, encoding='utf-8') as f:
            for line in f:
                w = line.split()
                if w and w[0] == name:
                    return w[1], w[2:]
        self.fail(f'layer {name!r} is not in {GRAPH}')

    def test_the_copied_tree_passes(self):
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('every include allowed', r.stdout)

    def test_core_including_streaming_fails_naming_file_line_and_folders(self):
        n = self.plant('src/core/log.c', '#include "streaming/operator.h"')
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f'src/core/log.c:{n}: layer core (src/core) includes layer streaming '
                      f'(src/streaming)', r.stdout)
        self.assertEqual(len(r.stdout.splitlines()), 1, r.stdout)

    def test_an_include_one_layer_up_fails(self):
        # The highest layer below cli that is no dependency of taskmanager.
        folder, deps = self.layer('taskmanager')
        self.assertNotIn('jobmanager', deps)
        n = self.plant('src/taskmanager/task.c', '#include "jobmanager/job_master.h"')
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f'src/taskmanager/task.c:{n}: layer taskmanager ({folder}) includes '
                      f'layer jobmanager', r.stdout)

    def test_rest_includes_no_jobmanager_header(self):
        # REST reaches the JobManager through RPC gateways only.
        n = self.plant('src/rest/rest_jobs.c', '#include "jobmanager/dispatcher.h"')
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f'src/rest/rest_jobs.c:{n}: layer rest (src/rest) includes layer '
                      f'jobmanager (src/jobmanager)', r.stdout)

    def test_a_header_is_checked_too(self):
        n = self.plant('src/rpc/frame.h', '#include "cli/cli.h"')
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f'src/rpc/frame.h:{n}: layer rpc (src/rpc) includes layer cli', r.stdout)

    def test_a_relative_path_up_and_across_is_checked(self):
        n = self.plant('src/metrics/metrics.c', '#include "../rest/rest_server.h"')
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f'src/metrics/metrics.c:{n}: layer metrics (src/metrics) includes layer '
                      f'rest (src/rest)', r.stdout)

    def test_a_new_folder_without_a_layer_fails(self):
        os.makedirs(os.path.join(self.root, 'src', 'newdir'))
        with open(os.path.join(self.root, 'src', 'newdir', 'x.c'), 'w') as f:
            f.write('#include "core/log.h"\n')
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 1)
        self.assertIn('src/newdir/x.c:1: src/newdir declares no layer', r.stdout)

    def test_a_new_layer_is_read_from_the_graph(self):
        # A folder declared with spate_layer(newdir DEPS core): core is
        # allowed, streaming is not, and core may not include it.
        graph = os.path.join(self.tmp, 'layers.txt')
        shutil.copy(GRAPH, graph)
        with open(graph, 'a', encoding='utf-8') as f:
            f.write('newdir src/newdir core\n')
        os.makedirs(os.path.join(self.root, 'src', 'newdir'))
        with open(os.path.join(self.root, 'src', 'newdir', 'x.c'), 'w') as f:
            f.write('#include "core/log.h"\n#include "streaming/operator.h"\n')
        n = self.plant('src/core/log.c', '#include "newdir/x.h"')
        r = run_check(graph, self.root)
        self.assertEqual(r.returncode, 1)
        self.assertIn('src/newdir/x.c:2: layer newdir (src/newdir) includes layer streaming',
                      r.stdout)
        self.assertIn(f'src/core/log.c:{n}: layer core (src/core) includes layer newdir',
                      r.stdout)
        self.assertNotIn('x.c:1:', r.stdout)

    def test_the_public_api_includes_no_src_folder(self):
        n = self.plant('include/spate/spate.h', '#include "core/log.h"')
        r = run_check(GRAPH, self.root)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f'include/spate/spate.h:{n}: the public API (include/) includes src/core',
                      r.stdout)

    def test_a_dependency_on_an_undeclared_layer_is_an_error(self):
        graph = os.path.join(self.tmp, 'layers.txt')
        with open(graph, 'w', encoding='utf-8') as f:
            f.write('core src/core\nrpc src/rpc core nosuch\n')
        r = run_check(graph, self.root)
        self.assertEqual(r.returncode, 2)
        self.assertIn("layer 'rpc' depends on 'nosuch', which no spate_layer() declares",
                      r.stderr)

    def test_a_cycle_of_layers_is_an_error(self):
        graph = os.path.join(self.tmp, 'layers.txt')
        with open(graph, 'w', encoding='utf-8') as f:
            f.write('core src/core\nrpc src/rpc core ha\nha src/ha rpc core\n')
        r = run_check(graph, self.root)
        self.assertEqual(r.returncode, 2)
        self.assertIn("depends on itself through its DEPS", r.stderr)


if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__.splitlines()[3])
    GRAPH, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
