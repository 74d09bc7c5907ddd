"""The thin hook finds leashd's lock in the answering process's own
descriptors (``/proc/PID/fdinfo``), not in ``/proc/locks``: reading that costs
the kernel an RCU grace period (10-20 ms) on every tool call. What it
believes is unchanged: the peer must hold the flock itself; a process that
only inherited the locked descriptor, or holds none, is judged by
``/proc/locks`` and refused, naming the real holder.

Real processes, real flocks, real sockets: a holder that takes the lock of
``<home>/run/leashd.lock`` and listens on the agent socket, and a child of it
that keeps the locked descriptor and listens on a socket of its own.
"""
from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time

import pytest

from leash.core.wire import daemontrust
from leash.core.wire.daemontrust import NotTheDaemon, held_by, lock_holder, vouch

HOLDER = r"""
import fcntl, os, socket, sys
lock = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[2]); server.listen(4)
child = os.fork()
if child == 0:  # keeps the locked descriptor it inherited, answers on a socket of its own
    server.close()
    own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    own.bind(sys.argv[3]); own.listen(4)
    sys.stdin.read()
    os._exit(0)
print(child, flush=True)
sys.stdin.read()
os.waitpid(child, 0)
"""


@pytest.fixture
def holder(tmp_path):
    run = tmp_path / "home" / "run"
    run.mkdir(parents=True)
    lock, agent, inherited = run / "leashd.lock", run / "agent.sock", tmp_path / "inherited.sock"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(agent), str(inherited)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())
        deadline = time.monotonic() + 10
        while not inherited.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        yield {"home": str(tmp_path / "home"), "lock": str(lock), "agent": str(agent),
               "inherited": str(inherited), "pid": proc.pid, "child": child}
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()


def _asked(path: str) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    return conn


def test_the_holder_is_found_in_its_own_descriptors(holder):
    assert held_by(holder["lock"], holder["pid"])
    assert lock_holder(holder["lock"]) == holder["pid"]


def test_a_process_that_only_inherited_the_locked_descriptor_does_not_hold_it(holder):
    assert not held_by(holder["lock"], holder["child"])
    assert not held_by(holder["lock"], os.getpid())


def test_leashd_is_vouched_for_without_reading_proc_locks(holder, monkeypatch):
    monkeypatch.setattr(daemontrust, "PROC_LOCKS", os.path.join(holder["home"], "no-such-file"))
    with _asked(holder["agent"]) as conn:
        vouch(conn, holder["agent"], holder["home"], {})


def test_the_inheriting_child_is_refused_naming_the_holder(holder):
    with _asked(holder["inherited"]) as conn, pytest.raises(NotTheDaemon) as refused:
        vouch(conn, holder["inherited"], holder["home"], {})
    assert f"pid {holder['child']} answers" in str(refused.value)
    assert f"the leash daemon of this home is pid {holder['pid']}" in str(refused.value)


def test_a_lock_file_replaced_under_the_holder_is_no_holder(holder, tmp_path):
    os.replace(holder["lock"], tmp_path / "moved.lock")
    open(holder["lock"], "w").close()  # the same name, another file: nobody holds it
    assert not held_by(holder["lock"], holder["pid"])
    with _asked(holder["agent"]) as conn, pytest.raises(NotTheDaemon, match="no leash daemon holds"):
        vouch(conn, holder["agent"], holder["home"], {})


def test_a_shared_lock_is_not_leashds(tmp_path):
    lock = tmp_path / "leashd.lock"
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        assert not held_by(str(lock), os.getpid())
        fcntl.flock(handle, fcntl.LOCK_UN)
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert held_by(str(lock), os.getpid())
