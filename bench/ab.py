#!/usr/bin/env python3
"""Two builds of spate side by side: runs one benchmark of build A and of
build B in alternating rounds (A B, B A, A B, ...: neither always goes
first) and prints, per figure, both medians, their ratio and every round.

    bench/ab.py BUILD_A BUILD_B BENCH [ROUNDS] [FIGURE ...]

BENCH is a program of bench/ (window_bench, checkpoint_bench, ...), run
from BUILD/bin with the environment it is given (e.g. WINDOW_BENCH_RUNS=1
so that each round is one run). FIGUREs are keys of its JSON object (its
last line); by default every number in it. The last line printed is a JSON
object: {"a": BUILD_A, "b": BUILD_B, "bench": ..., "figures": {key:
{"a_median", "b_median", "b_over_a", "a_rounds", "b_rounds"}}}.

On this shared, noisy machine only figures measured side by side mean
something: this is how a change's cost is measured against the commit
before it."""

import json
import os
import statistics
import subprocess
import sys


def run(build, bench):
    out = subprocess.run([os.path.join(build, "bin", bench)], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        sys.exit(f"ab: {bench} of {build} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(lines[-1])


def numbers(obj):
    return {k: v for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    a, b, bench = argv[1], argv[2], argv[3]
    rounds = int(argv[4]) if len(argv) > 4 else 5
    keys = argv[5:]
    got = {"a": [], "b": []}
    for r in range(rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for side in order:
            fig = numbers(run(a if side == "a" else b, bench))
            got[side].append(fig)
            print(f"round {r + 1} {side}: " + json.dumps({k: fig.get(k) for k in keys} if keys
                                                         else fig), file=sys.stderr)
    keys = keys or sorted(set(got["a"][0]) & set(got["b"][0]))
    figures = {}
    for k in keys:
        av = [f[k] for f in got["a"] if k in f]
        bv = [f[k] for f in got["b"] if k in f]
        if not av or not bv:
            continue
        am, bm = statistics.median(av), statistics.median(bv)
        figures[k] = {"a_median": am, "b_median": bm, "b_over_a": bm / am if am else None,
                      "a_rounds": av, "b_rounds": bv}
        print(f"{k}: a {am:.6g}  b {bm:.6g}  b/a {bm / am if am else float('nan'):.4f}",
              file=sys.stderr)
    print(json.dumps({"a": a, "b": b, "bench": bench, "rounds": rounds, "figures": figures}))


if __name__ == "__main__":
    main(sys.argv)
