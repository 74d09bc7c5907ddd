"""Approvals through a real ``leash daemon`` process: a hook client sending
PermissionRequest (or a PreToolUse an ask rule holds) waits in leashd until an
operator answers from the CLI in another process; the client going away
withdraws it; two operators answering at once, one wins and the other is told
who; timeouts decide; the call going on in the pane withdraws it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from leash.core.state.acklog import AckLog
from leash.core.store.files import FileBackend
from leash.core.views.protocol import StopProtocol

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import connect, daemon_process, exchange, hook_request, sockets, stop

ASKED_WITHIN_SECONDS = 20


def permission_request(session: str = "s1", command: str = "git push origin main") -> dict:
    return {"session_id": session, "hook_event_name": "PermissionRequest", "tool_name": "Bash",
            "tool_input": {"command": command}, "cwd": str(ROOT), "permission_mode": "default",
            "permission_suggestions": []}


def pre_tool_use(session: str = "s1", command: str = "git push origin main") -> dict:
    return {"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "cwd": str(ROOT), "permission_mode": "bypassPermissions"}


@pytest.fixture
def leashd(home):
    """``leash daemon`` as a process on the test's home (config written first by the test, if any)."""
    started: list[subprocess.Popen] = []

    def start(config: str = "") -> subprocess.Popen:
        home.mkdir(parents=True, exist_ok=True)
        if config:
            (home / "config.toml").write_text(config)
        started.append(daemon_process(home, "--no-kennel"))
        return started[-1]

    yield start
    for proc in started:
        stop(proc)


class Asking:
    """A hook client waiting for its reply in a thread."""

    def __init__(self, home, event: str, payload: dict):
        self.reply: list[dict] = []
        agent, _ = sockets(home)
        self.thread = threading.Thread(target=lambda: self.reply.extend(
            exchange(agent, hook_request(event, payload), timeout=60)), daemon=True)
        self.thread.start()

    def answer(self) -> dict:
        self.thread.join(timeout=60)
        (reply,) = self.reply
        return reply


def waiting(home, count: int = 1) -> list:
    deadline = time.monotonic() + ASKED_WITHIN_SECONDS
    while time.monotonic() < deadline:
        found = FileBackend(home).approvals.pending()
        if len(found) >= count:
            return found
        time.sleep(0.02)
    raise AssertionError("no approval was opened")


def leash(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(leash_argv() + list(args), capture_output=True, text=True, cwd=ROOT, timeout=60)


def decision(reply: dict) -> dict:
    assert reply["code"] == 0, reply
    return json.loads(reply["stdout"])["hookSpecificOutput"]


def events(home) -> list[str]:
    return [line["event"] for line in AckLog(home).read().entries if line["event"].startswith("approval_")]


def test_a_permission_request_waits_for_the_cli_and_allow_answers_allow(home, leashd):
    leashd()
    asking = Asking(home, "permission-request", permission_request())
    (approval,) = waiting(home)
    assert FileBackend(home).sessions.get("s1").status == "waiting for approval"
    listed = leash("approvals", "list")
    assert listed.returncode == 0 and approval.id in listed.stdout and "Bash: git push origin main" in listed.stdout

    allowed = leash("approvals", "allow", approval.id[:6], "--note", "release day")
    assert allowed.returncode == 0, allowed.stderr
    assert decision(asking.answer()) == {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    (line,) = AckLog(home).read(event="approval_allowed").entries
    assert (line["via"], line["note"], line["approval"]) == ("cli", "release day", approval.id)
    assert line["source"].startswith(os.environ.get("USER", "") or "")  # the peer's user, from the kernel
    assert FileBackend(home).sessions.get("s1").status == "working"


def test_deny_answers_deny_with_the_operators_message(home, leashd):
    leashd()
    asking = Asking(home, "permission-request", permission_request())
    (approval,) = waiting(home)
    assert leash("approvals", "deny", approval.id, "--message", "not on a Friday").returncode == 0
    said = decision(asking.answer())["decision"]
    assert said["behavior"] == "deny" and "not on a Friday" in said["message"] and said["interrupt"] is False
    again = leash("approvals", "allow", approval.id)
    assert again.returncode == 1 and "already denied by" in again.stderr and "via cli" in again.stderr
    unknown = leash("approvals", "allow", "nosuchid")
    assert unknown.returncode == 1 and "no approval 'nosuchid'" in unknown.stderr


def test_a_client_that_goes_away_withdraws_its_approval(home, leashd):
    leashd()
    client = subprocess.Popen([sys.executable, *leash_argv()[1:], "hook", "permission-request"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    client.stdin.write(json.dumps(permission_request()).encode())
    client.stdin.close()
    waiting(home)
    client.send_signal(signal.SIGKILL)  # what Claude Code does to the hook when its dialog is dismissed
    client.wait(timeout=10)
    client.stdout.close()
    client.stderr.close()
    deadline = time.monotonic() + ASKED_WITHIN_SECONDS
    while "approval_withdrawn" not in events(home) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert events(home) == ["approval_requested", "approval_withdrawn"]
    assert FileBackend(home).approvals.pending() == []


def test_a_client_gone_before_it_hears_its_call_is_held_withdraws_the_approval(home, leashd):
    """The hook asked for acknowledgements and went away before leashd told it
    the call waits for an operator: that telling fails, and the approval is
    withdrawn at once, not left waiting for a hook that is no more."""
    leashd()
    agent, _ = sockets(home)
    with connect(agent) as conn:
        conn.sendall(json.dumps({**hook_request("permission-request", permission_request()), "ack": "1"}).encode()
                     + b"\n")
    deadline = time.monotonic() + ASKED_WITHIN_SECONDS
    while "approval_withdrawn" not in events(home) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert events(home) == ["approval_requested", "approval_withdrawn"]
    assert FileBackend(home).approvals.pending() == []


def test_the_call_going_on_in_the_pane_withdraws_it(home, leashd):
    leashd()
    asking = Asking(home, "permission-request", permission_request())
    waiting(home)
    agent, _ = sockets(home)
    went_on = {**permission_request(), "hook_event_name": "PostToolUse", "tool_response": {"stdout": ""}}
    assert exchange(agent, hook_request("post-tool-use", went_on))[0]["code"] == 0
    assert asking.answer() == {"stdout": "", "stderr": "", "code": 0}  # the dialog answered it: nothing to add
    (line,) = AckLog(home).read(event="approval_withdrawn").entries
    assert line["via"] == "pane"


def test_a_stop_filed_while_it_waits_is_not_lifted_by_an_allow(home, leashd):
    leashd()
    asking = Asking(home, "permission-request", permission_request())
    (approval,) = waiting(home)
    assert leash("stop", "s1", "--reason", "hold everything").returncode == 0
    assert leash("approvals", "allow", approval.id).returncode == 0
    said = decision(asking.answer())["decision"]
    assert said["behavior"] == "deny" and "hold everything" in said["message"]


def test_two_operators_at_once_one_wins_and_the_other_is_told_who(home, leashd):
    leashd()
    asking = Asking(home, "permission-request", permission_request())
    (approval,) = waiting(home)
    answers = [subprocess.Popen(leash_argv() + ["approvals", verb, approval.id], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT) for verb in ("allow", "deny")]
    done = [(proc.wait(timeout=60), *proc.communicate()) for proc in answers]
    assert sorted(code for code, _, _ in done) == [0, 1], done
    (told,) = [err for code, _, err in done if code == 1]
    (won,) = [out for code, out, _ in done if code == 0]
    assert "was already" in told and "via cli" in told
    verdict = decision(asking.answer())["decision"]["behavior"]
    assert won.startswith("allowed" if verdict == "allow" else "denied")
    assert len(events(home)) == 2


@pytest.mark.parametrize("on_timeout, expected", [("deny", "deny"), ("ask", None)])
def test_a_timeout_is_a_decision(home, leashd, on_timeout, expected):
    leashd(f'[approvals]\ntimeout_s = 0.5\non_timeout = "{on_timeout}"\n')
    reply = Asking(home, "permission-request", permission_request()).answer()
    if expected is None:
        assert reply == {"stdout": "", "stderr": "", "code": 0}  # Claude Code's own dialog decides
        assert FileBackend(home).sessions.get("s1").status == "waiting for approval"
    else:
        said = decision(reply)["decision"]
        assert said["behavior"] == "deny" and "in time" in said["message"]
    assert events(home) == ["approval_requested", "approval_timeout"]


def test_an_ask_rule_holds_a_bypass_call_until_answered(home, leashd):
    leashd('[approvals]\nask = ["Bash(git push*)"]\ntimeout_s = 30\n')
    agent, _ = sockets(home)
    assert exchange(agent, hook_request("pre-tool-use", pre_tool_use(command="git status")))[0]["stdout"] == ""
    asking = Asking(home, "pre-tool-use", pre_tool_use())
    (approval,) = waiting(home)
    assert (approval.kind, approval.rule) == ("ask", "Bash(git push*)")
    assert leash("approvals", "allow", approval.id).returncode == 0
    said = decision(asking.answer())
    assert said["permissionDecision"] == "allow" and "allowed by" in said["permissionDecisionReason"]

    asking = Asking(home, "pre-tool-use", pre_tool_use(command="git   push --force"))
    (approval,) = waiting(home)
    assert leash("approvals", "deny", approval.id, "--message", "no force pushes").returncode == 0
    said = decision(asking.answer())
    assert said["permissionDecision"] == "deny" and "no force pushes" in said["permissionDecisionReason"]


def test_an_ask_rules_timeout_denies_even_when_on_timeout_is_ask(home, leashd):
    leashd('[approvals]\nask = ["tool:mcp__*"]\ntimeout_s = 0.3\non_timeout = "ask"\n')
    payload = {**pre_tool_use(), "tool_name": "mcp__github__merge", "tool_input": {"pr": 7}}
    said = decision(Asking(home, "pre-tool-use", payload).answer())
    assert said["permissionDecision"] == "deny"


def test_a_stopped_sessions_permission_request_is_denied_at_once(home, leashd):
    leashd()
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    agent, _ = sockets(home)
    (reply,) = exchange(agent, hook_request("permission-request", permission_request()))
    assert decision(reply)["decision"]["behavior"] == "deny"
    assert events(home) == []


def test_a_restarted_daemon_withdraws_what_its_predecessor_left_waiting(home, leashd):
    first = leashd()
    Asking(home, "permission-request", permission_request())
    waiting(home)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    leashd()
    assert FileBackend(home).approvals.pending() == []
    assert events(home) == ["approval_requested", "approval_withdrawn"]


def test_without_leashd_permission_requests_show_the_dialog_and_ask_rules_deny(home, leash_proc):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[approvals]\nask = ["Bash(git push*)"]\n')
    shown = leash_proc("hook", "permission-request", stdin=json.dumps(permission_request()).encode())
    assert (shown.code, shown.out) == (0, "")
    denied = leash_proc("hook", "pre-tool-use", stdin=json.dumps(pre_tool_use()).encode())
    said = json.loads(denied.out)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny" and "leash daemon" in said["permissionDecisionReason"]
    assert events(home) == []
