#!/bin/sh
# Installs, with apt-get, the Debian 12 packages that spate's build, tests and
# benchmarks need. Idempotent: when everything is present it only checks and
# returns. Runs as root (CI) or through sudo; never asks questions.
set -eu

# One package per line, with the reason it is here.
PACKAGES="
build-essential     compiler, make
cmake               the build
pkg-config          finds the libraries below
clang               fuzz targets and sanitizer builds
libclang-rt-14-dev  libFuzzer and sanitizer runtimes for clang
clang-format        the layout check in CI
python3             end-to-end tests compute expected results independently
procps              ps and pgrep for process tests
libuv1-dev          event loops, TCP, timers, async mailboxes
libyaml-dev         conf/config.yaml
libssl-dev          SHA-256 (job libraries, blobs, handshake secrets); TLS later
libcriterion-dev    unit tests
protobuf-c-compiler protoc-c: C code for the control messages of src/proto/
libprotobuf-c-dev   protobuf-c runtime: RPC payloads
libmicrohttpd-dev   the REST server (its own epoll thread)
libjansson-dev      JSON of the REST API and of plans
libxxhash-dev       XXH3: key groups of keyed streams
liblz4-dev          lz4 compression of network buffers
libpg-query-dev     the PostgreSQL parser of src/sql (libpg_query; static, no pkg-config)
libedit-dev         the line editor of the spate sql prompt (history, editing)
libzookeeper-mt-dev ZooKeeper C client of the HA plugin (libspate_zookeeper.so)
librocksdb-dev      RocksDB's C API of the state backend plugin (libspate_rocksdb.so)
zookeeper           ZooKeeper server (on the installed Java) the HA tests and ha_bench start
iproute2            ip netns, veth, bridges: the chaos tests' test hosts (tests/chaos)
nftables            packet filters of the chaos tests: partitions and packet loss
openssh-server      sshd on the chaos tests' hosts: start-cluster.sh over ssh
openssh-client      ssh and ssh-keygen: start-cluster.sh's remote hosts, their test
librdkafka-dev      Kafka client of the Kafka connector plugin (libspate_kafka.so)
maven               fetches the Apache Kafka broker's jars for the Kafka tests (kafka_jars below)
prometheus          Prometheus server that scrapes the reporters in test_prometheus.py
chromium            headless browser of the dashboard's test (tests/e2e/test_dashboard.py)
valgrind            callgrind: the benches' instructions per record (--instr, make bench-instr)
"

names=$(printf '%s\n' "$PACKAGES" | awk 'NF { print $1 }')
missing=""
for p in $names; do
    if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing="$missing $p"
    fi
done

# The Apache Kafka broker (KRaft mode, on the installed Java) that the
# Kafka tests and kafka_bench start: its jars from Maven Central, pinned by
# scripts/kafka/pom.xml, copied once into the cache (tests/e2e/kafkaserver.py
# reads them there).
kafka_jars() {
    libs="${SPATE_CACHE:-$HOME/.cache/spate}/kafka-4.1.1/libs"
    if ls "$libs"/kafka_2.13-4.1.1.jar >/dev/null 2>&1; then
        return 0
    fi
    echo "install-deps: fetching the Kafka broker's jars into $libs"
    mkdir -p "$libs"
    (cd "$(dirname "$0")/kafka" && mvn -q -B dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$libs" </dev/null)
}

if [ -z "$missing" ]; then
    echo "install-deps: all $(echo $names | wc -w) packages present"
    kafka_jars
    exit 0
fi

echo "install-deps: installing:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet; try the install first and
# update the lists only if it fails.
if ! $SUDO apt-get install -y -q --no-install-recommends $missing </dev/null; then
    $SUDO apt-get update -q </dev/null
    $SUDO apt-get install -y -q --no-install-recommends $missing </dev/null
fi
kafka_jars
echo "install-deps: done"
