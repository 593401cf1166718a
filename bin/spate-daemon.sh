#!/bin/sh
# Starts or stops one spate process on this host (Flink's flink-daemon.sh);
# start-cluster.sh and stop-cluster.sh run it here, or over ssh on the
# hosts of conf/masters and conf/workers.
#   spate-daemon.sh start ROLE N HOST [spate options...]
#   spate-daemon.sh stop ROLE N
# ROLE is jobmanager or taskmanager, N the process's line in conf/masters or
# conf/workers (0, 1, ...) and HOST its name there. The pid file is
# env.log.dir/spate-ROLE-N.pid, the log spate-ROLE-N-HOST.log (log.file:
# appended to, rolled over at log.file.max-size into .log.1 ... .log.10) and
# its standard output and error spate-ROLE-N-HOST.out (appended to), as
# Flink's. A JobManager's start waits for this start's "JobManager started"
# line and prints it (the caller reads its RPC port from it).
#   SPATE_CONF_DIR   the configuration folder (default: conf/ beside bin/)
#   SPATE_BIN        the spate executable (default: bin/spate beside this
#                    script when installed, else build/bin/spate)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
spate_default=$root/build/bin/spate
[ ! -x "$root/bin/spate" ] || spate_default=$root/bin/spate
spate=${SPATE_BIN:-$spate_default}
export SPATE_CONF_DIR="${SPATE_CONF_DIR:-$root/conf}"

usage() {
    echo "usage: spate-daemon.sh start (jobmanager|taskmanager) N HOST [options...]" >&2
    echo "       spate-daemon.sh stop (jobmanager|taskmanager) N" >&2
    exit 2
}
[ $# -ge 3 ] || usage
action=$1
role=$2
n=$3
shift 3
case $role in jobmanager | taskmanager) ;; *) usage ;; esac
[ -x "$spate" ] || { echo "spate-daemon: no spate executable at $spate (run make)" >&2; exit 1; }
logdir=$("$spate" config env.log.dir)
case $logdir in /*) ;; *) logdir=$root/$logdir ;; esac
pidfile=$logdir/spate-$role-$n.pid

# Running, not a zombie waiting for a parent that no longer exists.
alive() {
    [ -r "/proc/$1/stat" ] || return 1
    state=$(sed 's/.*) \([A-Z]\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$state" != Z ]
}

case $action in
start)
    [ $# -ge 1 ] || usage
    host=$1
    shift
    mkdir -p "$logdir"
    if [ -f "$pidfile" ] && alive "$(cat "$pidfile")"; then
        echo "spate-daemon: $role $n is running already (pid $(cat "$pidfile"))" >&2
        exit 1
    fi
    log=$logdir/spate-$role-$n-$host.log
    out=$logdir/spate-$role-$n-$host.out
    # What the log held before: the wait below reads only what comes after.
    before=$(stat -c %s "$log" 2>/dev/null || echo 0)
    nohup "$spate" "$@" -D "log.file=$log" "$role" >>"$out" 2>&1 </dev/null &
    pid=$!
    echo $pid >"$pidfile"
    echo "Starting a $role on $host (pid $pid, log $log)"
    [ "$role" = jobmanager ] || exit 0
    i=0
    while ! tail -c +$((before + 1)) "$log" 2>/dev/null | grep -q "JobManager started"; do
        i=$((i + 1))
        if [ $i -gt 200 ] || ! alive "$pid"; then
            echo "spate-daemon: the JobManager did not start; see $log and $out" >&2
            exit 1
        fi
        sleep 0.05
    done
    tail -c +$((before + 1)) "$log" | grep -m1 "JobManager started"
    ;;
stop)
    [ -f "$pidfile" ] || exit 0
    pid=$(cat "$pidfile")
    if alive "$pid"; then
        echo "Stopping $role $n (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while alive "$pid" && [ $i -lt 200 ]; do
            sleep 0.05
            i=$((i + 1))
        done
        if alive "$pid"; then
            echo "spate-daemon: pid $pid did not stop in 10 s: killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$pidfile"
    ;;
*) usage ;;
esac
