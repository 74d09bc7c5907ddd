"""The separated profile for real: the daemon (this process, root) alone owns
the home; an agent user and an operator user are created for the test and
removed after it; their commands run as those users (their own uid, gid and
no supplementary groups) with the system interpreter and leash's source.

Shown: the agent user cannot read or write the home; through the agent socket
it gets verdicts only; every tamper command of the hardening list, run as the
agent, leaves every stop, lock and halt in force; the operator user drives the
CLI through the operator socket, as itself; managed settings the agent cannot
change wire the hook to the daemon.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from leash.core.hook.gate import Gate
from leash.core.state.acklog import AckLog
from leash.core.views.protocol import StopProtocol

from ..support.checkout import ROOT
from ..support.daemon import start_daemon

OTHERS_PYTHON = "/usr/bin/python3"


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the separated profile needs root (to create an agent and an operator user)"
    if not shutil.which("useradd") or not shutil.which("userdel"):
        return "useradd/userdel are missing"
    if not os.access(OTHERS_PYTHON, os.X_OK):
        return f"{OTHERS_PYTHON} is missing"
    version = subprocess.run([OTHERS_PYTHON, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                             capture_output=True, text=True).stdout.strip()
    return None if version == "True" else f"{OTHERS_PYTHON} is older than 3.11"


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")

BASH = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "git status"}, "cwd": "/"}


class User:
    def __init__(self, role: str):
        self.name = f"lsh-{role}-{secrets.token_hex(3)}"
        subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", self.name],
                       check=True, capture_output=True)
        entry = pwd.getpwnam(self.name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid

    def remove(self) -> None:
        subprocess.run(["userdel", self.name], capture_output=True)
        subprocess.run(["groupdel", self.name], capture_output=True)  # gone with the user on most systems


@pytest.fixture(scope="module")
def users():
    agent, operator = User("agent"), User("op")
    yield agent, operator
    agent.remove()
    operator.remove()


class Deployment:
    """/tmp/leash-sep-*/: home/ (0700, the daemon's), run/ (0755, the sockets),
    lib/leash: a copy of the source, one writable HOME per user."""

    def __init__(self, agent: User, operator: User):
        self.root = Path(tempfile.mkdtemp(prefix="leash-sep-"))
        os.chmod(self.root, 0o755)
        self.home = self.root / "home"
        self.run = self.root / "run"
        self.run.mkdir(mode=0o755)
        lib = self.root / "lib" / "leash"
        lib.mkdir(parents=True)
        os.chmod(self.root / "lib", 0o755)
        os.chmod(lib, 0o755)
        # A copy, not a link: the checkout may sit in a directory other users
        # cannot enter (root's home is 0700), and the agent must run the hook entry.
        for package in ("core", "console"):
            shutil.copytree(ROOT / package, lib / package, ignore=shutil.ignore_patterns("__pycache__"))
        for folder, _, files in os.walk(lib):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        self.lib = str(self.root / "lib")
        self.hook_entry = str(lib / "core" / "hook" / "hookentry.py")
        self.agent, self.operator = agent, operator
        for user in (agent, operator):
            own = self.root / f"home-{user.name}"
            own.mkdir(mode=0o700)
            os.chown(own, user.uid, user.gid)
        self.agent_socket, self.operator_socket = str(self.run / "agent.sock"), str(self.run / "operator.sock")
        StopProtocol(self.home)
        (self.home / "config.toml").write_text(
            f'[daemon]\nagent_socket_mode = "0666"\noperators = ["{operator.name}"]\n')
        self.daemon = start_daemon(self.home, agent_socket=self.agent_socket, operator_socket=self.operator_socket)

    def close(self) -> None:
        self.daemon.close()
        shutil.rmtree(self.root)

    def as_user(self, user: User, argv: list[str], *, stdin: bytes = b"", env: dict | None = None):
        environment = {"PATH": "/usr/bin:/bin", "HOME": str(self.root / f"home-{user.name}"), "USER": user.name,
                       "PYTHONPATH": self.lib, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        return subprocess.run(argv, input=stdin, capture_output=True, env=environment, cwd=str(self.root), text=False,
                              user=user.uid, group=user.gid, extra_groups=[], timeout=60)

    def leash(self, user: User, *args: str, env: dict | None = None):
        return self.as_user(user, [OTHERS_PYTHON, "-P", "-m", "leash.console.cli", *args], env=env)

    def hook(self, session: str, *, env: dict | None = None, command: str = "git status", user: User | None = None):
        payload = dict(BASH, session_id=session, tool_input={"command": command})
        done = self.as_user(user or self.agent, [OTHERS_PYTHON, "-P", self.hook_entry, "hook",
                                         "pre-tool-use"], stdin=json.dumps(payload).encode(),
                            env={"LEASH_SOCKET": self.agent_socket, **(env or {})})
        return json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] if done.stdout.strip() else \
            ("allow" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr!r}")


@pytest.fixture
def deployment(users, home):
    made = Deployment(*users)
    yield made
    made.close()


def test_the_agent_cannot_read_or_write_the_home(deployment):
    probe = ("import os, sys; home = sys.argv[1]; stops = home + '/stops.json'\n"
             "for attempt in (lambda: os.listdir(home), lambda: open(stops).read(),\n"
             "                lambda: open(stops, 'w').write('{}'), lambda: os.unlink(stops)):\n"
             "    try:\n        attempt(); print('allowed')\n    except PermissionError:\n        print('denied')\n")
    done = deployment.as_user(deployment.agent, [OTHERS_PYTHON, "-c", probe, str(deployment.home)])
    assert done.stdout.split() == [b"denied"] * 4, done.stderr


def test_through_the_agent_socket_the_agent_gets_verdicts_only(deployment):
    StopProtocol(deployment.home).acknowledge_stop("ops", "held", "hold")
    assert deployment.hook("held") == "deny"
    assert deployment.hook("free") == "allow"
    ask = ("import json, socket, sys; c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); "
           "c.sendall(json.dumps({'verb': sys.argv[2], 'argv': ['resume', '--all']}).encode() + b'\\n'); "
           "print(c.makefile().readline(), end='')")
    on_agent = deployment.as_user(deployment.agent, [OTHERS_PYTHON, "-c", ask, deployment.agent_socket, "cli"])
    on_operator = deployment.as_user(deployment.agent, [OTHERS_PYTHON, "-c", ask, deployment.operator_socket, "cli"])
    assert json.loads(on_agent.stdout)["error"].startswith("refused: the agent socket answers only hook")
    assert json.loads(on_operator.stdout)["error"].startswith(f"refused: user {deployment.agent.name}")
    refused = AckLog(deployment.home).read(event="daemon_refused").entries
    assert {(line["socket"], line["source"].split("@")[0]) for line in refused} == \
        {("agent", deployment.agent.name), ("operator", deployment.agent.name)}


def test_tamper_commands_run_as_the_agent_lift_nothing(deployment):
    protocol = StopProtocol(deployment.home)
    protocol.acknowledge_stop("ops", "held", "hold")
    protocol.hands_off("billing", hours=1, reason="audit", source="ops")
    from leash.core.state.halts import api

    api.record_halt({"session_token": "halted", "halt_type": "security", "severity": "critical",
                     "description": "credentials in a commit"}, home=deployment.home)
    home, leash = str(deployment.home), f"{OTHERS_PYTHON} -P -m leash.console.cli"
    tamper = [
        f"{leash} resume held", f"{leash} resume --all", f"{leash} release billing",
        f"{leash} --home {home} resume held", f"LEASH_HOME={home} {leash} resume held",
        f"LEASH_OPERATOR_SOCKET={deployment.operator_socket} {leash} resume held",
        f"LEASH_OPERATOR_SOCKET={deployment.operator_socket} {leash} halts ack --all",
        f"rm -f {home}/stops.json", f"echo '{{}}' > {home}/stops.json", f"rm -f {home}/hands_off_registry.json",
        f"{OTHERS_PYTHON} -c \"import sqlite3; sqlite3.connect('{home}/halts.db').execute('delete from halts')\"",
        f"rm -f {deployment.agent_socket} {deployment.operator_socket}", f"kill -TERM {os.getpid()}",
        f"mv {deployment.run} {deployment.root}/moved", f"chmod 777 {home}",
    ]
    for command in tamper:
        deployment.as_user(deployment.agent, ["sh", "-c", command])
    # every stop, lock and halt still holds, for the daemon and for the gate itself
    assert deployment.hook("held") == "deny"
    assert deployment.hook("halted", command="rm -rf build") == "deny"
    assert deployment.hook("worker", env={"LEASH_ENTITY": "billing"}) == "deny"
    assert deployment.hook("held", env={"LEASH_HOME": str(deployment.root / f"home-{deployment.agent.name}")}) \
        == "deny"  # the agent's LEASH_HOME does not choose the daemon's home
    gate = Gate(deployment.home)
    assert not gate.check("held", "Bash", {"command": "ls"}).allow
    assert not gate.check("halted", "Bash", {"command": "rm -rf build"}).allow
    assert os.stat(home).st_mode & 0o777 == 0o700
    assert not AckLog(deployment.home).read(event="resume").entries


def test_the_operator_drives_the_cli_through_the_operator_socket(deployment):
    env = {"LEASH_OPERATOR_SOCKET": deployment.operator_socket}
    op = deployment.operator
    stopped = deployment.leash(op, "stop", "--force", "agent-9", "--reason", "review", "--source", "someone-else",
                               env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped agent-9" in stopped.stdout.decode()
    assert deployment.hook("agent-9") == "deny"
    status = deployment.leash(op, "status", env=env)
    assert status.returncode == 0 and "agent-9" in status.stdout.decode()
    assert deployment.leash(op, "hands-off", "billing", "--hours", "1", env=env).returncode == 0
    assert deployment.leash(op, "resume", "agent-9", env=env).returncode == 0
    assert deployment.hook("agent-9") == "allow"
    assert deployment.leash(op, "log", "verify", env=env).returncode == 0
    sources = {line["source"] for line in AckLog(deployment.home).read().entries
               if line["event"] in ("stop_ack", "resume", "hands_off")}
    assert sources == {f"{op.name}@{deployment.daemon.host}"}
    # without the daemon the operator has no way in either: the home is not theirs
    direct = deployment.leash(op, "--home", str(deployment.home), "stop", "agent-9")
    assert direct.returncode != 0


def test_managed_settings_wire_the_hook_to_the_daemon_and_the_agent_cannot_change_them(deployment):
    """``leash install --managed --socket``: root's settings file, each hook
    pinned to the daemon's agent socket in its command. The agent can neither
    change the file nor point the hook elsewhere through its environment."""
    from leash.core.hook.install import HOOKS, hook_runner, install

    managed = deployment.root / "managed" / "managed-settings.json"
    managed.parent.mkdir(mode=0o755)
    done = subprocess.run([sys.executable, "-m", "leash.console.cli", "install", "--managed", "--socket",
                           deployment.agent_socket], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, LEASH_CLAUDE_MANAGED_SETTINGS=str(managed)))
    assert done.returncode == 0, done.stderr
    settings = json.loads(managed.read_text())
    (command,) = [hook["command"] for group in settings["hooks"]["PreToolUse"] for hook in group["hooks"]]
    assert command.startswith(f"LEASH_SOCKET={deployment.agent_socket} LEASH_APPROVAL_WAIT=300 "
                              f"{shlex.join(hook_runner())} --deadline 315 ") and "|| exit 2" in command
    # (the daemon is root here: no uid to pin)
    # the same wiring with an interpreter the agent may run (this test's own is in root's home)
    runnable = deployment.root / "managed" / "runnable.json"
    install(str(runnable), [OTHERS_PYTHON, "-P", deployment.hook_entry], socket=deployment.agent_socket)
    (pre_tool_use,) = [spec for spec in HOOKS if spec.event == "PreToolUse"]
    (wired,) = [hook["command"] for group in json.loads(runnable.read_text())["hooks"]["PreToolUse"]
                for hook in group["hooks"]]
    StopProtocol(deployment.home).acknowledge_stop("ops", "held", "hold")
    payload = json.dumps(dict(BASH, session_id="held")).encode()
    for agent_env in ({}, {"LEASH_SOCKET": "/nonexistent.sock"}, {"LEASH_HOME": "/tmp"}):
        ran = deployment.as_user(deployment.agent, ["sh", "-c", wired], stdin=payload, env=agent_env)
        assert json.loads(ran.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", (agent_env, ran)
    switch_off = (f"{OTHERS_PYTHON} -c \"import json; p = '{managed}'; "
                  "json.dump({'disableAllHooks': True}, open(p, 'w'))\"")
    deployment.as_user(deployment.agent, ["sh", "-c", f"{switch_off}; rm -f {managed}"])
    assert json.loads(managed.read_text()) == settings  # root's file: the agent can neither write nor remove it


def test_the_operators_console_reads_and_acts_through_the_daemon(deployment):
    """The console's backend for an operator who cannot read the home: the
    fleet view and a stop, through the operator socket, as the operator. The
    agent gets nothing from the same code."""
    script = ("import json, sys\n"
              "from leash.core.views.fleet import view\n"
              "from leash.core.store.remote import RemoteBackend\n"
              "backend = RemoteBackend(sys.argv[1])\n"
              "backend.stops.stop('agent-7', source='someone-else', reason='from the console')\n"
              "data = view(backend=backend, tmux_sessions=[])\n"
              "print(json.dumps({'stopped': data['summary']['stopped'], "
              "'sessions': [row['name'] for row in data['sessions']]}))\n")
    ran = deployment.as_user(deployment.operator, [OTHERS_PYTHON, "-P", "-c", script, deployment.operator_socket])
    assert ran.returncode == 0, ran.stderr
    shown = json.loads(ran.stdout)
    assert shown["stopped"] >= 1 and "agent-7" in shown["sessions"]
    (line,) = AckLog(deployment.home).read(event="stop_ack").entries
    assert line["source"] == f"{deployment.operator.name}@{deployment.daemon.host}"
    refused = deployment.as_user(deployment.agent, [OTHERS_PYTHON, "-P", "-c", script, deployment.operator_socket])
    assert refused.returncode != 0 and b"refused" in refused.stderr
    assert deployment.hook("agent-7") == "deny"


def test_another_users_agent_cannot_speak_for_a_session(deployment):
    """A session belongs to the uid whose hook first named it: another user's
    hook naming it (to judge it, or to forge its evidence) is refused."""
    assert deployment.hook("mine") == "allow"  # the agent user's session from now on
    assert deployment.hook("mine", user=deployment.operator) == "deny"
    (line,) = [entry for entry in AckLog(deployment.home).read(event="daemon_refused").entries
               if "belongs to another user" in entry["reason"]]
    assert line["source"].startswith(f"{deployment.operator.name}@")
    assert deployment.hook("mine") == "allow"  # its owner is unaffected
