"""The core's readers and the kennel hold a ``Backend`` and use nothing but
what its protocols name: the fleet view, ``leash status``, ``leash why``,
``leash doctor`` and the kennel with its dogs each take ``backend=`` and give
the same answer through a backend that offers only the protocol
(``leash.core.store.protocols``) as they give over the home itself. The
backend under the protocol is the real file backend of the test's home."""
from __future__ import annotations

import asyncio

import pytest

from leash.core.store import protocols
from leash.core.store.files import FileBackend

from ..support.backends import ProtocolOnly
from ..support.waiting import wait_for

NOW = 1_800_000_000.0


@pytest.fixture
def backend(home):
    return ProtocolOnly(FileBackend(home), protocols.Backend)


def seed(home) -> str:
    """A little of everything: a stop, a lock, a session, a halt, a warrant, a breaker."""
    files = FileBackend(home)
    files.sessions.observe("claude-1", now=NOW - 5, tool="Bash", tmux_session="agent-1", cwd=str(home))
    files.sessions.observe("claude-2", now=NOW - 5, tool="Edit", tmux_session="agent-2", parent="claude-1")
    files.stops.stop("claude-1", source="ops@test", reason="look first", now=NOW - 4)
    files.locks.lock("ezra", hours=2, source="ops@test", reason="mine", now=NOW - 3)
    files.sessions.set_entity("claude-2", "ezra", now=NOW - 3)
    halt = files.halts.record({"session_token": "claude-2", "halt_type": "security", "severity": "high",
                               "description": "a high halt"}, now=NOW - 2).halt_id
    files.warrants.file("agent-9", reason="wedged", now=NOW - 1)
    files.breakers.record_boot("gw", window_seconds=60, now=NOW - 1)
    return halt


def test_the_fleet_view_reads_only_through_its_backend(home, backend):
    from leash.core.views.fleet import view

    seed(home)
    tmux = [{"name": "agent-1", "id": "$1", "created": NOW - 60, "panes": []}]
    through = view(backend=backend, tmux_sessions=tmux, now=NOW)
    assert through == view(str(home), tmux_sessions=tmux, now=NOW)
    states = {row["name"]: row["state"] for row in through["sessions"]}
    assert states == {"agent-1": "stopped", "claude-2": "halted"}
    assert [h["description"] for h in through["halts"]] == ["a high halt"] and through["warrants"]


def test_status_reads_only_through_its_backend(home, backend):
    from leash.core.views.status import snapshot

    seed(home)
    state = snapshot(backend=backend, now=NOW)
    assert state == snapshot(str(home), now=NOW)
    assert [s["session_id"] for s in state["stopped_sessions"]] == ["claude-1"]
    assert [h["entity"] for h in state["hands_off"]] == ["ezra"] and len(state["pending_halts"]) == 1


def test_why_reads_only_through_its_backend(home, backend):
    from leash.core.views.why import why

    halt = seed(home)
    answer = why(session="claude-2", backend=backend, now=NOW, tmux_session_id="")
    assert answer == why(str(home), "claude-2", now=NOW, tmux_session_id="")
    found = [(rule["rule"], rule["subject"]) for rule in answer["rules"]]
    # its parent is stopped
    assert found == [("session_stop", "claude-1"), ("hands_off", "ezra"), ("session_halted", "claude-2")]
    assert answer["rules"][2]["halt_id"] == halt


def test_doctor_examines_the_stores_through_the_backend(home, backend):
    from leash.core.views.doctor import examine

    seed(home)
    findings = list(examine(backend=backend, now=NOW))
    assert findings == list(examine(str(home), now=NOW))
    subjects = {finding.subject for finding in findings}
    assert {"home", "config.toml", "stops.json", "halts.db", "warrants"} <= subjects
    assert not [f for f in findings if f.level == "fail" and f.subject != "claude hooks"]


def test_the_kennel_works_through_its_backend(home, backend):
    from leash.core.warrants.kennel import Kennel, hands_off_check, running_kennel

    seed(home)
    assert hands_off_check(backend=backend)(["agent-2"], now=NOW) == "ezra"  # an agent inside is locked
    assert hands_off_check(backend=backend)(["agent-7"], now=NOW) is None
    kennel = Kennel(backend=backend, until_idle=True, timeouts=[0.2, 0.2, 0.2], poll_seconds=0.05,
                    handle_signals=False)
    finished = asyncio.run(kennel.run())
    assert [(d["warrant"]["target"], d["outcome"]) for d in finished] == [("agent-9", "already_dead")]
    assert backend.warrants.active() == [] and running_kennel(backend=backend) is None
    assert [line.event for line in backend.acklog.read()].count("epitaph") == 1


def test_a_kennel_that_loses_a_claim_stops_that_dog_and_resumes_the_warrant(home, tmux_socket, monkeypatch):
    """The heartbeat renews each claim; a claim lost (a shared store's lease
    gone, here a file claim let go under the kennel) stops its dog, so two
    dogs never work one warrant, and the orphan scan takes the warrant up
    again at the state and deadline it was saved with: no second message."""
    import threading
    import time

    from leash.core.base.tmux import Tmux
    from leash.core.warrants.kennel import Kennel

    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    server = Tmux(str(tmux_socket))
    try:
        server.new_session("mute", "echo ready; exec cat > /dev/null", width=120)
        wait(lambda: any("ready" in line for line in server.capture("mute")), "the agent to start")
        files = FileBackend(home)
        warrant, _ = files.warrants.file("mute", reason="stuck", requester="ops")
        kennel = Kennel(home, tmux=server, timeouts=[30, 30, 30], poll_seconds=0.05, handle_signals=False)
        worker = threading.Thread(target=lambda: asyncio.run(kennel.run()), daemon=True)
        worker.start()
        try:
            first = wait(lambda: next((d for d in files.warrants.active() if d.state == "interrogating"), None),
                         "the dog to interrogate")
            lost = kennel.claims[warrant.id]
            lost.release()
            taken_again = wait(lambda: (lambda c: c if c is not None and c is not lost else None)(
                kennel.claims.get(warrant.id)), "the warrant to be claimed again")
            assert (taken_again.state.attempt, taken_again.state.next_timeout) == (1, first.next_timeout)
            assert len(kennel.working) == 1
            assert sum("HEALTH CHECK" in line for line in server.capture("mute", 200)) == 1
            assert files.warrants.pardon(warrant.id, source="ops", reason="seen", now=time.time())[0] == "requested"
            done = wait(lambda: files.warrants.completed(), "the pardon to be honoured")
            assert [(d.id, d.outcome) for d in done] == [(warrant.id, "pardoned")]
        finally:
            kennel.request_stop()
            worker.join(timeout=20)
    finally:
        server.kill_server()


def wait(predicate, what: str, timeout: float = 15.0):
    return wait_for(predicate, timeout=timeout, what=what)
