"""``leash hook`` as a thin client of a live daemon, as Claude Code runs it: a
real process with the payload on stdin.

Allow, deny, the fleet stop; the daemon unreachable (with ``LEASH_SOCKET``:
deny; without it: the in-process gate), including a daemon killed in the
middle of a call; and what the thin client imports."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from leash.core.base.statefile import locked
from leash.core.views.protocol import StopProtocol

from ..support.checkout import ROOT
from ..support.daemon import daemon_process, sockets, start_daemon, stop
from ..support.thin_hook import BASH, HOOK, decision, hook


def test_allow_deny_and_fleet_stop_through_the_daemon(daemon, home):
    protocol = StopProtocol(home)
    allowed = hook("pre-tool-use", BASH)
    assert (allowed.returncode, allowed.stdout, decision(allowed)) == (0, b"", None)
    protocol.acknowledge_stop("ops", "s1", "hold on")
    denied = hook("pre-tool-use", BASH)
    assert denied.returncode == 0 and decision(denied) == "deny" and b"hold on" in denied.stdout
    protocol.resume("s1", source="ops")
    protocol.stop_fleet("maintenance", "ops")
    other = hook("pre-tool-use", dict(BASH, session_id="s2"))
    assert decision(other) == "deny" and b"maintenance" in other.stdout
    # the daemon answered them (one log line per hook), not an in-process fallback
    assert sum(" hook " in line for line in daemon.log_stream.lines) == 3


def test_the_agents_environment_reaches_the_daemon(daemon, home):
    StopProtocol(home).hands_off("billing", hours=1, reason="audit", source="ops")
    done = hook("pre-tool-use", BASH, env={"LEASH_ENTITY": "billing"})
    assert decision(done) == "deny" and b"billing" in done.stdout


def test_lifecycle_events_go_through_the_daemon(daemon, home):
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    prompt = hook("user-prompt-submit", {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "go"})
    assert prompt.returncode == 0 and json.loads(prompt.stdout)["decision"] == "block"
    assert sum(" hook " in line for line in daemon.log_stream.lines) == 1


def imported(argv: list[str], stdin: bytes = b"") -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=60)
    return {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line} - {"package"}


# The layer packages hold a docstring and nothing else.
THIN_LEASH_MODULES = {"leash", "leash.core", "leash.core.base", "leash.core.wire", "leash.core.hook",
                      "leash.core.hook.main", "leash.core.wire.thinhook", "leash.core.wire.daemontrust",
                      "leash.core.wire.hookio", "leash.core.base.wellknown", "leash.core.base.bareos"}


def test_the_installed_hook_imports_only_what_it_must(daemon, home):
    """What ``leash install`` wires: the interpreter on the hook entry. Besides
    a bare interpreter's modules: the C cores of json and socket, time, and
    the small modules of leash's thin client (``select`` only for a payload
    still being written; the installed wheel's, without ``site`` and ``os``:
    tests/project/test_packaging.py)."""
    from leash.core.hook.install import hook_runner

    bare = imported(["-c", "pass"])
    hook_imports = imported(hook_runner()[1:] + ["hook", "pre-tool-use"], json.dumps(BASH).encode())
    assert hook_imports - bare - THIN_LEASH_MODULES <= {"_json", "_socket", "time"}, \
        sorted(hook_imports - bare)
    assert "leash.core.hook.gate" not in hook_imports  # (re: only where the interpreter itself imports it)


def test_leash_hook_through_the_console_script_stays_thin(daemon, home):
    """``leash hook`` (the console script's module) adds only the CLI module."""
    baseline = imported(["-c", "import os, sys, json, socket"])
    hook_imports = imported(["-c", HOOK, "hook", "pre-tool-use"], json.dumps(BASH).encode())
    extra = hook_imports - baseline - THIN_LEASH_MODULES - {"leash.console", "leash.console.cli"}
    assert extra <= {"_json", "time"}, sorted(extra)


def test_the_command_leash_install_writes_runs_the_thin_client(daemon, home, tmp_path):
    from leash.core.hook.install import HOOKS, hook_command, hook_runner

    (spec,) = [spec for spec in HOOKS if spec.verb == "pre-tool-use"]
    command = hook_command(hook_runner(), spec)
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    done = subprocess.run(["sh", "-c", command], input=json.dumps(BASH).encode(), capture_output=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0 and decision(done) == "deny" and b"hold on" in done.stdout
    assert sum(" hook " in line for line in daemon.log_stream.lines) == 1  # judged by the daemon


def test_unreachable_with_leash_socket_denies_naming_the_daemon(home, tmp_path):
    StopProtocol(home)  # a home that would allow the call in-process
    env = {"LEASH_SOCKET": str(tmp_path / "nobody-listens.sock")}
    done = hook("pre-tool-use", BASH, env=env)
    assert done.returncode == 0 and decision(done) == "deny"
    assert b"leash daemon" in done.stdout and b"not reachable" in done.stdout
    prompt = hook("user-prompt-submit", {"session_id": "s1", "prompt": "hi"}, env=env)
    assert json.loads(prompt.stdout)["decision"] == "block"
    ended = hook("session-end", {"session_id": "s1", "reason": "exit"}, env=env)
    assert ended.returncode == 0 and ended.stdout == b"" and b"leash daemon" in ended.stderr  # fails open


def test_a_stale_default_socket_falls_back_to_the_in_process_gate(home):
    import socket

    running = start_daemon(home)
    agent = sockets(home)[0]
    running.close()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(agent)  # what a SIGKILLed daemon leaves: a socket file nobody listens on
    stale.close()
    assert os.path.exists(agent)
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    assert decision(hook("pre-tool-use", BASH)) == "deny"
    assert decision(hook("pre-tool-use", dict(BASH, session_id="s2"))) is None


def _connected_to(path: str) -> bool:
    """A client connection to the socket at ``path`` is open (/proc/net/unix)."""
    with open("/proc/net/unix") as table:
        return any(line.split()[-1] == path and line.split()[5] == "03" for line in table.readlines()[1:]
                   if len(line.split()) >= 8)


@pytest.mark.parametrize("with_leash_socket", [True, False])
def test_a_daemon_killed_mid_call(home, with_leash_socket):
    """The daemon dies while it judges a call (it waits on a lock the test
    holds): with LEASH_SOCKET the hook denies; without, the in-process gate
    judges the same call (and denies the stopped session)."""
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    daemon = daemon_process(home, "--no-kennel", stderr=subprocess.DEVNULL)
    agent = sockets(home)[0]
    env = {"LEASH_SOCKET": agent} if with_leash_socket else {}
    try:
        with locked(os.path.join(home, "sessions.json")):  # the daemon's registration waits here
            call = hook("pre-tool-use", BASH, env=env, background=True)
            deadline = time.monotonic() + 20
            while not _connected_to(agent) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _connected_to(agent), "the hook never reached the daemon"
            time.sleep(0.1)  # the request is in; the daemon is inside the call
            daemon.send_signal(signal.SIGKILL)
            daemon.wait(timeout=20)
        out, err = call.communicate(timeout=60)
    finally:
        stop(daemon)
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    if with_leash_socket:
        assert "leash daemon" in reason and "not reachable" in reason
    else:
        assert "hold on" in reason  # the in-process gate's verdict


THIN_FILES = ("core/__init__.py", "core/base/__init__.py", "core/wire/__init__.py", "core/base/wellknown.py",
              "core/wire/hookio.py", "core/wire/daemontrust.py", "core/wire/thinhook.py", "core/hook/hookentry.py")


def test_the_thin_client_imports_no_future_module():
    """Under ``-S`` nothing else imports ``__future__``: one thin module
    with ``from __future__ import annotations`` costs every tool call the
    import of that module (0.16 ms of a 15 ms call)."""
    assert [name for name in THIN_FILES if "from __future__" in (ROOT / name).read_text()] == []
