"""tmux as a side door around leashd's ancestry check, for real: a tmux server
on a private socket runs a fake Claude Code (a Python script run through a
program named ``claude``) in one of its panes; the agent's hook has reached a
``leash daemon`` process, which so learned the agent. A ``leash resume`` or
``leash approvals allow`` that tmux runs in a new window of that server is
outside the agent's process tree but under its tmux server: leashd refuses
it (``operator_refused``, naming the server), the stop stays, the approval
stays waiting. The same command from outside that server is the operator's."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time

import pytest

from leash.core.hook.install import HOOKS, hook_command, hook_runner
from leash.core.state.acklog import AckLog
from leash.core.store.files import FileBackend
from leash.core.views.protocol import StopProtocol

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop

# The fake Claude Code in its pane: runs its hook once (as Claude Code does, through sh -c),
# says how that went in a file, then stays up as an agent does.
FAKE_AGENT = r"""
import json, os, subprocess, sys, time
hook_command, said = sys.argv[1], sys.argv[2]
payload = json.dumps({"session_id": "agent-1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                      "tool_input": {"command": "git status"}, "cwd": "/"}).encode()
done = subprocess.run(["sh", "-c", hook_command], input=payload, capture_output=True)
with open(said + ".part", "w") as out:
    json.dump({"code": done.returncode, "out": done.stdout.decode(), "err": done.stderr.decode(),
               "agent": os.getpid()}, out)
os.rename(said + ".part", said)
time.sleep(600)
"""


def wait_for(path, *, seconds: float = 30.0) -> str:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.05)
    return path.read_text()


def tmux(socket, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True, check=True,
                          timeout=30).stdout


@pytest.fixture
def scene(home, tmp_path, tmux_socket):
    """leashd as a process; a tmux server whose pane runs the fake agent, met by leashd through its hook."""
    daemon = daemon_process(home)
    program = tmp_path / "bin" / "claude"
    program.parent.mkdir()
    program.symlink_to(os.path.realpath(sys.executable))  # a bare interpreter named claude
    script = tmp_path / "agent.py"
    script.write_text(FAKE_AGENT)
    (spec,) = [spec for spec in HOOKS if spec.verb == "pre-tool-use"]
    said = tmp_path / "hooked.json"
    agent_line = shlex.join([str(program), str(script), hook_command(hook_runner(), spec), str(said)])
    tmux(tmux_socket, "-f", os.devnull, "new-session", "-d", "-s", "agents", "-c", str(ROOT), agent_line)
    try:
        hooked = json.loads(wait_for(said))
        assert hooked["code"] == 0 and hooked["out"] == "", hooked  # answered by leashd, which met the agent
        running = {"socket": tmux_socket, "tmp": tmp_path, "agent": hooked["agent"], "daemon": daemon,
                   "server": int(tmux(tmux_socket, "display-message", "-p", "#{pid}").strip())}
        yield running
        daemon = running["daemon"]
    finally:
        stop(daemon)


def through_tmux(scene, name: str, *words: str) -> dict:
    """``leash WORDS`` run by the agent's tmux server in a new window: its exit code and stderr."""
    out = scene["tmp"] / name
    line = f"{shlex.join(leash_argv() + list(words))} 2> {shlex.quote(str(out))}.err; " \
           f"echo $? > {shlex.quote(str(out))}.part && mv {shlex.quote(str(out))}.part {shlex.quote(str(out))}"
    tmux(scene["socket"], "new-window", "-d", "-c", str(ROOT), line)
    code = int(wait_for(out, seconds=60).strip())
    return {"code": code, "err": (scene["tmp"] / f"{name}.err").read_text()}


def assert_refused_under_the_server(home, scene, tried, argv):
    assert tried["code"] == 1, tried
    (line,) = tried["err"].splitlines()
    assert "refused" in line and f"tmux server {scene['server']}" in line, line
    assert f"Claude Code process {scene['agent']}" in line and "tmux socket of their own" in line
    refused = [e for e in AckLog(home).read(event="operator_refused").entries if e.get("argv") == argv]
    assert refused and refused[-1]["tmux_server"] == scene["server"] and refused[-1]["agent_pid"] == scene["agent"]


def test_a_resume_that_tmux_runs_for_the_agent_is_refused(home, scene):
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "victim", "hold on")
    tried = through_tmux(scene, "resume", "resume", "victim")
    assert_refused_under_the_server(home, scene, tried, ["resume", "victim"])
    assert protocol.is_stopped("victim")
    # the same command from outside that tmux server is the operator's, and applied
    outside = subprocess.run(leash_argv() + ["resume", "victim"], capture_output=True, cwd=ROOT, timeout=60)
    assert outside.returncode == 0, outside.stderr
    assert not protocol.is_stopped("victim")


def test_an_approval_that_tmux_allows_for_the_agent_stays_waiting(home, scene):
    agent_socket, _ = sockets(home)
    payload = {"session_id": "agent-1", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
               "tool_input": {"command": "git push"}, "cwd": "/"}
    replies: list = []
    waiter = threading.Thread(target=lambda: replies.extend(
        exchange(agent_socket, hook_request("permission-request", payload), timeout=60)))
    waiter.start()
    try:
        deadline = time.monotonic() + 20
        while not FileBackend(home).approvals.pending() and time.monotonic() < deadline:
            time.sleep(0.02)
        (approval,) = FileBackend(home).approvals.pending()
        tried = through_tmux(scene, "allow", "approvals", "allow", approval.id)
        assert_refused_under_the_server(home, scene, tried, ["approvals", "allow", approval.id])
        assert FileBackend(home).approvals.get(approval.id).status == "waiting"
    finally:
        for waiting in FileBackend(home).approvals.pending():  # the operator answers, so the held call ends
            subprocess.run(leash_argv() + ["approvals", "deny", waiting.id], capture_output=True, cwd=ROOT,
                           timeout=60)
        waiter.join(timeout=60)
    assert json.loads(replies[0]["stdout"])["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_a_restarted_daemon_still_knows_the_agents_tmux_server(home, scene):
    stop(scene["daemon"])  # the agent is now known only from its session's record
    scene["daemon"] = daemon_process(home)
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "victim", "hold on")
    tried = through_tmux(scene, "resume-after-restart", "resume", "victim")
    assert_refused_under_the_server(home, scene, tried, ["resume", "victim"])
    assert protocol.is_stopped("victim")


def test_the_recorded_socket_names_the_server_when_the_agent_has_no_tmux_variable(tmp_path, tmux_socket):
    """An agent started with ``$TMUX`` removed is found by the socket its session recorded."""
    program = tmp_path / "claude"
    program.symlink_to(os.path.realpath(sys.executable))
    tmux(tmux_socket, "-f", os.devnull, "new-session", "-d", "-s", "agents",
         shlex.join(["env", "-u", "TMUX", str(program), "-c", "import time; time.sleep(600)"]))
    tmux(tmux_socket, "new-window", "-d", "-n", "door", "sleep 600")
    deadline = time.monotonic() + 20
    while True:
        agent = _children_named(int(tmux(tmux_socket, "display-message", "-p", "#{pid}")), "claude")
        if agent or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    (agent_pid,) = agent
    from leash.core.base import agentproc
    from leash.core.daemon.agents import KnownAgents
    from leash.core.store.records import SessionRecord

    process = {"pid": agent_pid, "started": agentproc.stat_of(agent_pid)[2], "uid": os.getuid(), "cli": "claude"}
    door = int(tmux(tmux_socket, "display-message", "-p", "-t", "agents:door", "#{pane_pid}"))
    server = int(tmux(tmux_socket, "display-message", "-p", "#{pid}"))
    without_socket = KnownAgents()
    assert without_socket.learn_recorded({"agent-1": SessionRecord.of({"agent_process": process})}) == 1
    assert without_socket.tmux_server_above(door) is None  # nothing says which server it is in
    agents = KnownAgents()
    recorded = SessionRecord.of({"agent_process": dict(process, tmux_socket=str(tmux_socket))})
    assert agents.learn_recorded({"agent-1": recorded}) == 1
    found = agents.tmux_server_above(door)
    assert found is not None and found[0][0] == server and found[1][0] == agent_pid
    assert agents.tmux_server_above(os.getpid()) is None  # this process is not under that server


def _children_named(root: int, comm: str) -> list[int]:
    """The processes below ``root`` whose name is ``comm``."""
    from leash.core.base import agentproc

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        facts = agentproc.stat_of(pid)
        if facts is None or facts[0] != comm:
            continue
        walk = facts
        for _ in range(8):
            if walk is None or walk[1] <= 1:
                break
            if walk[1] == root:
                found.append(pid)
                break
            walk = agentproc.stat_of(walk[1])
    return found
