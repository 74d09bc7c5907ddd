"""``modifying_unread_code`` from a session's first call: where leash's
PostToolUse hook is wired, every read the session makes is reported, so an
edit of an existing file it never read is halted even before any report has
come (Claude Code 2.1.332 no longer refuses such an edit itself). Where leash
cannot see the session's reads, the condition stays quiet as before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leash.core.hook.hooks import answer
from leash.core.hook.install import WIRED_GATE, WIRED_READS, install
from leash.core.state.halts.api import get_session_halts
from leash.core.views.protocol import StopProtocol

SESSION = "00000000-0000-4000-8000-000000000001"


@pytest.fixture
def settings_home(tmp_path, monkeypatch) -> Path:
    """No user or managed settings but the test's own."""
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    return tmp_path


@pytest.fixture
def project(settings_home) -> Path:
    """A project with one existing file, wired by ``leash install``."""
    directory = settings_home / "project"
    directory.mkdir()
    (directory / "app.py").write_text("def main():\n    return 1\n")
    install(str(directory / ".claude" / "settings.json"), "/usr/bin/true")
    return directory


@pytest.fixture
def unwired(settings_home) -> Path:
    directory = settings_home / "unwired"
    directory.mkdir()
    (directory / "app.py").write_text("def main():\n    return 1\n")
    return directory


def call(home, event: str, project: Path, session: str = SESSION, **payload) -> tuple[str, str, int]:
    data = {"session_id": session, "cwd": str(project), "hook_event_name": event,
            "transcript_path": str(project / f"{session}.jsonl"), **payload}
    verb = {"SessionStart": "session-start", "PreToolUse": "pre-tool-use", "PostToolUse": "post-tool-use"}[event]
    return answer(verb, json.dumps(data).encode(), home=str(home), env={})


def edit(home, project: Path, session: str = SESSION, name: str = "app.py") -> str | None:
    """The deny reason of an Edit of ``name``, or None when it is allowed."""
    out, _, code = call(home, "PreToolUse", project, session, tool_name="Edit",
                        tool_input={"file_path": str(project / name), "old_string": "return 1",
                                    "new_string": "return 2"})
    assert code == 0
    return json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if out else None


def read(home, project: Path, session: str = SESSION, name: str = "app.py") -> None:
    call(home, "PostToolUse", project, session, tool_name="Read", tool_input={"file_path": str(project / name)},
         tool_response={"type": "text"})


def unread_halts(home, session: str = SESSION) -> list[dict]:
    halts = get_session_halts({"session_token": session}, home=home)["halts"]
    return [h for h in halts if h["condition_name"] == "modifying_unread_code"]


def test_a_blind_edit_on_the_first_call_of_a_wired_session_is_halted(home, project):
    call(home, "SessionStart", project, source="startup")
    assert StopProtocol(home).sessions.get(SESSION)["wired"].split() == [WIRED_GATE, WIRED_READS]

    reason = edit(home, project)

    assert reason is not None and "modifying_unread_code (critical)" in reason
    assert [h["severity"] for h in unread_halts(home)] == ["critical"]


def test_without_session_start_the_wiring_is_judged_from_the_settings_once(home, project):
    reason = edit(home, project)  # the first hook leash ever hears from this session

    assert reason is not None and "modifying_unread_code" in reason
    assert StopProtocol(home).sessions.get(SESSION)["wired"].split() == [WIRED_GATE, WIRED_READS]


def test_a_write_over_an_existing_file_is_halted_and_a_new_file_is_not(home, project):
    call(home, "SessionStart", project, source="startup")
    new = {"file_path": str(project / "new.py"), "content": "x = 1\n"}
    assert call(home, "PreToolUse", project, tool_name="Write", tool_input=new)[0] == ""
    over = {"file_path": str(project / "app.py"), "content": "x = 1\n"}
    out, _, _ = call(home, "PreToolUse", project, tool_name="Write", tool_input=over)
    assert "modifying_unread_code" in out


def test_a_file_read_first_may_be_edited(home, project):
    call(home, "SessionStart", project, source="startup")
    read(home, project)
    assert edit(home, project) is None


def test_sessions_whose_reads_leash_cannot_see_keep_the_old_leniency(home, unwired):
    call(home, "SessionStart", unwired, source="startup")
    assert edit(home, unwired) is None
    assert unread_halts(home) == []


def test_a_session_wired_without_post_tool_use_keeps_the_old_leniency(home, project):
    settings = project / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    del data["hooks"]["PostToolUse"]
    settings.write_text(json.dumps(data))
    call(home, "SessionStart", project, source="startup")
    assert StopProtocol(home).sessions.get(SESSION)["wired"] == WIRED_GATE
    assert edit(home, project) is None


def test_a_fork_has_read_what_its_parent_read(home, project):
    (project / "other.py").write_text("def other():\n    return 1\n")
    call(home, "SessionStart", project, "parent", source="startup")
    read(home, project, "parent")
    StopProtocol(home).sessions.observe("fork", parent="parent", parent_by="command line")

    assert edit(home, project, "fork") is None  # its conversation holds the parent's Read
    reason = edit(home, project, "fork", name="other.py")
    assert reason is not None and "modifying_unread_code" in reason
