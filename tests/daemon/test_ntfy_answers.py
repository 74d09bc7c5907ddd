"""Answering from a phone: an approval's ntfy notification carries Allow and
Deny buttons whose tokens are bound to that one call; a tap publishes the
token to the route's reply topic, and leashd, reading that topic's stream
(outbound only), applies it. A replayed, forged, expired or misdirected tap is
refused, logged and told on the route. Through a loopback ntfy stand-in
written from ntfy's documented API (tests/support/ntfy.py), against a real
``leash daemon``."""
from __future__ import annotations

import json
import threading

import pytest

from leash.core.notify import answers
from leash.core.store.files import FileBackend

from ..support.checkout import ROOT
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop
from ..support.ntfy import Ntfy
from ..support.waiting import wait_for

ALERTS, REPLIES = "ops-alerts", "ops-replies-7f3a9c"
PUSH = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git push origin main"}, "cwd": str(ROOT), "permission_mode": "bypassPermissions"}


@pytest.fixture
def ntfy():
    server = Ntfy()
    yield server
    server.close()


@pytest.fixture
def leashd(home, ntfy):
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[approvals]\nask = ["Bash(git push *)"]\ntimeout_s = 60\n'
        f'[[notify.route]]\nkind = "ntfy"\nurl = "{ntfy.url}/{ALERTS}"\nreply_topic = "{REPLIES}"\n'
        'events = ["approval"]\nname = "phone"\n'
        '[serve]\npublic_url = "https://leash.example.org/"\n')
    proc = daemon_process(home, "--no-kennel")
    yield proc
    stop(proc)


class HeldCall:
    """A PreToolUse held by the ask rule, its answer awaited in a thread."""

    def __init__(self, home, session: str = "s1"):
        self.replies: list[dict] = []
        request = hook_request("pre-tool-use", dict(PUSH, session_id=session))
        self.thread = threading.Thread(target=lambda: self.replies.extend(
            exchange(sockets(home)[0], request, timeout=60)), daemon=True)
        self.thread.start()

    def decision(self) -> dict:
        self.thread.join(timeout=30)
        (reply,) = self.replies
        return json.loads(reply["stdout"])["hookSpecificOutput"]


def buttons(ntfy, count: int = 1) -> dict[str, dict]:
    message = ntfy.wait_for(ALERTS, count)[count - 1]
    return {action["label"]: action for action in message["actions"]}


def refusals(home) -> list[str]:
    return [line.reason for line in FileBackend(home).acklog.read() if line.event == "approval_answer_refused"]


def test_a_tap_on_allow_answers_the_call_it_names_and_a_replay_is_refused(home, ntfy, leashd):
    call = HeldCall(home)
    tap = buttons(ntfy)
    assert set(tap) == {"Allow", "Deny", "View"} and tap["Allow"]["url"] == f"{ntfy.url}/{REPLIES}"
    assert (tap["View"]["action"], tap["View"]["url"]) == ("view", "https://leash.example.org/approvals")
    assert tap["Allow"]["method"] == "POST" and tap["Allow"]["body"].split(".")[1] == "allow"
    ntfy.tap(tap["Allow"])
    assert call.decision()["permissionDecision"] == "allow"
    (line,) = [line for line in FileBackend(home).acklog.read() if line.event == "approval_allowed"]
    assert line.extra.get("via") == "ntfy:phone" and line.source == "ntfy:phone"

    ntfy.tap(tap["Allow"])  # the same tap again
    wait_for(lambda: refusals(home), what="the replay refused")
    assert "already allowed" in refusals(home)[0]
    told = wait_for(lambda: [m for m in ntfy.on(ALERTS) if m["title"] == "leash refused an answer"],
                    what="the refusal told on the route")
    assert "already allowed" in told[0]["message"]


def test_deny_refuses_and_a_stop_filed_meanwhile_wins_over_allow(home, ntfy, leashd):
    call = HeldCall(home)
    ntfy.tap(buttons(ntfy)["Deny"])
    assert call.decision()["permissionDecision"] == "deny"

    second = HeldCall(home, "s2")
    tap = buttons(ntfy, 2)
    # the stop goes through leashd's operator socket, as the CLI does
    exchange(sockets(home)[1], {"verb": "cli", "argv": ["stop", "s2", "--force", "--reason", "hold it"]}, replies=2)
    ntfy.tap(tap["Allow"])
    decision = second.decision()
    assert decision["permissionDecision"] == "deny" and "hold it" in decision["permissionDecisionReason"]


def test_a_forged_or_misdirected_tap_is_refused_and_the_call_waits(home, ntfy, leashd):
    call = HeldCall(home)
    tap = buttons(ntfy)
    approval_id, _, expiry, mac = tap["Allow"]["body"].split(".")
    forged = dict(tap["Allow"], body=f"{approval_id}.allow.{expiry}.{'0' * 64}")
    ntfy.tap(forged)
    key = answers.answer_key(str(home))
    other_input = answers._mac(key, approval_id, "0" * 64, "allow", int(expiry))  # signed, but for another call
    ntfy.tap(dict(tap["Allow"], body=f"{approval_id}.allow.{expiry}.{other_input}"))
    ntfy.tap(dict(tap["Allow"], body="please allow"))
    wait_for(lambda: len(refusals(home)) == 3, what="three refusals")
    assert all(word in " ".join(refusals(home)) for word in ("does not verify", "not an answer token"))
    assert [a.id for a in FileBackend(home).approvals.pending()] == [approval_id]  # still waiting
    ntfy.tap(tap["Deny"])
    assert call.decision()["permissionDecision"] == "deny"


# ------------------------------------------------------------------ the token, on an injected clock
def test_a_token_is_bound_to_its_call_its_decision_and_its_deadline(home):
    backend = FileBackend(home)
    now = 1_800_000_000.0
    approval = backend.approvals.request("s1", "Bash", {"command": "git push"}, kind="ask", timeout_s=60, now=now)
    other = backend.approvals.request("s2", "Bash", {"command": "git push --force"}, kind="ask", timeout_s=60,
                                      now=now)
    key = answers.answer_key(str(home), create=True)
    allow = answers.token(key, approval, "allow")
    assert answers.judge(key, allow, backend.approvals, now=now + 1) == (approval.id, "allow")
    with pytest.raises(answers.Refused, match="expired"):
        answers.judge(key, allow, backend.approvals, now=now + 61)
    moved = allow.replace(approval.id, other.id)  # the same signature on another call
    with pytest.raises(answers.Refused, match="does not verify"):
        answers.judge(key, moved, backend.approvals, now=now + 1)
    with pytest.raises(answers.Refused, match="does not verify"):
        answers.judge(key, allow.replace(".allow.", ".deny."), backend.approvals, now=now + 1)
    with pytest.raises(answers.Refused, match="does not verify"):
        answers.judge(b"k" * 32, allow, backend.approvals, now=now + 1)
    with pytest.raises(answers.Refused, match="no approval"):
        answers.judge(key, "0" * 32 + allow[len(approval.id):], backend.approvals, now=now + 1)
    backend.approvals.answer(approval.id, allow=False, by="ops", via="cli", now=now + 2)
    with pytest.raises(answers.Refused, match="already denied"):
        answers.judge(key, allow, backend.approvals, now=now + 3)


def test_doctor_says_whether_leashd_reads_the_reply_topic(home, ntfy, leashd):
    from leash.core.notify.state import findings

    def answers_finding():
        return next((f for f in findings(str(home)) if "answers from route 1" in f.subject), None)

    wait_for(lambda: answers_finding() is not None and answers_finding().level == "ok", what="the topic read")
    call = HeldCall(home)
    ntfy.tap(buttons(ntfy)["Allow"])
    assert call.decision()["permissionDecision"] == "allow"
    wait_for(lambda: "1 applied, 0 refused" in answers_finding().message, what="the tap counted")
    ntfy.close()  # the server gone: leashd says it cannot read the topic
    wait_for(lambda: answers_finding().level == "warn", what="the topic down")
    assert "cannot read its reply topic" in answers_finding().message


def test_the_reply_stream_comes_back_after_the_server_and_a_tap_is_then_applied(home, ntfy, leashd):
    """The server gone, then back on the same address: leashd reads the reply
    topic again (from where it left off) and a tap made after is applied."""
    from leash.core.notify.state import findings

    call = HeldCall(home)
    tap = buttons(ntfy)
    port = int(ntfy.url.rsplit(":", 1)[1])
    ntfy.close()
    wait_for(lambda: any(f.level == "warn" and "cannot read its reply topic" in f.message
                         for f in findings(str(home))), what="the topic down")
    back = Ntfy(port)
    try:
        wait_for(lambda: any(f.level == "ok" and "answers from route 1" in f.subject for f in findings(str(home))),
                 timeout=40, what="the topic read again")
        back.tap(tap["Allow"])
        assert call.decision()["permissionDecision"] == "allow"
    finally:
        back.close()

