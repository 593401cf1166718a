#!/bin/sh
# Stops the cluster start-cluster.sh started: the TaskManagers of
# conf/workers, then the JobManagers of conf/masters, each by
# bin/spate-daemon.sh on its host (over ssh with env.ssh.opts for a remote
# one): SIGTERM by the pid in its pid file, SIGKILL after 10 s, the pid file
# removed. Local pid files of processes no longer listed are stopped too.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
# The spate beside this script once installed (PREFIX/bin), else the build's.
spate_default=$root/build/bin/spate
[ ! -x "$root/bin/spate" ] || spate_default=$root/bin/spate
spate=${SPATE_BIN:-$spate_default}
export SPATE_CONF_DIR="${SPATE_CONF_DIR:-$root/conf}"
logdir=$("$spate" config env.log.dir)
case $logdir in /*) ;; *) logdir=$root/$logdir ;; esac
sshopts=$("$spate" config env.ssh.opts)
host=$(hostname)

is_local() {
    case $1 in localhost | 127.0.0.1 | "$host") return 0 ;; esac
    return 1
}

quote() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# spate-daemon.sh stop ROLE N on host h.
stop_on() {
    if is_local "$1"; then
        "$root/bin/spate-daemon.sh" stop "$2" "$3"
    else
        # shellcheck disable=SC2086
        ssh -n $sshopts "$1" -- "SPATE_CONF_DIR=$(quote "$SPATE_CONF_DIR") \
SPATE_BIN=$(quote "$spate") $(quote "$root/bin/spate-daemon.sh") stop $2 $3" ||
            echo "stop-cluster: cannot stop $2 $3 on $1" >&2
    fi
}

found=0
n=0
if [ -f "$SPATE_CONF_DIR/workers" ]; then
    for w in $(grep -v '^[[:space:]]*#' "$SPATE_CONF_DIR/workers" | tr -d ' '); do
        stop_on "$w" taskmanager "$n"
        n=$((n + 1))
        found=1
    done
fi
masters=$(grep -v '^[[:space:]]*#' "$SPATE_CONF_DIR/masters" 2>/dev/null | tr -d ' ' || true)
[ -n "$masters" ] || masters=localhost
m=0
for line in $masters; do
    stop_on "${line%%:*}" jobmanager "$m"
    m=$((m + 1))
done
# Whatever else this host's pid files name (a file edited since the start).
for f in "$logdir"/spate-taskmanager-*.pid "$logdir"/spate-jobmanager-*.pid; do
    [ -f "$f" ] || continue
    found=1
    role=$(basename "$f" .pid | cut -d- -f2)
    "$root/bin/spate-daemon.sh" stop "$role" "$(basename "$f" .pid | cut -d- -f3)"
done
[ $found -eq 1 ] || [ $m -gt 0 ] || echo "stop-cluster: no spate processes to stop"
