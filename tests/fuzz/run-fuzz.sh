#!/bin/sh
# A bounded libFuzzer run: fuzz-target seed-corpus seconds. New inputs go to a
# scratch folder, never into the source tree; a crash fails the test and
# leaves its input in the scratch folder, whose path is printed.
set -u
target=$1 seeds=$2 seconds=$3
if [ ! -x "$target" ]; then
    echo "missing $target: build it with 'make asan'"
    exit 1
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/spate-fuzz.XXXXXX")
cd "$scratch" || exit 1
mkdir corpus
"$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$scratch/" corpus "$seeds" 2>&1 | tail -n 25
status=0
ls "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* "$scratch"/oom-* >/dev/null 2>&1 && status=1
if [ $status -ne 0 ]; then
    echo "fuzz: failing inputs kept in $scratch"
else
    rm -rf "$scratch"
fi
exit $status
