"""``leash install --transport http`` with the real Claude Code, on either version.

``test_http_transport.py`` covers a Claude Code that has ``onFailure`` (the
wiring is HTTP; a stop, and every failure of leashd's listener, refuses). This
module covers what it skips and what ``HTTP_HOOK_FACTS.md`` found:

- a Claude Code without ``onFailure`` (the pinned 2.1.197 has HTTP hooks but
  would let a call through when the listener fails) is wired with command
  hooks instead: a stop refuses the call, and still does with leashd killed
  (the command hook then judges in its own process);
- Claude Code never sends SessionStart over HTTP, so a session wired over
  HTTP becomes known to leashd by its first prompt;
- an ``HTTP_PROXY`` in the agent's environment that does not exempt
  127.0.0.1 carries the hooks to the proxy: every prompt is dropped (the
  UserPromptSubmit hook fails, and blocks), and ``NO_PROXY=127.0.0.1`` lets
  the wiring work.

Skipped with one line when Claude Code cannot be installed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid

import pytest

from leash.core.base.claudeversion import supports_on_failure

from ..support.daemon import daemon_process, stop
from ..support.e2e.harness import (
    LEASH,
    ClaudeUnavailable,
    claude_env,
    ensure_claude,
    installed,
    run_claude,
    settings_file,
)
from ..support.e2e.http_probe import unused_port
from ..support.e2e.standin import StandInServer, bash, text

try:
    _argv, VERSION = ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)
HAS_ON_FAILURE = supports_on_failure(tuple(int(part) for part in VERSION.split(".")))
needs_on_failure = pytest.mark.skipif(not HAS_ON_FAILURE, reason=f"Claude Code {VERSION} keeps command hooks")
APPROVAL_WAIT = 3  # [approvals] timeout_s: the hooks' timeouts follow it
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there


def touch_then_done() -> list[list[dict]]:
    return [[text("Creating the marker."), bash("touch marker")], [text("done")]]


def run_behind_proxy(agent, no_proxy: str) -> int:
    """One ``touch marker`` turn with ``HTTP_PROXY`` at a dead proxy (the stand-in
    is named localhost and exempted, so only the hooks meet the proxy); returns
    how many times the model was asked."""
    with StandInServer(touch_then_done()) as standin:
        env = claude_env(agent.base, standin.url.replace("127.0.0.1", "localhost"), LEASH_HOME=str(agent.home),
                         HTTP_PROXY=DEAD_PROXY, http_proxy=DEAD_PROXY, NO_PROXY=no_proxy, no_proxy=no_proxy)
        run = run_claude(agent.claude, agent.project, "create the marker", env,
                         args=("--permission-mode", "bypassPermissions"))
        assert run.code == 0 and not run.timed_out, run
        return len(standin.model_requests)


def hook_types(agent) -> set[str]:
    hooks = json.loads(settings_file(agent.project).read_text())["hooks"]
    return {hook["type"] for groups in hooks.values() for group in groups for hook in group["hooks"]}


@pytest.fixture
def http_wired(agent):
    """The agent's project wired by ``leash install --transport http`` for this
    Claude Code, and ``leash daemon`` listening on the port."""
    port = unused_port()
    agent.home.mkdir(parents=True, exist_ok=True)
    (agent.home / "config.toml").write_text(f"[daemon]\nhttp_port = {port}\n"
                                            f"[approvals]\ntimeout_s = {APPROVAL_WAIT}\n")
    os.chmod(agent.home / "config.toml", 0o600)
    env = dict(os.environ, LEASH_HOME=str(agent.home))
    found = installed()
    if found is not None and len(found[0]) == 1:
        env["LEASH_CLAUDE"] = found[0][0]
    done = subprocess.run([LEASH, "install", "--project", str(agent.project), "--transport", "http"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    agent.install_said = done.stdout + done.stderr
    agent.daemon = daemon_process(agent.home, "--no-kennel", stderr=subprocess.DEVNULL)
    yield agent
    if agent.daemon.poll() is None:
        os.kill(agent.daemon.pid, signal.SIGCONT)
    stop(agent.daemon)


@pytest.mark.skipif(HAS_ON_FAILURE, reason=f"Claude Code {VERSION} is wired over HTTP: test_http_transport.py")
def test_without_on_failure_command_hooks_are_wired_and_refuse(http_wired):
    assert hook_types(http_wired) == {"command"}, "an HTTP hook on a Claude Code without onFailure fails open"
    assert "wiring command hooks instead" in http_wired.install_said
    session_id = str(uuid.uuid4())

    def stop_the_session() -> None:
        http_wired.leash("stop", session_id, "--reason", "review first")

    http_wired.run("create the marker", touch_then_done(), before={0: stop_the_session},
                   args=("--session-id", session_id))
    assert not http_wired.marker.exists(), "a stop let the call through"
    # leashd killed: the command hook judges in its own process, and a stop filed then still holds.
    stop(http_wired.daemon, signal.SIGKILL)
    session_id = str(uuid.uuid4())
    http_wired.run("create the marker", touch_then_done(), before={0: stop_the_session},
                   args=("--session-id", session_id))
    assert not http_wired.marker.exists(), "with leashd killed a stop let the call through"
    http_wired.run("create the marker", touch_then_done())
    assert http_wired.marker.exists(), "an unstopped session's call should run"


@needs_on_failure
def test_a_session_wired_over_http_is_known_by_its_first_prompt(http_wired):
    assert "http" in hook_types(http_wired)
    session_id = str(uuid.uuid4())
    run = http_wired.run("say hello", [[text("hello")]], args=("--session-id", session_id))
    assert run.code == 0, run
    assert session_id in json.dumps(http_wired.sessions()), http_wired.sessions()


@needs_on_failure
def test_an_http_proxy_without_loopback_exempt_refuses_every_call(http_wired):
    asked = run_behind_proxy(http_wired, "localhost")
    # UserPromptSubmit blocks on failure too: the prompt itself is dropped.
    assert asked == 0 and not http_wired.marker.exists(), "a hook sent to a dead proxy let the turn through"
    asked = run_behind_proxy(http_wired, "localhost,127.0.0.1")
    assert asked == 2 and http_wired.marker.exists(), "with 127.0.0.1 exempt from the proxy the call should run"
