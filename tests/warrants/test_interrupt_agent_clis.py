"""``leash stop --interrupt`` for Gemini CLI and Codex CLI sessions, with
stand-ins whose processes look as the real CLIs' do
(tests/e2e/agents/PROCESS_FACTS.md; ``support/interrupt.py``): each is
recorded by its hook, a headless run gets SIGINT (and the tool a headless
Gemini CLI leaves running is ended by leash), a terminal UI in a tmux pane
gets its interrupt (Codex CLI's: Escape, then ``/stop`` and Enter), and a
Codex TUI served by the shared ``codex app-server`` is never taken to be in
the pane its server's environment names."""
from __future__ import annotations

import json
import os

import pytest

from leash.core import StopProtocol
from leash.core.base.agentproc import stat_of
from leash.core.state.acklog import AckLog

from ..support.interrupt import end_tool, read, start_headless, start_in_pane, stop, wait_ready
from ..support.waiting import eventually


def interrupts(home) -> list[dict]:
    return [line for line in AckLog(home).read().entries if line["event"] == "interrupt"]


def record_of(home, session_id: str) -> dict:
    return json.loads((home / "sessions.json").read_text())[session_id]


def running(pid: int) -> bool:
    facts = stat_of(pid)
    if facts is None:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended
        return stat.read().rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def tmux_env(tmux_socket, monkeypatch):
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    return tmux_socket


@pytest.mark.parametrize("agent_cli", ["gemini", "codex"])
def test_the_hook_records_the_cli_that_ran_it(home, tmp_path, agent_cli):
    where = tmp_path / "agent"
    proc = start_headless(where, home, f"sess-{agent_cli}", cli=agent_cli)
    try:
        wait_ready(where)
        process = record_of(home, f"sess-{agent_cli}")["agent_process"]
        assert (process["pid"], process["cli"], process["headless"]) == (proc.pid, agent_cli, True)
        assert process["shared_server"] is False
    finally:
        stop(proc)
        end_tool(where)


@pytest.mark.parametrize("agent_cli", ["gemini", "codex"])
def test_a_headless_run_gets_sigint_and_no_tool_is_left_running(home, tmp_path, cli, agent_cli):
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-headless", cli=agent_cli)
    try:
        wait_ready(where)
        tool = int(read(where, "tool_pid")) if agent_cli == "gemini" else None
        assert tool is None or running(tool)  # Gemini's tool leads a session of its own

        result = cli("stop", "sess-headless", "--interrupt", "--reason", "look first")

        assert result.code == 0, result
        assert proc.wait(timeout=10) == 130 and read(where, "signals") == "SIGINT\n"
        if tool is not None:  # the stand-in, as Gemini CLI, left it running: leash ended it
            assert eventually(lambda: not running(tool)), "the tool Gemini CLI left behind still runs"
        (line,) = interrupts(home)
        assert (line["method"], line["target"]) == ("sigint", f"pid {proc.pid}")
        assert StopProtocol(home).is_stopped("sess-headless")
    finally:
        stop(proc)
        end_tool(where)


def test_a_gemini_terminal_ui_in_a_pane_gets_escape_alone(home, tmp_path, cli, tmux_env):
    where = tmp_path / "agent"
    start_in_pane(tmux_env, "gemini-pane", where, home, "sess-gemini", cli="gemini")
    wait_ready(where)
    record = record_of(home, "sess-gemini")
    assert record["tmux_pane"].startswith("%") and record["agent_process"]["cli"] == "gemini"

    result = cli("stop", "gemini-pane", "--interrupt")

    assert result.code == 0, result
    assert eventually(lambda: read(where, "keys") != "")
    assert (where / "keys").read_bytes() == b"\x1b"
    (line,) = interrupts(home)
    assert (line["method"], line["target"]) == ("escape", record["tmux_pane"])


def test_a_codex_terminal_ui_gets_escape_then_stop(home, tmp_path, cli, tmux_env):
    """Codex's Escape ends the turn but leaves the command running as a
    background terminal: ``/stop`` (typed after the key has settled) ends it."""
    where = tmp_path / "agent"
    start_in_pane(tmux_env, "codex-pane", where, home, "sess-codex", cli="codex")
    wait_ready(where)
    record = record_of(home, "sess-codex")
    assert record["agent_process"]["cli"] == "codex" and record["agent_process"]["headless"] is False

    result = cli("stop", "sess-codex", "--interrupt")

    assert result.code == 0, result
    assert eventually(lambda: (where / "keys").exists() and (where / "keys").read_bytes().endswith(b"\r"))
    assert (where / "keys").read_bytes() == b"\x1b/stop\r"
    (line,) = interrupts(home)
    assert (line["method"], line["target"]) == ("escape", record["tmux_pane"])


def test_a_codex_app_server_is_never_taken_to_be_in_the_pane_its_environment_names(home, tmp_path, cli,
                                                                                   tmux_env):
    """The shared server keeps the environment of the TUI that started it
    (``TMUX_PANE`` included), and runs other TUIs' calls too: the session
    gets no pane, and an interrupt says it cannot reach it (the stop holds)."""
    where = tmp_path / "server"
    proc = start_headless(where, home, "sess-served", cli="codex", extra=("app-server", "--managed-daemon"),
                          env={"TMUX_PANE": "%0", "TMUX": f"{tmux_env},1,0"})
    try:
        wait_ready(where)
        record = record_of(home, "sess-served")
        assert record["agent_process"]["shared_server"] is True and record["agent_process"]["headless"] is False
        assert not record["tmux_pane"] and "tmux_socket" not in record["agent_process"]

        result = cli("stop", "sess-served", "--interrupt")

        assert result.code == 1 and "no tmux pane leash knows" in result.err and "--no-daemon" in result.err, result
        assert "Codex CLI" in result.err and StopProtocol(home).is_stopped("sess-served")
        assert proc.poll() is None and not interrupts(home)  # nothing was signalled
    finally:
        stop(proc)


def test_a_prompt_run_by_the_codex_app_server_records_no_pane_either(home, tmp_path, tmux_env):
    """The session's first hook is its prompt's: a lifecycle hook below the
    shared server takes no pane from its environment either."""
    from leash.core.base.agentproc import children_of_all
    from leash.core.hook.hooks import answer

    where = tmp_path / "server"
    proc = start_headless(where, home, "sess-first", cli="codex", extra=("app-server",))
    try:
        wait_ready(where)
        (below,) = children_of_all()[proc.pid]  # its running tool: a process the server runs
        prompt = json.dumps({"session_id": "sess-prompt", "hook_event_name": "UserPromptSubmit", "prompt": "go",
                             "cwd": str(tmp_path), "turn_id": "t1", "model": "gpt-5.5"}).encode()
        said = answer("codex-user-prompt-submit", prompt, home=home,
                      env={"LEASH_HOOK_PID": str(below), "TMUX_PANE": "%0", "TMUX": f"{tmux_env},1,0"})
        assert said[2] == 0, said
        record = record_of(home, "sess-prompt")
        assert not record["tmux_pane"] and record["agent_process"]["shared_server"] is True
    finally:
        stop(proc)


def test_a_recorded_process_that_now_runs_another_cli_is_never_signalled(home, tmp_path, cli):
    """A record says Codex CLI; the pid now runs something leash reads as
    Gemini CLI (the record was forged or the pid reused): no signal."""
    from leash.core.state.sessions import SessionRegistry

    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-swap", cli="gemini")
    try:
        wait_ready(where)
        SessionRegistry(home).rows.update(
            "sess-swap", lambda r: {**r, "agent_process": {**r["agent_process"], "cli": "codex"}}, horizon=0)
        result = cli("stop", "sess-swap", "--interrupt")
        assert result.code == 1 and "no longer runs Codex CLI" in result.err, result
        assert proc.poll() is None and read(where, "signals") == ""
    finally:
        stop(proc)
        end_tool(where)


def test_leash_ends_only_its_agents_tool_sessions(home, tmp_path, cli):
    """A session leader of the same user outside the agent's tree lives on."""
    import subprocess

    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-one", cli="gemini")
    try:
        wait_ready(where)
        assert cli("stop", "sess-one", "--interrupt").code == 0
        assert proc.wait(timeout=10) == 130
        assert eventually(lambda: not running(int(read(where, "tool_pid"))))
        assert running(bystander.pid)
    finally:
        stop(proc)
        end_tool(where)
        os.killpg(bystander.pid, 9)
        bystander.wait(timeout=10)
