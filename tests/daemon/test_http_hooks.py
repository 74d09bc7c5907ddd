"""Claude Code's hooks over HTTP: ``leash install --transport http`` writes
``type: "http"`` entries to leashd's loopback listener (``[daemon]
http_port``), which judges each POST as the agent socket judges a hook; the
request's user comes from the kernel's socket table. The real Claude Code's
behaviour on a failing listener is in make e2e (tests/e2e/HTTP_HOOK_FACTS.md);
here the listener itself, driven as Claude Code drives it (a POST of the
payload with the env headers the wiring names)."""
from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import subprocess

import pytest

from leash.core.hook.httpwiring import ENV_HEADER_PREFIX, FORWARDED_ENV, is_leash_http_hook
from leash.core.views.protocol import StopProtocol
from leash.core.wire.hookio import REQUEST_LIMIT_BYTES

from ..support.daemon import daemon_process, stop
from ..support.thin_hook import BASH


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fake_claude(tmp_path, version: str):
    """``claude --version`` as that version prints it (the real clients run in make e2e)."""
    program = tmp_path / f"claude-{version}"
    program.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


@pytest.fixture
def http_home(home):
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (home / "config.toml").write_text(f"[daemon]\nhttp_port = {port}\n")
    return home, port


@pytest.fixture
def leashd(http_home):
    home, port = http_home
    proc = daemon_process(home, "--no-kennel", stderr=subprocess.DEVNULL)
    yield port
    stop(proc)


def post(port: int, verb: str, payload: dict, env: dict | None = None) -> tuple[int, bytes]:
    """One hook call as Claude Code makes it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Content-Type": "application/json"}
        headers.update({f"{ENV_HEADER_PREFIX}{name}": value for name, value in (env or {}).items()})
        conn.request("POST", f"/leash-hook/{verb}", body=json.dumps(payload), headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_install_transport_http_writes_http_hooks_to_the_listener(cli, http_home, tmp_path, monkeypatch):
    home, port = http_home
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.332")))
    project = tmp_path / "project"
    result = cli("install", "--project", str(project), "--transport", "http")
    assert result.code == 0, result.err
    assert f"127.0.0.1:{port}" in result.out
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    pre = hooks["PreToolUse"][0]["hooks"][0]
    assert pre["type"] == "http" and pre["url"] == f"http://127.0.0.1:{port}/leash-hook/pre-tool-use"
    assert pre["onFailure"] == "block" and set(pre["allowedEnvVars"]) == set(FORWARDED_ENV)
    assert pre["headers"][f"{ENV_HEADER_PREFIX}TMUX_PANE"] == "${TMUX_PANE}"
    assert "onFailure" not in hooks["PostToolUse"][0]["hooks"][0]  # recording events fail open, as commands do
    assert hooks["SessionStart"][0]["hooks"][0]["type"] == "command"  # Claude Code never sends it over HTTP
    assert all(is_leash_http_hook(group["hooks"][0]) for event, groups in hooks.items() for group in groups
               if event != "SessionStart")
    check = cli("install", "--project", str(project), "--check")
    assert check.code == 0, check.out
    again = cli("install", "--project", str(project), "--transport", "http")
    assert "nothing changed" in again.out
    removed = cli("install", "--project", str(project), "--uninstall")
    assert removed.code == 0 and "hooks" not in json.loads((project / ".claude" / "settings.json").read_text())


def test_check_and_config_change_catch_an_edited_http_hook(cli, http_home, tmp_path, monkeypatch):
    home, port = http_home
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.332")))
    project = tmp_path / "project"
    assert cli("install", "--project", str(project), "--transport", "http").code == 0
    settings = project / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"][0]["hooks"][0].pop("onFailure")
    settings.write_text(json.dumps(data))
    check = cli("install", "--project", str(project), "--check")
    assert check.code == 3 and "PreToolUse: onFailure is null, where leash install writes \"block\"" in check.out
    change = {"session_id": "s1", "hook_event_name": "ConfigChange", "source": "project_settings",
              "file_path": str(settings), "cwd": str(project)}
    refused = cli("hook", "config-change", stdin=json.dumps(change).encode())
    assert refused.code == 2 and "onFailure" in refused.err


def test_an_old_claude_code_keeps_command_hooks(cli, http_home, tmp_path, monkeypatch):
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.197")))
    project = tmp_path / "project"
    result = cli("install", "--project", str(project), "--transport", "http")
    assert result.code == 0 and "wiring command hooks instead" in result.out
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["PreToolUse"][0]["hooks"][0]["type"] == "command"


def test_transport_http_without_a_port_is_refused_naming_the_setting(cli, home, tmp_path, monkeypatch):
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.332")))
    result = cli("install", "--project", str(tmp_path / "project"), "--transport", "http")
    assert result.code == 1 and "[daemon] http_port" in result.err


def test_the_listener_judges_a_call_and_a_stop_refuses_it(leashd, home):
    port = leashd
    status, body = post(port, "pre-tool-use", BASH, env={"TMUX_PANE": "%1", "HOME": os.environ.get("HOME", "/")})
    assert (status, body) == (200, b"")  # allowed: nothing to say
    StopProtocol(home).acknowledge_stop("ops@test", "s1", reason="stop for the review")
    status, body = post(port, "pre-tool-use", BASH)
    said = json.loads(body)["hookSpecificOutput"]
    assert status == 200 and said["permissionDecision"] == "deny" and "stop for the review" in said[
        "permissionDecisionReason"]
    status, body = post(port, "user-prompt-submit", {"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                                                     "prompt": "go on", "cwd": "/"})
    assert status == 200 and json.loads(body)["decision"] == "block"


def test_the_listener_refuses_what_it_cannot_judge(leashd):
    port = leashd
    assert post(port, "no-such-hook", BASH)[0] == 404
    assert post(port, "gemini-before-tool", BASH)[0] == 404  # Claude Code's events only
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("POST", "/leash-hook/pre-tool-use")
    conn.putheader("Content-Length", str(REQUEST_LIMIT_BYTES + 1))  # refused before a byte of it is read
    conn.endheaders()
    assert conn.getresponse().status == 413
    conn.close()


def test_the_request_is_the_kernels_users_not_the_bodys(leashd, home):
    """The session belongs to the uid the socket table names for the client:
    a request from another user for it is refused (a real second user when
    the tests run as root)."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("needs root to connect as another user")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    port = leashd
    assert post(port, "pre-tool-use", BASH)[0] == 200  # s1 is root's now
    script = ("import http.client, json, sys\n"
              f"c = http.client.HTTPConnection('127.0.0.1', {port}, timeout=30)\n"
              f"c.request('POST', '/leash-hook/pre-tool-use', body=json.dumps({BASH!r}))\n"
              "r = c.getresponse(); sys.stdout.write(r.read().decode())\n")
    done = subprocess.run(["python3", "-c", script], capture_output=True, text=True, timeout=60,
                          user=nobody.pw_uid, group=nobody.pw_gid, env={"PATH": "/usr/bin:/bin"}, cwd="/")
    said = json.loads(done.stdout)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny" and "belongs to another user" in said["permissionDecisionReason"]


def test_check_warns_of_a_proxy_that_would_carry_the_http_hooks(cli, http_home, tmp_path, monkeypatch):
    """Claude Code sends an HTTP hook through HTTP_PROXY unless NO_PROXY names
    127.0.0.1 (tests/e2e/HTTP_HOOK_FACTS.md): then every call is refused."""
    monkeypatch.setenv("LEASH_CLAUDE", str(fake_claude(tmp_path, "2.1.332")))
    project = tmp_path / "project"
    assert cli("install", "--project", str(project), "--transport", "http").code == 0
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert "HTTP_PROXY is set and NO_PROXY does not name 127.0.0.1" in cli("install", "--project", str(project),
                                                                            "--check").out
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert "NO_PROXY" not in cli("install", "--project", str(project), "--check").out

