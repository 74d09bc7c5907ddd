"""The console at any size: one panel and a tab strip below 120 columns, the
grid above, ``z`` to zoom, the detail line, the header that always fits, the
newest lines of a pane and of the ack log, keys that stay on their screen;
snapshots at 80x24, 120x35 and 200x50 on a fleet whose halt descriptions are
longer than any column; and the console in a real 80x24 terminal."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from leash.core import StopProtocol
from leash.core.state.halts import api as halts

from ..support.checkout import ROOT
from ..support.console import (
    CONSOLE_NOW,
    LONG_DESCRIPTION,
    LONG_SESSION,
    console,
    pressed,
    ready,
    record_long_halt,
    running,
    seed_long_fleet,
    select,
    settle,
    until,
)

SMALL, MIDDLE, LARGE = (80, 24), (120, 35), (200, 50)
def screen_text(app) -> str:
    """What the terminal shows now, as text."""
    return "\n".join("".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips())


def flat(text: str) -> str:
    """The screen's words in one line (the detail line wraps)."""
    return " ".join(text.replace("│", " ").split())


@pytest.fixture
def long_app(console_app, home):
    halt_id = record_long_halt(home)  # console_app has seeded the fleet

    def make(**options):
        app = console_app(**options)
        app.long_halt_id = halt_id
        return app
    return make


async def test_narrow_screen_shows_the_selected_halts_full_description_and_session(long_app):
    app = long_app()
    async with running(app, SMALL) as pilot:
        await select(pilot, app, "halts", app.long_halt_id)
        await settle(pilot, app)
        shown = screen_text(app)
        assert app.screen.has_class("-narrow")
        assert not app.panel("sessions").display and app.panel("halts").display  # one panel at a time
        assert "1 Sessions" in shown and "2 Halts" in shown  # the tab strip
        assert LONG_DESCRIPTION in flat(shown)
        assert LONG_SESSION in flat(app.query_one("#detail").plain)
        assert all(len(line) <= SMALL[0] for line in shown.splitlines())


async def test_wide_screen_shows_the_grid(long_app):
    app = long_app()
    async with running(app, LARGE):
        assert app.screen.has_class("-wide")
        assert all(app.panel(name).display for name in ("sessions", "halts", "warrants", "locks", "loops", "acklog"))
        assert not app.query_one("#panel-tabs").display


async def test_number_keys_and_tab_switch_the_panel_shown(long_app):
    app = long_app()
    async with running(app, SMALL) as pilot:
        await pilot.press("3")
        await settle(pilot, app)
        assert app.panel("warrants").display and not app.panel("halts").display
        assert app.focused is app.panel("warrants").table
        await pilot.press("tab")
        await settle(pilot, app)
        assert app.panel("locks").display and app.focused is app.panel("locks").table
        await pilot.press("shift+tab", "shift+tab")
        await settle(pilot, app)
        assert app.panel("halts").display and app.focused is app.panel("halts").table


async def test_z_zooms_and_unzooms_the_focused_panel(long_app):
    app = long_app()
    async with running(app, LARGE) as pilot:
        await pilot.press("2", "z")
        await settle(pilot, app)
        assert app.screen.has_class("-zoomed")
        assert app.panel("halts").display and not app.panel("sessions").display
        assert app.panel("halts").size.width >= LARGE[0] - 2
        assert app.focused is app.panel("halts").table
        await pilot.press("z")
        await settle(pilot, app)
        assert not app.screen.has_class("-zoomed")
        assert app.panel("sessions").display and app.panel("halts").size.width < LARGE[0] // 2 + 2


async def test_the_detail_line_names_every_rule_that_holds_a_session(long_app, home):
    StopProtocol(home).hands_off("ezra", hours=2, reason="migrating", source="ops@test", now=CONSOLE_NOW - 60)
    app = long_app()
    async with running(app, SMALL) as pilot:
        await select(pilot, app, "sessions", "agent-answers")
        await settle(pilot, app)
        detail = app.query_one("#detail").plain
        assert "hands_off_path_write" in detail and "hands-off ezra" in detail  # the halt and the lock
        assert "i: what lifts it" in detail


async def test_the_detail_line_of_a_lock_a_warrant_and_a_log_line(long_app):
    app = long_app()
    async with running(app, LARGE) as pilot:
        await select(pilot, app, "locks", "lock:")
        assert "prod freeze until the release" in app.query_one("#detail").plain
        assert "until 2027-01-15T" in app.query_one("#detail").plain
        await select(pilot, app, "warrants", "warrant:")
        assert "no output for 40 minutes" in app.query_one("#detail").plain
        assert "gate closes in" in app.query_one("#detail").plain


def bulk_lines(home, count: int) -> None:
    """``count`` stop lines in the ack log, a second apart up to the console's time."""
    protocol = StopProtocol(home)
    for n in range(count):
        protocol.acknowledge_stop("ops@test", f"bulk-{n:02d}", f"bulk line {n:02d}", now=CONSOLE_NOW - 50 + n)


async def test_the_ack_log_panel_shows_the_newest_of_fifty_lines(long_app, home):
    bulk_lines(home, 50)
    app = long_app()
    async with running(app, SMALL) as pilot:
        await pressed(pilot, "6")
        shown = screen_text(app)
        assert "bulk-49" in shown, shown
        assert "bulk line 49" in app.query_one("#detail").plain


async def test_peek_shows_the_newest_line_of_a_pane_that_printed_a_hundred(home, tmux_socket):
    from leash.core.base.tmux import Tmux

    tmux = Tmux(str(tmux_socket))
    tmux.new_session("printer", "seq -f 'line %g of the pane' 1 100; cat", width=80, height=20)
    deadline = time.monotonic() + 5
    while not any("line 100" in line for line in tmux.capture("printer", 5)) and time.monotonic() < deadline:
        time.sleep(0.05)
    StopProtocol(home)
    app = console(home, tmux=tmux)
    async with running(app, SMALL) as pilot:
        await select(pilot, app, "sessions", "printer")
        await pilot.press("enter")
        await settle(pilot, app)
        await until(pilot, lambda: "line 100 of the pane" in screen_text(app), "the pane's newest line")
        shown = screen_text(app)
        assert app.screen.__class__.__name__ == "PeekScreen"
        assert "line 100 of the pane" in shown, shown
        assert "line 1 of the pane" not in shown


async def test_main_screen_keys_do_not_fire_on_the_log_screen(console_app, home):
    app = console_app()
    async with running(app, SMALL) as pilot:
        await select(pilot, app, "sessions", "agent-answers")
        await pilot.press("l")
        await settle(pilot, app)
        for key in ("s", "S", "w", "h", "z", "2"):
            await pilot.press(key)
            await settle(pilot, app)
            assert app.screen.__class__.__name__ == "AckLogScreen", key
        assert StopProtocol(home).stops.snapshot()["sessions"].keys() == {"claude-legacy"}
        assert StopProtocol(home).stops.snapshot()["fleet"] is None


async def test_enter_in_a_note_moves_to_the_confirm_button_and_never_confirms(console_app, home):
    app = console_app()
    async with running(app, SMALL) as pilot:
        before = (home / "stop_ack_log.jsonl").read_bytes()
        await pilot.press("S")
        await pilot.pause()
        assert "⏎ to the Stop all button" in screen_text(app)  # the hint says what Enter does
        await pilot.press(*"maintenance", "enter")
        await settle(pilot, app)
        assert (home / "stop_ack_log.jsonl").read_bytes() == before
        assert StopProtocol(home).stops.snapshot()["fleet"] is None
        assert app.focused.id == "confirm-ok" and "y or ctrl+y Stop all" in screen_text(app)


async def test_the_header_fits_and_never_cuts_a_fleet_stop_or_an_unreadable_state(console_app, home):
    StopProtocol(home).stops.stop_fleet(source="ops@test", reason="x" * 300, now=CONSOLE_NOW)
    app = console_app()
    async with running(app, SMALL) as pilot:
        problem = "stop state unreadable (" + "y" * 200 + ") — run `leash doctor`"
        app.apply_view({**app.view_data, "problems": [problem]})
        await settle(pilot, app, 1)
        header = screen_text(app).splitlines()[0]
        assert header.lstrip().startswith("FLEET STOPPED")
        assert "STOP STATE UNREADABLE" in header
        assert len(header) <= SMALL[0]
        assert "4" in header  # the numbers stay when the words go


async def test_why_screen_in_the_console(long_app):
    app = long_app()
    async with running(app, SMALL) as pilot:
        await select(pilot, app, "sessions", "claude-legacy")
        await pilot.press("i")
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "WhyScreen"
        shown = flat(screen_text(app))
        assert "claude-legacy is held by 1 rule" in shown and "lift: leash resume claude-legacy" in shown


def _row_in_view(table, index: int) -> bool:
    top = round(table.scroll_y)
    rows = table.scrollable_content_region.height - table.header_height
    return top <= index < top + rows


async def test_the_ack_log_panel_keeps_following_the_newest_line_after_a_resize(long_app, home):
    bulk_lines(home, 45)
    app = long_app()
    async with running(app, SMALL) as pilot:
        await pressed(pilot, "6")
        table = app.panel("acklog").table
        newest = table.row_count - 1
        for size in (MIDDLE, LARGE, SMALL, MIDDLE, (100, 30), LARGE):
            await pilot.resize_terminal(*size)
            await settle(pilot, app)
            assert table.cursor_row == newest, size
            assert "bulk line 44" in app.query_one("#detail").plain
            assert _row_in_view(table, newest), (size, table.scroll_y, table.size)


RELAYOUT_PAUSES = 40
LONG_CRITICAL = "Credentials would be exposed: " + " ".join(f"word{n:03d}" for n in range(110))  # < 1000


async def test_a_long_critical_halt_keeps_the_dialogs_title_target_and_buttons_on_screen(console_app, home):
    halt_id = halts.record_halt({"session_token": LONG_SESSION, "halt_type": "security", "severity": "critical",
                                 "condition_name": "secrets_exposure", "description": LONG_CRITICAL},
                                home=home, now=CONSOLE_NOW - 30)["halt_id"]
    app = console_app()
    async with running(app, SMALL) as pilot:
        await select(pilot, app, "halts", halt_id)
        await pilot.press("d")
        await settle(pilot, app)
        for size in (SMALL, (80, 30), MIDDLE, SMALL):
            await pilot.resize_terminal(*size)
            await settle(pilot, app)
            shown = screen_text(app)
            assert "Dismiss this halt?" in shown, shown
            assert "critical secrets_exposure on agent-answers (agent claude-7f3a):" in shown, shown
            assert "Cancel (esc)" in shown and "Dismiss (ctrl+y)" in shown, shown
            dialog = app.screen.query_one("#confirm-dialog").region
            for _ in range(RELAYOUT_PAUSES):  # a loaded machine lays the resized screen out a beat later
                if dialog.y >= 0 and dialog.bottom <= size[1]:
                    break
                await pilot.pause(0.05)
                dialog = app.screen.query_one("#confirm-dialog").region
            assert dialog.y >= 0 and dialog.bottom <= size[1], (size, dialog)
        body = app.screen.query_one("#confirm-body")
        assert "word109" in str(body.render())  # the whole description is there, to scroll to


async def test_a_toast_never_covers_a_dialogs_buttons(console_app, home):
    app = console_app()
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        await ready(pilot, app)
        await select(pilot, app, "halts", "halt:")
        await pilot.press("d")
        await settle(pilot, app)
        for n in range(4):
            app.notify(f"a long notification number {n} " + "x" * 90, title="Critical halt: something",
                       severity="error")
        await settle(pilot, app)
        shown = screen_text(app)
        assert "Cancel (esc)" in shown and "Dismiss (ctrl+y)" in shown, shown
        buttons = [app.screen.query_one(f"#confirm-{b}").region for b in ("cancel", "ok")]
        from textual.widgets._toast import Toast

        for toast in app.screen.query(Toast):
            if toast.display and toast.visible and toast.region.area:
                assert not any(toast.region.overlaps(b) for b in buttons), (toast.region, buttons)
        assert "a long notification number 3" in str(app.screen.query_one("#confirm-notice").render())
        await pilot.press("ctrl+y")  # refused: caution not ticked; the dialog says why, inside itself
        await settle(pilot, app)
        assert "continue with caution" in str(app.screen.query_one("#confirm-notice").render())
        assert "Cancel (esc)" in screen_text(app)


KEY_COLUMNS = {"sessions": ("name", "state"), "halts": ("severity", "condition", "session", "age"),
               "warrants": ("target", "state", "attempt"), "locks": ("entity", "left", "source"),
               "loops": ("name", "boots", "window", "tripped"), "acklog": ("seq", "time", "event"),
               "approvals": ("session", "tool", "age", "left"), "budget": ("cap", "bucket", "used", "percent")}


@pytest.mark.parametrize("size", [SMALL, MIDDLE, LARGE], ids=lambda size: f"{size[0]}x{size[1]}")
async def test_columns_share_the_width_they_have(long_app, size):
    from rich.text import Text

    from leash.console.tui.keymap import PANELS

    app = long_app()
    async with running(app, size) as pilot:
        for index, name in enumerate(PANELS, start=1):
            await pilot.press(str(index))
            await settle(pilot, app)
            table = app.panel(name).table
            room = table.scrollable_content_region.width
            widths = {str(key.value): column.get_render_width(table) - 2 * table.cell_padding
                      for key, column in table.columns.items()}
            content = {}
            for key, column in table.columns.items():
                cells = [table.get_cell(row, key) for row in table.rows]
                content[str(key.value)] = max([Text.from_markup(str(column.label)).cell_len]
                                              + [c.cell_len if isinstance(c, Text) else len(str(c)) for c in cells])
            used = sum(w + 2 * table.cell_padding for w in widths.values())
            assert used <= room, (size, name, widths, room)
            starved = [k for k in widths if widths[k] < content[k]]
            wider = [k for k in widths if widths[k] > content[k]]
            assert not (starved and wider), (size, name, widths, content)  # nothing wasted while one is cut
            for key in starved:  # a cut column still shows some of its text
                assert widths[key] >= min(content[key], 3), (size, name, key, widths)
            if room + 2 * table.cell_padding * len(widths) < SMALL[0] - 4:
                continue  # a panel of the grid narrower than one at 80 columns
            for key in KEY_COLUMNS[name]:
                assert widths[key] >= content[key], (size, name, key, widths, content)  # readable


# ---------------------------------------------------------------- snapshots
async def _settled(pilot):
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _select_long_halt(app):
    async def run_before(pilot):
        await _settled(pilot)
        await select(pilot, pilot.app, "halts", app.long_halt_id)
        await _settled(pilot)
    return run_before


@pytest.mark.parametrize("size", [SMALL, MIDDLE, LARGE], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_long_halt_selected(snap_compare, long_app, size):
    app = long_app()
    assert snap_compare(app, terminal_size=size, run_before=_select_long_halt(app))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_zoomed(snap_compare, long_app, size):
    app = long_app()

    async def run_before(pilot):
        await _select_long_halt(app)(pilot)
        await pilot.press("z")
        await _settled(pilot)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


# ---------------------------------------------------------------- a real terminal
def _screen(socket) -> str:
    return subprocess.run(["tmux", "-S", str(socket), "capture-pane", "-p", "-J", "-t", "console"],
                          capture_output=True, text=True).stdout


def _wait_for(socket, text: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(socket)
        if text in " ".join(screen.split()):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared on the screen:\n{screen}")


def _console_command(home, extra: str = "") -> str:
    env = {"LEASH_HOME": str(home), "LEASH_TMUX_SOCKET": str(home) + "-none.sock", "TERM": "xterm-256color"}
    return " ".join(["env", "-u", "COLUMNS", "-u", "LINES"] + [f"{k}={v}" for k, v in env.items()]
                    + [sys.executable, "-m", "leash.console.cli", "console", "--no-kennel"]) + extra


@pytest.mark.heavy("a console process in a real 80x24 terminal, ~1.2 s of CPU; make test reads the same "
                   "description at 80x24 under Pilot (test_narrow_screen_shows_the_selected_halts_full_description"
                   "_and_session)")
def test_a_halts_description_read_off_a_real_80x24_terminal(home, tmux_socket):
    seed_long_fleet(home)
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "console", "-x", "80", "-y", "24",
                    "-c", str(ROOT), _console_command(home)], check=True)
    _wait_for(tmux_socket, "1 Sessions")
    subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", "2"], check=True)
    _wait_for(tmux_socket, "hands_off_path_write")
    for _ in range(2):  # critical halts by age: the long one is second
        if "hands_off_path_write on claude-7f3a" in " ".join(_screen(tmux_socket).split()):  # no tmux here
            break
        subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", "Down"], check=True)
        time.sleep(0.5)
    _wait_for(tmux_socket, LONG_DESCRIPTION)
    subprocess.run(["tmux", "-S", str(tmux_socket), "send-keys", "-t", "console", "q"], check=True)


def _pane(socket, target: str, fmt: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), "display-message", "-p", "-t", target, fmt],
                          capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("signal_name", ["SIGTERM", pytest.param("SIGHUP", marks=pytest.mark.heavy(
    "a second console process in a real terminal, ~1.7 s of CPU; make test keeps SIGTERM, which ends the console "
    "by the same handler"))])
def test_an_ending_signal_restores_the_terminal(home, tmux_socket, signal_name):
    StopProtocol(home)
    pid_file = home / "console.pid"
    command = f"sh -c 'echo $$ > {pid_file}; exec {_console_command(home)}'; echo console-ended; sleep 60"
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "console", "-x", "80", "-y", "24",
                    "-c", str(ROOT), command], check=True)
    _wait_for(tmux_socket, "1 Sessions")
    assert _pane(tmux_socket, "console", "#{alternate_on}") == "1"
    os.kill(int(pid_file.read_text()), getattr(signal, signal_name))
    _wait_for(tmux_socket, "console-ended")
    assert _pane(tmux_socket, "console", "#{alternate_on}") == "0"  # out of the console's screen
    assert _pane(tmux_socket, "console", "#{mouse_any_flag}") == "0"  # mouse reporting off again
    assert _pane(tmux_socket, "console", "#{cursor_flag}") == "1"  # the cursor shows again


@pytest.mark.heavy("three `leash demo` runs in a real terminal, ~3 s of CPU; make test keeps one demo that "
                   "cleans up after itself when it quits (test_console_live.py)")
def test_the_demo_leaves_nothing_in_tmp_when_its_terminal_closes(tmp_path, tmux_socket):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = f"env -u COLUMNS -u LINES TMPDIR={scratch} TERM=xterm-256color {sys.executable} -m leash.console.cli demo"
    for run in range(3):
        subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", "console", "-x", "80", "-y", "24",
                        "-c", str(ROOT), command], check=True)
        _wait_for(tmux_socket, "agent-silent")
        (home,) = list(scratch.glob("leash-demo-*"))
        subprocess.run(["tmux", "-S", str(tmux_socket), "kill-session", "-t", "console"], check=True)  # hang up
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(scratch.iterdir()):
            time.sleep(0.1)
        assert not any(scratch.iterdir()), f"run {run} left {list(scratch.iterdir())}"
        assert not home.exists()


@pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["narrow", "wide"])
async def test_a_start_styles_the_dashboard_for_its_width_before_its_panels_mount(console_app, monkeypatch, size):
    """The width's class (``-narrow``/``-wide``) is the dashboard's from its
    compose: Textual's first resize would add it once every panel was up and
    style every node under the screen again. The screen is styled whole once at
    a start, when it is shown (Textual's), and its class follows every resize."""
    from textual.dom import DOMNode

    from leash.console.tui.screens.dashboard import DashboardScreen

    whole: list[frozenset] = []
    update = DOMNode.update_node_styles

    def counting(node, animate: bool = True) -> None:
        if isinstance(node, DashboardScreen) and node.is_attached and len(node.children) > 1:
            whole.append(frozenset(node.classes))
        update(node, animate=animate)

    monkeypatch.setattr(DOMNode, "update_node_styles", counting)
    app = console_app()
    async with running(app, size) as pilot:
        wide = size[0] >= 120
        assert app.screen.has_class("-wide") is wide and app.screen.has_class("-narrow") is not wide
        assert len(whole) == 1, whole
        await pilot.resize_terminal(200 if not wide else 80, 40)
        await settle(pilot, app)
        assert app.screen.has_class("-wide") is not wide and app.screen.has_class("-narrow") is wide
