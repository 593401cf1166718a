#!/bin/sh
# Stops the cluster start-cluster.sh started: the TaskManagers, then the
# JobManagers, each with SIGTERM by the pid in its pid file (SIGKILL after
# 10 s), and removes the pid files.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
# The spate beside this script once installed (PREFIX/bin), else the build's.
spate_default=$root/build/bin/spate
[ ! -x "$root/bin/spate" ] || spate_default=$root/bin/spate
spate=${SPATE_BIN:-$spate_default}
export SPATE_CONF_DIR="${SPATE_CONF_DIR:-$root/conf}"
logdir=$("$spate" config env.log.dir)
case $logdir in /*) ;; *) logdir=$root/$logdir ;; esac

# Running, not a zombie waiting for a parent that no longer exists.
alive() {
    [ -r "/proc/$1/stat" ] || return 1
    state=$(sed 's/.*) \([A-Z]\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$state" != Z ]
}

stop() {
    pidfile=$1
    pid=$(cat "$pidfile")
    if alive "$pid"; then
        echo "Stopping $(basename "$pidfile" .pid) (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while alive "$pid" && [ $i -lt 200 ]; do
            sleep 0.05
            i=$((i + 1))
        done
        if alive "$pid"; then
            echo "stop-cluster: pid $pid did not stop in 10 s: killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$pidfile"
}

found=0
for f in "$logdir"/spate-taskmanager-*.pid "$logdir"/spate-jobmanager*.pid; do
    [ -f "$f" ] || continue
    found=1
    stop "$f"
done
[ $found -eq 1 ] || echo "stop-cluster: no spate processes to stop (no pid files in $logdir)"
