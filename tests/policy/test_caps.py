"""Cap arithmetic: UTC days and ISO weeks at their boundaries, windows from the
reported reset, how far a cap is used and which warn points that crosses, and
which sessions a cap covers (per session, entity, host, fleet or account)."""
from __future__ import annotations

from calendar import timegm

import pytest

from leash.core.policy.caps import (
    Cap,
    SessionRef,
    account_of,
    bucket,
    cap_level,
    in_scope,
    members_of,
    meter_stale,
    period_of,
    reset_releases,
    warn_points_crossed,
)


def utc(year: int, month: int, day: int, hour: int, minute: int, second: int) -> float:
    return float(timegm((year, month, day, hour, minute, second, 0, 0, 0)))


SATURDAY = utc(2026, 11, 28, 17, 30, 0)
DAILY = Cap(name="daily", scope="entity", period="day", limit_usd=20)


def test_a_day_is_a_utc_calendar_day_and_its_last_second_is_in_it():
    day = period_of("day", now=SATURDAY)
    assert (day.key, day.start, day.end) == ("2026-11-28", utc(2026, 11, 28, 0, 0, 0), utc(2026, 11, 29, 0, 0, 0))
    assert period_of("day", now=utc(2026, 11, 28, 23, 59, 59)).key == "2026-11-28"
    midnight = period_of("day", now=utc(2026, 11, 29, 0, 0, 0))
    assert midnight.key == "2026-11-29" and midnight.start == day.end
    assert day.holds(day.start) and not day.holds(day.end)


@pytest.mark.parametrize("moment, key, monday", [
    (SATURDAY, "2026-W48", (2026, 11, 23)),
    (utc(2026, 11, 29, 23, 59, 59), "2026-W48", (2026, 11, 23)),  # Sunday's last second
    (utc(2026, 11, 30, 0, 0, 0), "2026-W49", (2026, 11, 30)),  # Monday 00:00
    (utc(2027, 1, 1, 12, 0, 0), "2026-W53", (2026, 12, 28)),  # ISO: 1 January 2027 is in 2026's last week
    (utc(1970, 1, 1, 0, 0, 0), "1970-W01", (1969, 12, 29)),
])
def test_a_week_starts_monday_00_00_utc_and_is_named_by_its_iso_week(moment, key, monday):
    week = period_of("week", now=moment)
    start = utc(*monday, 0, 0, 0)
    assert (week.key, week.start, week.end) == (key, start, start + 7 * 86400)
    assert week.holds(moment)


def test_a_window_ends_at_the_reported_reset_and_is_unknown_without_one():
    reset = SATURDAY + 3600
    window = period_of("window-5h", now=SATURDAY, reset_at=reset)
    assert (window.start, window.end) == (reset - 5 * 3600, reset)
    assert window.key == f"window-5h@{int(reset)}"
    assert period_of("window-7d", now=SATURDAY, reset_at=reset).start == reset - 7 * 86400
    assert period_of("window-5h", now=SATURDAY) is None
    assert period_of("window-5h", now=reset, reset_at=reset) is None  # reset: the next window's end is not known


def test_total_never_resets_and_an_unknown_period_is_refused():
    total = period_of("total", now=SATURDAY)
    assert (total.key, total.start, total.end) == ("total", None, None) and total.holds(0)
    assert cap_level(Cap(name="t", scope="fleet", period="total", limit_usd=5), 1, now=SATURDAY).resets_in is None
    with pytest.raises(ValueError):
        period_of("month", now=SATURDAY)


@pytest.mark.parametrize("used, warned, reached", [
    (0, (), False),
    (14.99, (), False),
    (15, (0.75,), False),
    (18.99, (0.75,), False),
    (19, (0.75, 0.95), False),
    (19.999, (0.75, 0.95), False),
    (20, (0.75, 0.95), True),
    (35, (0.75, 0.95), True),
])
def test_warn_points_are_crossed_at_their_fraction_and_the_cap_is_reached_at_its_limit(used, warned, reached):
    level = cap_level(DAILY, used, now=SATURDAY)
    assert (level.warned, level.reached) == (warned, reached)
    assert level.fraction == pytest.approx(used / 20)
    assert level.resets_in == utc(2026, 11, 29, 0, 0, 0) - SATURDAY
    assert level.period.key == "2026-11-28"


def test_a_percent_cap_compares_the_window_use_and_resets_with_the_window():
    cap = Cap(name="five", scope="account", period="window-5h", limit_percent=80, warn_at=(0.5,), account="work")
    level = cap_level(cap, 40, now=SATURDAY, reset_at=SATURDAY + 600)
    assert (level.fraction, level.warned, level.reached, level.resets_in) == (0.5, (0.5,), False, 600)
    assert cap_level(cap, 80, now=SATURDAY, reset_at=SATURDAY + 600).reached
    assert cap_level(cap, 80, now=SATURDAY).resets_in is None  # no reset reported yet


def test_a_zero_limit_is_reached_at_once_and_a_bad_figure_is_refused():
    level = cap_level(Cap(name="none", scope="session", period="day", limit_usd=0), 0, now=SATURDAY)
    assert level.reached and level.fraction == 1.0
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            cap_level(DAILY, bad, now=SATURDAY)


def test_each_warn_point_is_crossed_once():
    assert warn_points_crossed(DAILY, 10, 16) == (0.75,)
    assert warn_points_crossed(DAILY, 15, 16) == ()  # already at 0.75 before
    assert warn_points_crossed(DAILY, 10, 25) == (0.75, 0.95)
    assert warn_points_crossed(DAILY, 16, 19) == (0.95,)


def test_a_reset_releases_a_hold_only_when_asked_and_once_the_period_is_over():
    day = period_of("day", now=SATURDAY)
    resuming = Cap(name="r", scope="host", period="day", limit_usd=5, resume_at_reset=True)
    assert not reset_releases(resuming, day, now=day.end - 1)
    assert reset_releases(resuming, day, now=day.end)
    assert not reset_releases(DAILY, day, now=day.end + 86400)  # resume_at_reset = false: a human raises it
    assert not reset_releases(resuming, period_of("total", now=SATURDAY), now=SATURDAY)


def test_a_working_sessions_silent_meter_is_stale_after_its_minutes():
    cap = Cap(name="s", scope="session", period="day", limit_usd=5, stale_after=10)
    assert not meter_stale(cap, SATURDAY - 600, now=SATURDAY, working=True)
    assert meter_stale(cap, SATURDAY - 601, now=SATURDAY, working=True)
    assert meter_stale(cap, None, now=SATURDAY, working=True)
    assert not meter_stale(cap, SATURDAY - 6000, now=SATURDAY, working=False)


ACCOUNTS = {"work": {"hosts": ["web1"], "entities": ["web2/agent-3"]},
            "home": {"hosts": [], "entities": ["reviewer"]}}
ON_WEB1 = SessionRef("s1", entity="agent-1", host="web1")
AGENT_3_ON_WEB2 = SessionRef("s2", entity="agent-3", host="web2")
AGENT_3_ON_WEB3 = SessionRef("s3", entity="web3/agent-3", host="web3")
REVIEWER_ON_WEB1 = SessionRef("s4", entity="reviewer", host="web1")
NO_ENTITY = SessionRef("s5", host="web2")
SESSIONS = (ON_WEB1, AGENT_3_ON_WEB2, AGENT_3_ON_WEB3, REVIEWER_ON_WEB1, NO_ENTITY)


def test_a_session_is_in_the_account_of_its_entity_before_that_of_its_host():
    assert [account_of(s, ACCOUNTS) for s in SESSIONS] == ["work", "work", "", "home", ""]


@pytest.mark.parametrize("scope, buckets", [
    ("session", ["s1", "s2", "s3", "s4", "s5"]),
    ("entity", ["web1/agent-1", "web2/agent-3", "web3/agent-3", "web1/reviewer", "s5"]),
    ("host", ["web1", "web2", "web3", "web1", "web2"]),
    ("fleet", ["fleet"] * 5),
])
def test_each_scope_counts_every_session_in_a_bucket_of_its_own_kind(scope, buckets):
    cap = Cap(name="c", scope=scope, period="day", limit_usd=5)
    assert [bucket(cap, s, ACCOUNTS) for s in SESSIONS] == buckets
    assert all(in_scope(cap, s, ACCOUNTS) for s in SESSIONS)


def test_an_account_cap_covers_the_sessions_of_its_account_only():
    work = Cap(name="w", scope="account", period="window-5h", limit_percent=90, account="work")
    assert [in_scope(work, s, ACCOUNTS) for s in SESSIONS] == [True, True, False, False, False]
    assert members_of(work, "work", SESSIONS, ACCOUNTS) == [ON_WEB1, AGENT_3_ON_WEB2]
    per_host = Cap(name="h", scope="host", period="day", limit_usd=5)
    assert members_of(per_host, "web1", SESSIONS, ACCOUNTS) == [ON_WEB1, REVIEWER_ON_WEB1]
