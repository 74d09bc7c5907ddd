"""Whose flock holds leashd's lock file, when another file system has a
locked file of the same inode number.

Inode numbers are per file system: two fresh tmpfs (two hosts' homes on one
machine, as the fleet soak mounts them) give the same files the same numbers.
``/proc/locks`` names each lock by ``MAJOR:MINOR:INODE``; the holder of one
home's lock must be found by its device too, or another home's leashd (or
any process that locks a file of that number) is taken for it, and the thin
hook refuses every call to the real leashd. Needs root (it mounts two tmpfs,
unmounted at the end)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from leash.core.wire.daemontrust import lock_holder

# Holds an exclusive flock of argv[1] until stdin closes (pinned to one CPU:
# /proc/locks lists the newest lock of a CPU first, so the order is known).
LOCKER = r"""
import fcntl, os, sys
os.sched_setaffinity(0, {0})
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def twin_homes(tmp_path):
    """Two tmpfs, each holding ``run/leashd.lock`` made the same way."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = []
    try:
        for name in ("one", "two"):
            where = tmp_path / name
            where.mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], check=True,
                           capture_output=True, timeout=30)
            mounted.append(where)
            (where / "run").mkdir()
            (where / "run" / "leashd.lock").touch()
        locks = [where / "run" / "leashd.lock" for where in mounted]
        if os.stat(locks[0]).st_ino != os.stat(locks[1]).st_ino:
            pytest.skip("this kernel numbers the two tmpfs' files differently")
        yield locks
    finally:
        for where in mounted:
            subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def locker(path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_the_holder_is_the_one_of_this_file_not_of_its_inode_number_elsewhere(twin_homes):
    mine, other = twin_homes
    holders = [locker(mine)]
    try:
        holders.append(locker(other))  # listed first: the newest lock of its CPU
        assert lock_holder(str(mine)) == holders[0].pid
        assert lock_holder(str(other)) == holders[1].pid
    finally:
        for proc in holders:
            proc.stdin.close()
            proc.wait(timeout=20)
            proc.stdout.close()

