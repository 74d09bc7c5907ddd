"""Text that agents supply is data: the console never parses it as markup, and
neither the console nor the CLI puts its control characters on a terminal.

Agent-supplied strings (session ids, tmux names, reasons, halt descriptions,
warrant targets, breaker names, pane lines) carry markup, terminal escape
sequences and newlines that would forge a line; every place that shows them is
driven here with the real console (Pilot) and the real CLI."""
from __future__ import annotations

import json
import unicodedata

import pytest

from leash.core import StopProtocol
from leash.core.state.acklog import AckLog
from leash.core.state.halts import api as halts

from ..support.console import CONSOLE_NOW, SIZE, console, ready, running, select, settle, until

RETITLE = "\x1b]0;pwned\x07"  # an OSC that sets the terminal's title
CLEAR = "\x1b[2J"  # clears the operator's screen
FORGED = "fleet: STOPPED 1m ago by root: pwned"
FORGING_REASON = f"{CLEAR}done\n {FORGED}"
MARKUP = ("[/oops]", "[black on black]hidden", "[b]x[/b]")
WIDE = (320, 60)  # every column of a panel fits


def _controls(text: str) -> set[str]:
    """Every character a terminal may act on instead of showing, but newlines."""
    return {c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")}


def _rendered(widget) -> str:
    """What the widget puts on the screen, line by line."""
    from textual.geometry import Region

    region = Region(0, 0, widget.outer_size.width, widget.outer_size.height)
    return "\n".join(strip.text for strip in widget.render_lines(region))


def _record_halt(home, session: str, description: str, severity: str = "high") -> str:
    return halts.record_halt({"session_token": session, "halt_type": "security", "severity": severity,
                              "description": description}, home=home)["halt_id"]


# ------------------------------------------------------------------ printable
def test_printable_escapes_every_control_and_reordering_character():
    from leash.core.base.text import printable

    for code in list(range(0x20)) + list(range(0x7F, 0xA0)):
        shown = printable(f"a{chr(code)}b")
        assert shown == "a" + repr(chr(code))[1:-1] + "b", hex(code)
    for code in list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A)) + [0x200E, 0x200F, 0x061C, 0xFEFF]:
        assert printable(chr(code)) == f"\\u{code:04x}"
    assert printable("\u2028\u2029") == "\\u2028\\u2029"
    assert printable(RETITLE) == "\\x1b]0;pwned\\x07"
    assert printable(FORGING_REASON) == "\\x1b[2Jdone\\n " + FORGED
    assert printable("\U000e0001") == "\\U000e0001"


def test_printable_keeps_ordinary_text_and_caps_the_length():
    from leash.core.base.text import printable

    for text in ("sess_123", "agent-3 / claude", "Zoë 東京 👍", "C:\\Users\\x", "a\u00a0b", ""):
        assert printable(text) == text
    assert printable("x" * 50, limit=10) == "x" * 9 + "…"
    assert printable("x" * 10, limit=10) == "x" * 10
    assert printable("ab\x1bcdef", limit=5) == "ab…"  # an escape is never cut in half
    assert printable("ab\x1b", limit=6) == "ab\\x1b"
    assert printable(None) == "None" and printable(42) == "42"
    for start in range(0, 0x110000, 0x1000):  # whatever the input, nothing unsafe comes out
        assert not _controls(printable("".join(map(chr, range(start, start + 0x1000))))), hex(start)


# ------------------------------------------------------------------ the console
def _fresh_console(home, **options):
    StopProtocol(home)
    return console(home, list_tmux=lambda: [], **options)


async def test_the_console_starts_and_shows_markup_in_halts_literally(home):
    ids = [_record_halt(home, "[red]s-markup", text) for text in MARKUP]
    app = _fresh_console(home)
    async with running(app, WIDE) as pilot:
        shown = _rendered(app.panel("halts").table)
        for text in MARKUP + ("[red]s-markup",):
            assert text in shown
        await select(pilot, app, "halts", ids[0])
        await pilot.press("a")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        assert "[/oops]" in _rendered(app.screen.query_one("#confirm-body"))
        await pilot.press("escape")  # cancel (n in the note field is a letter)
        await settle(pilot, app)


async def test_the_console_shows_control_characters_escaped(console_app, home):
    protocol = StopProtocol(home)
    protocol.stops.stop(RETITLE, source="ops@test", reason=FORGING_REASON)
    protocol.hands_off(CLEAR, reason=FORGING_REASON, source="ops@test", now=CONSOLE_NOW)
    halt_id = _record_halt(home, RETITLE, FORGING_REASON)
    app = console_app()
    async with running(app, WIDE) as pilot:
        for panel in ("sessions", "halts", "locks", "acklog"):
            shown = _rendered(app.panel(panel).table)
            assert not _controls(shown), (panel, shown)
        cells = {panel: " ".join(str(getattr(cell, "plain", cell)) for key in app.panel(panel).table.rows
                                 for cell in app.panel(panel).table.get_row(key))
                 for panel in ("sessions", "halts", "locks", "acklog")}
        assert "\\x1b]0;pwned\\x07" in cells["sessions"] and "\\x1b]0;pwned\\x07" in cells["halts"]
        assert "\\x1b[2J" in cells["locks"]
        assert "\\x1b[2Jdone\\n " + FORGED in cells["halts"]
        await select(pilot, app, "halts", halt_id)
        await pilot.press("a")
        await pilot.pause()
        body = _rendered(app.screen.query_one("#confirm-body"))
        assert not _controls(body) and "\\x1b]0;pwned\\x07" in body
        await pilot.press("escape")  # cancel (n in the note field is a letter)
        await settle(pilot, app)


async def test_a_notification_raised_from_agent_text_does_not_crash(console_app, home):
    app = console_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot, app)
        _record_halt(home, "[red]s-new", f"[/oops] {RETITLE}", severity="critical")
        app.refresh_view()
        await settle(pilot, app)
        from textual.widgets._toast import Toast

        await until(pilot, lambda: any(toast.outer_size.area for toast in app.screen.query(Toast)),
                    "a toast laid out")
        toasts = "\n".join(_rendered(toast) for toast in app.screen.query(Toast))
        assert "[/oops]" in toasts and "[red]s-new" in toasts
        assert not _controls(toasts)


async def test_the_ack_log_screen_shows_agent_text_literally(console_app, home):
    StopProtocol(home).stops.stop("[/oops]", source="ops@test", reason=f"[b]x[/b] {FORGING_REASON}")
    app = console_app()
    async with running(app, WIDE) as pilot:
        await pilot.press("l")
        await settle(pilot, app)
        shown = _rendered(app.screen.query_one("#acklog-table"))
        assert "[/oops]" in shown and "[b]x[/b]" in shown and "\\x1b[2Jdone" in shown
        assert not _controls(shown)


async def test_the_palette_lists_agent_named_rows_literally(console_app, home):
    StopProtocol(home).stops.stop("[/oops]", source="ops@test", reason="")
    app = console_app()
    async with running(app) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"resume")
        await settle(pilot, app)
        from textual.widgets import OptionList

        shown = "\n".join(_rendered(options) for options in app.screen.query(OptionList))
        assert "Resume session [/oops]" in shown


async def test_the_peek_screen_shows_the_pane_and_its_name_literally(home, tmux_socket):
    from leash.core.base.tmux import Tmux

    tmux = Tmux(str(tmux_socket), home=home)
    name = "peek[b]x[/b]"
    tmux.new_session(name, "printf '[/oops] [black on black]hidden\\n'; exec cat")
    StopProtocol(home)
    app = console(home, tmux=tmux)
    async with running(app) as pilot:
        await select(pilot, app, "sessions", name)
        await pilot.press("enter")
        shown = ""
        for _ in range(50):
            await settle(pilot, app, cycles=1)
            if app.screen.__class__.__name__ == "PeekScreen":
                shown = _rendered(app.screen.query_one("#peek-title")) + _rendered(app.screen.query_one("#peek-body"))
                if "hidden" in shown:
                    break
        assert "peek[b]x[/b]" in shown and "[/oops] [black on black]hidden" in shown


# ------------------------------------------------------------------ the CLI
@pytest.fixture
def hostile_home(cli, home):
    """A home where every agent-supplied field carries escapes and a forged line."""
    from leash.core.state.sessions import SessionRegistry

    assert cli("stop", "--force", RETITLE, "--reason", FORGING_REASON, "--source", f"ops{CLEAR}").code == 0
    assert cli("hands-off", f"ent{CLEAR}", "--reason", FORGING_REASON).code == 0
    assert cli("warrant", "file", "tgt[/oops]", "--reason", FORGING_REASON,
               "--requester", f"req\n {FORGED}").code == 0
    assert cli("halts", "record", "--session", RETITLE, "--type", "security", "--severity", "high",
               "--description", FORGING_REASON).code == 0
    assert cli("loop", "check-and-record", "gateway").code == 0
    from urllib.parse import quote  # a breaker directory an agent made by hand

    breaker = home / quote(f"gw{CLEAR}\n {FORGED}", safe="")
    breaker.mkdir()
    (breaker / "restart_loop.json").write_text('{"boots": []}')
    SessionRegistry(home).observe(f"agent{RETITLE}", tmux_session=f"tmux\n {FORGED}", entity=f"e{CLEAR}",
                                  tool=f"Bash\n {FORGED}")
    return home


def _assert_safe(text: str) -> None:
    assert "\x1b" not in text
    assert not _controls(text), sorted(_controls(text))
    assert not any(line.lstrip().startswith(FORGED) for line in text.splitlines()), text


@pytest.mark.parametrize("command", [("status",), ("log",), ("warrant", "list"), ("halts", "list"),
                                     ("loop", "status"), ("log", "--session", RETITLE)])
def test_cli_output_shows_agent_text_escaped_on_one_line(cli, hostile_home, command):
    result = cli(*command)
    assert result.code == 0, result
    _assert_safe(result.out)
    _assert_safe(result.err)
    if command != ("loop", "status"):  # a breaker's name is a plain name (a hand-made one is not listed)
        assert "\\x1b" in result.out  # shown, escaped


def test_each_record_stays_one_line(cli, hostile_home):
    entries = AckLog(hostile_home).read().entries
    assert len(cli("log").out.splitlines()) == len(entries)
    listed = halts.get_session_halts({"pending": True}, home=hostile_home)["halts"]
    assert len(cli("halts", "list").out.splitlines()) == 1 + 2 * len(listed)
    assert len(cli("warrant", "list").out.splitlines()) == 3 + 1  # three section heads, one warrant
    status = cli("status").out.splitlines()
    assert [line for line in status if line.startswith("fleet:")] == ["fleet: running"]


def test_errors_that_echo_a_name_are_escaped(cli, hostile_home):
    for args in (("resume", f"never{RETITLE}\n {FORGED}"), ("release", f"nolock{CLEAR}"),
                 ("warrant", "pardon", f"w{RETITLE}"), ("halts", "ack", f"h{CLEAR}"),
                 ("loop", "reset", f"none{RETITLE}")):
        result = cli(*args)
        assert result.code in (1, 2), result
        _assert_safe(result.err)
        assert "\\x1b" in result.err and result.err.count("\n") == 1


def test_doctor_shows_file_names_escaped(cli, home):
    StopProtocol(home)
    (home / f"stops.json.corrupt-{RETITLE}").write_text("{")
    result = cli("doctor")
    _assert_safe(result.out + result.err)
    assert "stops.json.corrupt-\\x1b]0;pwned\\x07" in result.out


@pytest.mark.parametrize("command", [("status", "--json"), ("log", "--json"), ("warrant", "list", "--json"),
                                     ("halts", "list", "--json"), ("loop", "status", "--json")])
def test_json_output_is_exact_and_escapes_every_control(cli, hostile_home, command):
    StopProtocol(hostile_home).stops.stop("c1\x9b2J\u202eevil", source="ops@test", reason="\u2066x\x85")
    result = cli(*command)
    assert result.code == 0, result
    assert not _controls(result.out) and "\x9b" not in result.out
    decoded = [json.loads(line) for line in result.out.splitlines()] if command[0] == "log" else [result.json()]
    strings = set(_strings(decoded))
    if command[0] != "loop":
        assert any("\x1b" in text for text in strings)  # the values, exactly
    if command[0] in ("status", "log"):
        assert "c1\x9b2J\u202eevil" in strings and "\u2066x\x85" in strings


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
