"""How the console looks (pytest-textual-snapshot), one class per screen, on a
seeded fleet at a fixed time with a fixed tmux list."""
from __future__ import annotations

import pytest

SIZE = (160, 45)


@pytest.fixture
def snapshot_app(console_app):
    return console_app()


async def _settled(pilot):
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def _select_row(pilot, panel: str, contains: str):
    table = pilot.app.panel(panel).table
    table.focus()
    key = next(str(k.value) for k in table.rows if contains in str(k.value))
    table.move_cursor(row=table.get_row_index(key))
    await _settled(pilot)  # the focus change and the detail line's answer have landed


class TestMainScreen:
    def test_seeded_fleet(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=_settled)

    def test_halts_panel_focused(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await pilot.press("2")
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)


class TestScreens:
    def test_help_screen(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await pilot.press("question_mark")
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)

    def test_ack_log_screen(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await pilot.press("l")
            await _settled(pilot)
            await pilot.press("up", "up")  # the detail line shows a stop's (the newest names a random warrant id)
            await _settled(pilot)
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)


class TestModals:
    def test_stop_session_modal(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await _select_row(pilot, "sessions", "agent-silent")
            await pilot.press("s")
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)

    def test_fleet_stop_modal(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await pilot.press("S")
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)

    def test_dismiss_critical_halt_modal(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await _select_row(pilot, "halts", "halt:")
            await pilot.press("d")
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)

    def test_pardon_modal(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await _select_row(pilot, "warrants", "warrant:")
            await pilot.press("p")
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)

    def test_hands_off_modal(self, snap_compare, snapshot_app):
        async def run_before(pilot):
            await _settled(pilot)
            await _select_row(pilot, "sessions", "agent-answers")
            await pilot.press("h")
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)
