#!/bin/sh
# Starts a local spate cluster: a JobManager and one TaskManager per line of
# conf/workers (only this machine's names: localhost, 127.0.0.1, its host
# name). Pid files and per-process logs go to env.log.dir (default log/).
#   SPATE_CONF_DIR   the configuration folder (default: conf/ beside bin/)
#   SPATE_BIN        the spate executable (default: build/bin/spate)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
spate=${SPATE_BIN:-$root/build/bin/spate}
export SPATE_CONF_DIR="${SPATE_CONF_DIR:-$root/conf}"
[ -x "$spate" ] || { echo "start-cluster: no spate executable at $spate (run make)" >&2; exit 1; }
logdir=$("$spate" config env.log.dir)
case $logdir in /*) ;; *) logdir=$root/$logdir ;; esac
mkdir -p "$logdir"
host=$(hostname)

if [ -f "$logdir/spate-jobmanager.pid" ] && kill -0 "$(cat "$logdir/spate-jobmanager.pid")" 2>/dev/null; then
    echo "start-cluster: a JobManager is running already (pid $(cat "$logdir/spate-jobmanager.pid"))" >&2
    exit 1
fi
jmlog=$logdir/spate-jobmanager-0-$host.log
nohup "$spate" jobmanager >"$jmlog" 2>&1 </dev/null &
echo $! >"$logdir/spate-jobmanager.pid"
echo "Starting the JobManager (pid $!, log $jmlog)"

# The JobManager says where it listens (a port of 0 is chosen by the kernel);
# the TaskManagers are told that port.
i=0
while ! grep -q "JobManager started" "$jmlog" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$(cat "$logdir/spate-jobmanager.pid")" 2>/dev/null; then
        echo "start-cluster: the JobManager did not start; see $jmlog" >&2
        exit 1
    fi
    sleep 0.05
done
line=$(grep -m1 "JobManager started" "$jmlog")
rpcport=$(echo "$line" | sed -n 's/.*rpc at [^ ,]*:\([0-9]*\),.*/\1/p')
echo "$line" | sed -n 's/.*REST at \(http[^ ]*\).*/The REST API and dashboard: \1/p'

workers=$SPATE_CONF_DIR/workers
[ -f "$workers" ] || workers=/dev/null
n=0
grep -v '^[[:space:]]*#' "$workers" | while read -r w; do
    [ -n "$w" ] || continue
    case $w in
    localhost | 127.0.0.1 | "$host") ;;
    *)
        echo "start-cluster: skipping worker '$w': only local workers are supported" >&2
        continue
        ;;
    esac
    tmlog=$logdir/spate-taskmanager-$n-$host.log
    nohup "$spate" -D "jobmanager.rpc.port=$rpcport" taskmanager >"$tmlog" 2>&1 </dev/null &
    echo $! >"$logdir/spate-taskmanager-$n.pid"
    echo "Starting a TaskManager on $w (pid $!, log $tmlog)"
    n=$((n + 1))
done
