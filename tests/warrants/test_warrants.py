"""Death warrants end to end: real tmux servers on private sockets, agents in
panes (silent, answering, busy, chatty, answering once then hung: see
tests/support/kennel.py), the kennel in-process, in a thread and as
`leash kennel` processes.

Every timeout here is well under a second unless a test needs a gate that
stays open while it acts.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter

import pytest

from leash.core.base.clock import parse_iso
from leash.core.base.statefile import read_json
from leash.core.state.acklog import AckLog
from leash.core.state.warrants import WarrantError, WarrantQueue
from leash.core.state.warrants.outcome import finish
from leash.core.views.protocol import StopProtocol
from leash.core.warrants.kennel import KENNEL_NAME, Kennel, running_kennel

from ..support.kennel import (
    ANSWER_AT_1,
    ANSWER_AT_2,
    FAST,
    KennelThread,
    active_state,
    events_for,
    goes_idle,
    health_checks,
    kennel_process,
    run_kennel,
    start_agent,
    stop_process,
    write_config,
)
from ..support.waiting import wait_for


# ------------------------------------------------------------------ verdicts
def test_an_answering_session_is_pardoned_at_attempt_1(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "good", "answering")
    warrant, _ = WarrantQueue(home).file("good", reason="looks stuck", requester="deacon")
    done = run_kennel(home, tmux, timeouts=ANSWER_AT_1)["good"]
    assert (done["outcome"], done["attempt"]) == ("pardoned", 1)
    assert "pardoned_by" not in done
    assert tmux.has_session("good")
    assert health_checks(tmux.capture("good")) == 1
    lines = done["epitaph"].splitlines()
    assert lines[:5] == ["EPITAPH: good", "Verdict: PARDONED", f"Warrant: {warrant['id']}", "Reason: looks stuck",
                         "Filed by: deacon"]
    assert lines[5].startswith("Response: Attempt 1, after ") and lines[6].startswith("Pardoned at: ")
    assert done["wait_seconds"] < ANSWER_AT_1[0]


def test_a_late_answer_is_pardoned_at_attempt_2(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "late", "answering", late=2)
    WarrantQueue(home).file("late", reason="slow", requester="deacon")
    done = run_kennel(home, tmux, timeouts=ANSWER_AT_2)["late"]
    assert (done["outcome"], done["attempt"]) == ("pardoned", 2)
    assert tmux.has_session("late")
    pane = tmux.capture("late")
    assert health_checks(pane) == 2 and any("Attempt: 2/3" in line for line in pane)
    assert "Response: Attempt 2, after " in done["epitaph"]


@pytest.mark.parametrize("width", [120, 40])
def test_a_silent_session_is_executed_after_three_attempts(home, tmux, tmp_path, width):
    start_agent(tmux, tmp_path, "mute", "silent", width=width)
    warrant, _ = WarrantQueue(home).file("mute", reason="no output", requester="deacon")
    done = run_kennel(home, tmux)["mute"]
    assert (done["outcome"], done["attempt"]) == ("executed", 3)
    assert not tmux.has_session("mute")
    # the pane's last lines, with the echo that shows the word ALIVE three times over
    screen = done["final_screen"].splitlines()
    assert health_checks(screen) == 3
    assert any("[DOG] HEALTH CHECK: Session mute, respond ALIVE within 0.3s" in line for line in screen)
    assert screen[-1].strip().endswith(" -- Attempt: 3/3")
    assert screen[0].strip() == "ready"
    lines = done["epitaph"].splitlines()
    assert lines[:6] == ["EPITAPH: mute", "Verdict: EXECUTED", f"Warrant: {warrant['id']}", "Reason: no output",
                         "Filed by: deacon", "Attempts: 3 (0.3s + 0.3s + 0.3s = 0.9s total)"]
    assert lines[6].startswith("Executed at: ")
    # three gates, each kept open for its whole timeout
    assert parse_iso(done["completed_at"]) - parse_iso(done["started_at"]) >= sum(FAST)


def test_a_missing_target_is_already_dead(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "ghost-1", "silent")  # a prefix match must not count
    warrant, _ = WarrantQueue(home).file("ghost", reason="gone", requester="deacon")
    done = run_kennel(home, tmux)["ghost"]
    assert (done["outcome"], done["attempt"]) == ("already_dead", 0)
    assert done["epitaph"].splitlines() == [
        "EPITAPH: ghost", "Verdict: ALREADY_DEAD", f"Warrant: {warrant['id']}", "Reason: gone", "Filed by: deacon",
        "Note: Target session not found at warrant processing"]
    assert tmux.has_session("ghost-1") and health_checks(tmux.capture("ghost-1")) == 0


def test_a_hands_off_target_survives(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "locked", "silent")
    StopProtocol(home).hands_off("locked", reason="do not kill", source="ops")
    warrant, _ = WarrantQueue(home).file("locked", reason="stuck", requester="deacon")
    done = run_kennel(home, tmux)["locked"]
    assert (done["outcome"], done["attempt"]) == ("blocked_hands_off", 3)
    assert tmux.has_session("locked")
    assert "Verdict: BLOCKED_HANDS_OFF" in done["epitaph"]
    (blocked,) = [e for e in AckLog(home).read(event="warrant_blocked").entries]
    assert blocked["session_id"] == "locked" and blocked["warrant_id"] == warrant["id"]
    assert events_for(home, warrant["id"])["warrant_executed"] == 0


def test_a_busy_session_is_not_pardoned_by_activity_alone(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "busy", "busy")
    WarrantQueue(home).file("busy", reason="loops", requester="deacon")
    done = run_kennel(home, tmux)["busy"]
    assert (done["outcome"], done["attempt"]) == ("executed", 3)
    assert "working" in done["final_screen"]


def test_an_old_answer_in_the_scrollback_does_not_pardon_a_hung_agent(home, tmux, tmp_path):
    """The agent answers a first warrant, then hangs the way a full-screen agent
    does: its terminal echo is off and it never reads again. A second warrant
    must not be pardoned by the first one's ALIVE still in the scrollback."""
    start_agent(tmux, tmp_path, "agent", "answers-once-then-hangs")
    queue = WarrantQueue(home)
    queue.file("agent", reason="check", requester="deacon")
    assert run_kennel(home, tmux)["agent"]["outcome"] == "pardoned"
    wait_for(lambda: tmux.capture("agent")[-1].strip() == "hung", what="the agent to hang")
    queue.file("agent", reason="check", requester="deacon")
    done = run_kennel(home, tmux)["agent"]
    assert (done["outcome"], done["attempt"]) == ("executed", 3)


def test_a_busy_session_that_answers_is_pardoned(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "busy", "busy-answering")
    WarrantQueue(home).file("busy", reason="loops", requester="deacon")
    done = run_kennel(home, tmux, timeouts=ANSWER_AT_1)["busy"]
    assert (done["outcome"], done["attempt"]) == ("pardoned", 1)
    assert tmux.has_session("busy")


def test_pardon_on_activity_pardons_a_busy_session(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "busy", "busy")
    WarrantQueue(home).file("busy", reason="loops", requester="deacon")
    done = run_kennel(home, tmux, timeouts=ANSWER_AT_1, pardon_on_activity=True)["busy"]
    assert (done["outcome"], done["attempt"]) == ("pardoned", 1)
    assert tmux.has_session("busy")


@pytest.mark.parametrize("boot", [10, 150])
def test_an_answer_after_a_burst_of_output_counts(home, tmux, tmp_path, boot):
    """The agent answers ALIVE amid a burst of output. With a pane whose history
    is full (boot=150 with history-limit 100 here; 2000 by default, which any
    long-running agent fills), tmux trims the oldest lines while the burst
    arrives, so the line number taken when the message was sent points past the
    answer: the dog must still find it."""
    tmux.new_session("keeper", "cat")
    tmux.server.cmd("set-option", "-g", "history-limit", "100")
    start_agent(tmux, tmp_path, "chatty", "chatty", boot=boot)
    WarrantQueue(home).file("chatty", reason="quiet too long", requester="deacon")
    done = run_kennel(home, tmux, timeouts=ANSWER_AT_1)["chatty"]
    assert (done["outcome"], done["attempt"]) == ("pardoned", 1)
    assert tmux.has_session("chatty")


# ------------------------------------------------------------------ pardons
@pytest.mark.parametrize("how", ["queue", "cli"])
def test_an_operator_pardon_mid_interrogation(home, tmux, tmp_path, how, leash_proc):
    start_agent(tmux, tmp_path, "mute", "silent")
    queue = WarrantQueue(home)
    warrant, _ = queue.file("mute", reason="stuck", requester="deacon")
    worker = KennelThread(home, tmux, timeouts=[5, 5, 5])
    worker.start()
    try:
        gate = wait_for(lambda: (lambda s: s if s and s.get("state") == "interrogating" else None)(
            active_state(queue, warrant["id"])), what="the dog to interrogate")
        if how == "queue":
            result, _ = queue.pardon(warrant["id"], source="ops", reason="mine")
            assert result == "requested"
        else:
            out = leash_proc("warrant", "pardon", warrant["id"], "--source", "ops", "--reason", "mine")
            assert out.code == 0, out
            assert f"pardoned {warrant['id']}: mute lives (pardoned)" in out.out
        wait_for(lambda: os.path.exists(queue.completed_path(warrant["id"])), timeout=5, what="the pardon")
    finally:
        worker.join(timeout=20)
    assert not worker.is_alive()
    done = read_json(queue.completed_path(warrant["id"]))
    # honoured while the dog waited at its first gate, before that gate's recorded deadline
    assert parse_iso(done["completed_at"]) < parse_iso(gate["next_timeout"])
    assert (done["outcome"], done["pardoned_by"], done["attempt"]) == ("pardoned", "ops", 1)
    assert "Pardoned by: ops (attempt 1)" in done["epitaph"]
    assert tmux.has_session("mute") and health_checks(tmux.capture("mute")) == 1
    assert not os.path.exists(queue.pardon_path(warrant["id"]))
    (line,) = AckLog(home).read(event="warrant_pardoned").entries
    assert line["source"] == "ops" and line["reason"] == "mine"


def test_pardon_of_a_pending_warrant_closes_it_at_once(home):
    queue = WarrantQueue(home)
    warrant, _ = queue.file("idle", reason="stuck", requester="deacon")
    result, done = queue.pardon(warrant["id"], source="ops")
    assert result == "pardoned"
    assert (done["outcome"], done["pardoned_by"], done["attempt"]) == ("pardoned", "ops", 0)
    assert queue.pending() == [] and queue.active() == []
    assert [c["id"] for c in queue.completed()] == [warrant["id"]]
    assert events_for(home, warrant["id"]) == Counter(warrant_filed=1, warrant_pardoned=1, epitaph=1)
    with pytest.raises(WarrantError):
        queue.pardon(warrant["id"], source="ops")


def test_one_live_warrant_per_target(home, tmux, cli):
    queue = WarrantQueue(home)
    first, created = queue.file("gone", reason="one", requester="deacon")
    again, created_again = queue.file("gone", reason="two", requester="witness")
    assert created and not created_again and again["id"] == first["id"] and again["reason"] == "one"
    out = cli("warrant", "file", "gone", "--reason", "three")
    assert out.code == 0 and f"already has a live warrant: {first['id']}" in out.out
    assert len(queue.pending()) == 1
    assert run_kennel(home, tmux)["gone"]["outcome"] == "already_dead"
    second, created = queue.file("gone", reason="four", requester="deacon")
    assert created and second["id"] != first["id"]
    filed = [e for e in AckLog(home).read(event="warrant_filed").entries]
    assert [e["warrant_id"] for e in filed] == [first["id"], second["id"]]


# ------------------------------------------------------------------ records
def test_every_action_is_in_the_ack_log(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "good", "answering")
    start_agent(tmux, tmp_path, "mute", "silent")
    queue = WarrantQueue(home)
    ids = {target: queue.file(target, reason=f"check {target}", requester="deacon")[0]["id"]
           for target in ("good", "mute", "idle")}
    queue.pardon(ids["idle"], source="ops")
    done = run_kennel(home, tmux)
    entries = AckLog(home).read().entries
    for target, warrant_id in ids.items():
        mine = [e for e in entries if e.get("warrant_id") == warrant_id]
        assert mine[0]["event"] == "warrant_filed" and mine[0]["session_id"] == target
        assert mine[0]["source"] == "deacon" and mine[0]["reason"] == f"check {target}"
        assert mine[-1]["event"] == "epitaph"
        record = done.get(target) or read_json(queue.completed_path(warrant_id))
        assert mine[-1]["reason"] == record["epitaph"] and mine[-1]["outcome"] == record["outcome"]
    assert [e["event"] for e in entries if e.get("warrant_id") == ids["good"]] == [
        "warrant_filed", "warrant_pardoned", "epitaph"]
    assert [e["event"] for e in entries if e.get("warrant_id") == ids["mute"]] == [
        "warrant_filed", "warrant_executed", "epitaph"]
    assert [e["event"] for e in entries if e.get("warrant_id") == ids["idle"]] == [
        "warrant_filed", "warrant_pardoned", "epitaph"]
    report = AckLog(home).verify()
    assert report.ok and report.lines == len(entries)


def test_state_files_while_working_and_when_done(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "mute", "silent")
    queue = WarrantQueue(home)
    warrant, _ = queue.file("mute", reason="stuck", requester="deacon")
    worker = KennelThread(home, tmux, timeouts=[0.6, 0.6, 0.6], dogs=3)
    worker.start()
    try:
        state = wait_for(lambda: (lambda s: s if s and s.get("state") == "interrogating" else None)(
            active_state(queue, warrant["id"])), what="the dog to interrogate")
        beat = wait_for(lambda: read_json(home / KENNEL_NAME, None), what="kennel.json")
        alive = running_kennel(home)
    finally:
        worker.join(timeout=20)
    assert {"id", "warrant", "state", "attempt", "started_at", "last_message_at", "next_timeout"} <= set(state)
    assert state["id"] == warrant["id"] and state["warrant"] == warrant and state["attempt"] >= 1
    assert parse_iso(state["next_timeout"]) - parse_iso(state["last_message_at"]) == pytest.approx(0.6, abs=1e-5)
    assert {"pid", "host", "started_at", "heartbeat_at", "dogs"} <= set(beat)
    assert beat["pid"] == os.getpid() and beat["dogs"] == 3
    assert alive is not None and alive["pid"] == os.getpid()
    # finished: the record moved to completed, with its verdict and epitaph
    assert not os.path.exists(queue.active_path(warrant["id"]))
    done = read_json(queue.completed_path(warrant["id"]))
    assert done["outcome"] == "executed" and done["epitaph"].startswith("EPITAPH: mute\nVerdict: EXECUTED")
    assert done["state"] == "complete" and done["completed_at"]
    stopped = read_json(home / KENNEL_NAME)
    assert stopped.get("stopped_at") and running_kennel(home) is None
    assert not os.path.exists(os.path.join(queue.active_dir, f"{warrant['id']}.done"))  # read and tidied


def test_a_finished_dog_reports_in_a_done_file_the_kennel_tidies(home):
    queue = WarrantQueue(home)
    warrant, _ = queue.file("gone", reason="stuck", now=1_800_000_000.0)
    state, fd = queue.claim_next(owner={"pid": os.getpid(), "host": "here"}, now=1_800_000_001.0)
    try:
        finish(queue, state, "already_dead", now=1_800_000_003.5, timeouts=FAST)
    finally:
        queue.release(warrant["id"], fd)
    report_path = os.path.join(queue.active_dir, f"{warrant['id']}.done")
    assert read_json(report_path) == {"dog_id": warrant["id"], "warrant_id": warrant["id"], "target": "gone",
                                      "outcome": "already_dead", "duration": "2.5s"}
    assert read_json(queue.completed_path(warrant["id"]))["outcome"] == "already_dead"
    Kennel(home, tmux=object())._tidy_done_files()
    assert not os.path.exists(report_path)


# ------------------------------------------------------------------ processes
def test_a_killed_kennel_is_resumed_where_it_stopped(home, tmux, tmp_path):
    """SIGKILL the kennel while its dog waits at attempt 1; the next kennel
    resumes the same dog, keeps the first deadline and sends no extra message."""
    first_gate = 3.0
    write_config(home, [first_gate, 0.5, 0.5])
    start_agent(tmux, tmp_path, "mute", "silent")
    queue = WarrantQueue(home)
    warrant, _ = queue.file("mute", reason="stuck", requester="deacon")
    first = kennel_process(home, tmux.socket, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        before = wait_for(lambda: (lambda s: s if s and s.get("state") == "interrogating" else None)(
            active_state(queue, warrant["id"])), what="attempt 1")
        first.send_signal(signal.SIGKILL)
    finally:
        stop_process(first)
    assert before["attempt"] == 1
    deadline = parse_iso(before["next_timeout"])
    assert active_state(queue, warrant["id"])["next_timeout"] == before["next_timeout"]
    # restart well before the first gate closes, but late enough that a fresh
    # gate would close visibly later than the recorded one
    time.sleep(max(0.0, parse_iso(before["last_message_at"]) + 1.5 - time.time()))
    second = kennel_process(home, tmux.socket, "--until-idle", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        resumed = wait_for(lambda: (lambda s: s if s and s.get("attempt") == 2 else None)(
            active_state(queue, warrant["id"])), timeout=15, interval=0.01, what="attempt 2")
        out, err = second.communicate(timeout=30)
    finally:
        stop_process(second)
    assert second.returncode == 0, err
    assert resumed["id"] == warrant["id"] and resumed["started_at"] == before["started_at"]
    assert resumed["kennel"]["pid"] == second.pid
    # the resumed gate closed at the recorded deadline, before a fresh gate of the second kennel could have
    restarted = read_json(home / KENNEL_NAME)
    assert restarted["pid"] == second.pid
    assert deadline <= parse_iso(resumed["last_message_at"]) < parse_iso(restarted["started_at"]) + first_gate
    done = read_json(queue.completed_path(warrant["id"]))
    assert (done["id"], done["outcome"], done["attempt"]) == (warrant["id"], "executed", 3)
    assert f"{warrant['id']}  mute  executed" in out.decode()
    screen = done["final_screen"].splitlines()
    assert health_checks(screen) == 3
    assert [sum("Attempt: %d/3" % n in line for line in screen) for n in (1, 2, 3)] == [1, 1, 1]
    assert not tmux.has_session("mute")
    assert events_for(home, warrant["id"])["epitaph"] == 1


class KilledHere(Exception):
    pass


def test_a_kennel_killed_inside_finish_leaves_nothing_behind(home, tmux, monkeypatch):
    """The kennel dies between finish()'s first write (the finished state, still
    in dogs/active) and its move to dogs/completed. The next kennel must complete
    the move, log the epitaph once, and go idle (not re-claim it forever)."""
    import leash.core.state.warrants.outcome as outcome_module

    queue = WarrantQueue(home)
    warrant, _ = queue.file("gone", reason="stuck", requester="deacon")
    state, fd = queue.claim_next(owner={"pid": 0, "host": "elsewhere"})

    class DiesBeforeTheMove:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def replace(src, dst):
            raise KilledHere(dst)

    with monkeypatch.context() as patch:
        patch.setattr(outcome_module, "os", DiesBeforeTheMove())
        with pytest.raises(KilledHere):
            outcome_module.finish(queue, state, "already_dead", now=time.time(), timeouts=FAST)
    os.close(fd)  # the dead kennel's claim goes with it
    assert read_json(queue.active_path(warrant["id"]))["state"] == "complete"
    assert goes_idle(kennel_process(home, tmux.socket, "--until-idle", stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)), "the next kennel never went idle"
    assert queue.active() == []
    (done,) = queue.completed()
    assert (done["id"], done["outcome"]) == (warrant["id"], "already_dead")
    assert events_for(home, warrant["id"]) == Counter(warrant_filed=1, epitaph=1)
    assert AckLog(home).verify().ok


def test_more_orphans_than_dogs_are_all_resumed(home, tmux):
    """Three dogs were left by a dead kennel; the next kennel has one dog."""
    queue = WarrantQueue(home)
    ids = []
    for n in range(3):
        ids.append(queue.file(f"gone-{n}", reason="stuck", requester="deacon")[0]["id"])
        _, fd = queue.claim_next(owner={"pid": 0, "host": "elsewhere"})
        os.close(fd)  # the dead kennel's claims go with it
    assert len(queue.active()) == 3
    idle = goes_idle(kennel_process(home, tmux.socket, "--until-idle", "--dogs", "1", stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE))
    assert queue.active() == []
    assert sorted(c["id"] for c in queue.completed()) == sorted(ids)
    assert idle, "the kennel never went idle"


def test_two_kennels_on_one_queue_finish_each_warrant_once(home, tmux, tmp_path):
    write_config(home, [0.5, 0.5, 0.5])
    targets = {f"mute-{n}": "silent" for n in range(4)} | {f"good-{n}": "answering" for n in range(2)}
    for name, kind in targets.items():
        start_agent(tmux, tmp_path, name, kind)
    queue = WarrantQueue(home)
    ids = {name: queue.file(name, reason="sweep", requester="deacon")[0]["id"] for name in targets}
    kennels = [kennel_process(home, tmux.socket, "--until-idle", "--dogs", "2", stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    outputs = []
    try:
        for proc in kennels:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            outputs.append({line.split()[0] for line in out.decode().splitlines() if line.startswith("w-")})
    finally:
        for proc in kennels:
            stop_process(proc)
    assert outputs[0] | outputs[1] == set(ids.values())
    assert not outputs[0] & outputs[1]
    assert all(outputs), "both kennels should have worked"
    completed = queue.completed()
    assert sorted(c["id"] for c in completed) == sorted(ids.values())
    assert queue.pending() == [] and queue.active() == []
    epitaphs = Counter(e["warrant_id"] for e in AckLog(home).read(event="epitaph").entries)
    assert epitaphs == Counter(ids.values())
    assert AckLog(home).verify().ok
    by_target = {c["warrant"]["target"]: c for c in completed}
    for name, kind in targets.items():
        if kind == "silent":
            assert by_target[name]["outcome"] == "executed"
            assert health_checks(by_target[name]["final_screen"]) == 3
            assert not tmux.has_session(name)
        else:
            assert by_target[name]["outcome"] == "pardoned"
            assert health_checks(tmux.capture(name)) == 1


# ------------------------------------------------------------------ CLI
def test_warrant_list_and_status_json(home, tmux, tmp_path, cli):
    start_agent(tmux, tmp_path, "mute", "silent")
    queue = WarrantQueue(home)
    working, _ = queue.file("mute", reason="stuck", requester="deacon")
    empty = cli("warrant", "list", "--json")
    assert empty.code == 0 and empty.json() == {"pending": [queue.pending()[0]], "active": [], "completed": [],
                                                "quarantined": [], "unreadable": []}
    worker = KennelThread(home, tmux, timeouts=[5, 5, 5], dogs=1)  # one dog: the second warrant waits
    worker.start()
    try:
        wait_for(lambda: (active_state(queue, working["id"]) or {}).get("state") == "interrogating",
                 what="the dog to interrogate")
        waiting, _ = queue.file("later", reason="queued", requester="deacon")
        listing = cli("warrant", "list", "--json").json()
        status = cli("status", "--json").json()
        human = cli("warrant", "list").out
        queue.pardon(working["id"], source="ops")
    finally:
        worker.join(timeout=20)
    assert set(listing) == {"pending", "active", "completed", "quarantined", "unreadable"}
    # The kennel claims one warrant ahead of its free dogs (CLAIM_AHEAD): the
    # second may already be claimed, received but not worked, or still pending.
    ahead = [w for w in listing["active"] if w["id"] == waiting["id"]]
    # (A claim writes the dog's state before it removes the pending file: for a
    # moment a listing may show the warrant in both.)
    if listing["pending"]:
        assert [w["id"] for w in listing["pending"]] == [waiting["id"]]
        assert set(listing["pending"][0]) == {"id", "target", "target_id", "reason", "requester", "filed_at"}
    assert [w["state"] for w in ahead] in ([], ["received"])
    assert listing["pending"] or ahead
    (dog,) = [w for w in listing["active"] if w["id"] == working["id"]]
    assert dog["id"] == working["id"] and dog["state"] == "interrogating" and dog["warrant"] == working
    assert listing["completed"] == []
    live = {w["id"]: w for w in status["warrants"]}
    assert set(live) == {working["id"], waiting["id"]}
    assert live[working["id"]]["target"] == "mute" and live[working["id"]]["state"] == "interrogating"
    assert live[working["id"]]["attempt"] == 1
    assert live[waiting["id"]]["state"] in ("pending", "received") and live[waiting["id"]]["attempt"] == 0
    assert "interrogating  attempt 1/3" in human
    # finished warrants leave the status; the list keeps them
    assert cli("status", "--json").json()["warrants"] == []
    finished = cli("warrant", "list", "--json").json()
    assert finished["pending"] == finished["active"] == []
    assert {c["id"]: c["outcome"] for c in finished["completed"]} == {working["id"]: "pardoned",
                                                                      waiting["id"]: "already_dead"}


def test_warrant_cli_exit_codes(home, cli):
    missing = cli("warrant", "pardon", "nope")
    assert missing.code == 1 and "nope" in missing.err
    no_reason = cli("warrant", "file", "x")
    assert no_reason.code == 2 and "--reason" in no_reason.err
    assert WarrantQueue(home).pending() == []
    filed = cli("warrant", "file", "x", "--reason", "why")
    assert filed.code == 0 and "filed w-" in filed.out
    warrant_id = WarrantQueue(home).pending()[0]["id"]
    assert cli("warrant", "pardon", warrant_id).code == 0
    finished = cli("warrant", "pardon", warrant_id)
    assert finished.code == 1 and "finished" in finished.err
