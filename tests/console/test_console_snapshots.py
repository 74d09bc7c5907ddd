"""How the console looks (pytest-textual-snapshot), one class per screen, on a
seeded fleet at a fixed time with a fixed tmux list."""
from __future__ import annotations

import pytest

from ..support.console import settle

SIZE = (160, 45)


@pytest.fixture
def snapshot_app(console_app):
    return console_app()


async def _settled(pilot):
    await settle(pilot, pilot.app)


async def _select_row(pilot, panel: str, contains: str):
    table = pilot.app.panel(panel).table
    table.focus()
    key = next(str(k.value) for k in table.rows if contains in str(k.value))
    table.move_cursor(row=table.get_row_index(key))
    await _settled(pilot)  # the focus change and the detail line's answer have landed


async def _open(pilot, *keys: str):
    """Press ``keys`` (one opens a dialog), its field's cursor steady for the picture."""
    await pilot.press(*keys)
    await _settled(pilot)
    field = pilot.app.focused
    if field is not None and hasattr(field, "cursor_blink"):
        field.cursor_blink = False
    await _settled(pilot)


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


def dialog(*keys: str, on: tuple[str, str] | None = None):
    """What runs before the picture of a dialog: the row ``on`` (a panel and
    what its row's key holds) selected, then ``keys`` pressed (one opens it)."""
    async def run_before(pilot):
        await _settled(pilot)
        if on is not None:
            await _select_row(pilot, *on)
        await _open(pilot, *keys)
    return run_before


class TestModals:
    def test_stop_session_modal(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=dialog("s", on=("sessions", "agent-silent")))

    def test_fleet_stop_modal(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=dialog("S"))

    def test_dismiss_critical_halt_modal(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=dialog("d", on=("halts", "halt:")))

    def test_pardon_modal(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=dialog("p", on=("warrants", "warrant:")))

    def test_hands_off_modal(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=dialog("h", on=("sessions", "agent-answers")))

    # 80x24: the compact dialog; every field drawn as one (its own background, its placeholder while empty)
    def test_stop_session_modal_80x24(self, snap_compare, snapshot_app):
        typed = dialog("s", *"stop it, yes", "enter", on=("sessions", "agent-silent"))
        assert snap_compare(snapshot_app, terminal_size=(80, 24), run_before=typed)

    def test_lock_entity_modal_80x24(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=(80, 24), run_before=dialog("4", "h"))

    def test_allow_approval_modal_80x24(self, snap_compare, snapshot_app):
        assert snap_compare(snapshot_app, terminal_size=(80, 24), run_before=dialog("7", "y"))
