"""Whom the thin hook believes, and how long it waits.

A fake daemon an agent starts on ``run/agent.sock`` (a process of the same
user, answering "allow" to everything) is not believed: the call is denied
and the payload is never sent to it, with no daemon running, with one running
whose socket file the fake replaced, and with the fake's pid written into the
daemon's lock file. A socket another user owns is believed only for root, the
home's owner or ``LEASH_DAEMON_UID``.

A stopped daemon (SIGSTOP) makes the gating hooks deny after the client's
deadline (``LEASH_HOOK_DEADLINE``), naming leashd, while the others fail open.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from leash.core.views.protocol import StopProtocol
from leash.core.wire import daemontrust, thinhook

from ..support.checkout import ROOT
from ..support.daemon import daemon_process, sockets, stop
from ..support.thin_hook import BASH, decision, hook

# What an agent could run: a socket server on the path the hook uses that
# allows every call, and writes down every request it was sent.
FAKE_DAEMON = r"""
import os, socket, sys
path, seen = sys.argv[1], sys.argv[2]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen(8)
if len(sys.argv) > 3:
    os.chown(path, int(sys.argv[3]), -1)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    try:
        data = conn.recv(1 << 20)
        with open(seen, "ab") as log:
            log.write(data)
        conn.sendall(b'{"stdout": "", "stderr": "", "code": 0}\n')
    except OSError:
        pass  # the client went away without asking
    conn.close()
"""


class FakeDaemon:
    def __init__(self, tmp_path, path: str, *, owner: int | None = None):
        script = tmp_path / "fake_daemon.py"
        script.write_text(FAKE_DAEMON)
        self.seen = tmp_path / "seen"
        argv = [sys.executable, str(script), path, str(self.seen)] + ([str(owner)] if owner is not None else [])
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def requests(self) -> bytes:
        return self.seen.read_bytes() if self.seen.exists() else b""

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()  # type: ignore[union-attr]


@pytest.fixture
def held(home):
    """A home where session s1 is stopped: allowing its call is the fake's lie."""
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    (home / "run").mkdir(mode=0o700, exist_ok=True)
    return home


def _refused(done) -> str:
    assert done.returncode == 0 and decision(done) == "deny", done
    return json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_fake_daemon_on_the_default_socket_is_not_believed(held, tmp_path):
    fake = FakeDaemon(tmp_path, sockets(held)[0])
    try:
        reason = _refused(hook("pre-tool-use", BASH))
        prompt = hook("user-prompt-submit", {"session_id": "s1", "prompt": "go"})
        ended = hook("session-end", {"session_id": "s1", "reason": "exit"})
    finally:
        fake.close()
    assert "not leash's daemon" in reason and "no leash daemon holds" in reason
    assert json.loads(prompt.stdout)["decision"] == "block"
    assert ended.returncode == 0 and ended.stdout == b"" and b"not leash's daemon" in ended.stderr  # fails open
    assert fake.requests() == b""  # the payload never reached it


@pytest.mark.parametrize("forge_lock", [False, True], ids=["socket-replaced", "lock-file-forged"])
def test_a_fake_daemon_in_place_of_a_running_one_is_not_believed(daemon, held, tmp_path, forge_lock):
    agent_socket = sockets(held)[0]
    fake = FakeDaemon(tmp_path, agent_socket)  # unlinks the daemon's socket file and binds its own
    try:
        if forge_lock:
            (held / "run" / "leashd.lock").write_text(f"{fake.proc.pid}\n")
        for env in ({}, {"LEASH_SOCKET": agent_socket}):
            reason = _refused(hook("pre-tool-use", BASH, env=env))
            assert f"pid {fake.proc.pid} answers" in reason and f"is pid {os.getpid()}" in reason
    finally:
        fake.close()
    assert fake.requests() == b""


@pytest.mark.skipif(os.geteuid() != 0, reason="making a socket another user owns needs root")
def test_a_socket_another_user_owns_is_believed_only_for_leashds_user(held, tmp_path):
    fake = FakeDaemon(tmp_path, sockets(held)[0], owner=65534)
    try:
        reason = _refused(hook("pre-tool-use", BASH))
    finally:
        fake.close()
    assert "is owned by uid 65534" in reason


def test_whom_the_client_trusts_besides_itself(tmp_path):
    theirs = {"LEASH_DAEMON_UID": "4242"}
    assert daemontrust.trusted_users(str(tmp_path / "missing"), theirs) == {0, 4242} - {os.geteuid()}
    assert os.geteuid() not in daemontrust.trusted_users(str(tmp_path), {"LEASH_DAEMON_UID": str(os.geteuid())})
    assert thinhook.deadline_seconds({}) == thinhook.DEFAULT_DEADLINE_SECONDS
    for bad in ("soon", "0", "-3", "nan", "3600"):
        assert thinhook.deadline_seconds({"LEASH_HOOK_DEADLINE": bad}) == thinhook.DEFAULT_DEADLINE_SECONDS
    assert thinhook.deadline_seconds({"LEASH_HOOK_DEADLINE": "0.5"}) == 0.5


@pytest.mark.parametrize("with_leash_socket", [True, False])
def test_a_stopped_daemon_fails_closed_at_the_deadline(home, with_leash_socket):
    StopProtocol(home)
    daemon = daemon_process(home, "--no-kennel", stderr=subprocess.DEVNULL)
    env = {"LEASH_HOOK_DEADLINE": "1"} | ({"LEASH_SOCKET": sockets(home)[0]} if with_leash_socket else {})
    try:
        os.kill(daemon.pid, signal.SIGSTOP)
        # The client gives up at the deadline it was given (1 s), nothing like the hook's 30 s timeout:
        # a client that waited for that would be ended here (subprocess.TimeoutExpired).
        reason = _refused(hook("pre-tool-use", BASH, env=env, timeout=15))
        ended = hook("session-end", {"session_id": "s1", "reason": "exit"}, env=env, timeout=15)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
        stop(daemon)
    assert "leashd" in reason and "did not answer within 1 s" in reason
    assert ended.returncode == 0 and ended.stdout == b"" and b"leashd" in ended.stderr


def test_the_installed_command_runs_the_client_with_its_deadline(home, tmp_path):
    """The wiring ``leash install`` writes, through ``sh -c``, with leashd stopped."""
    from leash.core.hook.install import HOOKS, hook_command, hook_runner

    (spec,) = [spec for spec in HOOKS if spec.verb == "pre-tool-use"]
    daemon = daemon_process(home, "--no-kennel", stderr=subprocess.DEVNULL)
    try:
        os.kill(daemon.pid, signal.SIGSTOP)
        done = subprocess.run(["sh", "-c", hook_command(hook_runner(), spec)], input=json.dumps(BASH).encode(),
                              capture_output=True, timeout=60, cwd=ROOT,
                              env=dict(os.environ, LEASH_HOOK_DEADLINE="1"))
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
        stop(daemon)
    assert "leashd" in _refused(done)
