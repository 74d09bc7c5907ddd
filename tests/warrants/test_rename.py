"""Identity survives a rename: a stop or a lock filed by a tmux session's name
binds to its id (``$N``) when filed and keeps holding after the agent renames
its session (real tmux on a private server)."""
from __future__ import annotations

import json

from leash.core.base.tmux import Tmux
from leash.core.hook.hooks import pre_tool_use
from leash.core.views.fleet import view
from leash.core.views.protocol import StopProtocol

from ..support.tmux_sessions import rename_session, start_session


def hook(home, tmux_socket, pane: str, session_id: str) -> str:
    payload = json.dumps({"session_id": session_id, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": "/"}).encode()
    out, _, code = pre_tool_use(payload, home=home, env={"TMUX": f"{tmux_socket},0,0", "TMUX_PANE": pane})
    assert code == 0
    return json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if out else ""


def test_a_stop_by_name_holds_after_the_agent_renames_its_session(home, tmux_socket, monkeypatch):
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    pane = start_session(tmux_socket, "agent-1")
    assert hook(home, tmux_socket, pane, "claude-1") == ""  # registers, allowed
    StopProtocol(home).stops.stop("agent-1", source="ops", reason="explicit halt")
    rename_session(tmux_socket, "agent-1", "free-agent")
    assert "is stopped" in hook(home, tmux_socket, pane, "claude-1")
    # A new agent session id in the same (renamed) tmux session is held as well.
    assert "is stopped" in hook(home, tmux_socket, pane, "claude-2")


def test_a_stop_filed_before_the_first_hook_binds_too(home, tmux_socket, monkeypatch):
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    pane = start_session(tmux_socket, "agent-2")
    StopProtocol(home).stops.stop("agent-2", source="ops", reason="before it ever ran a tool")
    rename_session(tmux_socket, "agent-2", "x.y:z")
    assert "is stopped" in hook(home, tmux_socket, pane, "claude-3")


def test_a_lock_by_name_holds_after_a_rename_and_the_console_shows_the_new_name(home, tmux_socket, monkeypatch):
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    pane = start_session(tmux_socket, "agent-3")
    assert hook(home, tmux_socket, pane, "claude-4") == ""
    StopProtocol(home).hands_off("agent-3", hours=1, reason="do not touch", source="ops")
    rename_session(tmux_socket, "agent-3", "renamed")
    assert "hands-off" in hook(home, tmux_socket, pane, "claude-4")
    rows = {row["name"]: row for row in view(home, tmux_sessions=Tmux(str(tmux_socket)).list_sessions())["sessions"]}
    assert "renamed" in rows and "agent-3" not in rows
    assert rows["renamed"]["state"] == "hands-off"
    assert rows["renamed"]["agents"] == ["claude-4"]
