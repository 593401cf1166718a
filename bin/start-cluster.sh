#!/bin/sh
# Starts a spate cluster: the JobManagers of conf/masters (all of them with
# high availability, else the first) and one TaskManager per line of
# conf/workers, each by bin/spate-daemon.sh: on this machine for its own
# names (localhost, 127.0.0.1, its host name), else over ssh with
# env.ssh.opts, at the same installation path and configuration folder (as
# Flink's scripts). A remote process binds and announces the name it has in
# the file. Pid files and per-process logs go to env.log.dir (default log/)
# on the host that runs the process.
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

# Runs spate-daemon.sh with args on host: here when the host is local,
# else over ssh (env.ssh.opts), with the same installation path and
# configuration folder there (as Flink's scripts assume).
on_host() {
    h=$1
    shift
    if is_local "$h"; then
        "$root/bin/spate-daemon.sh" "$@"
    else
        cmd="SPATE_CONF_DIR=$(quote "$SPATE_CONF_DIR") SPATE_BIN=$(quote "$spate")"
        cmd="$cmd $(quote "$root/bin/spate-daemon.sh")"
        for a in "$@"; do
            cmd="$cmd $(quote "$a")"
        done
        # shellcheck disable=SC2086
        ssh -n $sshopts "$h" -- "$cmd"
    fi
}

# One word for a remote shell: single-quoted, inner quotes escaped.
quote() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

for f in "$logdir"/spate-jobmanager*.pid; do
    if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
        echo "start-cluster: a JobManager is running already (pid $(cat "$f"))" >&2
        exit 1
    fi
done
sshopts=$("$spate" config env.ssh.opts)

# conf/masters: host:rest-port per line. With high availability every
# master starts (one leads, the others stand by; TaskManagers and clients
# find the leader through ZooKeeper); without, only the first.
hatype=$("$spate" config high-availability.type)
masters=$(grep -v '^[[:space:]]*#' "$SPATE_CONF_DIR/masters" 2>/dev/null | tr -d ' ' || true)
[ -n "$masters" ] || masters=localhost # no conf/masters: one, with the configured ports
m=0
rpcport=""
jmhost=""
for line in $masters; do
    [ -n "$line" ] || continue
    [ $m -eq 0 ] || [ "$hatype" != none ] || break
    mhost=${line%%:*}
    mport=${line#*:}
    [ "$mport" != "$line" ] || mport=""
    set --
    [ -z "$mport" ] || set -- -D "rest.port=$mport"
    if is_local "$mhost"; then
        # Standby JobManagers on one machine need RPC ports of their own.
        [ "$hatype" = none ] || set -- "$@" -D jobmanager.rpc.port=0
    else
        set -- "$@" -D "jobmanager.rpc.address=$mhost" -D "jobmanager.bind-host=$mhost" \
            -D "rest.address=$mhost" -D "rest.bind-address=$mhost"
    fi
    out=$(on_host "$mhost" start jobmanager "$m" "$mhost" "$@") || {
        printf '%s\n' "$out"
        exit 1
    }
    printf '%s\n' "$out" | grep -v "JobManager started" || true
    line=$(printf '%s\n' "$out" | grep -m1 "JobManager started") || exit 1
    if [ -z "$rpcport" ]; then
        rpcport=$(echo "$line" | sed -n 's/.*rpc at [^ ,]*:\([0-9]*\),.*/\1/p')
        jmhost=$mhost
    fi
    echo "$line" | sed -n 's/.*REST at \(http[^ ]*\).*/The REST API and dashboard: \1/p'
    m=$((m + 1))
done
[ $m -gt 0 ] || { echo "start-cluster: no master in conf/masters" >&2; exit 1; }
# Without HA the TaskManagers are told the JobManager's address and port (a
# local one's port is chosen by the kernel); with HA they find the leader in
# ZooKeeper.
set --
if [ "$hatype" = none ]; then
    set -- -D "jobmanager.rpc.port=$rpcport"
    is_local "$jmhost" || set -- "$@" -D "jobmanager.rpc.address=$jmhost"
fi

workers=$SPATE_CONF_DIR/workers
[ -f "$workers" ] || workers=/dev/null
n=0
for w in $(grep -v '^[[:space:]]*#' "$workers" | tr -d ' '); do
    [ -n "$w" ] || continue
    if is_local "$w"; then
        on_host "$w" start taskmanager "$n" "$w" "$@"
    else
        on_host "$w" start taskmanager "$n" "$w" "$@" -D "taskmanager.host=$w" \
            -D "taskmanager.bind-host=$w"
    fi
    n=$((n + 1))
done
