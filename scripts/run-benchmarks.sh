#!/bin/sh
# Runs every benchmark in the given folder (build/bin/*_bench), one after the
# other; each prints a JSON object on its last line.
set -eu
dir=${1:-build/bin}
status=0
for b in "$dir"/*_bench; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b" || { echo "$(basename "$b") failed" >&2; status=1; }
done
exit $status
