"""Through a real ``leash daemon`` process: a rephrased push waits for an
operator under ``Bash(git push*)``, and one leash could not read is held
saying so — in the approval the operator lists and in the deny the agent reads."""
from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from leash.core.store.files import FileBackend

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop

OPENED_WITHIN_SECONDS = 20


def pre_tool_use(command: str) -> dict:
    return {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "cwd": str(ROOT), "permission_mode": "bypassPermissions"}


@pytest.fixture
def leashd(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[approvals]\nask = ["Bash(git push*)"]\ntimeout_s = 30\n')
    proc = daemon_process(home, "--no-kennel")
    yield proc
    stop(proc)


def held_call(home, command: str) -> tuple[object, list[dict], threading.Thread]:
    """The approval a call opens, and the hook client's reply once it is answered."""
    agent, _ = sockets(home)
    replies: list[dict] = []
    waiter = threading.Thread(target=lambda: replies.extend(
        exchange(agent, hook_request("pre-tool-use", pre_tool_use(command)), timeout=60)), daemon=True)
    waiter.start()
    deadline = time.monotonic() + OPENED_WITHIN_SECONDS
    while time.monotonic() < deadline:
        pending = FileBackend(home).approvals.pending()
        if pending:
            return pending[0], replies, waiter
        time.sleep(0.02)
    raise AssertionError(f"no approval was opened for {command!r}")


def leash(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(leash_argv() + list(args), capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_a_rephrased_push_and_an_unread_one_wait_for_an_operator(home, leashd):
    approval, replies, waiter = held_call(home, "git -C . --no-pager push origin main")
    assert approval.rule == "Bash(git push*)"
    assert leash("approvals", "deny", approval.id).returncode == 0
    waiter.join(timeout=60)

    approval, replies, waiter = held_call(home, "echo push | xargs git")
    assert approval.rule.startswith("Bash(git push*), held unread: a word before git's command"), approval.rule
    listed = leash("approvals")
    assert "held unread" in listed.stdout, listed.stdout
    assert leash("approvals", "deny", approval.id, "--message", "push from the release job").returncode == 0
    waiter.join(timeout=60)
    (reply,) = replies
    said = json.loads(reply["stdout"])["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny" and "push from the release job" in said["permissionDecisionReason"]
