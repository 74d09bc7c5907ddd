"""An answer written behind leashd's back is not obeyed: in the single-user
profile the agent's own script can use leash's Python API (and the home's log
key) to write ``approval_allowed`` into the home while leashd runs. leashd
obeys only the answers it applied itself (its operator socket, the console
through it): the held call is denied and a critical ``supervisor_tampering``
halt recorded. An answer through leashd still allows."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.store.files import FileBackend

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop

ASK = '[approvals]\nask = ["Bash(git push *)"]\n'
PUSH = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git push origin main"}, "cwd": str(ROOT), "permission_mode": "bypassPermissions"}
FORGE = ("import sys; from leash.core.store.files import FileBackend; "
         "FileBackend(sys.argv[1]).approvals.answer(sys.argv[2], allow=True, by='ops@elsewhere', via='cli')")


def held_call(home):
    """The PreToolUse held by the ask rule, waiting in a thread; (thread, replies, the approval)."""
    replies: list[dict] = []
    thread = threading.Thread(target=lambda: replies.extend(
        exchange(sockets(home)[0], hook_request("pre-tool-use", PUSH), timeout=60)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not (pending := FileBackend(home).approvals.pending()) and time.monotonic() < deadline:
        time.sleep(0.02)
    (approval,) = pending
    return thread, replies, approval


def decision(replies: list[dict]) -> dict:
    (reply,) = replies
    return json.loads(reply["stdout"])["hookSpecificOutput"]


def test_an_allow_written_into_the_home_by_another_process_is_tampering(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(ASK)
    daemon = daemon_process(home, "--no-kennel")
    try:
        thread, replies, approval = held_call(home)
        forged = subprocess.run([sys.executable, "-c", FORGE, str(home), approval.id], capture_output=True,
                                text=True, cwd=ROOT, timeout=60)
        assert forged.returncode == 0, forged.stderr
        thread.join(timeout=30)
    finally:
        stop(daemon)
    said = decision(replies)
    assert said["permissionDecision"] == "deny" and "answered outside leash daemon" in said["permissionDecisionReason"]
    halts = FileBackend(home).halts.listing(HaltQuery.of({"pending": True})).halts
    assert [(h.condition_name, h.session_id) for h in halts] == [("supervisor_tampering", "s1")]


def test_an_allow_through_leashd_still_allows(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(ASK)
    daemon = daemon_process(home, "--no-kennel")
    try:
        thread, replies, approval = held_call(home)
        allowed = subprocess.run(leash_argv() + ["--home", str(home), "approvals", "allow", approval.id],
                                 capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert allowed.returncode == 0, allowed.stderr
        thread.join(timeout=30)
    finally:
        stop(daemon)
    assert decision(replies)["permissionDecision"] == "allow"
