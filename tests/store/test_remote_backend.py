"""``RemoteBackend``: the store protocols over a live daemon's operator socket,
as the console uses them where it cannot read the home. The peer acts, never
the name a client gives; records and errors come back as their own classes."""
from __future__ import annotations

import json
import os
import pwd

import pytest

from leash.core.state.stop import NotStopped
from leash.core.store.records import LockRecord, LogLine, StopRecord, StopState
from leash.core.store.remote import RemoteBackend, RemoteStoreError

from ..support.daemon import sockets

NOW = 1_900_000_000.0


@pytest.fixture
def remote(daemon, home):
    return RemoteBackend(sockets(home)[1])


def me(daemon) -> str:
    return f"{pwd.getpwuid(os.getuid()).pw_name}@{daemon.host}"


def test_stops_and_locks_come_back_as_records_and_the_peer_acts(remote, daemon):
    stopped = remote.stops.stop("s1", source="mallory", reason="hold", now=NOW)
    assert isinstance(stopped, StopRecord) and stopped.source == me(daemon) and stopped.reason == "hold"
    state = remote.stops.current()
    assert isinstance(state, StopState) and state.sessions["s1"].key == "s1" and state.fleet is None
    lock = remote.locks.lock("billing", hours=1, reason="audit", source="mallory", now=NOW)
    assert isinstance(lock, LockRecord) and lock.entity == "billing" and lock.source == me(daemon)
    assert remote.locks.covering(["billing"], now=NOW).entity == "billing"
    assert remote.stops.covering(["s1"]) == ["session", "s1"]
    lines = remote.acklog.read()
    assert [line.event for line in lines] == ["stop_ack", "hands_off"] and isinstance(lines[0], LogLine)
    assert lines.torn_bytes == 0


def test_errors_come_back_as_their_class(remote):
    with pytest.raises(NotStopped):
        remote.stops.resume("nobody", source="ops")
    with pytest.raises(RemoteStoreError, match="offers no 'claim_next'"):
        remote.warrants.claim_next(owner={})
    with pytest.raises(RemoteStoreError, match="offers no 'snapshot'"):
        remote.stops.snapshot()  # the file backend has it; the protocol does not name it


def test_a_transaction_is_applied_as_one_by_the_daemon(remote, daemon, home):
    with remote.transaction(now=NOW) as step:
        step.stop("s2", source="mallory", reason="full stop")
        step.lock("ezra", hours=2, source="mallory", reason="full stop")
    assert remote.stops.current().sessions["s2"].source == me(daemon)
    assert remote.locks.lock_of("ezra", now=NOW).source == me(daemon)
    stopped, locked = step.results  # what the daemon stored, as a local step says it
    assert isinstance(stopped, StopRecord) and stopped.key == "s2" and stopped.reason == "full stop"
    assert isinstance(locked, LockRecord) and locked.entity == "ezra" and locked.expires_at
    assert locked.source == me(daemon)


def test_the_console_view_and_halt_units_read_through_it(remote, home):
    from leash.core.state.halts import api
    from leash.core.views.fleet import view

    api.record_halt({"session_token": "s3", "halt_type": "security", "severity": "critical",
                     "description": "a key in a commit"}, home=home)
    with remote.halts.reading() as unit:
        assert unit.states() == {"s3": "halted"} and unit.pending_counts()["critical"] == 1
    data = view(backend=remote, tmux_sessions=[])
    assert data["summary"]["halts"]["critical"] == 1 and data["halts"][0]["session_id"] == "s3"


async def test_the_console_reads_and_acts_through_the_daemon(remote, daemon, home):
    """The console on a RemoteBackend: its view comes from the daemon, a stop
    made with its keys is the daemon's write with the peer as source (not the
    console's own ``ops@test``), and the why screen answers through it."""
    import time

    from leash.core.views.protocol import StopProtocol

    from ..support.console import CONSOLE_TMUX, SIZE, console, seed_console_fleet, select, settle

    seed_console_fleet(home)
    app = console(home, backend=remote, list_tmux=lambda: CONSOLE_TMUX, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.view_data and any(row["name"] == "agent-answers" for row in app.view_data["sessions"])
        await select(pilot, app, "sessions", "agent-answers")
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("ctrl+y")  # the dialog's confirm (y in its reason field is a letter)
        await settle(pilot, app)
        assert StopProtocol(home).stops.snapshot()["sessions"]["agent-answers"]["source"] == me(daemon)
        await pilot.press("i")
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "WhyScreen"
        assert "session_stop" in json.dumps(app.screen.answer)  # the daemon's stop, read back through it


async def test_the_ack_log_screen_reads_and_verifies_through_the_daemon(remote, daemon, home):
    import time

    from ..support.console import CONSOLE_TMUX, SIZE, console, seed_console_fleet, settle

    seed_console_fleet(home)
    app = console(home, backend=remote, list_tmux=lambda: CONSOLE_TMUX, clock=time.time)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("l")
        for _ in range(400):  # a loaded machine: verification reads the log through the daemon
            await settle(pilot, app, cycles=1)
            status = str(app.screen.query_one("#acklog-verify").render())
            if "verifying" not in status:
                break
        assert app.screen.__class__.__name__ == "AckLogScreen"
        assert app.screen.query_one("#acklog-table").row_count >= 1
        assert "BROKEN" not in status and "verifying" not in status, status
