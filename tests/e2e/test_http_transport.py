"""Claude Code's HTTP hooks with the real client: a project wired by ``leash
install --transport http`` against a real ``leash daemon`` listening on
``[daemon] http_port``; the scripted model calls Bash ``touch marker``.

A stop refuses the call through the HTTP wiring; and each failure of the
listener refuses it too (``onFailure: "block"``): leashd killed (nothing
listens), SIGSTOPped (Claude Code's hook timeout), and a stand-in on leashd's
port answering 500, a body that is not JSON, or closing the connection
without an answer. A Claude Code without ``onFailure`` (before 2.1.295) keeps
the command hooks, so this module is skipped there with one line."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from leash.core.base.claudeversion import supports_on_failure

from ..support.daemon import daemon_process, stop
from ..support.e2e.harness import LEASH, ClaudeUnavailable, ensure_claude, installed, settings_file
from ..support.e2e.standin import bash, text

try:
    _argv, _version = ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)
if not supports_on_failure(tuple(int(part) for part in _version.split("."))):
    pytest.skip(f"Claude Code {_version} has no onFailure: leash keeps its command hooks there",
                allow_module_level=True)

APPROVAL_WAIT = 3  # [approvals] timeout_s: the hooks' timeouts follow it, so a stopped leashd costs seconds


def touch_then_done() -> list[list[dict]]:
    return [[text("Creating the marker."), bash("touch marker")], [text("done")]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def http_agent(agent):
    """The agent's project rewired over HTTP, and leashd on the port."""
    port = free_port()
    agent.home.mkdir(parents=True, exist_ok=True)
    (agent.home / "config.toml").write_text(f"[daemon]\nhttp_port = {port}\n"
                                            f"[approvals]\ntimeout_s = {APPROVAL_WAIT}\n")
    os.chmod(agent.home / "config.toml", 0o600)
    found = installed()
    env = dict(os.environ, LEASH_HOME=str(agent.home))
    if found is not None and len(found[0]) == 1:
        env["LEASH_CLAUDE"] = found[0][0]
    done = subprocess.run([LEASH, "install", "--project", str(agent.project), "--transport", "http"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    pre = json.loads(settings_file(agent.project).read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert pre["type"] == "http" and pre["onFailure"] == "block", pre
    agent.port = port
    agent.daemon = daemon_process(agent.home, "--no-kennel", stderr=subprocess.DEVNULL)
    yield agent
    if agent.daemon.poll() is None:
        os.kill(agent.daemon.pid, signal.SIGCONT)
    stop(agent.daemon)


def test_allowed_through_the_http_wiring_and_a_stop_refuses(http_agent):
    first = http_agent.run("create the marker", touch_then_done())
    assert first.code == 0 and http_agent.marker.exists(), first
    http_agent.marker.unlink()
    session_id = str(uuid.uuid4())

    def stop_the_session() -> None:  # after the prompt, before the model asks for the call
        http_agent.leash("stop", session_id, "--reason", "review first")

    run = http_agent.run("create the marker", touch_then_done(), before={0: stop_the_session},
                         args=("--session-id", session_id))
    assert run.json()["session_id"] == session_id
    assert not http_agent.marker.exists()
    (result,) = http_agent.tool_results()
    assert "review first" in result


def test_leashd_killed_or_stopped_refuses(http_agent):
    os.kill(http_agent.daemon.pid, signal.SIGSTOP)
    http_agent.run("create the marker", touch_then_done())
    assert not http_agent.marker.exists(), "a stopped leashd let the call through"
    os.kill(http_agent.daemon.pid, signal.SIGCONT)
    stop(http_agent.daemon, signal.SIGKILL)
    http_agent.run("create the marker", touch_then_done())
    assert not http_agent.marker.exists(), "nothing listening let the call through"


class _Impostor(BaseHTTPRequestHandler):
    """What stands on leashd's port in its place: one failure each."""

    mode = "500"

    def log_message(self, *args):
        return

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        status, body = (500, b'{"error": "boom"}') if self.mode == "500" else (200, b"<html>not json</html>")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("mode", ["500", "garbage", "close"])
def test_a_listener_that_fails_refuses(http_agent, mode):
    stop(http_agent.daemon)
    handler = type("Impostor", (_Impostor,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", http_agent.port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        http_agent.run("create the marker", touch_then_done())
    finally:
        server.shutdown()
        server.server_close()
    assert not http_agent.marker.exists(), f"a listener answering {mode} let the call through"
