"""Notifications through a real `leash daemon` process on the test's home: a
halt recorded reaches the webhook on 127.0.0.1; a failing route shows in
`leash doctor` and `leash notify test`; a route that hangs never delays a
hook; the hook path never imports the notifier."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop
from ..support.notify import Hanging, Inbox, closed_port_url, write_routes

RECORD = ("halts", "record", "--session", "s1", "--type", "security", "--severity", "critical",
          "--description", "a reverse shell to 203.0.113.9")


@pytest.fixture
def inbox():
    server = Inbox()
    yield server
    server.close()


@pytest.fixture
def running(home):
    """Start ``leash daemon`` on the test's home (after its config is written); stopped afterwards."""
    started = []

    def start():
        proc = daemon_process(home, "--no-kennel")
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop(proc)


def test_a_halt_recorded_reaches_the_webhook(home, inbox, running, leash_proc):
    write_routes(home, [{"kind": "webhook", "url": inbox.url}])
    running()
    recorded = leash_proc(*RECORD)
    assert recorded.code == 0, recorded
    (post,) = inbox.wait_for(1, timeout=10)
    payload = post.json()
    assert payload["event"] == "halt" and payload["severity"] == "critical" and payload["session"] == "s1"
    assert payload["body"] == "a reverse shell to 203.0.113.9"
    time.sleep(1.5)  # a second reading: nothing is sent twice
    assert len(inbox.posts) == 1


def doctor_until(leash_proc, prefix: str, seconds: float = 10.0):
    """``leash doctor`` run until a line starts with ``prefix`` (or ``seconds`` pass): (result, lines)."""
    deadline = time.monotonic() + seconds
    while True:
        doctor = leash_proc("doctor")
        lines = doctor.out.splitlines()
        if any(line.startswith(prefix) for line in lines) or time.monotonic() > deadline:
            return doctor, lines
        time.sleep(0.2)


def test_a_failing_route_shows_in_doctor(home, inbox, running, leash_proc):
    write_routes(home, [{"kind": "webhook", "url": closed_port_url(), "name": "pager"},
                        {"kind": "webhook", "url": inbox.url}])
    running()
    assert leash_proc(*RECORD).code == 0
    inbox.wait_for(1, timeout=10)
    doctor, lines = doctor_until(leash_proc, "fail  notify route 1 (pager")
    failing = [line for line in lines if line.startswith("fail  notify route 1 (pager (webhook)): failing: ")]
    assert failing and "cannot reach" in failing[0] and doctor.code == 3, doctor
    for wanted in ("ok    notify route 2 (webhook", "ok    notify: sent by leashd on"):
        assert [line for line in lines if line.startswith(wanted)], (wanted, lines)
    tested = leash_proc("notify", "test")  # through the daemon: its routes, sent from leashd
    assert tested.code == 1 and tested.out.splitlines()[1].endswith(": ok"), tested
    assert tested.out.startswith("route 1 (pager (webhook)): failed: cannot reach")
    assert inbox.wait_for(2)[1].json()["event"] == "test"


def test_a_route_that_hangs_never_delays_a_hook(home, running, leash_proc, tmp_path):
    hanging = Hanging()
    try:
        write_routes(home, [{"kind": "webhook", "url": hanging.url, "timeout_s": 30}])
        running()
        assert leash_proc(*RECORD).code == 0
        deadline = time.monotonic() + 10
        while not hanging.held and time.monotonic() < deadline:  # the notifier is stuck in its POST now
            time.sleep(0.05)
        assert hanging.held
        agent, _ = sockets(home)
        payload = {"session_id": "s2", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}, "cwd": str(tmp_path)}
        # Each hook is answered while the POST hangs (up to its 30 s): one held up behind it would end in
        # socket.timeout here.
        for _ in range(20):
            (reply,) = exchange(agent, hook_request("pre-tool-use", payload), timeout=5)
            assert "error" not in reply, reply
    finally:
        hanging.close()


def test_the_hook_path_never_imports_the_notifier(home, inbox, tmp_path):
    write_routes(home, [{"kind": "webhook", "url": inbox.url}])
    payload = json.dumps({"session_id": "s3", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": str(tmp_path)}).encode()
    done = subprocess.run([sys.executable, "-X", "importtime"] + leash_argv()[1:] + ["hook", "pre-tool-use"],
                          input=payload, capture_output=True, cwd=ROOT, timeout=60)
    modules = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "leash.core.hook.gate" in modules or "leash.core.hook.hooks" in modules
    assert not [m for m in modules if m.startswith("leash.core.notify")]
    assert inbox.posts == []
