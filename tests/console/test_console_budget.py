"""Spend in the console, driven through Textual's pilot: each session's cost
(an estimate marked ``~``, blank for a session nothing metered) in a column
that fits at 80 columns, the header's spend today and busiest window, the
Budget panel's rows and sparkline, and raising a held cap from its row by
keys. Every figure comes from a real file backend: the demo's spend charged
through its budget unit (``console.tui.demo.seed_budget``) against the demo's
caps in config.toml; what is expected is worked out from what was charged."""
from __future__ import annotations

import pytest
from textual.widgets import Sparkline

from leash.console.tui.demo import (
    DEMO_CAPS,
    DEMO_SESSION_LIMIT,
    DEMO_SESSIONS,
    DEMO_SPEND_HOURS,
    DEMO_UNKNOWN_MODEL,
    DEMO_WINDOW_PERCENT,
    budget_config,
    seed_budget,
)
from leash.core.store.select import backend_for

from ..support.console import CONSOLE_NOW, pressed, ready, running, screen_text, settle

SMALL, MIDDLE, LARGE = (80, 24), (120, 35), (160, 45)
DAY_START = CONSOLE_NOW - CONSOLE_NOW % 86400
HELD_SESSION = "claude-c044"  # the demo's agent past its own day's cap (agent-chatty)


def spent(session_id: str) -> tuple[float, bool]:
    """What the seed charged ``session_id`` (all of it today: the hours before
    midnight are folded into the day's first), and whether any of it was priced
    without the table knowing the model."""
    index = next(n for n, (_, _, sid, _) in enumerate(DEMO_SESSIONS) if sid == session_id)
    charged = [(model, usd) for shares in DEMO_SPEND_HOURS for model, usd in [shares[index]] if usd]
    return round(sum(usd for _, usd in charged), 2), any(model == DEMO_UNKNOWN_MODEL for model, _ in charged)


def cost(session_id: str) -> str:
    usd, estimated = spent(session_id)
    return f"{'~' if estimated else ''}${usd:,.2f}"


@pytest.fixture
def budget_app(console_app, home):
    """The console's seeded fleet with the demo's caps and spend."""
    with open(home / "config.toml", "a") as config:
        config.write(budget_config())
    seed_budget(home, now=CONSOLE_NOW)
    return console_app


def drawn(app, widget) -> list[str]:
    region = widget.region
    lines = screen_text(app).splitlines()
    return [line[region.x:region.x + region.width] for line in lines[region.y:region.y + region.height]]


def row_of(lines: list[str], *words: str) -> str:
    """The first line holding every one of ``words``, without the panel's borders."""
    found = [line.strip("│ ") for line in lines if all(word in line for word in words)]
    assert found, (words, lines)
    return found[0]


async def show_budget(pilot, app, contains: str = "") -> None:
    """The Budget panel (its number key), the cursor on the row whose key holds ``contains``."""
    await pilot.press("8")
    await settle(pilot, app)
    if contains:
        table = app.panel("budget").table
        key = next(str(k.value) for k in table.rows if contains in str(k.value))
        table.move_cursor(row=table.get_row_index(key))
        await settle(pilot, app)


@pytest.mark.parametrize("into_the_day", [300, 3 * 3600, 8 * 3600], ids=["00:05", "03:00", "08:00"])
def test_the_seeded_session_is_held_by_its_days_cap_at_any_hour(home, into_the_day):
    """The demo's story holds just after midnight too: the hours of spend
    before the day began count in its first hour, not lost to yesterday."""
    now = DAY_START + into_the_day
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(home / "config.toml", "a") as config:
        config.write(budget_config())
    seed_budget(home, now=now)
    counters = {c.bucket: c for c in backend_for(home).budget.counters(cap="session-daily")}
    assert counters[HELD_SESSION].held and counters[HELD_SESSION].used == spent(HELD_SESSION)[0]
    assert not counters["claude-7f3a"].held and counters["claude-7f3a"].used == spent("claude-7f3a")[0]


# ---------------------------------------------------------------- the cost column
@pytest.mark.parametrize("size", [LARGE, SMALL], ids=lambda size: f"{size[0]}x{size[1]}")
async def test_each_session_shows_its_cost_an_estimate_marked_and_none_blank(budget_app, size):
    app = budget_app()
    async with running(app, size):
        lines = drawn(app, app.panel("sessions"))
        header = row_of(lines, "Session", "State")
        assert "Cost" in header, lines
        assert row_of(lines, "agent-answers").split()[-2] == cost("claude-7f3a")  # the cost, then the age
        assert row_of(lines, "agent-chatty").split()[-2] == cost(HELD_SESSION)
        assert cost(HELD_SESSION).startswith("~")  # priced without the table knowing its model
        silent = row_of(lines, "agent-silent")
        assert "$" not in silent  # nothing metered: blank, not $0.00
        for state in ("waiting for approval", "halted"):  # the key columns stay whole beside it
            assert state in " ".join(lines)


async def test_a_fleet_that_meters_nothing_has_no_cost_column_nor_spend_in_the_header(console_app):
    app = console_app()
    async with running(app, LARGE):
        assert "Cost" not in row_of(drawn(app, app.panel("sessions")), "Session", "State")
        assert "today" not in screen_text(app).splitlines()[0]


# ---------------------------------------------------------------- the header
@pytest.mark.parametrize("size,wording", [(LARGE, " today · 5h "), (SMALL, " · 5h ")],
                         ids=["160x45", "80x24"])
async def test_the_header_says_the_fleets_spend_today_and_its_busiest_window(budget_app, size, wording):
    today = [spent(sid) for _, _, sid, _ in DEMO_SESSIONS]
    total, estimated = sum(usd for usd, _ in today), any(flag for _, flag in today)
    app = budget_app()
    async with running(app, size):
        header = screen_text(app).splitlines()[0]
        expected = f"{'~' if estimated else ''}${total:,.2f}{wording}{DEMO_WINDOW_PERCENT:.0f}%"
        assert expected in header, header
        assert "…" not in header and "halts" in header  # the counts are all there beside it


# ---------------------------------------------------------------- the Budget panel
async def test_the_budget_panel_shows_each_cap_and_bucket_and_the_last_days_spend(budget_app):
    app = budget_app()
    async with running(app, MIDDLE) as pilot:
        await show_budget(pilot, app)
        lines = drawn(app, app.panel("budget"))
        assert row_of(lines, "Cap", "Bucket", "Used / limit", "%", "Held", "Resets in")
        fleet_used = sum(spent(sid)[0] for _, _, sid, _ in DEMO_SESSIONS)
        fleet_limit = float(next(limit for name, *_, limit in DEMO_CAPS if name == "fleet-daily").split("=")[1])
        fleet = row_of(lines, "fleet-daily")
        assert f"~${fleet_used:,.2f} / ${fleet_limit:,.2f}" in fleet and f"{fleet_used / fleet_limit:.0%}" in fleet
        assert "16h" in fleet  # the UTC day resets at midnight: 16 hours after 08:00
        held_used, _ = spent(HELD_SESSION)
        held = row_of(lines, "session-daily", f"session/{HELD_SESSION}")
        assert f"~${held_used:,.2f} / ${DEMO_SESSION_LIMIT:,.2f}" in held and "HELD 7m" in held
        assert "HELD" not in row_of(lines, "session-daily", "session/claude-7f3a")
        assert f"{DEMO_WINDOW_PERCENT:g}% / 90%" in row_of(lines, "max-5h")
        hours = app.panel("budget").query_one(Sparkline).data
        assert len(hours) == 24
        this_hour = sum(usd for _, usd in DEMO_SPEND_HOURS[0])
        assert hours[-1] == pytest.approx(this_hour) and hours[0] == 0  # oldest first: nothing a day ago
        assert f"· spend per hour, last 24 h: peak ${max(hours):,.2f}/h, total ${sum(hours):,.2f}" in lines[1]


async def test_the_detail_line_says_a_held_caps_row_in_words(budget_app):
    app = budget_app()
    async with running(app, LARGE) as pilot:
        await show_budget(pilot, app, HELD_SESSION)
        detail = " ".join(" ".join(drawn(app, app.query_one("#detail"))).split())
        assert f"session-daily (session/{HELD_SESSION}, day)" in detail
        assert "HELD: its sessions are paused for 7m; + raises it" in detail


# ---------------------------------------------------------------- raising a cap
async def test_plus_on_a_held_cap_raises_it_for_its_bucket_with_the_reason_typed(budget_app, home):
    app = budget_app()
    async with running(app, SMALL) as pilot:
        await show_budget(pilot, app, HELD_SESSION)
        await pressed(pilot, "plus", *"12.5", "enter", *"reviewed the refactor", "ctrl+y")
        backend = backend_for(home)
        counters = {c.bucket: c for c in backend.budget.counters(cap="session-daily")}
        assert counters[HELD_SESSION].raised_to == 12.5 and not counters[HELD_SESSION].held
        assert counters["claude-7f3a"].raised_to is None  # the other bucket of the cap is untouched
        raised = [line for line in backend.acklog.read() if line.event == "budget_raised"]
        assert len(raised) == 1 and raised[0].source == "ops@test" and raised[0].reason == "reviewed the refactor"
        await settle(pilot, app)
        assert "HELD" not in row_of(drawn(app, app.panel("budget")), f"session/{HELD_SESSION}")


async def test_a_raise_the_core_refuses_is_said_and_the_hold_stays(budget_app, home):
    app = budget_app()
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        await ready(pilot, app)
        await show_budget(pilot, app, HELD_SESSION)
        await pressed(pilot, "plus", *"5", "enter", *"too low", "ctrl+y")
        assert "Raise cap session-daily?" not in screen_text(app)  # the dialog closed; a toast says why
        said = " ".join(str(n.message) for n in app._notifications)
        assert f"cap session-daily ({HELD_SESSION}): 5 is not above its use" in said, said
        counter = next(c for c in backend_for(home).budget.counters(cap="session-daily") if c.bucket == HELD_SESSION)
        assert counter.held and counter.raised_to is None
        assert not [line for line in backend_for(home).acklog.read() if line.event == "budget_raised"]


async def test_a_limit_that_is_not_a_number_keeps_the_dialog_open_saying_so(budget_app, home):
    app = budget_app()
    async with running(app, SMALL) as pilot:
        await show_budget(pilot, app, HELD_SESSION)
        await pressed(pilot, "plus", *"lots", "enter", *"why not", "ctrl+y")
        notice = str(app.screen.query_one("#confirm-notice").render())
        assert "new limit: 'lots' is not a number" in notice
        await pilot.press("escape")
        await settle(pilot, app)
        counter = next(c for c in backend_for(home).budget.counters(cap="session-daily") if c.bucket == HELD_SESSION)
        assert counter.held and counter.raised_to is None


# ---------------------------------------------------------------- through leashd
def panel_row(home, cap: str, bucket: str, now: float) -> dict:
    """The Budget panel's row of ``cap`` for ``bucket``, as the feed reads it."""
    from leash.console.tui.widgets.budget import add_budget

    view: dict = {"sessions": [], "problems": []}
    add_budget(view, backend_for(home), now=now)
    assert not view["problems"], view["problems"]
    return next(row for row in view["budget"] if row["cap"] == cap and row["bucket"] == bucket)


def test_through_leashd_the_raise_is_run_by_the_daemon_as_the_operator(home, daemon):
    """A console on leashd's operator socket (the separated profile) raises
    through the daemon's ``cli`` verb: the daemon's home is changed, the
    source is the peer the kernel names (not what the console says), and a
    refusal comes back as the command's own error line."""
    import time

    from leash.console.errors import Refused
    from leash.console.operations import Confirmed
    from leash.console.tui.screens.budgetraise import raise_operation
    from leash.core.base.source import default_source
    from leash.core.store.remote import RemoteBackend

    now = time.time()
    with open(home / "config.toml", "a") as config:
        config.write(budget_config())
    seed_budget(home, now=now)
    row = panel_row(home, "session-daily", HELD_SESSION, now)
    operation = raise_operation(RemoteBackend(str(home / "run" / "operator.sock")), row, source="forged@elsewhere",
                                home=home)
    with pytest.raises(Refused) as refused:
        operation.run(Confirmed(text="too low", values=(("limit", "5"),)))
    assert "session-daily" in str(refused.value)
    said = operation.run(Confirmed(text="reviewed the refactor", values=(("limit", "12.5"),)))
    assert said.startswith("raised session-daily")
    counter = next(c for c in backend_for(home).budget.counters(cap="session-daily") if c.bucket == HELD_SESSION)
    assert counter.raised_to == 12.5 and not counter.held
    (line,) = [line for line in backend_for(home).acklog.read() if line.event == "budget_raised"]
    assert line.source == default_source() and line.reason == "reviewed the refactor"
