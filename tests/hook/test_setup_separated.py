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
    # leashd's socket is owned by the leash user: the hook trusts it by that uid, and names the home
    assert f"LEASH_DAEMON_UID={entry.pw_uid} " in command and f"--home {home}" in command

    assert cli(*setup_argv(root, leash_user)).code == 0  # again: nothing breaks, nothing doubles
    assert len(json.loads((root / "managed" / "managed-settings.json").read_text())["hooks"]["PreToolUse"]) == 1

    undone = cli("setup", "separated", "--undo")
    assert undone.code == 0, undone.err
    assert "kept" in undone.out and home.exists()
    with pytest.raises(KeyError):
        pwd.getpwnam(leash_user)
    assert not (root / "systemd" / "leashd.service").exists()
    # what setup made and nobody else wrote into is gone: the settings it made, the run folder, the record's folder
    assert not (root / "managed").exists() and not (root / "run" / "leash").exists()
    assert not (root / "etc").exists()
    assert cli("setup", "separated", "--undo").code == 1  # nothing left to undo: one line


def test_undo_keeps_managed_settings_that_were_there_before(system, cli):
    root, leash_user, made = system
    managed = root / "managed" / "managed-settings.json"
    managed.parent.mkdir(parents=True)
    managed.write_text(json.dumps({"permissions": {"deny": ["WebFetch"]}}))
    assert cli(*setup_argv(root, leash_user)).code == 0
    assert cli("setup", "separated", "--undo").code == 0
    assert json.loads(managed.read_text()) == {"permissions": {"deny": ["WebFetch"]}}


@pytest.fixture
def installed_for_all(reachable):
    """leash installed where every user can run it, as a system install is: a
    venv of the system interpreter in a 0755 folder whose site-packages finds a
    copy of leash's source (the checkout may sit in root's 0700 home)."""
    python = "/usr/bin/python3"
    ready = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 11))"], capture_output=True,
                           text=True) if os.access(python, os.X_OK) else None
    if ready is None or ready.stdout.strip() != "True":
        pytest.skip(f"{python} (3.11 or later) is missing")
    from ..support.checkout import ROOT

    lib = reachable / "lib" / "leash"
    for package in ("core", "console"):
        shutil.copytree(ROOT / package, lib / package, ignore=shutil.ignore_patterns("__pycache__"))
    venv = reachable / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    (site,) = list((venv / "lib").glob("python3*/site-packages"))
    (site / "leash.pth").write_text(str(reachable / "lib") + "\n")
    for folder, _, files in os.walk(reachable):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
    return venv / "bin" / "python"


def test_setup_ends_with_a_self_test_of_each_agent_users_hook(system, installed_for_all):
    """The managed hook run as the agent user against leashd (started for the
    test as the leash user: systemd does not run here): a free call allowed, a
    stopped session's denied. Before the hook pinned leashd's uid, every
    agent's hook refused leashd's own socket and denied everything."""
    root, leash_user, made = system
    agent = make_user("agent")
    made.append(agent)
    python = str(installed_for_all)
    shared = installed_for_all.parent.parent.parent  # leashd and the agents reach the home and the sockets
    argv = ["setup", "separated", "--user", leash_user, "--state-home", str(shared / "state"),
            "--run-dir", str(shared / "run"), "--agent-user", agent]
    done = subprocess.run([python, "-m", "leash.console.cli", *argv],
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert f"agent user {agent}: self-test passed" in done.stdout
    from leash.core.state.acklog import AckLog

    tested = [line["event"] for line in AckLog(shared / "state").read().entries
              if line.get("reason") == "leash setup separated self-test"]
    assert tested == ["stop_ack", "resume"], tested  # the stop and the resume, on the record
    undone = subprocess.run([python, "-m", "leash.console.cli", "setup", "separated", "--undo"], capture_output=True,
                            text=True, timeout=120, cwd="/")
    assert undone.returncode == 0, undone.stderr


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
