"""A tool that leaves its agent's process tree (``setsid``, a double fork)
and then speaks to leashd's operator socket is refused by the marks its agent
CLI left in its environment (Claude Code's ``CLAUDECODE``,
``CLAUDE_CODE_SESSION_ID``…): its ancestry no longer names the agent, its
environment still does. The same command from the operator's own shell works."""
from __future__ import annotations

import os
import subprocess

from leash.core.store.files import FileBackend

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, stop

MARKS = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "AI_AGENT", "GEMINI_CLI")


def detached_leash(home, *args: str, env: dict) -> subprocess.CompletedProcess:
    """``leash ARGS`` in a session of its own (reparented as ``setsid -f`` leaves it)."""
    clean = {name: value for name, value in os.environ.items() if name not in MARKS}
    return subprocess.run(["setsid", "-w", *leash_argv(), "--home", str(home), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60, env={**clean, **env})


def test_a_detached_tool_of_an_agent_cannot_resume_but_the_operator_can(home):
    home.mkdir(parents=True, exist_ok=True)
    daemon = daemon_process(home, "--no-kennel")
    try:
        assert detached_leash(home, "stop", "s1", "--force", "--reason", "review", env={}).returncode == 0
        forged = detached_leash(home, "resume", "s1", env={"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "abc"})
        assert forged.returncode != 0 and "CLAUDECODE" in forged.stderr, (forged.stdout, forged.stderr)
        assert list(FileBackend(home).stops.stopped()) == ["s1"]
        refused = [line for line in FileBackend(home).acklog.read() if line.event == "daemon_refused"]
        assert refused and "agent cannot act as the operator" in refused[-1].reason
        assert detached_leash(home, "resume", "s1", env={}).returncode == 0
    finally:
        stop(daemon)
    assert list(FileBackend(home).stops.stopped()) == []
