"""``leash stop SESSION --interrupt`` against a real headless ``claude -p``: the
scripted turn runs a Bash call that waits a minute and then writes the
marker; while it runs, the operator's stop with ``--interrupt`` sends SIGINT
to that Claude Code (found from the process tree of its hook calls, by the
in-process hook or by leashd from SO_PEERCRED), which cancels the call and
ends the run long before the minute is up, the marker never written.

The call is ``(sleep 60); echo done > marker``: 2.1.332 refuses a Bash command
that begins with a bare long ``sleep`` ("Blocked: sleep 60 followed by ...")
before any hook runs; in a subshell both versions run it as it is.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from leash.core import StopProtocol
from leash.core.state.acklog import AckLog

from ..support.e2e.harness import LEASH, ClaudeUnavailable, ensure_claude, leashd
from ..support.e2e.standin import bash, text
from ..support.waiting import eventually

try:  # once, at collection: without Claude Code the whole module is one skip line
    ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)

LONG_CALL = "(sleep 60); echo done > marker"
WELL_BEFORE_SECONDS = 20  # the call would take 60
CALL_STARTS_WITHIN_SECONDS = 60


def tool_processes(project: Path) -> list[int]:
    """Pids of the long call's ``sleep 60`` (its working directory is the project)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            where = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if argv[:2] == [b"sleep", b"60"] and where == str(project):
            found.append(int(name))
    return found


@pytest.fixture(params=["in-process hook", "leashd"])
def daemon_or_not(request, agent):
    """Nothing, or a ``leash daemon`` on the agent's home (its hooks are then
    thin clients, and ``leash stop`` is forwarded to it)."""
    if request.param == "in-process hook":
        yield None
        return
    with leashd(agent.home) as running:
        yield running


def test_stop_with_interrupt_cancels_a_headless_run_mid_call(agent, daemon_or_not):
    session_id = str(uuid.uuid4())
    said: dict = {}

    def operator() -> None:
        """What a person does, from another terminal, while the call runs."""
        if not eventually(lambda: tool_processes(agent.project), CALL_STARTS_WITHIN_SECONDS, interval=0.05):
            said["never"] = True
            return
        said["began"] = time.monotonic()
        said["stop"] = subprocess.run([LEASH, "--home", str(agent.home), "stop", session_id, "--interrupt",
                                       "--reason", "cancel the wait"], capture_output=True, text=True, timeout=60)

    thread = threading.Thread(target=operator, daemon=True)
    thread.start()
    run = agent.run("wait a minute, then write the marker", [[text("Waiting."), bash(LONG_CALL)], [text("done")]],
                    args=("--session-id", session_id))
    ended = time.monotonic()
    thread.join(timeout=60)

    assert "never" not in said, f"the long call never started: {run!r}"
    stop = said["stop"]
    assert stop.returncode == 0, (stop.stdout, stop.stderr)
    assert ended - said["began"] < WELL_BEFORE_SECONDS, run
    assert f"interrupted {session_id} (sigint to pid " in stop.stdout
    assert tool_processes(agent.project) == []  # the call itself was cancelled, not left running
    assert not agent.marker.exists()
    record = agent.sessions()[session_id]
    assert record["agent_process"]["headless"] is True
    (line,) = [line for line in AckLog(agent.home).read().entries if line["event"] == "interrupt"]
    assert (line["session_id"], line["method"], line["tool"]) == (session_id, "sigint", "Bash")
    assert line["target"] == f"pid {record['agent_process']['pid']}"
    assert "sleep 60" in line["input"]
    assert line["reason"] == "cancel the wait"
    assert StopProtocol(agent.home).is_stopped(session_id)  # the stop stays: its next call would be refused
