"""Answering from a phone with the real Claude Code: a call an ask rule holds
at PreToolUse is notified on an ntfy route (a loopback stand-in written from
ntfy's documented API, tests/support/ntfy.py) with Allow and Deny buttons; a
tap (the stand-in POSTs what the button says, as the phone does) reaches
leashd through the route's reply topic. Allow: the tool runs. Deny: the model
reads that the operator refused, through ntfy."""
from __future__ import annotations

import os
import threading

import pytest

from ..support.e2e.harness import ClaudeUnavailable, claude_env, ensure_claude, leashd, run_claude, wire
from ..support.e2e.standin import StandInServer, bash, text
from ..support.ntfy import Ntfy

try:
    ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)

ALERTS, REPLIES = "alerts", "replies-2b7e41"
NOTIFIED_WITHIN_SECONDS = 60


@pytest.fixture
def ntfy():
    server = Ntfy()
    yield server
    server.close()


@pytest.fixture
def phone_agent(agent, ntfy):
    agent.home.mkdir(parents=True, exist_ok=True)
    (agent.home / "config.toml").write_text(
        '[approvals]\nask = ["Bash(touch marker*)"]\ntimeout_s = 60\n'
        f'[[notify.route]]\nkind = "ntfy"\nurl = "{ntfy.url}/{ALERTS}"\nreply_topic = "{REPLIES}"\n'
        'events = ["approval"]\nname = "phone"\n')
    os.chmod(agent.home / "config.toml", 0o600)
    wire(agent.project, env=dict(os.environ, LEASH_HOME=str(agent.home)))
    with leashd(agent.home):
        yield agent


def tap_when_notified(ntfy, label: str) -> threading.Thread:
    def phone() -> None:
        (message,) = ntfy.wait_for(ALERTS, 1, timeout=NOTIFIED_WITHIN_SECONDS)
        ntfy.tap(next(action for action in message["actions"] if action["label"] == label))

    thread = threading.Thread(target=phone, daemon=True)
    thread.start()
    return thread


def run(agent):
    with StandInServer([[text("Creating the marker."), bash("touch marker")], [text("done")]]) as standin:
        agent.standin = standin
        env = claude_env(agent.base, standin.url, LEASH_HOME=str(agent.home))
        agent.last = run_claude(agent.claude, agent.project, "create the marker", env,
                                args=("--permission-mode", "bypassPermissions"))
    assert not agent.last.timed_out, agent.last


def test_a_tap_on_allow_runs_the_held_call(phone_agent, ntfy):
    phone = tap_when_notified(ntfy, "Allow")
    run(phone_agent)
    phone.join(timeout=10)
    assert phone_agent.marker.exists(), phone_agent.last


def test_a_tap_on_deny_refuses_it_and_the_model_reads_why(phone_agent, ntfy):
    phone = tap_when_notified(ntfy, "Deny")
    run(phone_agent)
    phone.join(timeout=10)
    assert not phone_agent.marker.exists()
    (result,) = phone_agent.tool_results()
    assert "ntfy:phone" in result, result
