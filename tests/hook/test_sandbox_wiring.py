"""``leash install --sandbox`` writes Claude Code's ``sandbox`` settings that
keep an agent's tools out of leash's home, its sockets, the operator's tmux
and the CLIs' settings; ``--check`` and the ConfigChange guard treat a change
to them as a change to leash's wiring. (The boundary itself, with the real
Claude Code and bubblewrap, is tests/e2e/test_sandbox.py.)"""
from __future__ import annotations

import json
import os
import stat

import pytest

from leash.core.hook import wiring


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # the user's settings layer: this test's own
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.332")))
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def fake_claude(tmp_path, version: str):
    """A program that answers ``--version`` as that Claude Code does."""
    program = tmp_path / f"claude-{version}"
    program.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def settings_of(project) -> dict:
    return json.loads((project / ".claude" / "settings.json").read_text())


def write_settings(path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_sandbox_keeps_the_tools_out_of_the_home_sockets_tmux_and_settings(cli, home, project):
    write_settings(project / ".claude" / "settings.json",
                   {"sandbox": {"network": {"allowedDomains": ["pypi.org"]}, "filesystem": {"denyRead": ["/srv"]}}})

    result = cli("install", "--project", str(project), "--sandbox")

    assert result.code == 0, result
    sandbox = settings_of(project)["sandbox"]
    assert sandbox["enabled"] is True and sandbox["failIfUnavailable"] is True
    assert sandbox["allowUnsandboxedCommands"] is False  # dangerouslyDisableSandbox is ignored
    assert sandbox["network"] == {"allowedDomains": ["pypi.org"], "allowAllUnixSockets": False}
    hidden = sandbox["filesystem"]["denyRead"]
    uid = os.geteuid()
    assert hidden[0] == "/srv"  # the user's own entry stays
    for folder in (str(home), str(home / "run"), f"/tmp/tmux-{uid}", os.path.join(os.environ["TMUX_TMPDIR"],
                                                                                  f"tmux-{uid}"),
                   os.path.expanduser("~/.claude/settings.json"), os.path.expanduser("~/.codex/config.toml")):
        assert folder in hidden and folder in sandbox["filesystem"]["denyWrite"], folder
    assert str(project / ".claude" / "settings.local.json") in sandbox["filesystem"]["denyWrite"]
    assert str(project / ".claude" / "settings.local.json") not in hidden  # git in the project reads it
    assert "no command may ask to leave it" in result.out
    assert "already as wanted" in cli("install", "--project", str(project), "--sandbox").out
    assert cli("install", "--project", str(project), "--check").code == 0


def test_a_pinned_socket_folder_is_guarded_too(cli, tmp_path, project):
    socket = tmp_path / "leashd" / "agent.sock"

    assert cli("install", "--project", str(project), "--sandbox", "--socket", str(socket)).code == 0

    assert str(socket.parent) in settings_of(project)["sandbox"]["filesystem"]["denyRead"]


@pytest.mark.parametrize("layer, change, said", [
    ("settings.json", {"enabled": False}, "sandbox.enabled is false"),
    ("settings.json", {"allowUnsandboxedCommands": True}, "sandbox.allowUnsandboxedCommands is true"),
    ("settings.json", {"failIfUnavailable": False}, "sandbox.failIfUnavailable is false"),
    ("settings.local.json", {"enabled": False}, "sandbox.enabled is false"),
    ("settings.local.json", {"excludedCommands": ["leash *"]}, "excludedCommands runs \"leash *\""),
    ("settings.local.json", {"network": {"allowAllUnixSockets": True}}, "allowAllUnixSockets is true"),
    ("settings.local.json", {"filesystem": {"disabled": True}}, "filesystem.disabled is true"),
    ("settings.local.json", {"filesystem": {"allowRead": ["HOME/run"]}}, "allowRead reopens"),
    ("settings.local.json", {"filesystem": {"allowWrite": ["//tmp"]}}, "allowWrite reopens //tmp"),
])
def test_check_and_config_change_refuse_a_sandbox_switched_off_or_reopened(cli, home, project, layer, change,
                                                                          said):
    cli("install", "--project", str(project), "--sandbox")
    path = project / ".claude" / layer
    data = json.loads(path.read_text()) if path.exists() else {}
    sandbox = data.setdefault("sandbox", {})
    for key, value in json.loads(json.dumps(change).replace("HOME", str(home))).items():
        sandbox[key] = {**sandbox[key], **value} if isinstance(value, dict) and key in sandbox else value
    write_settings(path, data)

    result = cli("install", "--project", str(project), "--check")

    assert result.code == 3, result
    assert said in result.out, result.out
    assert said in wiring.changed_file_problem(str(path), home=str(home))


def test_a_deny_entry_taken_out_or_the_sandbox_removed_fails_the_check(cli, home, project):
    cli("install", "--project", str(project), "--sandbox")
    path = project / ".claude" / "settings.json"
    data = settings_of(project)
    data["sandbox"]["filesystem"]["denyRead"].remove(str(home))
    write_settings(path, data)

    assert f"sandbox.filesystem.denyRead lacks {home}" in cli("install", "--project", str(project), "--check").out

    del data["sandbox"]
    write_settings(path, data)
    assert "leash's sandbox, which leash install --sandbox wrote here, is gone" in \
        wiring.changed_file_problem(str(path), home=str(home))


def test_an_install_again_without_sandbox_keeps_it_wired_and_guarded(cli, home, project):
    cli("install", "--project", str(project), "--sandbox")

    assert cli("install", "--project", str(project)).code == 0

    assert settings_of(project)["sandbox"]["allowUnsandboxedCommands"] is False
    write_settings(project / ".claude" / "settings.local.json", {"sandbox": {"enabled": False}})
    assert cli("install", "--project", str(project), "--check").code == 3


def test_without_sandbox_the_same_settings_are_not_judged(cli, home, project):
    cli("install", "--project", str(project))
    write_settings(project / ".claude" / "settings.local.json", {"sandbox": {"enabled": False}})

    assert cli("install", "--project", str(project), "--check").code == 0


def test_uninstall_takes_out_only_what_leash_wrote(cli, project):
    write_settings(project / ".claude" / "settings.json", {"sandbox": {"filesystem": {"denyRead": ["/srv"]}}})
    cli("install", "--project", str(project), "--sandbox")

    assert cli("install", "--project", str(project), "--uninstall").code == 0

    assert settings_of(project) == {"sandbox": {"filesystem": {"denyRead": ["/srv"]}}}


def test_an_old_claude_code_gets_what_it_has_and_is_told(cli, tmp_path, project, monkeypatch):
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.50")))

    result = cli("install", "--project", str(project), "--sandbox")

    assert result.code == 0
    assert "failIfUnavailable" not in settings_of(project)["sandbox"]
    assert "Claude Code 2.1.50 has no sandbox.failIfUnavailable" in result.out
    assert cli("install", "--project", str(project), "--check").code == 0


def test_sandbox_goes_with_an_install_only(cli, project):
    result = cli("install", "--project", str(project), "--sandbox", "--uninstall")

    assert result.code == 2
    assert "--sandbox" in result.err


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_sandbox_is_claude_codes_only(cli, project, agent):
    result = cli("install", "--agent", agent, "--project", str(project), "--sandbox")

    assert result.code == 2
    assert f"leash does not wire {agent}'s" in result.err
    assert not (project / ".codex").exists() and not (project / ".gemini").exists()
