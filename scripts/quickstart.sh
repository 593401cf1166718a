#!/bin/sh
# What `make quickstart` runs after the build: the most end-to-end thing spate
# can do so far, and what it showed.
set -eu
spate=build/bin/spate
echo
echo "== $($spate --version)"
echo "== spate config (conf/config.yaml + -D overrides, each value with its origin):"
$spate -D parallelism.default=2 config | head -n 20
echo "   ..."
echo
echo "Shown: the spate command, built on libspate.so, reads conf/config.yaml and -D overrides"
echo "with Flink's keys and spate's defaults. Jobs on the mini cluster arrive with the jobs issue."
