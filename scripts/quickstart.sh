#!/bin/sh
# What `make quickstart` runs after the build: WordCount (examples/wordcount)
# on the embedded mini cluster, over a text it generates, then the most
# frequent words from the job's output.
set -eu
spate=build/bin/spate
dir=$(mktemp -d /tmp/spate-quickstart-XXXXXX)
trap 'rm -rf "$dir"' EXIT

# Some text: the opening of Hamlet's soliloquy, many times over, with a
# counter so that not every word is equally frequent.
i=0
while [ $i -lt 2000 ]; do
    echo "To be, or not to be, that is the question: line $i"
    echo "Whether 'tis nobler in the mind to suffer the slings and arrows"
    [ $((i % 3)) -eq 0 ] && echo "Or to take arms against a sea of troubles"
    i=$((i + 1))
done > "$dir/hamlet.txt"

echo
echo "== $($spate --version)"
echo "== spate run --local -p 2 build/examples/wordcount.so --input $dir/hamlet.txt --output $dir/counts"
$spate run --local -p 2 build/examples/wordcount.so --input "$dir/hamlet.txt" --output "$dir/counts"
echo
echo "== the 10 most frequent words (the highest count of each word, from $dir/counts/part-*):"
cat "$dir"/counts/part-* | awk '$2 > last[$1] { last[$1] = $2 } END { for (w in last) print last[w], w }' |
    sort -rn | head -n 10
echo
echo "Shown: a job library built against include/spate/ ran on the mini cluster (a"
echo "JobManager's Dispatcher, ResourceManager and JobMaster and a TaskExecutor in this"
echo "process, on the same RPC messages as a cluster), its records hash-partitioned by word"
echo "between two subtasks, with the job's status, runtime and accumulators above."
