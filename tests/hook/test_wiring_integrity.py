"""Wiring integrity: ConfigChange blocks any change to leash's hooks, and any
settings ``env`` the hook reads; ``leash install --check`` reports the same
and every file under the wiring that changed since install.

The cases an agent could use to run its tool calls past the gate without
switching hooks off: an ``env`` that moves the home or puts its own programs
first on PATH, the hook's interpreter pointed at its own script, another verb,
a matcher no tool has, a longer timeout, ``onFailure`` or ``|| exit 2``
removed, ``async`` added, a relinked interpreter, an edited hook entry.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from leash.core.hook import install, wiring, wiringrecord
from leash.core.state.halts.api import session_state
from leash.core.views.protocol import StopProtocol

from ..support.claude_code import SESSION, hook, payload

BASH = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git status"}, "cwd": "/"}


@pytest.fixture
def project(tmp_path, monkeypatch, cli):
    """A project wired by ``leash install`` (for a Claude Code that knows
    onFailure), and a session that started wired."""
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\necho '2.1.332 (Claude Code)'\n")
    claude.chmod(0o755)
    monkeypatch.setenv("LEASH_CLAUDE", str(claude))
    directory = tmp_path / "project"
    done = cli("install", "--project", str(directory))
    assert done.code == 0, done
    assert cli("install", "--project", str(directory), "--check").code == 0
    return directory


def settings_of(project) -> dict:
    return json.loads((project / ".claude" / "settings.json").read_text())


def pre_tool_use(data: dict) -> dict:
    (group,) = data["hooks"]["PreToolUse"]
    return group


def edited(change):
    def apply(project, tmp_path):
        data = settings_of(project)
        change(data, tmp_path)
        path = project / ".claude" / "settings.json"
        path.write_text(json.dumps(data))
        return path
    return apply


def local(content):
    def apply(project, tmp_path):
        path = project / ".claude" / "settings.local.json"
        path.write_text(json.dumps(content(tmp_path)))
        return path
    return apply


def _agents_interpreter(data, tmp_path):
    script = tmp_path / "agent" / "python"
    script.parent.mkdir(exist_ok=True)
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    hook_ = pre_tool_use(data)["hooks"][0]
    hook_["command"] = hook_["command"].replace(install.hook_runner()[0], str(script))


def _set(key, value):
    def change(data, tmp_path):
        pre_tool_use(data)["hooks"][0][key] = value
    return change


def _replace(old, new):
    def change(data, tmp_path):
        hook_ = pre_tool_use(data)["hooks"][0]
        hook_["command"] = hook_["command"].replace(old, new)
    return change


TAMPERING = {
    "env-leash-home": (local(lambda tmp: {"env": {"LEASH_HOME": str(tmp / "elsewhere")}}), "env sets LEASH_HOME"),
    "env-path": (local(lambda tmp: {"env": {"PATH": f"{tmp / 'agent'}:/usr/bin:/bin"}}), "env sets PATH"),
    "interpreter": (edited(_agents_interpreter), "agent/python"),
    "verb": (edited(_replace("hook pre-tool-use", "hook session-end")), "`session-end` where leash install writes "
                                                                         "`pre-tool-use`"),
    "matcher": (edited(lambda data, tmp: pre_tool_use(data).update(matcher="NoSuchTool")), 'matcher "NoSuchTool"'),
    "timeout": (edited(_set("timeout", 600)), "timeout is 600"),
    "on-failure": (edited(lambda data, tmp: pre_tool_use(data)["hooks"][0].pop("onFailure")), "onFailure is null"),
    "exit-2": (edited(_replace(" || exit 2", "")), "the command has `#`"),
    "async": (edited(_set("async", True)), "async is true"),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_config_change_blocks_and_check_reports(home, project, tmp_path, cli, case):
    change, named = TAMPERING[case]
    hook(home, "session-start", payload("SessionStart", cwd=str(project)))
    path = change(project, tmp_path)
    code, _, err = hook(home, "config-change", payload("ConfigChange", cwd=str(project), file_path=str(path)))
    assert code == 2 and named in err and "supervisor_tampering" in err, err
    assert session_state(home, SESSION) == "halted"
    assert [e for e in StopProtocol(home).read_ack_log() if e["event"] == "tamper_blocked"]
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 3 and named in checked.out, checked


def test_harmless_changes_pass(home, project, cli):
    hook(home, "session-start", payload("SessionStart", cwd=str(project)))
    path = project / ".claude" / "settings.json"
    data = settings_of(project)
    data["model"] = "opus"
    data["env"] = {"ANTHROPIC_MODEL": "opus", "HTTPS_PROXY": "http://127.0.0.1:3128"}
    path.write_text(json.dumps(data))
    change = payload("ConfigChange", cwd=str(project), file_path=str(path), source="project_settings")
    assert hook(home, "config-change", change)[0] == 0
    assert cli("install", "--project", str(project), "--check").code == 0


def test_every_program_of_the_command_is_named_by_its_path(home, project, tmp_path, cli):
    """The command's one program is the interpreter by its absolute path, its
    deadline its own (``--deadline``: no ``timeout`` to find): a fake
    ``python3`` or ``timeout`` first on PATH that exits 0 is never run; a
    command that finds its interpreter through PATH is named as stale."""
    fakes = tmp_path / "agent"
    fakes.mkdir()
    for name in ("timeout", "python3"):
        (fakes / name).write_text("#!/bin/sh\nexit 0\n")
        (fakes / name).chmod(0o755)
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    command = pre_tool_use(settings_of(project))["hooks"][0]["command"]
    program = next(word for word in command.split() if "=" not in word)  # after LEASH_APPROVAL_WAIT=...
    assert program == install.hook_runner()[0] and os.path.isabs(program)
    assert " --deadline 315 " in command and "timeout" not in command.split("#")[0]
    ran = subprocess.run(["sh", "-c", command], input=json.dumps(BASH).encode(), capture_output=True, timeout=60,
                         env=dict(os.environ, PATH=f"{fakes}:{os.environ['PATH']}"))
    assert json.loads(ran.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    edited(_replace(program + " ", "python3 "))(project, tmp_path)
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 3 and "stale hook: runs `python3` found through PATH" in checked.out


def test_check_finds_the_venv_interpreter_relinked(home, tmp_path, monkeypatch, cli):
    """``ln -sf /bin/true <venv python>``: the wiring is unchanged, the file it runs is not."""
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("LEASH_CLAUDE", str(tmp_path / "no-claude"))
    venv_python = tmp_path / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setattr(sys, "executable", str(venv_python))  # the leash that installs runs from this venv
    project = tmp_path / "project"
    assert cli("install", "--project", str(project)).code == 0
    assert cli("install", "--project", str(project), "--check").code == 0
    venv_python.unlink()
    venv_python.symlink_to(shutil.which("true") or "/bin/true")
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 3 and f"fail  {venv_python}: now resolves to {os.path.realpath(venv_python)}" in checked.out


def test_check_finds_the_hook_entry_edited(home, tmp_path, monkeypatch, cli):
    """leash's code, copied where the test may change it, as the installed package."""
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("LEASH_CLAUDE", str(tmp_path / "no-claude"))
    package = tmp_path / "site-packages" / "leash" / "core"
    shutil.copytree(wiringrecord.code_root(), package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(wiringrecord, "code_root", lambda: str(package))
    monkeypatch.setattr(install, "hook_runner", lambda: [sys.executable, "-P", str(package / "hook" / "hookentry.py")])
    project = tmp_path / "project"
    assert cli("install", "--project", str(project)).code == 0
    assert cli("install", "--project", str(project), "--check").code == 0
    entry = package / "hook" / "hookentry.py"
    entry.write_text(entry.read_text() + "\nsys.exit(0)\n")
    entry.chmod(stat.S_IMODE(entry.stat().st_mode))
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 3 and "changed since leash install: core/hook/hookentry.py" in checked.out


def test_a_file_install_wired_that_lost_its_hooks_is_reported(home, project, cli):
    data = settings_of(project)
    data["hooks"]["PostToolUse"] = []
    (project / ".claude" / "settings.json").write_text(json.dumps(data))
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 3 and "PostToolUse: 0 leash hooks, where leash install writes one" in checked.out


def test_an_env_name_the_hook_reads_is_told_apart_from_the_users():
    told = wiring.env_problems({"env": {"PATH": "/x", "LD_PRELOAD": "/x.so", "PYTHONPATH": "/x",
                                        "BASH_ENV": "/x", "LEASH_SOCKET": "/x", "ANTHROPIC_MODEL": "m"}})
    named = [line.split()[2].rstrip(",") for line in told]
    assert named == ["BASH_ENV", "LD_PRELOAD", "LEASH_SOCKET", "PATH", "PYTHONPATH"]


def test_each_settings_file_keeps_the_runner_it_was_installed_with(home, tmp_path, monkeypatch, cli):
    """The user's settings wired from one venv, a project's from another: both are leash's."""
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("LEASH_CLAUDE", str(tmp_path / "no-claude"))
    other = tmp_path / "other-venv" / "bin" / "python"
    other.parent.mkdir(parents=True)
    other.symlink_to(os.path.realpath(sys.executable))
    project = tmp_path / "project"
    assert cli("install", "--user").code == 0
    monkeypatch.setattr(sys, "executable", str(other))
    assert cli("install", "--project", str(project)).code == 0
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 0, checked
    user_settings = tmp_path / "user-home" / ".claude" / "settings.json"
    assert str(other) not in user_settings.read_text() and str(other) in settings_of(project)["hooks"]["Stop"][0][
        "hooks"][0]["command"]


def test_hooks_installed_before_the_layer_folders_are_named_stale_and_rewritten(project, cli):
    """Hooks written when the entry was ``core/hookentry.py`` (before ``core/``
    became folders by layer): ``--check`` names each, ``leash install`` rewrites them."""
    settings = project / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace("/core/hook/hookentry.py", "/core/hookentry.py"))
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 3
    assert "PreToolUse: the command has" in checked.out
    assert "/core/hookentry.py` where leash install writes" in checked.out
    assert cli("install", "--project", str(project)).code == 0
    assert "/core/hookentry.py" not in settings.read_text()
    assert cli("install", "--project", str(project), "--check").code == 0


def test_a_file_installed_under_timeout_stays_leashs_own_until_installed_again(home, project, tmp_path, cli):
    """Files installed before the hook kept its own deadline ran ``timeout -k 2
    N`` in front of the interpreter, and their record names that program:
    ``--check`` and ConfigChange still expect that command there, not a
    tampering; ``leash install`` rewrites them with ``--deadline``."""
    settings = project / ".claude" / "settings.json"
    record = json.loads(open(wiringrecord.record_path(str(home))).read())
    entry = record["files"][str(settings)]
    assert entry["timeout"] == ""  # what a new install records: no timeout program
    old = install.timeout_program()
    entry["timeout"] = old
    with open(wiringrecord.record_path(str(home)), "w") as handle:
        json.dump(record, handle)
    data = settings_of(project)
    for spec in install.HOOKS:
        for group in data["hooks"][spec.event]:
            for hook_ in group["hooks"]:
                if install.is_leash_hook(hook_):
                    hook_["command"] = install.hook_command(install.hook_runner(), spec, timeout=old,
                                                            home=entry["home"] or None)
    settings.write_text(json.dumps(data))
    command = pre_tool_use(settings_of(project))["hooks"][0]["command"]
    assert f"{old} -k 2 315 " in command and "--deadline" not in command
    assert wiring.changed_file_problem(str(settings), home=str(home)) == ""
    assert cli("install", "--project", str(project), "--check").code == 0
    assert cli("install", "--project", str(project)).code == 0
    command = pre_tool_use(settings_of(project))["hooks"][0]["command"]
    assert " --deadline 315 " in command and old not in command
    assert cli("install", "--project", str(project), "--check").code == 0
