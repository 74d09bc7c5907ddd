"""The console's stop modal with "also interrupt the call in flight": the same
core call as ``leash stop --interrupt`` (Pilot drives the keys; a real pane
on a private tmux server records what it gets)."""
from __future__ import annotations

import time
from contextlib import asynccontextmanager

import pytest

from leash.core import StopProtocol
from leash.core.base.tmux import Tmux
from leash.core.state.acklog import AckLog

from ..support.console import console, open_dialog, pressed, running
from ..support.interrupt import read, start_headless, start_in_pane, stop, wait_ready

SIZE = (160, 45)
SETTLE_SECONDS = 0.5  # long enough for a stray key to arrive, if one were sent


def interrupts(home) -> list[dict]:
    return [line for line in AckLog(home).read().entries if line["event"] == "interrupt"]


@pytest.fixture
def agent_pane(home, tmp_path, tmux_socket, monkeypatch):
    """``agent-esc``: an interactive Claude Code stand-in in a pane, its call in flight."""
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    where = tmp_path / "agent"
    start_in_pane(tmux_socket, "agent-esc", where, home, "sess-console")
    wait_ready(where)
    return where


def make_console(home, tmux_socket):
    return console(home, tmux=Tmux(str(tmux_socket)), clock=time.time)


@asynccontextmanager
async def stop_dialog(app, key: str = "s", session: str = "agent-esc"):
    """``app`` running with the dialog of ``key`` up (``s``: the stop of ``session``): the pilot."""
    async with running(app, SIZE) as pilot:
        await open_dialog(pilot, app, key, on=("sessions", session) if key == "s" else None)
        yield pilot


async def test_stop_with_interrupt_presses_escape_in_the_pane(home, agent_pane, tmux_socket):
    app = make_console(home, tmux_socket)
    async with stop_dialog(app) as pilot:
        await pilot.press("enter", "i")  # from the reason to the Stop button, where i ticks the box
        await pressed(pilot, "y")
    assert StopProtocol(home).is_stopped("sess-console")
    (line,) = interrupts(home)
    assert (line["session_id"], line["method"], line["source"]) == ("sess-console", "escape", "ops@test")
    time.sleep(SETTLE_SECONDS)
    assert (agent_pane / "keys").read_bytes() == b"\x1b"


async def test_a_plain_stop_presses_nothing(home, agent_pane, tmux_socket):
    app = make_console(home, tmux_socket)
    async with stop_dialog(app) as pilot:
        assert app.screen.query_one("#confirm-option").value is False  # offered, not ticked
        await pressed(pilot, "ctrl+y")
    assert StopProtocol(home).is_stopped("sess-console")
    time.sleep(SETTLE_SECONDS)
    assert read(agent_pane, "keys") == "" and interrupts(home) == []


async def test_ticking_then_cancelling_changes_nothing(home, agent_pane, tmux_socket):
    app = make_console(home, tmux_socket)
    async with stop_dialog(app) as pilot:
        await pilot.press("enter", "i")
        assert app.screen.query_one("#confirm-option").value is True
        await pressed(pilot, "n")  # on the button: cancels
    assert not StopProtocol(home).is_stopped("sess-console")
    time.sleep(SETTLE_SECONDS)
    assert read(agent_pane, "keys") == "" and interrupts(home) == []


async def test_the_key_types_into_the_reason_field_instead_of_ticking(home, agent_pane, tmux_socket):
    app = make_console(home, tmux_socket)
    async with stop_dialog(app) as pilot:
        assert app.focused.id == "confirm-text"  # the reason has the focus from the start
        await pilot.press("i", "t")
        assert app.screen.query_one("#confirm-text").value == "it"
        assert app.screen.query_one("#confirm-option").value is False
        await pilot.press("enter")  # to the Stop button, never a confirm
        assert not StopProtocol(home).is_stopped("sess-console")
        await pressed(pilot, "y")
    assert StopProtocol(home).stops.snapshot()["sessions"]["agent-esc"]["reason"] == "it"
    assert interrupts(home) == []


async def test_fleet_stop_with_interrupt(home, agent_pane, tmux_socket):
    app = make_console(home, tmux_socket)
    async with stop_dialog(app, "S") as pilot:
        await pilot.press("enter", "i")
        await pressed(pilot, "y")
    assert StopProtocol(home).is_stopped("anyone")
    (line,) = interrupts(home)
    assert line["session_id"] == "sess-console" and line["reason"] == ""  # the operator typed none; none is made up
    time.sleep(SETTLE_SECONDS)
    assert (agent_pane / "keys").read_bytes() == b"\x1b"


async def test_nothing_to_interrupt_says_so_and_the_stop_holds(home, tmux_socket, monkeypatch):
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    app = console(home, list_tmux=lambda: [{"id": "$9", "name": "agent-esc", "created": 0, "attached": False,
                                            "panes": [{"id": "%9", "pid": 1, "command": "bash", "active": True}]}],
                  clock=time.time)
    async with stop_dialog(app) as pilot:
        await pilot.press("enter", "i")
        await pressed(pilot, "y")
        said = [n.message for n in app._notifications]
    assert StopProtocol(home).is_stopped("agent-esc")
    assert any("agent-esc is stopped, but nothing could be interrupted" in message for message in said), said


async def test_through_leashd_the_console_interrupts_a_headless_session(home, tmp_path, daemon):
    """With a daemon, the console's keys act through its operator socket
    (RemoteBackend); the session it stops is a headless one: SIGINT."""
    from leash.core.store.remote import RemoteBackend

    where = tmp_path / "agent"
    proc = start_headless(where, home, "sess-remote")
    try:
        wait_ready(where)
        app = console(home, list_tmux=lambda: [], backend=RemoteBackend(str(home / "run" / "operator.sock")),
                      clock=time.time)
        async with stop_dialog(app, session="sess-remote") as pilot:
            await pressed(pilot, "enter", "i", "y")
        assert proc.wait(timeout=10) == 130
        assert read(where, "signals") == "SIGINT\n"
        (line,) = interrupts(home)
        assert (line["session_id"], line["method"]) == ("sess-remote", "sigint")
        assert StopProtocol(home).is_stopped("sess-remote")
    finally:
        stop(proc)
