"""``leash install`` pins the home the hooks use: each hook command names it
(``--home HOME``) and ``wiring.json`` records it, so an agent whose
environment says another ``LEASH_HOME`` (or none) still meets the operator's
stops. ``leash install --check`` and ``leash doctor`` compare the home this
leash uses with the one the installed hooks use, and fail with one line
naming both when they differ."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from leash.core.hook import install, wiring, wiringrecord
from leash.core.views.protocol import StopProtocol

BASH = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git status"}, "cwd": "/"}


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Claude Code's settings layers under tmp_path, and a Claude Code that knows onFailure."""
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\necho '2.1.332 (Claude Code)'\n")
    claude.chmod(0o755)
    monkeypatch.setenv("LEASH_CLAUDE", str(claude))
    return tmp_path


def commands(settings_file) -> list[str]:
    data = json.loads(settings_file.read_text())
    return [hook["command"] for groups in data["hooks"].values() for group in groups for hook in group["hooks"]]


def test_install_pins_the_home_in_every_hook_and_records_it(cli, home, isolated):
    project = isolated / "project"
    done = cli("install", "--project", str(project))
    assert done.code == 0 and f"the hooks use the home {home}" in done.out, done
    found = commands(project / ".claude" / "settings.json")
    assert found and all(install.pinned_home(command) == str(home) for command in found)
    record = wiringrecord.read_record(str(home))
    assert record["home"] == str(home)
    assert {entry["home"] for entry in record["files"].values()} == {str(home)}
    assert cli("install", "--project", str(project), "--check").code == 0  # as installed: nothing differs


def test_an_agent_with_another_leash_home_still_meets_the_operators_stop(cli, home, isolated):
    project = isolated / "project"
    assert cli("install", "--project", str(project)).code == 0
    StopProtocol(home).acknowledge_stop("ops@test", "s1", "hold on")
    (command,) = [c for c in commands(project / ".claude" / "settings.json") if "pre-tool-use" in c]
    elsewhere = isolated / "agents-home"
    env = {**os.environ, "LEASH_HOME": str(elsewhere)}
    ran = subprocess.run(["sh", "-c", command], input=json.dumps(BASH).encode(), capture_output=True, timeout=60,
                         env=env)
    said = json.loads(ran.stdout)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny" and "hold on" in said["permissionDecisionReason"]
    assert not elsewhere.exists()  # the agent's own LEASH_HOME was never used


def test_check_from_another_home_fails_naming_both(cli, home, isolated):
    project = isolated / "project"
    assert cli("install", "--project", str(project)).code == 0
    other = isolated / "operator-home"
    checked = cli("--home", str(other), "install", "--project", str(project), "--check")
    assert checked.code == 3, checked
    (line,) = [line for line in checked.out.splitlines() if "home_mismatch" in line]
    assert line.startswith("fail  home_mismatch: ") and f"use the home {home}," in line and str(other) in line


def test_doctor_from_another_home_fails_naming_both(cli, home, isolated):
    assert cli("install", "--user").code == 0
    other = isolated / "operator-home"
    other.mkdir(mode=0o700)  # a doctor reads a home, never creates one
    result = cli("--home", str(other), "doctor")
    assert result.code == 3, result
    (line,) = [line for line in result.out.splitlines() if "home_mismatch" in line]
    assert f"the hooks use the home {home}, this leash uses {other}" in line
    mine = cli("doctor")
    assert "home_mismatch" not in mine.out and f"the hooks use {home}, as this leash does" in mine.out


def test_hooks_that_pin_no_home_are_a_warning_when_the_default_is_not_this_home(home, isolated):
    settings_file = isolated / "user-home" / ".claude" / "settings.json"
    install.install(str(settings_file), install.hook_runner())  # as leash install wrote them before it pinned
    found = wiring.home_findings(str(home))
    assert [(level, subject) for level, subject, _ in found] == [("warn", install.HOME_UNPINNED)]
    assert "agents use their $LEASH_HOME" in found[0][2]


def test_the_pinned_home_is_read_from_the_command():
    spec = install.HOOKS[0]
    command = install.hook_command(["/py", "-P", "/entry.py"], spec, home="/srv/leash home")
    assert install.pinned_home(command) == "/srv/leash home"
    assert install.pinned_home(install.hook_command(["/py", "-P", "/entry.py"], spec)) is None
