"""``leash install`` writes ``onFailure: "block"`` on the gating hooks where the
installed Claude Code has it (2.1.295 and later, by ``claude --version``) and
only the ``|| exit 2`` form where it does not; ``--check`` names gating hooks
that lack it. The program asked is ``$LEASH_CLAUDE`` (here a script that prints
what each version's ``--version`` prints; the real clients run in make e2e)."""
from __future__ import annotations

import json
import stat

import pytest

from leash.core.base.claudeversion import parse_version


def fake_claude(tmp_path, version: str):
    program = tmp_path / f"claude-{version}"
    program.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def wired(project) -> dict:
    return json.loads((project / ".claude" / "settings.json").read_text())["hooks"]


@pytest.mark.parametrize("version, expected", [("2.1.197", False), ("2.1.295", True), ("2.1.332", True)])
def test_on_failure_only_where_claude_code_has_it(cli, tmp_path, monkeypatch, version, expected):
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, version)))
    project = tmp_path / "project"
    result = cli("install", "--project", str(project))
    assert result.code == 0 and f"Claude Code {version}" in result.out
    hooks = wired(project)
    blocking = {event: group["hooks"][0] for event, groups in hooks.items() for group in groups}
    gating = {"PreToolUse", "PostToolBatch", "UserPromptSubmit", "PermissionRequest", "ConfigChange"}
    for event, hook in blocking.items():
        assert ("onFailure" in hook) == (expected and event in gating), (event, hook)
        if event in gating:
            assert hook["command"].split(" # ")[0].endswith("|| exit 2")  # the shell form stays either way
    assert cli("install", "--project", str(project)).out.startswith(f"{project}/.claude/settings.json already")


def test_no_claude_code_means_the_shell_form_alone(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("LEASH_CLAUDE", str(tmp_path / "missing"))
    project = tmp_path / "project"
    result = cli("install", "--project", str(project))
    assert "Claude Code unknown" in result.out
    assert not any("onFailure" in g["hooks"][0] for groups in wired(project).values() for g in groups)


def test_check_warns_when_an_upgraded_claude_code_could_block_on_failure(cli, tmp_path, monkeypatch):
    project = tmp_path / "project"
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.197")))
    cli("install", "--project", str(project))
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.332")))
    result = cli("install", "--project", str(project), "--check")
    assert result.code == 0
    assert "warn  onFailure: Claude Code 2.1.332 supports onFailure" in result.out


def test_versions_are_read_from_what_claude_prints():
    assert parse_version("2.1.332 (Claude Code)\n") == (2, 1, 332)
    assert parse_version("") is None and parse_version("Claude Code") is None
