"""Claude Code's lifecycle hooks, fed the real payloads captured from Claude
Code (tests/fixtures/claude_code/), and ``leash install``'s settings merge."""
from __future__ import annotations

import json
import subprocess

import pytest

from leash.core.hook.hooktimes import deadlines
from leash.core.hook.install import HOOKS, install, is_leash_hook
from leash.core.hook.installcheck import check, disabling_change
from leash.core.state.halts.api import record_halt, session_state
from leash.core.views.protocol import StopProtocol

from ..support.claude_code import SESSION, hook, payload


# ------------------------------------------------------------------ session lifecycle
def test_session_start_registers_before_the_first_tool_call(home):
    code, out, _ = hook(home, "session-start", payload("SessionStart"))
    assert (code, out) == (0, "")
    record = StopProtocol(home).sessions.get(SESSION)
    assert record["cwd"] == "/work/project" and record["transcript_path"].endswith(f"{SESSION}.jsonl")


def test_session_end_and_notifications_set_the_status(home):
    hook(home, "session-start", payload("SessionStart"))
    sessions = StopProtocol(home).sessions
    hook(home, "notification", payload("Notification"))
    assert sessions.get(SESSION)["status"] == "waiting for approval"  # Claude Code's own dialog
    hook(home, "notification", payload("Notification", notification_type="idle_prompt"))
    assert sessions.get(SESSION)["status"] == "waiting for input"
    hook(home, "user-prompt-submit", payload("UserPromptSubmit"))
    assert sessions.get(SESSION)["status"] == "thinking"
    hook(home, "session-end", payload("SessionEnd"))
    assert sessions.get(SESSION)["status"] == "ended"


def test_a_forked_session_is_held_by_a_stop_on_its_parent(home, tmp_path):
    parent, child = "parent-session", "forked-session"
    message = {"type": "user", "uuid": "00000000-0000-4000-8000-0000000000c1", "message": {}}
    # A fork's transcript begins with copies of its parent's messages, uuids kept, sessionId rewritten.
    (tmp_path / f"{parent}.jsonl").write_text(json.dumps({**message, "sessionId": parent}) + "\n")
    transcript = tmp_path / f"{child}.jsonl"
    transcript.write_text(json.dumps({**message, "sessionId": child}) + "\n")
    StopProtocol(home).sessions.observe(parent, transcript_path=str(tmp_path / f"{parent}.jsonl"))
    StopProtocol(home).acknowledge_stop("ops", parent, "explicit halt")
    code, out, _ = hook(home, "session-start", payload("SessionStart", session_id=child, source="resume",
                                                        transcript_path=str(transcript)))
    assert code == 0 and "resumed from" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    code, out, _ = hook(home, "pre-tool-use", payload("PreToolUse", session_id=child))
    assert "parent-session" in json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_resume_in_the_same_pane_inherits_the_stop_and_the_halts(home):
    env = {"TMUX_PANE": "%7"}
    sessions = StopProtocol(home).sessions
    sessions.observe("first", tmux_pane="%7", now=1_800_000_000)
    record_halt({"session_token": "first", "halt_type": "security", "severity": "critical",
                 "description": "left the sandbox"}, home=home)
    hook(home, "session-start", payload("SessionStart", session_id="second", source="resume"), env)
    assert sessions.get("second")["parent"] == "first"
    code, out, _ = hook(home, "pre-tool-use", payload("PreToolUse", session_id="second",
                                                      tool_input={"command": "make"}), env)
    assert "halted" in json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert session_state(home, "second") == "active"  # its own record is clean: the hold is inherited


# ------------------------------------------------------------------ prompts, batches, permissions
def test_a_stopped_sessions_prompt_is_blocked_and_a_locked_one_is_told(home):
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", SESSION, "explicit halt")
    code, out, _ = hook(home, "user-prompt-submit", payload("UserPromptSubmit"))
    answer = json.loads(out)
    assert code == 0 and answer["decision"] == "block" and "explicit halt" in answer["reason"]
    protocol.resume(SESSION)
    protocol.hands_off(SESSION, hours=1, reason="migrating")
    code, out, _ = hook(home, "user-prompt-submit", payload("UserPromptSubmit"))
    assert "migrating" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("hold", ["session", "fleet", "hands_off", "paused", "none", "path_lock"])
def test_post_tool_batch_ends_the_turn_only_while_the_session_is_held(home, hold):
    protocol = StopProtocol(home)
    if hold == "session":
        protocol.acknowledge_stop("ops", SESSION, "explicit halt")
    elif hold == "fleet":
        protocol.stop_fleet("everyone")
    elif hold == "hands_off":
        protocol.hands_off(SESSION, hours=1, reason="do not touch")
    elif hold == "paused":
        record_halt({"session_token": SESSION, "halt_type": "security", "severity": "high",
                     "description": "escalated", "auto_escalate": True}, home=home)
    elif hold == "path_lock":
        protocol.hands_off("path:src/**", hours=1)
    code, out, _ = hook(home, "post-tool-batch", payload("PostToolBatch"))
    assert code == 0
    if hold in ("none", "path_lock"):
        assert out == ""
    else:
        answer = json.loads(out)
        assert answer["continue"] is False and answer["stopReason"].startswith("leash:")


def test_a_held_sessions_permission_dialog_is_denied(home):
    assert hook(home, "permission-request", payload("PermissionRequest"))[1] == ""
    StopProtocol(home).stop_fleet("everyone")
    code, out, _ = hook(home, "permission-request", payload("PermissionRequest"))
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert code == 0 and decision["behavior"] == "deny" and "fleet" in decision["message"]


# ------------------------------------------------------------------ config changes
@pytest.fixture
def project(tmp_path, monkeypatch):
    directory = tmp_path / "project"
    directory.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    install(str(directory / ".claude" / "settings.json"))  # what `leash install` writes: this leash's hook entry
    return directory


def test_a_config_change_that_disables_hooks_is_blocked_and_halts(home, project):
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"disableAllHooks": True}))
    change = payload("ConfigChange", cwd=str(project), file_path=str(local))
    code, _, err = hook(home, "config-change", change)
    assert code == 2 and "disableAllHooks" in err and "human" in err
    assert session_state(home, SESSION) == "halted"
    lines = [e for e in StopProtocol(home).read_ack_log() if e["event"] == "tamper_blocked"]
    assert lines and lines[-1]["session_id"] == SESSION


def test_a_config_change_that_removes_leash_is_blocked_and_a_harmless_one_passes(home, project):
    settings = project / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["model"] = "something"
    settings.write_text(json.dumps(data))
    hook(home, "session-start", payload("SessionStart", cwd=str(project)))  # started wired
    change = payload("ConfigChange", cwd=str(project), file_path=str(settings), source="project_settings")
    assert hook(home, "config-change", change)[0] == 0
    settings.write_text(json.dumps({"model": "something"}))
    code, _, err = hook(home, "config-change", change)
    assert code == 2 and "no longer wired" in err
    assert disabling_change(str(settings), project=str(project), was_wired=True)
    # Wiring leash cannot see (a --settings file) is never judged removed.
    assert not disabling_change(str(settings), project=str(project))


def test_unknown_hook_events_exit_1_never_2(home):
    code, _, err = hook(home, "post-nothing", {})
    assert code == 1 and "unknown hook" in err


# ------------------------------------------------------------------ leash install
FOREIGN = {"model": "opus", "permissions": {"allow": ["Bash(ls)"]},
           "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
                     "Stop": [{"hooks": [{"type": "command", "command": "notify.sh", "timeout": 5}]}]}}


@pytest.mark.parametrize("start", [None, {}, FOREIGN], ids=["missing", "empty", "foreign"])
def test_install_is_idempotent_and_uninstall_leaves_foreign_hooks(tmp_path, start):
    path = tmp_path / ".claude" / "settings.json"
    if start is not None:
        path.parent.mkdir()
        path.write_text(json.dumps(start))
    assert install(str(path), "/opt/leash/bin/leash") is True
    first = path.read_bytes()
    assert install(str(path), "/opt/leash/bin/leash") is False and path.read_bytes() == first
    data = json.loads(first)
    for spec in HOOKS:
        [ours] = [h for group in data["hooks"][spec.event] for h in group["hooks"] if is_leash_hook(h)]
        deadline = f"--deadline {deadlines(spec.verb)[0]} " if spec.fail_closed else ""  # its own, no `timeout`
        assert f"/opt/leash/bin/leash {deadline}hook {spec.verb}" in ours["command"] and ours["timeout"] > 0
        assert ("|| exit 2" in ours["command"]) == spec.fail_closed
    if start is FOREIGN:
        assert data["model"] == "opus" and data["permissions"] == FOREIGN["permissions"]
    assert install(str(path), uninstall=True) is True
    assert json.loads(path.read_text()) == (start or {})


def test_install_refuses_a_settings_file_it_cannot_read(tmp_path, cli):
    path = tmp_path / "p" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    result = cli("install", "--project", str(tmp_path / "p"))
    assert result.code == 1 and "not valid JSON" in result.err
    assert path.read_text() == "{not json"


def test_install_refuses_an_event_whose_hooks_are_not_a_list(tmp_path, cli):
    path = tmp_path / "p" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {"PreToolUse": "mine"}}')
    result = cli("install", "--project", str(tmp_path / "p"))
    assert result.code == 1 and '"hooks.PreToolUse" is not a list' in result.err and str(path) in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert path.read_text() == '{"hooks": {"PreToolUse": "mine"}}'


def test_check_reports_missing_disabled_broken_and_untimed_wiring(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    assert any("is not wired" in message for _, _, message in check(project=str(project)))
    install(str(settings), "/no/such/leash")
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"][0]["hooks"][0].pop("timeout")
    data["disableAllHooks"] = True
    settings.write_text(json.dumps(data))
    messages = [message for level, _, message in check(project=str(project)) if level == "fail"]
    assert any("disableAllHooks" in m for m in messages)
    assert any("/no/such/leash, which is missing" in m for m in messages)
    assert any("no timeout" in m for m in messages)


def test_fail_closed_wiring_blocks_when_the_binary_is_missing(tmp_path):
    path = tmp_path / ".claude" / "settings.json"
    install(str(path), "/no/such/leash")
    [group] = json.loads(path.read_text())["hooks"]["PreToolUse"]
    command = group["hooks"][0]["command"]
    done = subprocess.run(["sh", "-c", command], input=json.dumps(payload("PreToolUse")).encode(),
                          capture_output=True)
    assert done.returncode == 2  # Claude Code reads 2 on PreToolUse as "block"


def test_the_console_view_shows_waiting_ended_and_subagents(home):
    from leash.core.views.fleet import view

    hook(home, "session-start", payload("SessionStart"))
    hook(home, "notification", payload("Notification", notification_type="idle_prompt"))
    [row] = [r for r in view(home, tmux_sessions=[])["sessions"] if r["name"] == SESSION]
    assert row["state"] == "waiting for input"
    hook(home, "pre-tool-use", payload("PreToolUse", agent_id="a1", agent_type="Explore"))
    [row] = [r for r in view(home, tmux_sessions=[])["sessions"] if r["name"] == SESSION]
    assert row["state"] == "working" and "subagent Explore" in row["detail"]
    hook(home, "session-end", payload("SessionEnd"))
    [row] = [r for r in view(home, tmux_sessions=[])["sessions"] if r["name"] == SESSION]
    assert row["state"] == "ended"
