"""Only operators answer approvals: an agent's own processes are refused on
the operator socket (``operator_refused``) when they try ``leash approvals
allow``; the RemoteBackend's approvals are the daemon's, with ``by`` taken from
the peer; the gate reads ``leash approvals allow|deny`` as tampering; the
thin client waits longer than an approval on the events that hold one; the
wiring ``leash install`` writes outlasts ``[approvals] timeout_s``; the config
key is checked; completion offers the subcommands; notifications are fed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from leash.core.base.config import ConfigError, load_config
from leash.core.hook.install import HOOKS, hook_command, hook_entry, hook_runner
from leash.core.state.acklog import AckLog
from leash.core.store.files import FileBackend
from leash.core.wire import thinhook

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import exchange, hook_request, sockets

FAKE_AGENT = r"""
import json, os, subprocess, sys
hook_command, leash = sys.argv[1], json.loads(sys.argv[2])
payload = json.dumps({"session_id": "agent-1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                      "tool_input": {"command": "git status"}, "cwd": "/"}).encode()
for line in sys.stdin:
    words = json.loads(line)
    if words == ["hook"]:
        done = subprocess.run(["sh", "-c", hook_command], input=payload, capture_output=True)
        answer = {"code": done.returncode}
    elif words:
        child = subprocess.Popen(leash + words, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = child.communicate()
        answer = {"code": child.returncode, "err": err.decode(), "pid": child.pid}
    else:
        break
    answer["agent"] = os.getpid()
    print(json.dumps(answer), flush=True)
"""


@pytest.fixture
def fake_agent(tmp_path):
    program = tmp_path / "bin" / "claude"
    program.parent.mkdir()
    program.symlink_to(os.path.realpath(sys.executable))  # a bare interpreter named claude
    script = tmp_path / "agent.py"
    script.write_text(FAKE_AGENT)
    (spec,) = [spec for spec in HOOKS if spec.verb == "pre-tool-use"]
    proc = subprocess.Popen([str(program), str(script), hook_command(hook_runner(), spec), json.dumps(leash_argv())],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, text=True)

    def do(*words: str) -> dict:
        proc.stdin.write(json.dumps(list(words)) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    yield do
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()


def test_an_agents_process_cannot_answer_an_approval(daemon, home, fake_agent):
    assert fake_agent("hook")["code"] == 0  # leashd meets the agent through its hook
    agent, _ = sockets(home)
    payload = {"session_id": "agent-1", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
               "tool_input": {"command": "git push"}, "cwd": "/"}
    replies: list = []
    waiter = threading.Thread(target=lambda: replies.extend(
        exchange(agent, hook_request("permission-request", payload), timeout=30)))
    waiter.start()
    deadline = time.monotonic() + 20
    while not FileBackend(home).approvals.pending() and time.monotonic() < deadline:
        time.sleep(0.02)
    (approval,) = FileBackend(home).approvals.pending()

    tried = fake_agent("approvals", "allow", approval.id)
    assert tried["code"] == 1 and "refused" in tried["err"] and "Claude Code process" in tried["err"]
    (refused,) = AckLog(home).read(event="operator_refused").entries
    assert refused["argv"] == ["approvals", "allow", approval.id] and refused["peer_pid"] == tried["pid"]
    assert FileBackend(home).approvals.get(approval.id).status == "waiting"

    outside = subprocess.run(leash_argv() + ["approvals", "deny", approval.id, "--message", "mine to answer"],
                             capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert outside.returncode == 0, outside.stderr
    waiter.join(timeout=30)
    assert json.loads(replies[0]["stdout"])["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_the_remote_backend_answers_as_the_peer(daemon, home):
    from leash.core.store.approvals import ApprovalClosed
    from leash.core.store.remote import RemoteBackend

    opened = FileBackend(home).approvals.request("s1", "Bash", {"command": "make deploy"}, timeout_s=60)
    remote = RemoteBackend(sockets(home)[1])
    assert [a.id for a in remote.approvals.pending()] == [opened.id]
    answered = remote.approvals.answer(opened.id, allow=True, by="someone-else", via="console", note="ok")
    assert answered.by == daemon_source(daemon) and answered.via == "console"
    with pytest.raises(ApprovalClosed, match="already allowed"):
        remote.approvals.answer(opened.id, allow=False, by="x", via="console")
    assert remote.approvals.recent(1)[0].status == "allowed"


def daemon_source(daemon) -> str:
    import pwd

    return f"{pwd.getpwuid(os.getuid()).pw_name}@{daemon.host}"


def test_the_gate_reads_answering_an_approval_as_tampering():
    from leash.core.policy.halts.leashverbs import verb_action

    assert verb_action("approvals", ["allow", "abc123"]) == "leash approvals allow"
    assert verb_action("approvals", ["deny", "abc123"]) == "leash approvals deny"
    assert verb_action("approvals", ["list", "--json"]) is None


def test_the_thin_client_waits_longer_than_the_approval():
    assert thinhook.deadline_seconds({}, "permission-request") == 310
    assert thinhook.deadline_seconds({"LEASH_APPROVAL_WAIT": "600"}, "pre-tool-use") == 610
    assert thinhook.deadline_seconds({"LEASH_APPROVAL_WAIT": "600"}, "stop") == thinhook.DEFAULT_DEADLINE_SECONDS
    assert thinhook.deadline_seconds({"LEASH_APPROVAL_WAIT": "1"}, "pre-tool-use") == 20  # never below the default
    assert thinhook.deadline_seconds({"LEASH_HOOK_DEADLINE": "2"}, "pre-tool-use") == 2  # an explicit one wins
    assert "LEASH_APPROVAL_WAIT" not in thinhook.forwarded_env({"LEASH_APPROVAL_WAIT": "5", "LEASH_ENTITY": "e"})


def test_the_wiring_outlasts_the_approvals_timeout(home, cli, tmp_path):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[approvals]\ntimeout_s = 600\n")
    project = tmp_path / "project"
    assert cli("install", "--project", str(project)).code == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    for event in ("PreToolUse", "PermissionRequest"):
        (hook,) = settings["hooks"][event][0]["hooks"]
        assert hook["timeout"] == 630 and "LEASH_APPROVAL_WAIT=600 " in hook["command"]
        assert " --deadline 615 " in hook["command"]  # its own deadline, past the wait
    (stop_hook,) = settings["hooks"]["Stop"][0]["hooks"]
    assert stop_hook["timeout"] == 30
    assert cli("install", "--project", str(project), "--check").code == 0
    (home / "config.toml").write_text("[approvals]\ntimeout_s = 900\n")
    checked = cli("install", "--project", str(project), "--check")
    assert checked.code == 3 and "timeout_s = 600" in checked.out and "900" in checked.out


def test_the_default_wiring_waits_past_the_default_timeout():
    (spec,) = [spec for spec in HOOKS if spec.verb == "permission-request"]
    entry = hook_entry(hook_runner(), spec)
    assert entry["timeout"] == 330 and "LEASH_APPROVAL_WAIT=300 " in entry["command"] and " 315 " in entry["command"]


@pytest.mark.parametrize("text, words", [
    ('[approvals]\nask = ["Bash(git push*)", "Bash("]\n', ["approvals.ask", "Bash("]),
    ('[approvals]\non_timeout = "allow"\n', ["approvals.on_timeout", '"deny" or "ask"']),
    ("[approvals]\ntimeout_s = 0\n", ["approvals.timeout_s"]),
])
def test_a_bad_approvals_setting_names_the_file_and_key(home, text, words):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(home)
    assert str(raised.value).startswith(str(home / "config.toml"))
    assert all(word in str(raised.value) for word in words)


def test_completion_offers_the_approvals_subcommands(cli):
    script = cli("completion", "bash").out
    assert '"approvals") opts="' in script
    line = next(line for line in script.splitlines() if '"approvals") opts=' in line)
    assert all(word in line for word in ("allow", "deny", "list"))


def test_a_waiting_approval_is_notified(home):
    from leash.core.notify.sources import Gatherer

    backend = FileBackend(home)
    opened = backend.approvals.request("s1", "Bash", {"command": "git push"}, timeout_s=60)
    gatherer = Gatherer(backend, host="h", waiting_after_s=120, since=0)
    found, read = gatherer.gather(now=time.time())
    (event,) = [event for event in found if event.kind == "approval"]
    assert event.id == f"approval:{opened.id}" and "Bash: git push" in event.body and "approval" in read
    backend.approvals.answer(opened.id, allow=True, by="ops", via="cli")
    found, _ = gatherer.gather(now=time.time())
    assert not [event for event in found if event.kind == "approval"]


def test_claude_codes_own_dialog_is_told_as_waiting_for_approval_and_leashs_as_an_approval(home):
    """A session showing Claude Code's own permission dialog reads "waiting for
    approval" and, past [notify] waiting_after_s, is told as waiting for
    approval; one whose call leash holds is told once, as its approval."""
    from leash.core.notify.sources import Gatherer

    backend = FileBackend(home)
    now = time.time()
    backend.sessions.observe("own-dialog", now=now - 300, status="waiting for approval")
    backend.sessions.observe("held", now=now - 300, status="waiting for approval")
    backend.approvals.request("held", "Bash", {"command": "git push"}, timeout_s=600, now=now - 300)
    found, _ = Gatherer(backend, host="h", waiting_after_s=120, since=0).gather(now=now)
    waiting = {event.session: event.title for event in found if event.kind == "waiting"}
    assert waiting == {"own-dialog": "own-dialog is waiting for approval"}
    assert [event.session for event in found if event.kind == "approval"] == ["held"]
