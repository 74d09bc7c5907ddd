"""The kennel inside leashd: a daemon SIGKILLed while its dog waits at attempt
1, and the next daemon's kennel resumes the same dog at the recorded deadline
(no fresh gate, no extra health check)."""
from __future__ import annotations

import os
import signal
import subprocess
import time

from leash.core.base.clock import parse_iso
from leash.core.base.statefile import read_json
from leash.core.state.warrants import WarrantQueue
from leash.core.warrants.kennel import KENNEL_NAME

from ..support.daemon import daemon_process, stop
from ..support.kennel import active_state, events_for, health_checks, start_agent, write_config
from ..support.waiting import wait_for


def test_a_killed_daemons_dog_resumes_at_its_deadline_in_the_next_daemon(home, tmux, tmp_path):
    first_gate = 3.0
    write_config(home, [first_gate, 0.5, 0.5])
    start_agent(tmux, tmp_path, "mute", "silent")
    queue = WarrantQueue(home)
    warrant, _ = queue.file("mute", reason="stuck", requester="deacon")
    env = {"LEASH_TMUX_SOCKET": str(tmux.socket)}
    first = daemon_process(home, env=env, stderr=subprocess.DEVNULL)
    try:
        before = wait_for(lambda: (lambda s: s if s and s.get("state") == "interrogating" else None)(
            active_state(queue, warrant["id"])), what="attempt 1")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=20)
    finally:
        stop(first)
    assert before["attempt"] == 1 and before["kennel"]["pid"] == first.pid
    deadline = parse_iso(before["next_timeout"])
    time.sleep(max(0.0, parse_iso(before["last_message_at"]) + 1.5 - time.time()))
    second = daemon_process(home, env=env, stderr=subprocess.DEVNULL)
    try:
        resumed = wait_for(lambda: (lambda s: s if s and s.get("attempt") == 2 else None)(
            active_state(queue, warrant["id"])), timeout=15, interval=0.01, what="attempt 2")
        wait_for(lambda: os.path.exists(queue.completed_path(warrant["id"])), timeout=20, what="the verdict")
    finally:
        stop(second)
    assert resumed["started_at"] == before["started_at"] and resumed["kennel"]["pid"] == second.pid
    # the recorded gate, closed before a fresh gate of the next daemon's kennel could have closed
    restarted = read_json(home / KENNEL_NAME)
    assert restarted["pid"] == second.pid
    assert deadline <= parse_iso(resumed["last_message_at"]) < parse_iso(restarted["started_at"]) + first_gate
    done = read_json(queue.completed_path(warrant["id"]))
    assert (done["outcome"], done["attempt"]) == ("executed", 3)
    assert health_checks(done["final_screen"].splitlines()) == 3
    assert events_for(home, warrant["id"])["epitaph"] == 1


def test_sigterm_stops_the_daemons_kennel_and_keeps_the_dogs_state(home, tmux, tmp_path):
    write_config(home, [30, 30, 30])
    start_agent(tmux, tmp_path, "mute", "silent")
    queue = WarrantQueue(home)
    warrant, _ = queue.file("mute", reason="stuck", requester="deacon")
    daemon = daemon_process(home, env={"LEASH_TMUX_SOCKET": str(tmux.socket)}, stderr=subprocess.DEVNULL)
    try:
        before = wait_for(lambda: (lambda s: s if s and s.get("state") == "interrogating" else None)(
            active_state(queue, warrant["id"])), what="attempt 1")
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=20) == 0
    finally:
        stop(daemon)
    kept = active_state(queue, warrant["id"])
    assert kept["attempt"] == 1 and kept["next_timeout"] == before["next_timeout"]  # resumed by the next daemon
    assert not os.path.exists(queue.completed_path(warrant["id"])) and tmux.has_session("mute")
