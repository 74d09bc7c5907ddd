"""leashd against its own agents, for real: a process tree with a fake Claude
Code, Gemini CLI or Codex CLI at its top (a Python script run through a
program named ``claude`` or ``codex``, or as Gemini's script by one named
``node``, as ``core.base.agentprograms`` recognises them) that runs leash's hook through ``sh -c``,
as Claude Code does, and then starts ``leash resume`` as its child. The
daemon has learned the agent from the hook's peer, so the child is refused on
the operator socket although it is the operator's own Unix user; the same
command from outside the agent is applied.

And a slowloris on the agent socket (300 connections that send half a line
and stall) does not hold up another agent's call.
"""
from __future__ import annotations

import json
import os
import pwd
import socket
import subprocess
import sys
import time

import pytest

from leash.core.daemon.agents import UNTOLD, KnownAgents
from leash.core.hook.install import HOOKS, hook_command, hook_runner
from leash.core.state.acklog import AckLog
from leash.core.views.protocol import StopProtocol

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import connect, exchange, hook_request, sockets, start_daemon, still_waiting

# The fake Claude Code: one JSON line per command it reads ("hook", "resume", "quit").
FAKE_AGENT = r"""
import json, os, subprocess, sys
hook_command, leash = sys.argv[1], json.loads(sys.argv[2])
payload = json.dumps({"session_id": "agent-1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                      "tool_input": {"command": "git status"}, "cwd": "/"}).encode()
for line in sys.stdin:
    if line.strip() == "hook":
        done = subprocess.run(["sh", "-c", hook_command], input=payload, capture_output=True)
        answer = {"code": done.returncode, "out": done.stdout.decode(), "err": done.stderr.decode()}
    elif line.strip() == "resume":
        child = subprocess.Popen(leash + ["resume", "victim"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = child.communicate()
        answer = {"code": child.returncode, "out": out.decode(), "err": err.decode(), "pid": child.pid}
    else:
        break
    answer["agent"] = os.getpid()
    print(json.dumps(answer), flush=True)
"""


# Each agent CLI as its process shows (tests/e2e/agents/PROCESS_FACTS.md): a
# program named claude or codex, or a JavaScript runtime running Gemini CLI's script.
FAKE_PROGRAMS = {"claude": ("claude", "agent.py"), "codex": ("codex", "agent.py"),
                 "gemini": ("node", "node_modules/.bin/gemini")}
CLI_NAMES = {"claude": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI"}


class FakeAgent:
    """A fake agent CLI process (Claude Code's program is named ``claude``)."""

    def __init__(self, tmp_path, cli: str = "claude"):
        link, script_name = FAKE_PROGRAMS[cli]
        program = tmp_path / "bin" / link
        program.parent.mkdir()
        program.symlink_to(os.path.realpath(sys.executable))  # a bare interpreter named as the CLI's program
        script = tmp_path / script_name
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(FAKE_AGENT)
        (pre_tool_use,) = [spec for spec in HOOKS if spec.verb == "pre-tool-use"]
        self.proc = subprocess.Popen([str(program), str(script), hook_command(hook_runner(), pre_tool_use),
                                      json.dumps(leash_argv())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     cwd=ROOT, text=True)

    def do(self, command: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=30)
        self.proc.stdout.close()  # type: ignore[union-attr]


@pytest.fixture(params=["claude", "gemini", "codex"])
def any_agent(request, tmp_path):
    made = FakeAgent(tmp_path, request.param)
    made.cli = request.param
    yield made
    made.close()


@pytest.fixture
def agent(tmp_path):
    made = FakeAgent(tmp_path)
    yield made
    made.close()


def test_an_agents_child_is_refused_on_the_operator_socket(daemon, home, any_agent):
    agent = any_agent
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "victim", "hold on")
    hooked = agent.do("hook")
    assert hooked["code"] == 0 and hooked["out"] == "", hooked  # judged by the daemon, which met the agent
    resumed = agent.do("resume")
    assert resumed["code"] == 1, resumed
    (line,) = resumed["err"].splitlines()
    assert "refused" in line and f"{CLI_NAMES[agent.cli]} process {hooked['agent']}" in line and "operator" in line
    assert protocol.is_stopped("victim")
    (refused,) = AckLog(home).read(event="operator_refused").entries
    assert (refused["peer_pid"], refused["agent_pid"]) == (resumed["pid"], hooked["agent"])
    assert refused["argv"] == ["resume", "victim"] and refused["session_id"] == "agent-1"
    assert refused["source"] == f"{pwd.getpwuid(os.getuid()).pw_name}@{daemon.host}"
    # the same command from outside the agent's processes is the operator's, and applied
    outside = subprocess.run(leash_argv() + ["resume", "victim"], capture_output=True, cwd=ROOT, timeout=60)
    assert outside.returncode == 0, outside.stderr
    assert not protocol.is_stopped("victim")


def test_a_restarted_daemon_knows_the_agents_of_the_sessions_on_record(home, agent):
    StopProtocol(home).acknowledge_stop("ops", "victim", "hold on")
    first = start_daemon(home, line_deadline=0.5)
    try:
        hooked = agent.do("hook")  # the session record names its Claude Code process
    finally:
        first.close()
    second = start_daemon(home, line_deadline=0.5)
    try:
        assert (hooked["agent"], "agent-1") in {(pid, second.agents.session_of((pid, started)))
                                                for pid, started in second.agents.known}
        assert agent.do("resume")["code"] == 1
    finally:
        second.close()
    assert StopProtocol(home).is_stopped("victim")


def test_a_process_that_cannot_be_seen_is_not_taken_for_the_operator(tmp_path):
    agents = KnownAgents()
    assert agents.agent_above(os.getpid()) is None  # nothing known: nothing to refuse
    agents.known[(1, 0)] = "s"
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert agents.agent_above(gone.pid) == UNTOLD
    assert agents.agent_above(os.getpid()) is None  # this process runs below none of them


def test_stalled_connections_do_not_hold_up_another_agents_call(home):
    """300 clients send the start of a line and stall (the daemon waits 120 s
    for each line: longer than a loaded machine takes to open the 300): a hook
    from another client is answered at once."""
    running = start_daemon(home, line_deadline=120)
    agent_socket = sockets(home)[0]
    stalled: list[socket.socket] = []
    try:
        give_up = time.monotonic() + 30
        while len(stalled) < 300 and time.monotonic() < give_up:
            try:
                conn = connect(agent_socket, timeout=5)
            except BlockingIOError:  # the listen backlog is full for a moment: the daemon is accepting
                time.sleep(0.01)
                continue
            conn.sendall(b'{"verb": "hook", "event": "pre-tool-use", "payload": "{')
            stalled.append(conn)
        assert len(stalled) == 300
        # Answered while every stalled client still holds its connection, long before being cut off (a
        # hook held up behind them would end in socket.timeout here, well before that).
        (reply,) = exchange(agent_socket, hook_request("pre-tool-use", {"session_id": "s1", "tool_name": "Bash",
                                                                         "tool_input": {"command": "ls"}}), timeout=10)
        assert reply["code"] == 0
        assert all(still_waiting(conn) for conn in stalled)
    finally:
        for conn in stalled:
            conn.close()
        running.close()
