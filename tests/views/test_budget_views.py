"""What the operator reads of spend and caps (``core.views.budget``) on a real
file backend, written through the budget store's unit: each cap's rows (the
limit in force, the time to its reset, holds, estimates), each session's
cost, the spend per hour, the header's figures and ``leash costs``' groups."""
from __future__ import annotations

import math

import pytest

from leash.core.store.files import FileBackend
from leash.core.store.records_budget import BudgetCounterRecord, BudgetWindowRecord, SpendRecord
from leash.core.views.budget import cap_rows, cost_rows, fleet_figures, hourly_spend, session_costs

HOUR, DAY = 3600.0, 86_400.0
NOW = 1_795_000_000.0  # 2026-11-18 (a Wednesday), 11:06:40 UTC
TODAY = math.floor(NOW / DAY) * DAY
THIS_HOUR = math.floor(NOW / HOUR) * HOUR


def config(*caps: dict) -> dict:
    return {"budget": {"cap": list(caps), "accounts": {}, "prices": {}}}


def cap(name="daily", scope="fleet", period="day", **more) -> dict:
    entry = {"name": name, "scope": scope, "period": period, "warn_at": [0.75, 0.95], "resume_at_reset": False,
             "account": "", "stale_after": 10, "on_stale": "warn"}
    entry.update(more)
    if "limit_usd" not in entry and "limit_percent" not in entry:
        entry["limit_usd"] = 10.0
    return entry


def counter(name="daily", bucket="fleet", period="2026-11-18", *, end: float | None = TODAY + DAY, used=2.0,
            unit="usd", **more) -> BudgetCounterRecord:
    values = {"cap": name, "bucket": bucket, "period": period, "period_end": end, "unit": unit, "used": used,
              "estimated": False, "raised_to": None, "warned": [], "held_since": None, "held_use": None,
              "released_at": None, "released_by": None, "updated_at": NOW}
    values.update(more)
    return BudgetCounterRecord.of(values)


def spend(session="s1", *, hour=THIS_HOUR, usd=1.0, model="claude-opus-4-8", host="web1", entity="ezra",
          cli="claude", estimated=False) -> SpendRecord:
    return SpendRecord(hour=hour, session_id=session, model=model, host=host, entity=entity, cli=cli, usd=usd,
                       estimated=estimated, input=100, output=10, cache_write=0, cache_read=0, reasoning=0,
                       requests=1)


@pytest.fixture
def backend(home):
    made = FileBackend(str(home))
    yield made
    made.close()


def write(backend, *records) -> None:
    with backend.budget.unit(now=NOW) as unit:
        for record in records:
            if isinstance(record, SpendRecord):
                unit.charge(record)
            elif isinstance(record, BudgetWindowRecord):
                unit.put_window(record)
            else:
                unit.put_counter(record)


# ----------------------------------------------------------------- cap_rows
def test_a_cap_nothing_counted_against_is_one_row_at_nothing_with_its_reset(backend):
    (row,) = cap_rows(backend, config(cap()), now=NOW)
    assert (row.cap, row.scope, row.bucket, row.period, row.period_key) == ("daily", "fleet", "fleet", "day",
                                                                             "2026-11-18")
    assert (row.used, row.limit, row.fraction, row.held, row.estimated) == (0.0, 10.0, 0.0, False, False)
    assert row.resets_in == pytest.approx(TODAY + DAY - NOW)


def test_the_limit_in_force_is_the_raise_else_the_configured_one(backend):
    write(backend, counter(used=8.0, raised_to=16.0), counter(bucket="other", used=5.0))
    raised, plain = cap_rows(backend, config(cap(scope="host")), now=NOW)
    assert (raised.bucket, raised.limit, raised.configured_limit, raised.raised_to) == ("fleet", 16.0, 10.0, 16.0)
    assert raised.fraction == pytest.approx(0.5)
    assert (plain.bucket, plain.limit, plain.raised_to, plain.fraction) == ("other", 10.0, None, 0.5)


def test_time_to_reset_follows_each_period(backend):
    write(backend, BudgetWindowRecord(bucket="fleet", window="window-5h", used_percent=40.0,
                                      resets_at=NOW + 1800, session_id="s1", at=NOW))
    caps = config(cap("week", period="week"), cap("ever", period="total"),
                  cap("five", period="window-5h", limit_usd=None, limit_percent=80),
                  cap("seven", period="window-7d", limit_usd=None, limit_percent=80))
    week, ever, five, seven = cap_rows(backend, caps, now=NOW)
    assert week.period_key == "2026-W47" and week.resets_in == pytest.approx(TODAY + 5 * DAY - NOW)
    assert ever.period_key == "total" and ever.resets_in is None
    assert five.period_key == f"window-5h@{int(NOW + 1800)}" and five.resets_in == pytest.approx(1800)
    assert five.unit == "percent" and five.limit == 80
    assert seven.period_key == "" and seven.resets_in is None  # no window reported: its reset is not known


def test_a_held_counter_stays_past_its_period_and_an_ended_one_does_not(backend):
    yesterday = TODAY - DAY
    write(backend, counter(period="2026-11-17", end=TODAY, used=12.0, held_since=yesterday + 10, held_use=12.0),
          counter("spare", period="2026-11-17", end=TODAY, used=9.0))
    held, spare = cap_rows(backend, config(cap(), cap("spare")), now=NOW)
    assert (held.period_key, held.held, held.held_since, held.resets_in) == ("2026-11-17", True, yesterday + 10, 0.0)
    assert (spare.period_key, spare.used) == ("2026-11-18", 0.0)  # yesterday's figure is not today's


def test_an_estimate_is_carried_into_the_caps_row(backend):
    write(backend, counter(used=3.0, estimated=True))
    (row,) = cap_rows(backend, config(cap()), now=NOW)
    assert row.estimated is True


def test_a_limit_of_zero_is_reached_at_once_as_the_caps_count_it(backend):
    write(backend, counter(used=0.5))
    (row,) = cap_rows(backend, config(cap(limit_usd=0.0)), now=NOW)
    assert row.fraction == 1.0  # reached (core.policy.caps.cap_level), never an infinite percentage


def test_no_caps_no_rows(backend):
    assert cap_rows(backend, {"budget": {}}, now=NOW) == []


# ----------------------------------------------------------------- spend
def test_each_sessions_cost_sums_its_models_and_hours_and_keeps_an_estimate(backend):
    write(backend, spend("s1", usd=1.5), spend("s1", usd=0.25, model="claude-future-9", estimated=True),
          spend("s2", usd=2.0, hour=THIS_HOUR - 3 * HOUR))
    costs = session_costs(backend)
    assert costs["s1"].usd == pytest.approx(1.75) and costs["s1"].estimated is True
    assert costs["s2"].usd == pytest.approx(2.0) and costs["s2"].estimated is False
    assert set(session_costs(backend, since=THIS_HOUR)) == {"s1"}


def test_hourly_spend_is_oldest_first_with_the_quiet_hours_at_zero(backend):
    write(backend, spend(usd=1.0), spend("s2", usd=0.5), spend(usd=2.0, hour=THIS_HOUR - 2 * HOUR),
          spend(usd=9.0, hour=THIS_HOUR - 5 * HOUR))
    assert hourly_spend(backend, now=NOW, hours=4) == pytest.approx([0.0, 2.0, 0.0, 1.5])
    assert len(hourly_spend(backend, now=NOW)) == 24


def test_the_header_figures_count_today_only_and_the_busiest_open_window(backend):
    write(backend, spend(usd=1.0), spend("s2", usd=0.5, estimated=True), spend(usd=7.0, hour=TODAY - HOUR),
          BudgetWindowRecord(bucket="fleet", window="window-5h", used_percent=63.0, resets_at=NOW + 60,
                             session_id="s1", at=NOW),
          BudgetWindowRecord(bucket="fleet", window="window-7d", used_percent=90.0, resets_at=NOW - 60,
                             session_id="s1", at=NOW - 3600))
    figures = fleet_figures(backend, config(), now=NOW)
    assert figures.today_usd == pytest.approx(1.5) and figures.estimated is True
    assert figures.busiest_window == ("window-5h", 63.0)  # the 7-day window's report has reset


def test_the_header_figures_of_a_home_that_spent_nothing(backend):
    figures = fleet_figures(backend, config(), now=NOW)
    assert (figures.today_usd, figures.estimated, figures.busiest_window) == (0.0, False, None)


# ----------------------------------------------------------------- cost_rows
def test_costs_group_by_each_key(backend):
    write(backend, spend("s1", usd=1.0), spend("s2", usd=3.0, host="web2", entity="ada", model="gpt-5", cli="codex"),
          spend("s1", usd=0.5, hour=TODAY - DAY + HOUR, estimated=True))
    keys = {by: [(row["key"], round(row["usd"], 6)) for row in cost_rows(backend, by=by)]
            for by in ("session", "entity", "host", "model", "cli")}
    assert keys == {"session": [("s2", 3.0), ("s1", 1.5)], "entity": [("ada", 3.0), ("ezra", 1.5)],
                    "host": [("web2", 3.0), ("web1", 1.5)], "model": [("gpt-5", 3.0), ("claude-opus-4-8", 1.5)],
                    "cli": [("codex", 3.0), ("claude", 1.5)]}
    days = cost_rows(backend, by="day")
    assert [(row["key"], row["usd"], row["estimated"]) for row in days] == [(TODAY - DAY, 0.5, True),
                                                                            (TODAY, 4.0, False)]


def test_costs_since_a_time_count_from_its_hour(backend):
    write(backend, spend(usd=1.0), spend(usd=2.0, hour=THIS_HOUR - 2 * HOUR))
    (row,) = cost_rows(backend, by="session", since=THIS_HOUR + 60)  # the spend is kept per hour
    assert row["usd"] == pytest.approx(1.0)
    assert cost_rows(backend, by="session", since=NOW + DAY) == []


def test_costs_by_an_unknown_key_is_refused(backend):
    with pytest.raises(ValueError, match="--by must be one of"):
        cost_rows(backend, by="colour")
