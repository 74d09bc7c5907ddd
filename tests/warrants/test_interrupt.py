"""``leash stop --interrupt``: the stop is filed, then the call in flight is
cancelled — Escape in an interactive Claude Code's tmux pane, SIGINT to a
headless one found from its hooks' process tree — and an ``interrupt`` line
says what was running. Real processes, a real private tmux server, the
hook run through ``sh -c`` exactly as Claude Code runs it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from leash.core import StopProtocol
from leash.core.base.agentproc import agent_process, stat_of
from leash.core.state.acklog import AckLog

from ..support.interrupt import (
    claude_link,
    read,
    start_headless,
    start_in_pane,
    stop,
    wait_ready,
    write_transcript,
)
from ..support.waiting import eventually

SECRET = "AKIAZ7Q3R5T2W8Y4U6PL"  # the shape of an AWS access key id, not a real one
KEYS_SETTLE_SECONDS = 0.5  # long enough for a stray second key to arrive, if one were sent


def interrupts(home) -> list[dict]:
    return [line for line in AckLog(home).read().entries if line["event"] == "interrupt"]


def record_of(home, session_id: str) -> dict:
    return json.loads((home / "sessions.json").read_text())[session_id]


@pytest.fixture
def tmux_env(tmux_socket, monkeypatch):
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    return tmux_socket


# ------------------------------------------------------------------ the process tree
def test_the_hook_records_the_claude_code_that_ran_it_through_sh(home, tmp_path):
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-tree")
    try:
        wait_ready(where)
        process = record_of(home, "sess-tree")["agent_process"]
        facts = stat_of(proc.pid)
        assert process["pid"] == proc.pid  # not the hook, nor sh, nor timeout: the program that ran them
        assert process["started"] == facts[2]
        assert process["uid"] == os.getuid()
        assert process["headless"] is True
    finally:
        stop(proc)


def test_a_hook_run_by_something_else_records_no_process(home, leash_proc):
    """Judged from a test (no Claude Code above it): nothing to signal, ever."""
    payload = json.dumps({"session_id": "sess-bare", "tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert leash_proc("hook", "pre-tool-use", stdin=payload.encode()).code == 0
    record = record_of(home, "sess-bare")
    assert "agent_process" in record and not record["agent_process"]


def _tree(tmp_path, middle: list[str]) -> tuple[subprocess.Popen, int]:
    """claude -> MIDDLE... -> sh -c "LEAF || exit 2" -> leaf; the leaf's pid is read from a file."""
    leaf_file, leaf = tmp_path / "leaf", tmp_path / "leaf.py"
    leaf.write_text(f"import os, time\nopen({str(leaf_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(20)\n")
    argv = [str(claude_link(tmp_path)), "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])"] + middle + \
        ["sh", "-c", f"{sys.executable} {leaf} || exit 2"]
    proc = subprocess.Popen(argv, start_new_session=True)
    assert eventually(lambda: leaf_file.exists() and leaf_file.read_text().isdigit())
    return proc, int(leaf_file.read_text())


def _end_tree(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_the_walk_passes_launchers_up_to_claude_code(tmp_path):
    proc, leaf = _tree(tmp_path, ["timeout", "30"])
    try:
        found = agent_process(leaf, uid=os.getuid())
        assert found is not None and found["pid"] == proc.pid and found["headless"] is False
        assert agent_process(leaf, uid=os.getuid() + 1) is None  # another user's Claude Code is not this hook's
    finally:
        _end_tree(proc)


def test_the_walk_stops_at_a_program_that_is_neither_a_launcher_nor_claude(tmp_path):
    """claude -> python -> sh -> hook: a hook run inside some other program
    (a test, a script) never names the Claude Code above that program."""
    proc, leaf = _tree(tmp_path, [sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])"])
    try:
        assert agent_process(leaf, uid=os.getuid()) is None
    finally:
        _end_tree(proc)


# ------------------------------------------------------------------ headless: SIGINT
def test_a_headless_session_gets_sigint_and_its_tool_ends(home, tmp_path, cli):
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-headless")
    try:
        wait_ready(where)
        result = cli("stop", "--force", "sess-headless", "--interrupt", "--reason", "look first")
        assert result.code == 0, result
        # 130: its SIGINT handler ended it, with its tool; left alone it runs 30 s and exits 0
        assert proc.wait(timeout=10) == 130
        assert read(where, "signals") == "SIGINT\n"
        assert f"interrupted sess-headless (sigint to pid {proc.pid}) while it ran Bash" in result.out
        assert StopProtocol(home).is_stopped("sess-headless")
        (line,) = interrupts(home)
        assert line["session_id"] == "sess-headless" and line["reason"] == "look first"
        assert (line["method"], line["target"], line["tool"]) == ("sigint", f"pid {proc.pid}", "Bash")
    finally:
        stop(proc)


def test_the_ack_line_says_what_was_running_with_secrets_masked(home, tmp_path, cli):
    where = tmp_path / "agent"
    where.mkdir()
    command = f"aws s3 ls --key {SECRET}; sleep 60"
    write_transcript(where, command)
    proc = start_headless(where, home, "sess-said", command=command)
    try:
        wait_ready(where)
        result = cli("stop", "--force", "sess-said", "--interrupt")
        assert result.code == 0, result
        (line,) = interrupts(home)
        assert line["tool"] == "Bash"
        assert line["input"].startswith("aws s3 ls --key [REDACTED")
        assert line["input"].endswith("; sleep 60")
        assert SECRET not in (home / "stop_ack_log.jsonl").read_text()
        assert SECRET not in result.out
    finally:
        stop(proc)


def test_through_leashd_the_peer_pid_leads_to_the_process(home, tmp_path, cli, daemon):
    """The hook is a thin client; leashd walks up from its SO_PEERCRED pid,
    and the forwarded stop --interrupt runs in the daemon."""
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-daemon")
    try:
        wait_ready(where)
        assert record_of(home, "sess-daemon")["agent_process"]["pid"] == proc.pid
        result = cli("stop", "--force", "sess-daemon", "--interrupt")
        assert result.code == 0, result
        assert proc.wait(timeout=10) == 130
        assert read(where, "signals") == "SIGINT\n"
        (line,) = interrupts(home)
        assert line["method"] == "sigint"
    finally:
        stop(proc)


# ------------------------------------------------------------------ pids never to signal
@pytest.fixture
def bystander(tmp_path):
    """A process that records a SIGINT, named claude: the pid a stale record could name."""
    seen = tmp_path / "bystander-signals"
    code = ("import signal, sys, time\n"
            f"signal.signal(signal.SIGINT, lambda *a: (open({str(seen)!r}, 'a').write('SIGINT'), sys.exit(130)))\n"
            "print('ready', flush=True)\n"
            "time.sleep(30)\n")
    proc = subprocess.Popen([str(claude_link(tmp_path)), "-c", code, "-p"], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout.readline().strip() == "ready"
    yield proc, seen
    stop(proc)


def _record(home, session_id: str, process: dict) -> None:
    from leash.core.base.home import ensure_home
    from leash.core.state.sessions import SessionRegistry

    SessionRegistry(ensure_home(home)).observe(session_id, tool="Bash", cwd="/", agent_process=process)


@pytest.mark.parametrize("change, said", [
    ({"started": +1}, "is another process now"),
    ({"uid": +1}, "not to the session's user"),
])
def test_a_recycled_or_foreign_pid_is_never_signalled(home, cli, bystander, change, said):
    proc, seen = bystander
    process = {"pid": proc.pid, "started": stat_of(proc.pid)[2], "uid": os.getuid(), "headless": True}
    for key, delta in change.items():
        process[key] += delta
    _record(home, "sess-stale", process)

    result = cli("stop", "--force", "sess-stale", "--interrupt")

    assert result.code == 1
    assert said in result.err and "nothing could be interrupted" in result.err
    assert result.err.count("\n") == 1
    time.sleep(KEYS_SETTLE_SECONDS)
    assert proc.poll() is None and not seen.exists()
    assert StopProtocol(home).is_stopped("sess-stale")  # fail closed: the stop is filed all the same
    assert interrupts(home) == []


def test_a_pid_that_no_longer_runs_claude_code_is_never_signalled(home, cli, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        _record(home, "sess-other", {"pid": proc.pid, "started": stat_of(proc.pid)[2], "uid": os.getuid()})
        result = cli("stop", "--force", "sess-other", "--interrupt")
        assert result.code == 1 and "no longer runs Claude Code" in result.err
        assert proc.poll() is None
    finally:
        stop(proc)


def test_an_ended_process_is_refused_in_one_line(home, cli):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    started = stat_of(proc.pid)[2] if stat_of(proc.pid) else 0
    proc.wait()
    _record(home, "sess-gone", {"pid": proc.pid, "started": started, "uid": os.getuid()})
    result = cli("stop", "--force", "sess-gone", "--interrupt")
    assert result.code == 1
    assert "has ended" in result.err or "another process" in result.err


# ------------------------------------------------------------------ the CLI
def test_nothing_to_interrupt_is_exit_1_with_the_stop_filed(home, cli):
    result = cli("stop", "--force", "ghost", "--interrupt", "--reason", "r")
    assert result.code == 1
    assert result.out.startswith("stopped ghost")
    assert result.err.splitlines() == [
        "leash: warning: nothing answers to this name yet (it was filed, and holds the session if one appears)",
        "leash: error: ghost is stopped, but nothing could be interrupted: no agent session of it has been seen by "
        "leash's hooks"]
    assert StopProtocol(home).is_stopped("ghost")


def test_a_session_seen_without_pane_or_process_is_named(home, cli, leash_proc):
    payload = json.dumps({"session_id": "sess-plain", "tool_name": "Bash", "tool_input": {"command": "ls"}})
    leash_proc("hook", "pre-tool-use", stdin=payload.encode())
    result = cli("stop", "--force", "sess-plain", "--interrupt")
    assert result.code == 1
    assert "sess-plain: no tmux pane shows it and no Claude Code process of it is known" in result.err


def test_fleet_stop_with_interrupt(home, tmp_path, cli):
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-fleet")
    try:
        wait_ready(where)
        assert cli("stop", "--all", "--interrupt").code == 2  # a fleet stop still needs its reason
        result = cli("stop", "--all", "--interrupt", "--reason", "everyone, now")
        assert result.code == 0, result
        assert proc.wait(timeout=10) == 130
        assert StopProtocol(home).is_stopped("anyone")
        (line,) = interrupts(home)
        assert line["session_id"] == "sess-fleet" and line["reason"] == "everyone, now"
    finally:
        stop(proc)


def test_fleet_interrupt_with_nothing_running_is_exit_1(home, cli):
    result = cli("stop", "--all", "--interrupt", "--reason", "r")
    assert result.code == 1 and "the fleet is stopped, but nothing could be interrupted" in result.err
    assert StopProtocol(home).is_stopped("anyone")


def test_without_interrupt_nothing_is_signalled(home, tmp_path, cli):
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-plainstop", live_seconds=3)
    try:
        wait_ready(where)
        assert record_of(home, "sess-plainstop")["agent_process"]["pid"] == proc.pid  # reachable, and yet:
        assert cli("stop", "--force", "sess-plainstop").code == 0
        time.sleep(KEYS_SETTLE_SECONDS)
        assert proc.poll() is None and read(where, "signals") == ""
    finally:
        stop(proc)


# ------------------------------------------------------------------ a tmux pane: Escape
def test_an_interactive_session_in_a_pane_gets_escape_and_nothing_else(home, tmp_path, cli, tmux_env):
    where = tmp_path / "agent"
    start_in_pane(tmux_env, "agent-esc", where, home, "sess-pane")
    wait_ready(where)
    record = record_of(home, "sess-pane")
    assert record["tmux_pane"].startswith("%") and record["agent_process"]["headless"] is False

    result = cli("stop", "--force", "agent-esc", "--interrupt", "--reason", "hold on")

    assert result.code == 0, result
    assert eventually(lambda: read(where, "keys") != "")
    time.sleep(KEYS_SETTLE_SECONDS)
    assert (where / "keys").read_bytes() == b"\x1b"
    assert read(where, "signals") == ""
    (line,) = interrupts(home)
    assert (line["session_id"], line["method"], line["target"]) == ("sess-pane", "escape", record["tmux_pane"])
    assert StopProtocol(home).is_stopped("sess-pane")


def test_a_pane_whose_hook_named_no_process_is_judged_by_its_program(home, tmp_path, cli, tmux_env):
    """No process recorded (a record from before, a hook run otherwise): the
    pane's own program must be claude in the tmux session the hooks saw."""
    from leash.core.state.sessions import SessionRegistry

    where = tmp_path / "agent"
    start_in_pane(tmux_env, "agent-old", where, home, "sess-old")
    wait_ready(where)
    record = record_of(home, "sess-old")
    SessionRegistry(home).rows.update("sess-old", lambda r: {**r, "agent_process": ""}, horizon=0)
    result = cli("stop", "--force", "sess-old", "--interrupt")
    assert result.code == 0, result
    assert eventually(lambda: read(where, "keys") != "")
    assert (where / "keys").read_bytes() == b"\x1b"
    assert interrupts(home)[0]["target"] == record["tmux_pane"]


def test_a_pane_that_runs_something_else_gets_no_key(home, tmp_path, cli, tmux_env):
    from leash.core.state.sessions import SessionRegistry

    where = tmp_path / "agent"
    start_in_pane(tmux_env, "agent-vim", where, home, "sess-vim", program_name="vim")
    wait_ready(where)
    SessionRegistry(home).rows.update("sess-vim", lambda r: {**r, "agent_process": ""}, horizon=0)
    result = cli("stop", "--force", "sess-vim", "--interrupt")
    assert result.code == 1
    assert "runs 'vim', not Claude Code" in result.err
    time.sleep(KEYS_SETTLE_SECONDS)
    assert read(where, "keys") == ""


def test_a_pane_now_running_another_claude_gets_no_key(home, tmp_path, cli, tmux_env):
    """The session's recorded Claude Code runs, but not in its pane (another
    one does): the pane is not this session's to interrupt."""
    from leash.core.state.sessions import SessionRegistry

    elsewhere = subprocess.Popen([str(claude_link(tmp_path)), "-c", "import time; time.sleep(30)"],
                                 start_new_session=True)
    try:
        where = tmp_path / "agent"
        start_in_pane(tmux_env, "agent-new", where, home, "sess-moved")
        wait_ready(where)
        other = {"pid": elsewhere.pid, "started": stat_of(elsewhere.pid)[2], "uid": os.getuid()}
        SessionRegistry(home).rows.update("sess-moved", lambda r: {**r, "agent_process": other}, horizon=0)
        result = cli("stop", "--force", "sess-moved", "--interrupt")
        assert result.code == 1 and "does not run its Claude Code" in result.err
        time.sleep(KEYS_SETTLE_SECONDS)
        assert read(where, "keys") == "" and elsewhere.poll() is None
    finally:
        stop(elsewhere)


def test_an_interactive_claude_outside_tmux_is_not_signalled(home, cli, tmp_path):
    """SIGINT ends a terminal UI and leaves its tool running: refused."""
    proc = subprocess.Popen([str(claude_link(tmp_path)), "-c", "import time; time.sleep(30)"],
                            start_new_session=True)
    try:
        _record(home, "sess-tui", {"pid": proc.pid, "started": stat_of(proc.pid)[2], "uid": os.getuid()})
        result = cli("stop", "--force", "sess-tui", "--interrupt")
        assert result.code == 1 and "press Escape in its terminal" in result.err
        time.sleep(KEYS_SETTLE_SECONDS)
        assert proc.poll() is None
    finally:
        stop(proc)


def test_sigint_is_not_sent_twice_to_one_process(home, tmp_path, cli):
    """Two sessions of one Claude Code (a resumed id): one interrupt."""
    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-one")
    try:
        wait_ready(where)
        _record(home, "sess-two", record_of(home, "sess-one")["agent_process"])
        result = cli("stop", "--all", "--interrupt", "--reason", "r")
        assert result.code == 0, result
        assert len(interrupts(home)) == 1
        assert proc.wait(timeout=10) == 130
    finally:
        stop(proc)


def test_fleet_interrupt_leaves_sessions_with_no_call_in_flight_alone(home, tmp_path, cli, tmux_env):
    """An idle TUI's input line may hold a person's typing: a fleet interrupt
    presses nothing there."""
    from leash.core.state.sessions import SessionRegistry

    where = tmp_path / "agent"
    start_in_pane(tmux_env, "agent-idle", where, home, "sess-idle")
    wait_ready(where)
    SessionRegistry(home).observe("sess-idle", status="idle")
    result = cli("stop", "--all", "--interrupt", "--reason", "r")
    assert result.code == 1
    assert "no session has a call in flight (1 idle or waiting for input)" in result.err
    time.sleep(KEYS_SETTLE_SECONDS)
    assert read(where, "keys") == ""
    assert StopProtocol(home).is_stopped("sess-idle")
