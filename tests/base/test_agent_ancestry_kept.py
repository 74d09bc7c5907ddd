"""The agent CLI found above a hook is kept by (pid, start time, name, user):
the next hook of that agent reads no command line, and a process that merely
shares a pid, or that changed program under it, is walked again.

Real processes: a ``claude`` stand-in (this interpreter through a link named
``claude``) that starts ``sh -c 'sleep …'`` as its hook.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leash.core.base import agentproc

STAND_IN = r'''
import os, subprocess, sys, time
where = sys.argv[1]
hook = subprocess.Popen(["sh", "-c", "sleep 30; :"])
open(os.path.join(where, "hook_pid"), "w").write(str(hook.pid))
while not os.path.exists(os.path.join(where, "exec")):
    time.sleep(0.01)
os.execv("/bin/sleep", ["sleep", "30"])  # the same pid and start time, another program
'''


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + 10
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)
    return path.read_text()


def _kept() -> dict:
    return getattr(agentproc, "_AGENT_FOUND", {})


@pytest.fixture
def agent(tmp_path):
    """(the stand-in's process, its hook's pid) with an empty cache."""
    link = tmp_path / "bin" / "claude"
    link.parent.mkdir()
    link.symlink_to(os.path.realpath(sys.executable))
    script = tmp_path / "agent.py"
    script.write_text(STAND_IN)
    proc = subprocess.Popen([str(link), str(script), str(tmp_path)], stdin=subprocess.DEVNULL,
                            start_new_session=True)  # its hook and sleep end with its group
    _kept().clear()
    try:
        hook_pid = int(_wait_for(tmp_path / "hook_pid"))
        yield proc, hook_pid, tmp_path
    finally:
        _kept().clear()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _hook_of(hook_pid: int) -> int:
    """The deepest process of the hook stand-in (``sleep`` under ``sh``, or ``sh`` itself)."""
    children = Path(f"/proc/{hook_pid}/task/{hook_pid}/children")
    found = children.read_text().split() if children.exists() else []
    return int(found[0]) if found else hook_pid


def test_the_second_hook_of_an_agent_reads_no_command_line(agent, monkeypatch):
    proc, hook_pid, _ = agent
    first = agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid())
    assert first is not None and (first["pid"], first["cli"]) == (proc.pid, "claude")

    read = []
    real_argv = agentproc.argv_of
    monkeypatch.setattr(agentproc, "argv_of", lambda pid: read.append(pid) or real_argv(pid))
    again = agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid())

    assert again == first and read == []
    again["tmux_socket"] = "/elsewhere"  # a caller's own copy: the kept record is not changed
    assert "tmux_socket" not in agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid())


def test_a_kept_agent_of_another_start_time_is_not_taken_for_the_process_that_now_has_its_pid(agent):
    """A pid handed to a new process: the kept entry names the old one's start
    time, so the walk reads the new process for itself."""
    proc, hook_pid, _ = agent
    facts = agentproc.stat_of(proc.pid)
    assert facts is not None
    # What a walk kept for an earlier process with this pid and name, which was Codex CLI.
    _kept()[(proc.pid, facts[2] - 1, facts[0], os.getuid())] = {
        "pid": proc.pid, "started": facts[2] - 1, "uid": os.getuid(), "headless": True, "cli": "codex",
        "shared_server": False}

    found = agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid())

    assert found is not None and (found["cli"], found["started"]) == ("claude", facts[2])


def test_an_agent_that_execs_another_program_is_walked_again(agent):
    proc, hook_pid, where = agent
    assert agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid()) is not None

    (where / "exec").write_text("now")
    deadline = time.monotonic() + 10
    while (agentproc.stat_of(proc.pid) or ("",))[0] != "sleep":
        assert time.monotonic() < deadline, "the stand-in never became sleep"
        time.sleep(0.01)

    assert agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid()) is None


def test_another_users_hook_is_not_answered_from_the_kept_agent(agent):
    proc, hook_pid, _ = agent
    assert agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid()) is not None

    assert agentproc.agent_process(_hook_of(hook_pid), uid=os.getuid() + 4242) is None
