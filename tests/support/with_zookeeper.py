#!/usr/bin/env python3
"""Runs a command beside a ZooKeeper server of its own (one per test
program): starts it on 127.0.0.1 with an ephemeral port and a temporary
folder, passes its address as SPATE_TEST_ZK, stops it by pid afterwards.
    with_zookeeper.py PROGRAM [ARGS...]"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from zkserver import ZooKeeperServer  # noqa: E402


def main():
    zk = ZooKeeperServer()
    try:
        zk.start()
        env = dict(os.environ, SPATE_TEST_ZK=zk.quorum)
        return subprocess.run(sys.argv[1:], env=env, stdin=subprocess.DEVNULL).returncode
    finally:
        zk.close()


if __name__ == "__main__":
    sys.exit(main())
