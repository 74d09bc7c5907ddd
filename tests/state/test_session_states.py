"""What a session is doing, from its hooks (docs/claude-code.md, "What each session is doing"): idle,
thinking, working (which tool, since when), waiting; ``last_tool`` always the
newest; the view's sessions that need a human sorted first, and a session
whose tmux session is gone said to be gone. Fed Claude Code's captured
payloads (tests/fixtures/claude_code/), time injected."""
from __future__ import annotations

import json
from pathlib import Path

from leash.core.hook.hooks import answer
from leash.core.views.fleet import view
from leash.core.views.protocol import StopProtocol

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"
SESSION = "00000000-0000-4000-8000-000000000001"
T0 = 1_800_000_000.0


def hook(home, verb: str, event: str, *, now: float, **changes) -> tuple[str, str, int]:
    data = json.loads((FIXTURES / f"{event}.json").read_text())
    data.update(changes)
    return answer(verb, json.dumps(data).encode(), home=str(home), env={}, now=now)


def status_of(home, session: str = SESSION) -> dict:
    return dict(StopProtocol(home).sessions.get(session) or {})


def row_of(home, name: str, now: float, tmux_sessions=None) -> dict:
    rows = view(home, tmux_sessions=tmux_sessions if tmux_sessions is not None else [], now=now)["sessions"]
    return next(row for row in rows if row["name"] == name)


def test_a_turn_moves_through_idle_thinking_working_thinking_idle(home):
    hook(home, "session-start", "SessionStart", now=T0)
    assert status_of(home)["status"] == "idle"
    hook(home, "user-prompt-submit", "UserPromptSubmit", now=T0 + 1)
    assert status_of(home)["status"] == "thinking"
    hook(home, "pre-tool-use", "PreToolUse", now=T0 + 2)
    record = status_of(home)
    assert (record["status"], record["last_tool"]) == ("working", "Bash")
    row = row_of(home, SESSION, T0 + 14)
    assert (row["state"], row["detail"], row["last_tool"]) == ("working", "Bash for 12s", "Bash")
    hook(home, "post-tool-use", "PostToolUse", now=T0 + 15)
    assert status_of(home)["status"] == "thinking"
    hook(home, "stop", "Stop", now=T0 + 16)
    assert status_of(home)["status"] == "idle"
    assert row_of(home, SESSION, T0 + 17)["state"] == "idle"


def test_last_tool_is_recorded_even_right_after_session_start(home):
    """SessionStart registers the session; the first tool call, a second later,
    must still be written (the newest tool is a change worth a write)."""
    hook(home, "session-start", "SessionStart", now=T0)
    hook(home, "pre-tool-use", "PreToolUse", now=T0 + 1)
    assert status_of(home)["last_tool"] == "Bash"
    hook(home, "post-tool-use", "PostToolUse", now=T0 + 2)
    hook(home, "pre-tool-use", "PreToolUse", now=T0 + 3, tool_name="Read",
         tool_input={"file_path": "/work/project/README.md"})
    assert status_of(home)["last_tool"] == "Read"


def test_a_stop_that_blocks_keeps_the_session_thinking(home, monkeypatch):
    """The reply guard blocks the stop: the turn goes on, so the session is not idle."""
    from leash.core.store.select import backend_for

    backend_for(str(home)).replies.record("chat", "alice", "in", now=T0)
    hook(home, "user-prompt-submit", "UserPromptSubmit", now=T0)
    monkeypatch.setenv("LEASH_TRIGGER_CHANNEL", "chat")
    monkeypatch.setenv("LEASH_TRIGGER_SESSION_KEY", "alice")
    data = json.loads((FIXTURES / "Stop.json").read_text())
    out, _, code = answer("stop", json.dumps(data).encode(), home=str(home), now=T0 + 1,
                          env={"LEASH_TRIGGER_CHANNEL": "chat", "LEASH_TRIGGER_SESSION_KEY": "alice"})
    assert json.loads(out)["decision"] == "block"
    assert status_of(home)["status"] == "thinking"


def test_claude_codes_own_permission_dialog_is_waiting_for_approval(home):
    """One state for a call waiting for a human, whoever shows the question."""
    hook(home, "user-prompt-submit", "UserPromptSubmit", now=T0)
    hook(home, "permission-request", "PermissionRequest", now=T0 + 1)
    assert status_of(home)["status"] == "waiting for approval"


def test_sessions_that_need_a_human_sort_first(home):
    for name, status in (("a-working", "working"), ("b-permission", "waiting for permission"),
                         ("c-idle", "idle"), ("d-input", "waiting for input")):
        StopProtocol(home).sessions.observe(name, now=T0, status=status)
    names = [row["name"] for row in view(home, tmux_sessions=[], now=T0)["sessions"]]
    assert names == ["b-permission", "d-input", "a-working", "c-idle"]


def test_a_session_whose_tmux_session_is_gone_is_gone(home):
    sessions = StopProtocol(home).sessions
    sessions.observe("s1", now=T0, status="idle", tmux_session="agent-1", tmux_session_id="$1")
    sessions.observe("s2", now=T0, status="idle", tmux_session="agent-2", tmux_session_id="$2")
    listed = [{"id": "$2", "name": "agent-2", "created": T0, "attached": False, "panes": []}]
    assert row_of(home, "s1", T0, listed)["state"] == "gone"
    assert row_of(home, "agent-2", T0, listed)["state"] == "idle"
