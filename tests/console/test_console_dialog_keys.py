"""The confirmation dialogs under the operator's fingers, driven with Pilot:
the keys the dashboard ignores while a dialog closes (its settle, on a clock
the test moves), what a dialog shows at 80x24 (every field drawn, a check box
that reads ticked or not, the whole diff of an approval or how many lines are
below), the names it uses and the keys its buttons name."""
from __future__ import annotations

import time

import pytest

from leash.console.tui.screens.confirm import SETTLE_SECONDS
from leash.core import StopProtocol

from ..support.console import pressed, running, screen_text, select, settle


class KeyClock:
    """The dashboard's key clock, moved only by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def screen_name(app) -> str:
    return app.screen.__class__.__name__


@pytest.fixture
def clocked(console_app):
    """A console whose key clock only the test moves, and that clock."""
    clock = KeyClock()
    return console_app(clock=time.time, key_clock=clock), clock


async def test_keys_typed_on_after_a_dialog_closes_do_nothing_until_it_settles(clocked, home):
    app, clock = clocked
    async with running(app) as pilot:
        await select(pilot, app, "sessions", "agent-silent")
        assert await pressed(pilot, "s", *"quiet", "ctrl+y", "l", "s", "S", "enter", "q") == "DashboardScreen"
        assert StopProtocol(home).stops.snapshot()["sessions"]["agent-silent"]["reason"] == "quiet"
        assert app.return_code is None  # no log, dialog, peek, quit
        assert app.check_action("ack_log", ()) is None  # shown dimmed in the footer meanwhile
        clock.now += SETTLE_SECONDS
        assert await pressed(pilot, "l") == "AckLogScreen"


async def test_a_cancelled_dialog_settles_the_same(clocked):
    app, clock = clocked
    async with running(app) as pilot:
        await select(pilot, app, "sessions", "agent-silent")
        assert await pressed(pilot, "w", *"no", "ctrl+n", "w", "question_mark") == "DashboardScreen"
        clock.now += SETTLE_SECONDS - 0.01
        assert await pressed(pilot, "w") == "DashboardScreen"
        clock.now += 0.01
        assert await pressed(pilot, "w") == "ConfirmScreen"


async def test_a_key_that_would_open_a_dialog_but_is_refused_settles_too(clocked, home):
    app, _ = clocked
    async with running(app) as pilot:
        await select(pilot, app, "sessions", "agent-answers")
        # refused (nothing stops it); "s" and "w" would open dialogs
        assert await pressed(pilot, "u", *"resume now") == "DashboardScreen"
        assert "agent-answers" not in StopProtocol(home).stops.snapshot()["sessions"]


async def test_ctrl_y_confirms_from_a_field_what_was_typed_and_no_more(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("S", *"stop it, yes", "ctrl+y", *"and more")
        await settle(pilot, app)
        fleet = StopProtocol(home).stops.snapshot()["fleet"]
        assert fleet is not None and fleet["reason"] == "stop it, yes"
        assert screen_name(app) == "DashboardScreen"


async def test_check_boxes_read_ticked_or_not(console_app):
    app = console_app(clock=time.time)
    async with running(app, (80, 24)) as pilot:
        await select(pilot, app, "sessions", "agent-silent")
        await pilot.press("s", "enter")
        await settle(pilot, app)
        assert "[ ] Also interrupt the call in flight" in screen_text(app)
        await pilot.press("i")
        await settle(pilot, app)
        assert "[X] Also interrupt the call in flight" in screen_text(app)


async def test_at_80x24_an_empty_field_is_drawn_with_its_placeholder(console_app):
    app = console_app(clock=time.time)
    async with running(app, (80, 24)) as pilot:
        await pilot.press("4", "h")  # the entity field has the cursor; the reason below is empty
        await settle(pilot, app)
        text = screen_text(app)
        assert "name or path:<glob> (required)" in text and "type it here (optional)" in text, text
        reason = app.screen.query_one("#confirm-text")
        assert reason.compact and reason.styles.background != app.screen.query_one("#confirm-dialog").styles.background


async def test_at_80x24_the_allow_dialog_shows_the_whole_diff(console_app):
    app = console_app(clock=time.time)
    async with running(app, (80, 24)) as pilot:
        await pilot.press("7", "y")
        await settle(pilot, app)
        text = screen_text(app)
        for line in ("--- /work/ezra/src/billing/invoice.py", "+    return round(subtotal * (1 + tax_rate), 2)",
                     "The call runs now."):
            assert line in text, text
        assert not app.screen.query_one("#confirm-more").has_class("shown")  # nothing below, nothing cut
        assert "more line" not in str(app.screen.query_one("#confirm-body").render())


async def test_a_long_approval_says_how_many_lines_are_below_and_where_the_rest_is(console_app, home):
    from leash.console.operations import APPROVAL_BODY_LINES, APPROVAL_REST
    from leash.core.store.select import backend_for

    backend = backend_for(home)
    for approval in backend.approvals.pending():
        backend.approvals.answer(approval.id, allow=False, by="ops@test", via="cli")
    lines = APPROVAL_BODY_LINES + 30
    backend.approvals.request("claude-c044", "Bash", {"command": "\n".join(f"echo {n}" for n in range(lines))},
                              timeout_s=3600)
    app = console_app(clock=time.time)
    async with running(app, (80, 24)) as pilot:
        await pilot.press("7", "y")
        await settle(pilot, app)
        more = str(app.screen.query_one("#confirm-more").render())
        assert "more lines below: page down shows them" in more, more
        below = int(more.split()[1])
        await pilot.press("pagedown")
        await settle(pilot, app)
        assert int(str(app.screen.query_one("#confirm-more").render()).split()[1]) < below
        body = str(app.screen.query_one("#confirm-body").render())
        assert f"… 30 more lines cut here: {APPROVAL_REST} shows the whole call" in body


async def test_halt_dialogs_name_the_session_as_the_halts_panel_does(console_app):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await select(pilot, app, "halts", "halt:")
        row = app.panel("halts").selected()
        for key in ("a", "d", "e"):
            await pilot.press(key)
            await settle(pilot, app)
            body = str(app.screen.query_one("#confirm-body").render())
            assert f"on {row['session']} (agent {row['session_id']})" in body, body
            await pilot.press("escape")
            await settle(pilot, app)


async def test_the_buttons_name_the_keys_that_work(console_app):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("7", "n")
        await settle(pilot, app)
        labels = [str(button.label) for button in app.screen.query("Button")]
        assert labels == ["Cancel (esc)", "Deny (ctrl+y)"]
        await pilot.press(*"no thanks", "enter")  # to the Deny button: there y confirms
        hint = str(app.screen.query_one("#confirm-hint").render())
        assert hint.startswith("y or ctrl+y Deny") and "n or esc cancel" in hint, hint
