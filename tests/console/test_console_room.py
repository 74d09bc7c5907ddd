"""What the console draws in the room it has, at 80x24 and 120x35: the row an
approval's diff is about stays on screen under a detail line of bounded
height; a session's state and why, a halt's type and every column's header
are drawn whole in the grid; the log screen gives the reason its room and
shows the selected line's whole reason; a toast covers neither the detail
line nor the footer; the summary line says a problem once, in symbols the
help screen explains; the palette offers only the resumes the core allows.
Everything is read off the drawn screen."""
from __future__ import annotations

import re

from leash.core.store.select import backend_for

from ..support.console import CONSOLE_NOW, ready, running, screen_text, select, settle, until

SMALL, MIDDLE = (80, 24), (120, 35)
DIFF_LINES = 30  # an Edit far longer than any detail line may show
LONG_REASON = ("rolled back the billing migration after the invoices doubled; the agent must not touch "
               "the ledger tables again until finance signs off on the new schema")


def drawn(app, widget) -> list[str]:
    """The screen's lines inside ``widget``'s region, as drawn now."""
    region = widget.region
    lines = screen_text(app).splitlines()
    return [line[region.x:region.x + region.width] for line in lines[region.y:region.y + region.height]]


def flat(lines: list[str]) -> str:
    return " ".join(" ".join(lines).replace("│", " ").split())


def request_long_edit(home):
    old = "".join(f"line {n} = {n}\n" for n in range(DIFF_LINES // 2))
    new = "".join(f"line {n} = {n * 2}\n" for n in range(DIFF_LINES // 2))
    return backend_for(home).approvals.request("claude-c044", "Edit", {"file_path": "ledger.py", "old_string": old,
                                                                       "new_string": new},
                                               timeout_s=300, now=CONSOLE_NOW - 1)


# ---------------------------------------------------------------- an approval's diff
async def test_an_edit_approval_keeps_its_row_on_screen_under_a_bounded_detail_line(console_app, home):
    request_long_edit(home)
    app = console_app()
    for size in (MIDDLE, SMALL):
        async with running(app, size) as pilot:
            await pilot.press("7", "down")  # the second approval: agent-chatty's long Edit
            await settle(pilot, app)
            detail = app.query_one("#detail")
            panel = drawn(app, app.panel("approvals"))
            assert any("agent-chatty" in line and "Edit" in line for line in panel), (size, panel)
            shown = drawn(app, detail)
            assert shown[0].strip().startswith("agent-chatty asks to run Edit"), shown
            assert len(shown) <= size[1] // 4, (size, shown)  # a few lines, never a third of the screen
            assert re.search(r"… \d+ more lines", shown[-1]), shown  # what is cut says so
        app = console_app()


# ---------------------------------------------------------------- the grid at 120x35
def seed_wide_cells(home) -> None:
    """A session waiting for permission (the longest state there is), and
    halts of the longest types."""
    backend = backend_for(home)
    backend.sessions.observe("claude-wait", now=CONSOLE_NOW - 10, tool="Bash", status="waiting for permission")
    for condition, halt_type in (("scope_creep", "code_safety"), ("unsure_of_intent", "uncertainty")):
        backend.halts.record({"session_token": "claude-wait", "halt_type": halt_type, "severity": "medium",
                              "condition_name": condition, "description": "the agent asked for a human"},
                             now=CONSOLE_NOW - 5)


async def test_key_columns_and_headers_are_drawn_whole_at_120x35(console_app, home):
    seed_wide_cells(home)
    app = console_app()
    async with running(app, MIDDLE) as pilot:
        assert app.screen.has_class("-wide")
        await select(pilot, app, "sessions", "claude-wait")
        sessions = flat(drawn(app, app.panel("sessions")))
        assert "waiting for permission" in sessions, sessions
        assert "pending halt" in sessions, sessions  # the Why of a halted session, readable
        halts = flat(drawn(app, app.panel("halts")))
        for halt_type in ("security", "execution", "code_safety", "uncertainty"):
            assert halt_type in halts, (halt_type, halts)
        for spec_key in ("sessions", "halts", "warrants", "locks", "loops", "acklog", "approvals"):
            table = app.panel(spec_key).table
            header = flat(drawn(app, table)[:1])
            for column in table.columns.values():
                label = str(column.label)
                assert re.search(rf"(^| ){re.escape(label)}( |$)", header), (spec_key, label, header)


async def test_the_log_screen_gives_the_reason_its_room_and_a_detail_line_at_80_columns(console_app, home):
    backend_for(home).stops.stop("claude-ledger", source="ops@test", reason=LONG_REASON, now=CONSOLE_NOW - 1)
    app = console_app()
    async with running(app, SMALL) as pilot:
        await pilot.press("l")
        await settle(pilot, app)
        await until(pilot, lambda: LONG_REASON in flat(drawn(app, app.screen.query_one("#acklog-detail"))),
                    "the newest line's whole reason in the detail line")
        table = app.screen.query_one("#acklog-table")
        lines = drawn(app, table)
        header = lines[0].split()
        assert header[-1] == "Reason", header
        assert "explicit halt: wrong repo" in flat(lines), lines  # 25 cells of a reason, not 12
        detail = flat(drawn(app, app.screen.query_one("#acklog-detail")))
        assert LONG_REASON in detail, detail  # the newest line is selected: its whole reason


# ---------------------------------------------------------------- toasts
async def test_a_toast_covers_neither_the_detail_line_nor_the_footer(console_app, home):
    from textual.widgets import Footer
    from textual.widgets._toast import Toast

    request_long_edit(home)
    app = console_app()
    async with app.run_test(size=MIDDLE, notifications=True) as pilot:
        await ready(pilot, app)
        await pilot.press("7", "down")
        await settle(pilot, app)
        app.notify("allowed Bash for agent-answers: a toast long enough to take two lines of its box")
        await settle(pilot, app)
        detail, footer = app.query_one("#detail"), app.screen.query_one(Footer)
        toasts = [toast for toast in app.screen.query(Toast) if toast.region.area]
        assert toasts
        for toast in toasts:
            assert not toast.region.overlaps(detail.region), (toast.region, detail.region)
            assert not toast.region.overlaps(footer.region), (toast.region, footer.region)
        assert "-line 1 = 1" in flat(drawn(app, detail))  # the diff is still to be read


# ---------------------------------------------------------------- the summary line and its symbols
async def test_the_summary_says_a_problem_once_in_symbols_the_help_explains(console_app, home):
    app = console_app()
    async with running(app, SMALL) as pilot:
        data = dict(app.view_data)
        data["problems"] = ["tmux unreachable (no tmux server runs on /tmp/leash.sock — start it)"]
        app.apply_view(data)
        await settle(pilot, app)
        summary = drawn(app, app.screen.query_one("#summary"))[0]
        assert summary.lower().count("tmux unreachable") == 1, summary
        labels = [label for label, _ in re.findall(r"([^\W\d_]+|■) ?(\d+)", summary)]
        assert labels and len(labels) == len(set(labels)), summary  # no symbol stands for two things
    explained = await help_legend(console_app)
    for label in labels:
        assert label in explained, (label, summary, explained)


async def help_legend(console_app) -> set[str]:
    """The words and symbols the help screen explains (what comes before a
    line's first colon), read off a screen tall enough for all of it."""
    app = console_app()
    async with running(app, (160, 90)) as pilot:
        await pilot.press("question_mark")
        await settle(pilot, app)
        lines = [line.strip(" │▊▎") for line in screen_text(app).splitlines()]
    return {token for line in lines if ":" in line for token in re.split(r"[\s,]+", line.split(":")[0]) if token}


async def test_the_mark_after_a_session_outside_tmux_is_explained(console_app, home):
    app = console_app()
    async with running(app, MIDDLE) as pilot:
        await select(pilot, app, "sessions", "claude-legacy")
        await settle(pilot, app)
        assert "claude-legacy ·" in flat(drawn(app, app.panel("sessions")))
        assert "no tmux pane" in flat(drawn(app, app.query_one("#detail")))
    assert "·" in await help_legend(console_app)


# ---------------------------------------------------------------- the palette
async def palette_offers(pilot, app, typed: str) -> str:
    from textual.widgets import OptionList

    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*typed)
    await settle(pilot, app)  # the palette's search is a worker: done
    await until(pilot, lambda: app.screen.has_class("-ready"), "the palette's search finished")
    return "\n".join(flat(drawn(app, options)) for options in app.screen.query(OptionList))


async def test_the_palette_offers_only_the_resumes_the_core_allows(console_app, home):
    app = console_app()
    async with running(app, MIDDLE) as pilot:
        offered = await palette_offers(pilot, app, "resume")
        assert "Resume session claude-legacy" in offered, offered  # stopped: it may be resumed
        assert "Resume session agent-answers" not in offered, offered  # not stopped
        assert "Resume the fleet" not in offered, offered  # no fleet stop
    backend_for(home).stops.stop_fleet(source="ops@test", reason="maintenance", now=CONSOLE_NOW - 1)
    app = console_app()
    async with running(app, MIDDLE) as pilot:
        offered = await palette_offers(pilot, app, "resume")
        assert "Resume the fleet" in offered, offered
