#!/bin/sh
# Starts a local spate cluster: the JobManagers of conf/masters (all of them
# with high availability, else the first) and one TaskManager per line of
# conf/workers (only this machine's names: localhost, 127.0.0.1, its host
# name). Pid files and per-process logs go to env.log.dir (default log/).
#   SPATE_CONF_DIR   the configuration folder (default: conf/ beside bin/)
#   SPATE_BIN        the spate executable (default: bin/spate beside this
#                    script when installed, else build/bin/spate)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
# The spate beside this script once installed (PREFIX/bin), else the build's.
spate_default=$root/build/bin/spate
[ ! -x "$root/bin/spate" ] || spate_default=$root/bin/spate
spate=${SPATE_BIN:-$spate_default}
export SPATE_CONF_DIR="${SPATE_CONF_DIR:-$root/conf}"
[ -x "$spate" ] || { echo "start-cluster: no spate executable at $spate (run make)" >&2; exit 1; }
logdir=$("$spate" config env.log.dir)
case $logdir in /*) ;; *) logdir=$root/$logdir ;; esac
mkdir -p "$logdir"
host=$(hostname)

# Local names only: localhost, 127.0.0.1, this host's name.
is_local() {
    case $1 in localhost | 127.0.0.1 | "$host") return 0 ;; esac
    return 1
}

for f in "$logdir"/spate-jobmanager*.pid; do
    if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
        echo "start-cluster: a JobManager is running already (pid $(cat "$f"))" >&2
        exit 1
    fi
done

# Waits for a JobManager's "JobManager started" line; prints it.
wait_started() {
    i=0
    while ! grep -q "JobManager started" "$1" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$2" 2>/dev/null; then
            echo "start-cluster: the JobManager did not start; see $1" >&2
            exit 1
        fi
        sleep 0.05
    done
    grep -m1 "JobManager started" "$1"
}

# conf/masters: host:rest-port per line. With high availability every local
# master starts (one leads, the others stand by; TaskManagers and clients
# find the leader through ZooKeeper); without, only the first.
hatype=$("$spate" config high-availability.type)
masters=$(grep -v '^[[:space:]]*#' "$SPATE_CONF_DIR/masters" 2>/dev/null | tr -d ' ' || true)
[ -n "$masters" ] || masters=localhost # no conf/masters: one, with the configured ports
m=0
rpcport=""
for line in $masters; do
    [ -n "$line" ] || continue
    [ $m -eq 0 ] || [ "$hatype" != none ] || break
    mhost=${line%%:*}
    mport=${line#*:}
    [ "$mport" != "$line" ] || mport=""
    if ! is_local "$mhost"; then
        echo "start-cluster: skipping master '$line': only local masters are supported" >&2
        continue
    fi
    set --
    [ -z "$mport" ] || set -- -D "rest.port=$mport"
    # Standby JobManagers on one machine need RPC ports of their own.
    [ "$hatype" = none ] || set -- "$@" -D jobmanager.rpc.port=0
    jmlog=$logdir/spate-jobmanager-$m-$host.log
    nohup "$spate" "$@" jobmanager >"$jmlog" 2>&1 </dev/null &
    pid=$!
    echo $pid >"$logdir/spate-jobmanager-$m.pid"
    echo "Starting a JobManager (pid $pid, log $jmlog)"
    line=$(wait_started "$jmlog" "$pid") || exit 1
    [ -n "$rpcport" ] || rpcport=$(echo "$line" | sed -n 's/.*rpc at [^ ,]*:\([0-9]*\),.*/\1/p')
    echo "$line" | sed -n 's/.*REST at \(http[^ ]*\).*/The REST API and dashboard: \1/p'
    m=$((m + 1))
done
[ $m -gt 0 ] || { echo "start-cluster: no local master in conf/masters" >&2; exit 1; }
# Without HA the TaskManagers are told the JobManager's port (a port of 0 is
# chosen by the kernel); with HA they find the leader in ZooKeeper.
tmargs=""
[ "$hatype" != none ] || tmargs="-D jobmanager.rpc.port=$rpcport"

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
    # shellcheck disable=SC2086
    nohup "$spate" $tmargs taskmanager >"$tmlog" 2>&1 </dev/null &
    echo $! >"$logdir/spate-taskmanager-$n.pid"
    echo "Starting a TaskManager on $w (pid $!, log $tmlog)"
    n=$((n + 1))
done
