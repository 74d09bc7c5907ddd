"""``leash hook EVENT`` run as Claude Code runs it, a real process with the
payload on its stdin, and the decision it printed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .checkout import ROOT

BASH = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git status"}, "cwd": "/"}
HOOK = "import sys; from leash.console.cli import main; sys.exit(main(sys.argv[1:]))"


def hook(event: str, payload: dict, *, env: dict | None = None, python_flags: tuple = (), background=False,
         timeout: float = 60):
    """The hook's process on ``payload``: its ``CompletedProcess`` (``subprocess.TimeoutExpired``
    after ``timeout``), or with ``background`` the running ``Popen`` (stdin sent and closed)."""
    argv = [sys.executable, *python_flags, "-c", HOOK, "hook", event]
    merged = dict(os.environ, **(env or {}))
    if background:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=merged, cwd=ROOT)
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        proc.stdin = None  # communicate() must not flush it again
        return proc
    return subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, env=merged, cwd=ROOT,
                          timeout=timeout)


def decision(done) -> str | None:
    """The ``permissionDecision`` the hook printed, or None for nothing printed (allowed)."""
    if not done.stdout.strip():
        return None
    return json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"]
