"""A daemon that fails fast: the thin hook asks leashd for acknowledgements,
and a leashd it hears nothing from for 2 s is "not answering": the call is
refused then, not after the approval's five minutes. A daemon that is slow
but alive says "judging" each second; a call held for an approval is told
so and waits its timeout (``core.daemon.acks``)."""
from __future__ import annotations

import fcntl
import io
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from leash.core.daemon.acks import Acknowledger
from leash.core.wire import thinhook

from ..support.checkout import ROOT
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop
from ..support.thin_hook import BASH

FAIL_FAST_SECONDS = 3.0  # what an agent may wait on a stopped leashd


def installed(verb: str) -> str:
    """The shell command ``leash install`` writes for hook ``verb``."""
    from leash.core.hook.install import HOOKS, hook_command, hook_runner

    (spec,) = [spec for spec in HOOKS if spec.verb == verb]
    return hook_command(hook_runner(), spec)


def run_installed(verb: str, payload: dict, home) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(["sh", "-c", installed(verb)], input=json.dumps(payload).encode(), capture_output=True,
                          timeout=60, cwd=ROOT, env=dict(os.environ, LEASH_HOME=str(home)))
    return done, time.monotonic() - started


def test_a_stopped_leashd_has_every_call_refused_within_three_seconds_and_sigcont_lets_them_through(home):
    """Under the wiring ``leash install`` writes (approvals on: PreToolUse and
    PermissionRequest would wait 310 s before), SIGSTOP: each call refused in
    under 3 s, saying the daemon is not answering; SIGCONT: allowed again."""
    permission = dict(BASH, hook_event_name="PermissionRequest", permission_mode="default")
    daemon = daemon_process(home, "--no-kennel", stderr=subprocess.DEVNULL)
    try:
        os.kill(daemon.pid, signal.SIGSTOP)
        results: dict[str, tuple] = {}
        calls = [threading.Thread(target=lambda v=verb, p=payload: results.__setitem__(v, run_installed(v, p, home)))
                 for verb, payload in (("pre-tool-use", BASH), ("permission-request", permission))]
        for call in calls:
            call.start()
        for call in calls:
            call.join(timeout=60)
        os.kill(daemon.pid, signal.SIGCONT)
        allowed, _ = run_installed("pre-tool-use", BASH, home)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
        stop(daemon)
    refused, took = results["pre-tool-use"]
    said = json.loads(refused.stdout)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny" and "leash daemon not answering" in said["permissionDecisionReason"]
    assert took < FAIL_FAST_SECONDS, took
    asked, took = results["permission-request"]
    assert took < FAIL_FAST_SECONDS, took
    assert json.loads(asked.stdout)["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    assert allowed.returncode == 0 and allowed.stdout.strip() == b"", allowed


def test_a_call_held_for_an_approval_is_told_so_before_it_waits(home):
    """A real leashd: the request asking for acknowledgements hears "held"
    with the approval's id first, then (the approval answered) the answer."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[approvals]\nask = ["Bash(git push *)"]\n')
    daemon = daemon_process(home, "--no-kennel")
    try:
        agent, operator = sockets(home)
        payload = dict(BASH, tool_input={"command": "git push origin main"}, permission_mode="bypassPermissions")
        request = dict(hook_request("pre-tool-use", payload), ack="1")
        replies: list[dict] = []
        asking = threading.Thread(target=lambda: replies.extend(exchange(agent, request, replies=2, timeout=30)))
        asking.start()
        deadline = time.monotonic() + 20
        while not (pending := _pending(home)) and time.monotonic() < deadline:
            time.sleep(0.02)
        (approval,) = pending
        exchange(operator, {"verb": "cli", "argv": ["approvals", "deny", approval.id, "--message", "not now"]})
        asking.join(timeout=30)
    finally:
        stop(daemon)
    held, answer = replies
    assert held == {"ack": "held", "approval": approval.id}
    assert "not now" in json.loads(answer["stdout"])["hookSpecificOutput"]["permissionDecisionReason"]


def _pending(home) -> list:
    from leash.core.store.files import FileBackend

    return FileBackend(home).approvals.pending()


# ------------------------------------------------------- the client, against a scripted leashd
class ScriptedDaemon:
    """This process as leashd of ``home`` (it holds the daemon's flock, so the
    client vouches for it), answering one hook request by ``script``: a list
    of (seconds to wait, line to send or None)."""

    def __init__(self, home, script):
        run = home / "run"
        run.mkdir(parents=True, exist_ok=True)
        self.lock = open(run / "leashd.lock", "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(run / "agent.sock"))
        self.server.listen(1)
        self.requests: list[dict] = []
        self.thread = threading.Thread(target=self._serve, args=(script,), daemon=True)
        self.thread.start()

    def _serve(self, script) -> None:
        conn, _ = self.server.accept()
        with conn:
            self.requests.append(json.loads(conn.makefile("rb").readline()))
            for wait, line in script:
                time.sleep(wait)
                if line is not None:
                    try:
                        conn.sendall(json.dumps(line).encode() + b"\n")
                    except BrokenPipeError:
                        return  # the client gave up first, as the test expects
            time.sleep(1.0)  # the client hangs up first

    def close(self) -> None:
        self.thread.join(timeout=5)
        self.server.close()
        self.lock.close()


@pytest.fixture
def scripted(home, monkeypatch):
    """The client's 2 s made 0.3 s, so these run in a moment."""
    monkeypatch.setattr(thinhook, "ACK_WAIT_SECONDS", 0.3)
    made: list[ScriptedDaemon] = []

    def make(script) -> ScriptedDaemon:
        made.append(ScriptedDaemon(home, script))
        return made[-1]

    yield make
    for daemon in made:
        daemon.close()


def client(home, event: str = "pre-tool-use") -> tuple[int, dict | None, float]:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = thinhook.run(event, home=str(home), stdin=io.BytesIO(json.dumps(BASH).encode()), stdout=out, stderr=err,
                        env={"LEASH_APPROVAL_WAIT": "30"})
    return code, json.loads(out.getvalue()) if out.getvalue().strip() else None, time.monotonic() - started


ALLOWED = {"stdout": "", "stderr": "", "code": 0}
JUDGING = {"ack": "judging"}


def test_a_daemon_that_says_nothing_is_not_answering(home, scripted):
    daemon = scripted([(2.0, ALLOWED)])
    code, said, took = client(home)
    assert daemon.requests[0]["ack"] == "1"  # the client asked for acknowledgements
    assert said["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "leash daemon not answering" in said["hookSpecificOutput"]["permissionDecisionReason"]
    assert took < 1.0


def test_a_daemon_that_says_judging_is_waited_for(home, scripted):
    scripted([(0.2, JUDGING), (0.2, JUDGING), (0.2, JUDGING), (0.2, ALLOWED)])
    code, said, took = client(home)
    assert (code, said) == (0, None) and took >= 0.6  # past the 0.3 s of silence, heard each time


def test_a_held_call_waits_past_the_silence(home, scripted):
    scripted([(0.1, {"ack": "held", "approval": "a1b2"}), (0.8, ALLOWED)])
    code, said, took = client(home)
    assert (code, said) == (0, None) and took >= 0.8


def test_judging_then_silence_is_not_answering(home, scripted):
    scripted([(0.1, JUDGING), (1.5, ALLOWED)])
    code, said, took = client(home)
    assert "leash daemon not answering" in said["hookSpecificOutput"]["permissionDecisionReason"]
    assert took < 1.0


# ------------------------------------------------------- leashd's beats, on an injected clock
def test_leashd_beats_only_for_calls_judged_past_half_a_second_and_not_once_held():
    now = [100.0]
    acks = Acknowledger(threading.Event(), clock=lambda: now[0])
    ours, theirs = socket.socketpair()
    with ours, theirs:
        with acks.judging(ours, {"verb": "hook"}) as unasked:
            assert unasked is None  # a request that did not ask hears only its answer
        with acks.judging(ours, {"verb": "hook", "ack": "1"}) as call:
            beats = []
            for at in (100.4, 100.6, 101.0, 101.5, 101.7):
                now[0] = at
                beats.append(acks.beat_due())
            acks.held(call, "a1b2")
            now[0] = 104.0
            beats.append(acks.beat_due())
        now[0] = 110.0
        beats.append(acks.beat_due())  # finished: no longer watched
        theirs.settimeout(1)
        lines = theirs.recv(4096).decode().splitlines()
    assert beats == [0, 1, 0, 0, 1, 0, 0]
    assert [json.loads(line) for line in lines] == [JUDGING, JUDGING, {"ack": "held", "approval": "a1b2"}]
