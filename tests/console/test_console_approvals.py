"""The console's Approvals panel: its rows and the summary line's count, the
keys (``y`` allows, ``n`` denies with a typed message) driven with Pilot and
read back from the store as any other process would, an answer that came
second, the bell and the OSC 9 notification of a new approval, the detail
line's diff, a key answer through ``leash serve``, and snapshots. The fleet
view's rows are tests/views/test_fleet_approvals.py's."""
from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager

import pytest

from leash.core.store.select import backend_for

from ..support.console import CONSOLE_NOW, open_dialog, running, settle

SIZE = (160, 45)
OSC_9 = "\x1b]9;"
BEL = "\x07"
SERVE_ANSWER_SECONDS = 10.0


def approvals(home):
    return backend_for(home).approvals


def the_seeded_approval(home):
    (record,) = approvals(home).pending()
    return record


@pytest.fixture
def seeded(console_app, home):
    """The seeded fleet's one approval (the console's fixture seeds it)."""
    return the_seeded_approval(home)


@asynccontextmanager
async def on_the_approvals(app):
    """``app`` running with the Approvals panel focused: the pilot."""
    async with running(app) as pilot:
        await pilot.press("7")
        await settle(pilot, app)
        assert app.focused is app.panel("approvals").table
        yield pilot


# ---------------------------------------------------------------- the summary line
def test_the_summary_counts_approvals_first_in_the_colour_of_urgency():
    from leash.console.tui.widgets.summary import (
        APPROVALS_DUE_STYLE,
        APPROVALS_WAITING_STYLE,
        approvals_style,
        summary_text,
    )

    waiting = {"approvals": 2, "approval_deadline": CONSOLE_NOW + 120, "sessions": 3}
    assert summary_text(waiting, []).plain.startswith("approvals 2  sessions 3")
    assert approvals_style(waiting, CONSOLE_NOW) == APPROVALS_WAITING_STYLE
    assert approvals_style(waiting, CONSOLE_NOW + 61) == APPROVALS_DUE_STYLE
    assert approvals_style({"approvals": 0}, CONSOLE_NOW) == "dim"
    line = summary_text(waiting, [], approvals=APPROVALS_DUE_STYLE)
    assert line.spans[0].style == APPROVALS_DUE_STYLE and line.plain[line.spans[0].start:line.spans[0].end] == \
        "approvals 2"


def test_the_desktop_notification_cannot_be_ended_early_by_the_text():
    from leash.console.tui.app import desktop_notification

    sequence = desktop_notification("approval waiting: evil\x07\x1b]0;owned\x1b\\ Bash")
    assert sequence.startswith(OSC_9 + "leash: approval waiting: evil") and sequence.endswith(BEL)
    inner = sequence[len(OSC_9):-1]
    assert "\x1b" not in inner and "\x07" not in inner and "\\x1b]0;owned" in inner


# ---------------------------------------------------------------- the panel and the keys
async def test_the_panel_shows_approvals_oldest_first_and_the_summary_counts_them(console_app, home):
    from leash.console.tui.widgets.approvals import DUE_STYLE
    from leash.console.tui.widgets.summary import APPROVALS_DUE_STYLE

    seeded = the_seeded_approval(home)  # the demo's: it has waited longest
    newer = approvals(home).request("claude-c044", "Bash", {"command": "rm -rf build"}, timeout_s=300,
                                    now=CONSOLE_NOW - 5)
    due = approvals(home).request("claude-2b91", "Bash", {"command": "make deploy"}, timeout_s=60,
                                  now=CONSOLE_NOW - 30)
    app = console_app()
    async with running(app):
        panel = app.panel("approvals")
        order = sorted(panel.rows, key=lambda key: panel.table.get_row_index(key))
        assert order == [f"approval:{seeded.id}", f"approval:{due.id}", f"approval:{newer.id}"]
        assert [panel.rows[key]["session"] for key in order] == ["agent-answers", "agent-silent", "agent-chatty"]
        left = panel.table.get_cell(f"approval:{due.id}", "left")
        assert (left.plain, str(left.style)) == ("30s", DUE_STYLE)
        assert str(panel.table.get_cell(f"approval:{newer.id}", "left").style) != DUE_STYLE
        assert panel.title_text() == "Approvals [3]"
        summary = app.query_one("#summary").render()
        assert summary.plain.startswith("approvals 3 ") and str(summary.spans[0].style) == APPROVALS_DUE_STYLE


async def test_7_and_tab_reach_the_approvals_panel_on_a_narrow_screen(console_app):
    from ..support.console import screen_text

    app = console_app()
    async with running(app, (80, 24)) as pilot:
        assert "7 Approvals" in screen_text(app)
        await pilot.press("6", "tab")
        await settle(pilot, app)
        assert app.panel("approvals").display and not app.panel("acklog").display
        assert app.focused is app.panel("approvals").table
        await pilot.press("tab")  # 8, the Budget panel, then round to 1
        await settle(pilot, app)
        assert app.focused is app.panel("budget").table
        await pilot.press("tab")
        await settle(pilot, app)
        assert app.focused is app.panel("sessions").table
        await pilot.press("7")
        await settle(pilot, app)
        assert app.focused is app.panel("approvals").table
        assert "agent-answers asks to run Edit" in app.query_one("#detail").plain


async def test_y_allows_the_selected_approval_with_a_note(console_app, home, seeded):
    app = console_app(clock=time.time)
    async with on_the_approvals(app) as pilot:
        await open_dialog(pilot, app, "y")
        assert app.focused.id == "confirm-text"  # the note: what is typed after y is its text
        await pilot.press(*"looked at the diff", "ctrl+y")
        await settle(pilot, app)
        answered = approvals(home).get(seeded.id)
        assert (answered.status, answered.by, answered.via, answered.note) == \
            ("allowed", "ops@test", "console", "looked at the diff")
        assert approvals(home).pending() == []
        assert app.panel("approvals").rows == {}


async def test_n_denies_with_the_message_typed_in_the_modal(console_app, home, seeded):
    app = console_app(clock=time.time)
    async with on_the_approvals(app) as pilot:
        await open_dialog(pilot, app, "n")
        assert app.focused.id == "confirm-text"  # the message is what it asks for
        await pilot.press(*"not on main, use a branch")  # n and y are letters here, never cancel or confirm
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        await pilot.press("enter")  # to the Deny button, never a confirm
        await pilot.pause()
        assert app.focused.id == "confirm-ok"
        assert approvals(home).get(seeded.id).status == "waiting"
        await pilot.press("y")  # y on a button confirms
        await settle(pilot, app)
        answered = approvals(home).get(seeded.id)
        assert (answered.status, answered.message, answered.via) == ("denied", "not on main, use a branch", "console")


async def test_an_answer_that_came_second_is_a_warning_naming_who_answered(console_app, home, seeded):
    app = console_app(clock=time.time)
    async with on_the_approvals(app) as pilot:
        await pilot.press("y")
        await pilot.pause()
        approvals(home).answer(seeded.id, allow=False, by="ops@cli", via="cli", message="no")  # another path, first
        await pilot.press("ctrl+y")
        await settle(pilot, app)
        last = list(app._notifications)[-1]
        assert last.severity == "warning"
        assert "already denied by ops@cli via cli" in last.message
        assert approvals(home).get(seeded.id).status == "denied"


async def test_a_read_only_console_answers_nothing(console_app, home, seeded):
    app = console_app(clock=time.time, read_only=True)
    async with on_the_approvals(app) as pilot:
        for key in ("y", "n"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen.__class__.__name__ != "ConfirmScreen"
    assert approvals(home).get(seeded.id).status == "waiting"


async def test_a_new_approval_and_a_new_critical_halt_ring_the_terminal(console_app, home):
    from leash.core.state.halts import api as halts

    app = console_app(clock=time.time)
    rings, written = [], []
    app.bell = lambda: rings.append(1)
    app.write_to_terminal = written.append
    async with running(app) as pilot:
        assert rings == [] and written == []  # what was there at start is not news
        approvals(home).request("claude-c044", "Bash", {"command": "echo \x1b]0;x"}, timeout_s=300)
        halts.record_halt({"session_token": "s9", "halt_type": "security", "severity": "critical",
                           "condition_name": "secrets_exposure", "description": "a token"}, home=home)
        app.refresh_view()
        await settle(pilot, app)
        assert written == [f"{OSC_9}leash: approval waiting: agent-chatty Bash{BEL}",
                           f"{OSC_9}leash: critical halt: secrets_exposure on s9{BEL}"]
        assert len(rings) == 2
        titles = [n.title for n in app._notifications]
        assert "Approval waiting: agent-chatty Bash" in titles


async def test_the_detail_line_shows_the_whole_diff_coloured_and_escaped(console_app, home):
    approvals(home).request("claude-c044", "Edit", {"file_path": "a.py", "old_string": "x = 1\n",
                                                    "new_string": "x = '[red]\x1b[2J'\n"},
                            timeout_s=300, now=CONSOLE_NOW - 1)
    app = console_app()
    async with on_the_approvals(app) as pilot:
        await pilot.press("down")
        await settle(pilot, app)
        detail = app.query_one("#detail")
        lines = detail.plain.split("\n")
        assert lines[0].startswith("agent-chatty asks to run Edit · permission prompt · waiting 1s")
        assert "-x = 1" in lines and "+x = '[red]\\x1b[2J'" in lines
        text = detail.render()
        styles = {line.plain: {str(span.style) for span in line.spans} for line in text.split("\n")}
        assert (styles["-x = 1"], styles["+x = '[red]\\x1b[2J'"]) == ({"red"}, {"green"})
        assert detail.size.height > 2  # the detail line grew to show the diff


async def test_the_palette_offers_allow_and_deny(console_app, home):
    from leash.console.tui.palette import LeashCommands

    app = console_app()
    async with running(app):
        names = [name for name, _, _ in LeashCommands(app.screen)._entries()]
        assert "Allow Edit for agent-answers" in names and "Deny Edit for agent-answers" in names


# ---------------------------------------------------------------- leash serve
async def test_a_key_answer_through_leash_serve(home, tmux_socket):
    from ..support.serve import DRAWN, client, console_started, read_until, start_server, stop_servers

    record = approvals(home).request("claude-remote", "Bash", {"command": "make deploy"}, timeout_s=300)
    served = start_server(home, tmux_socket, "--no-kennel")
    try:
        async with client() as session:
            async with served.ws(session, width=160, height=45) as ws:
                await console_started(served)
                await read_until(ws, DRAWN)
                for key, shows in (("7", b"make deploy"), ("y", b"Allow (ctrl+y)"), ("\x19", None)):  # ctrl+y
                    await ws.send_json(["stdin", key])
                    if shows is not None:
                        await read_until(ws, shows)
                deadline = time.monotonic() + SERVE_ANSWER_SECONDS
                while approvals(home).get(record.id).status == "waiting" and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
    finally:
        stop_servers([served], set())
    answered = approvals(home).get(record.id)
    assert (answered.status, answered.via) == ("allowed", "serve")


# ---------------------------------------------------------------- snapshots
async def _settled(pilot):
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


class TestSnapshots:
    def test_main_screen_with_an_approval(self, snap_compare, console_app):
        assert snap_compare(console_app(), terminal_size=(200, 50), run_before=_settled)

    def test_approvals_panel_focused_with_a_diff_in_the_detail_line(self, snap_compare, console_app):
        async def run_before(pilot):
            await _settled(pilot)
            await pilot.press("7")
            await _settled(pilot)
        assert snap_compare(console_app(), terminal_size=SIZE, run_before=run_before)

    def test_deny_modal(self, snap_compare, console_app):
        async def run_before(pilot):
            await _settled(pilot)
            await pilot.press("7")
            await _settled(pilot)
            await pilot.press("n", *"wrong file")
            pilot.app.screen.query_one("#confirm-text").cursor_blink = False  # no blinking cursor in the picture
        assert snap_compare(console_app(), terminal_size=SIZE, run_before=run_before)
