"""``leash setup separated`` for real: as root, with real users made for the
test (and removed after it), the system paths moved into the test's own
directory (managed settings, the unit, the record). Shown: the leash user,
its 0700 home and config, the run directory, the unit, the managed hooks pinned
to the agent socket with ``allowManagedHooksOnly``; an agent user who cannot
reach the hook entry named with the directory in its way; ``--undo`` removing
what setup made and keeping the home; a second setup changing nothing."""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from leash.core.hook import separated


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "leash setup separated needs root (it makes users)"
    if not shutil.which("useradd") or not shutil.which("userdel"):
        return "useradd/userdel are missing"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def make_user(role: str) -> str:
    name = f"lsh-{role}-{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name], check=True,
                   capture_output=True)
    return name


def remove_user(name: str) -> None:
    subprocess.run(["userdel", name], capture_output=True)
    subprocess.run(["groupdel", name], capture_output=True)


@pytest.fixture
def system(tmp_path, monkeypatch):
    """System paths inside the test's directory; users made here are removed after."""
    root = tmp_path / "system"
    root.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(root, 0o755)
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(root / "managed" / "managed-settings.json"))
    monkeypatch.setenv(separated.SYSTEMD_DIR_ENV, str(root / "systemd"))
    monkeypatch.setenv(separated.RECORD_ENV, str(root / "etc" / "separated.json"))
    monkeypatch.setenv("LEASH_CLAUDE", str(root / "no-claude"))  # no Claude Code here: the shell form alone
    leash_user = f"lsh-leashd-{secrets.token_hex(3)}"
    made = [leash_user]
    yield root, leash_user, made
    for name in made:
        remove_user(name)


def setup_argv(root: Path, leash_user: str, *agents: str) -> list[str]:
    argv = ["setup", "separated", "--user", leash_user, "--state-home", str(root / "var" / "leash"),
            "--run-dir", str(root / "run" / "leash"), "--operator", "ops"]
    for agent in agents:
        argv += ["--agent-user", agent]
    return argv


def test_setup_makes_the_profile_and_undo_removes_it(system, cli):
    root, leash_user, made = system
    result = cli(*setup_argv(root, leash_user))
    assert result.code == 0, result.err
    entry = pwd.getpwnam(leash_user)
    home = root / "var" / "leash"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700 and home.stat().st_uid == entry.pw_uid
    config = (home / "config.toml").read_text()
    assert f'agent_socket = "{root}/run/leash/agent.sock"' in config and 'operators = ["ops"]' in config
    assert (root / "run" / "leash").stat().st_uid == entry.pw_uid
    unit = (root / "systemd" / "leashd.service").read_text()
    assert f"User={leash_user}" in unit and f"Environment=LEASH_HOME={home}" in unit and " daemon" in unit
    managed = json.loads((root / "managed" / "managed-settings.json").read_text())
    assert managed["allowManagedHooksOnly"] is True
    (command,) = [h["command"] for g in managed["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert f"LEASH_SOCKET={root}/run/leash/agent.sock" in command

    assert cli(*setup_argv(root, leash_user)).code == 0  # again: nothing breaks, nothing doubles
    assert len(json.loads((root / "managed" / "managed-settings.json").read_text())["hooks"]["PreToolUse"]) == 1

    undone = cli("setup", "separated", "--undo")
    assert undone.code == 0, undone.err
    assert "kept" in undone.out and home.exists()
    with pytest.raises(KeyError):
        pwd.getpwnam(leash_user)
    assert not (root / "systemd" / "leashd.service").exists()
    managed = json.loads((root / "managed" / "managed-settings.json").read_text())
    assert "allowManagedHooksOnly" not in managed and "hooks" not in managed
    assert cli("setup", "separated", "--undo").code == 1  # nothing left to undo: one line


@pytest.fixture
def reachable():
    """A directory other users can reach (pytest's own tmp is root's, 0700); removed after."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="leash-setup-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def test_an_agent_user_who_cannot_reach_the_hook_is_named_with_the_directory(system, reachable):
    """The check runs as the agent user: the hook entry behind a 0700
    directory is refused with that directory named; a readable copy passes."""
    root, leash_user, made = system
    agent = make_user("agent")
    made.append(agent)
    tmp_path = reachable
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    entry = closed / "hookentry.py"
    entry.write_text("")
    problem = separated.agent_problem(agent, ["/usr/bin/python3", str(entry)])
    assert problem is not None and f"cannot enter {closed}" in problem
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    readable = open_dir / "hookentry.py"
    readable.write_text("")
    readable.chmod(0o644)
    assert separated.agent_problem(agent, ["/usr/bin/python3", str(readable)]) is None


def test_setup_reports_an_agent_user_who_cannot_run_leash(system, cli):
    """Through the command: exit 1 and one line per such user; the rest of the setup is done."""
    root, leash_user, made = system
    agent = make_user("agent")
    made.append(agent)
    result = cli(*setup_argv(root, leash_user, agent))
    if separated.agent_problem(agent, separated.hook_paths()) is None:
        assert result.code == 0 and f"agent user {agent}: can run leash's hook" in result.out
    else:  # this checkout sits where other users cannot go (root's 0700 home): said, naming where
        assert result.code == 1 and f"agent user {agent} cannot run" in result.err
        assert result.err.count("\n") == 1
    assert (root / "systemd" / "leashd.service").exists()
    assert cli("setup", "separated", "--undo").code == 0


def test_only_root_may_set_up(monkeypatch, cli):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = cli("setup", "separated")
    assert result.code == 1 and "needs root" in result.err
