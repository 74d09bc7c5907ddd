"""The meter and the caps (``core.views.metering``) on a real file backend: a
captured Claude Code transcript charged once however it is read, priced by
the table; warn points, holds, raises, resets, stale meters, percent caps."""
from __future__ import annotations

import shutil
from decimal import Decimal

import pytest

from leash.core.policy.prices import price
from leash.core.policy.usagelines import TokenUsage
from leash.core.state.meterread import claude_code_files, read_new
from leash.core.store.files import FileBackend
from leash.core.views import metering as engine
from leash.core.views import spendmeter as reading

from ..support.checkout import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code_transcript"
NOW = 1_795_000_000.0  # a Tuesday, mid-day UTC


def config(*caps: dict, accounts: dict | None = None) -> dict:
    return {"budget": {"cap": list(caps), "accounts": accounts or {}, "prices": {}}}


def cap(name="daily", scope="fleet", period="day", **more) -> dict:
    entry = {"name": name, "scope": scope, "period": period, "warn_at": [0.5, 0.9], "resume_at_reset": False,
             "account": "", "stale_after": 10, "on_stale": "warn"}
    entry.update(more)
    if "limit_usd" not in entry and "limit_percent" not in entry:
        entry["limit_usd"] = 100.0
    return entry


@pytest.fixture
def backend(home):
    made = FileBackend(str(home))
    yield made
    made.close()


@pytest.fixture
def session(backend, tmp_path):
    """A session whose transcript (and its subagent's) is a copy of the capture."""
    shutil.copy(FIXTURE / "session.jsonl", tmp_path / "session.jsonl")
    shutil.copytree(FIXTURE / "session", tmp_path / "session")
    backend.sessions.observe("s1", now=NOW, transcript_path=str(tmp_path / "session.jsonl"), cli="claude",
                             entity="ezra", status="working")
    return tmp_path / "session.jsonl"


def table_price(path) -> Decimal:
    """The fixture priced message by message by the table, read by the plain reader."""
    total = Decimal(0)
    for file in claude_code_files(path):
        for usage in read_new(file, cli="claude").usages:
            total += price(usage, when=NOW).usd
    return total


def spent(backend) -> float:
    return sum(row.usd for row in backend.budget.spend())


def test_a_session_and_its_subagent_are_charged_once_at_the_tables_price(backend, session):
    outcome = reading.meter_session(backend, "s1", config=config(), now=NOW)
    expected = float(table_price(session))
    assert expected > 0
    assert outcome.usd == pytest.approx(expected, rel=1e-6)
    assert spent(backend) == pytest.approx(expected, rel=1e-6)
    tokens = backend.budget.totals("session")[0]
    assert (tokens.input, tokens.output, tokens.cache_write, tokens.cache_read) == (5000, 50, 2000, 500)
    again = reading.meter_session(backend, "s1", config=config(), now=NOW + 60)
    assert again.usd == 0 and spent(backend) == pytest.approx(expected, rel=1e-6)


def test_a_transcript_read_a_line_at_a_time_adds_up_to_the_whole(backend, tmp_path):
    lines = (FIXTURE / "session.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "grow.jsonl"
    path.write_bytes(b"")
    backend.sessions.observe("s2", now=NOW, transcript_path=str(path), cli="claude")
    for number, line in enumerate(lines):
        with path.open("ab") as handle:
            handle.write(line)
        reading.meter_session(backend, "s2", config=config(), now=NOW + number)
    whole = sum(float(price(u, when=NOW).usd) for u in read_new(path, cli="claude").usages)
    assert spent(backend) == pytest.approx(whole, rel=1e-6)


def test_a_rewritten_transcript_is_not_charged_twice(backend, session):
    reading.meter_session(backend, "s1", config=config(), now=NOW)
    first = spent(backend)
    text = session.read_bytes()
    session.write_bytes(b"")  # truncated, then written again whole (another inode's worth of change)
    reading.meter_session(backend, "s1", config=config(), now=NOW + 1)
    session.write_bytes(text)
    reading.meter_session(backend, "s1", config=config(), now=NOW + 2)
    assert spent(backend) == pytest.approx(first, rel=1e-9)


def test_warn_points_are_logged_once_and_the_cap_holds_at_its_limit(backend, session):
    whole = float(table_price(session))
    limit = whole * 1.5  # the run is two thirds of the limit: past 0.5, short of 0.9
    outcome = reading.meter_session(backend, "s1", config=config(cap(limit_usd=limit)), now=NOW)
    assert [w[2] for w in outcome.warned] == [0.5] and outcome.held == []
    lines = [line for line in backend.acklog.tail(20) if line.event == "budget_warn"]
    assert len(lines) == 1 and lines[0].extra.get("cap") == "daily"
    # another session spends as much: the fleet cap is reached and held
    shutil.copy(session, session.with_name("other.jsonl"))
    backend.sessions.observe("s3", now=NOW, transcript_path=str(session.with_name("other.jsonl")), cli="claude")
    outcome = reading.meter_session(backend, "s3", config=config(cap(limit_usd=limit)), now=NOW + 5)
    assert outcome.held == [("daily", "fleet")] and outcome.warned == []
    (hold,) = backend.budget.holds()
    assert hold.cap == "daily" and hold.bucket == "fleet" and hold.used == pytest.approx(spent(backend), rel=1e-6)
    held = [line for line in backend.acklog.tail(20) if line.event == "budget_hold"]
    assert len(held) == 1 and set(held[0].extra["sessions"]) >= {"s1", "s3"}


def test_a_raise_lifts_the_hold_and_refuses_a_limit_below_the_use(backend, session):
    settings = config(cap(limit_usd=0.0001))
    reading.meter_session(backend, "s1", config=settings, now=NOW)
    assert backend.budget.holds()
    with pytest.raises(ValueError, match="not above its use"):
        engine.raise_cap(backend, "daily", to=0.0001, reason="more", source="op", config=settings, now=NOW + 1)
    with pytest.raises(ValueError, match="did you mean 'daily'"):
        engine.raise_cap(backend, "dialy", to=50, reason="more", source="op", config=settings, now=NOW + 1)
    with pytest.raises(ValueError, match="finite"):
        engine.raise_cap(backend, "daily", to=float("nan"), reason="more", source="op", config=settings, now=NOW)
    (raised,) = engine.raise_cap(backend, "daily", to=50, reason="a big day", source="op", config=settings,
                                 now=NOW + 2)
    assert raised.raised_to == 50 and raised.released_by == "raise" and backend.budget.holds() == []
    line = [li for li in backend.acklog.tail(5) if li.event == "budget_raised"][0]
    assert (line.extra.get("to"), line.reason, line.source) == (50.0, "a big day", "op")


def test_a_raise_names_no_bucket_the_cap_cannot_have(backend, session):
    settings = config(cap(), cap(name="each", scope="session"))
    with pytest.raises(ValueError, match=r"cap daily has no bucket 'flet' \(did you mean 'fleet'\?\)"):
        engine.raise_cap(backend, "daily", to=50, reason="more", source="op", config=settings, now=NOW, bucket="flet")
    with pytest.raises(ValueError, match=r"cap each has no bucket 's2' \(its buckets: s1\)"):
        engine.raise_cap(backend, "each", to=50, reason="more", source="op", config=settings, now=NOW, bucket="s2")
    assert backend.budget.counters() == []  # nothing made for a mistyped bucket
    (raised,) = engine.raise_cap(backend, "each", to=50, reason="more", source="op", config=settings, now=NOW,
                                 bucket="s1")  # a session with no spend yet: its bucket is known
    assert (raised.bucket, raised.raised_to) == ("s1", 50.0)


def test_a_raise_acknowledges_the_budget_halt_the_gate_recorded(backend, session, home):
    from leash.core.hook.gate import Gate

    settings = config(cap(limit_usd=0.0001))
    (home / "config.toml").write_text('[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\n'
                                      'limit_usd = 0.0001\n')
    reading.meter_session(backend, "s1", config=settings, now=NOW)
    gate = Gate(str(home), backend=backend)
    assert gate.check("s1", "Read", {"file_path": "/etc/hosts"}, now=NOW).rule == "budget_hold"
    assert backend.halts.state("s1", now=NOW) != "active"
    engine.raise_cap(backend, "daily", to=10, reason="ok", source="op", config=settings, now=NOW + 1)
    assert backend.halts.state("s1", now=NOW + 1) == "active"
    assert Gate(str(home), backend=backend).check("s1", "Read", {"file_path": "/etc/hosts"}, now=NOW + 2).allow


def test_spend_past_a_raised_limit_holds_again(backend, session):
    settings = config(cap(limit_usd=0.0001))
    reading.meter_session(backend, "s1", config=settings, now=NOW)
    whole = spent(backend)
    engine.raise_cap(backend, "daily", to=whole * 1.5, reason="a little more", source="op", config=settings,
                     now=NOW + 1)
    shutil.copy(session, session.with_name("again.jsonl"))
    backend.sessions.observe("s4", now=NOW, transcript_path=str(session.with_name("again.jsonl")), cli="claude")
    assert reading.meter_session(backend, "s4", config=settings, now=NOW + 2).held == [("daily", "fleet")]


def test_resume_at_reset_releases_a_hold_when_its_day_ends(backend, session):
    settings = config(cap(limit_usd=0.0001, resume_at_reset=True))
    reading.meter_session(backend, "s1", config=settings, now=NOW)
    assert engine.tick(backend, config=settings, now=NOW + 60) == []
    tomorrow = (NOW // 86400 + 1) * 86400 + 1
    assert engine.tick(backend, config=settings, now=tomorrow) == ["reset daily fleet"]
    assert backend.budget.holds() == []
    assert any(line.event == "budget_reset" for line in backend.acklog.tail(5))


def test_without_resume_at_reset_a_hold_outlasts_its_day(backend, session):
    settings = config(cap(limit_usd=0.0001))
    reading.meter_session(backend, "s1", config=settings, now=NOW)
    engine.tick(backend, config=settings, now=NOW + 2 * 86400)
    assert len(backend.budget.holds()) == 1


def test_a_limit_lowered_in_config_holds_at_the_next_tick(backend, session):
    reading.meter_session(backend, "s1", config=config(cap(limit_usd=100)), now=NOW)
    assert engine.tick(backend, config=config(cap(limit_usd=0.0001)), now=NOW + 30) == ["held daily fleet"]
    assert len(backend.budget.holds()) == 1


def test_a_silent_meter_while_working_warns_once_or_holds(backend, tmp_path):
    path = tmp_path / "quiet.jsonl"
    path.write_bytes(b"")
    backend.sessions.observe("q", now=NOW, transcript_path=str(path), cli="claude", status="working")
    warn = config(cap(stale_after=5))
    reading.meter_session(backend, "q", config=warn, now=NOW)
    assert engine.tick(backend, config=warn, now=NOW + 60) == []
    assert engine.tick(backend, config=warn, now=NOW + 400) == ["stale q daily"]
    assert engine.tick(backend, config=warn, now=NOW + 500) == []  # said once per silence
    assert backend.budget.holds() == []
    hold = config(cap(name="strict", stale_after=5, on_stale="hold"))
    engine.tick(backend, config=hold, now=NOW + 900)
    assert [h.cap for h in backend.budget.holds()] == ["strict"]


def test_the_status_lines_windows_set_the_percent_caps(backend, session):
    settings = config(cap(name="five", period="window-5h", limit_percent=80, limit_usd=None, warn_at=[0.75]))
    del settings["budget"]["cap"][0]["limit_usd"]
    status = {"session_id": "s1", "rate_limits": {
        "five_hour": {"used_percentage": 65, "resets_at": NOW + 3600},
        "seven_day": {"used_percentage": 12.5, "resets_at": NOW + 86400}}}
    outcome = reading.observe_status_line(backend, "s1", status, config=settings, now=NOW)
    assert outcome.warned == [("five", "fleet", 0.75)] and outcome.held == []
    windows = {w.window: (w.used_percent, w.resets_at) for w in backend.budget.windows()}
    assert windows == {"window-5h": (65.0, NOW + 3600), "window-7d": (12.5, NOW + 86400)}
    status["rate_limits"]["five_hour"]["used_percentage"] = 81
    assert reading.observe_status_line(backend, "s1", status, config=settings, now=NOW + 60).held == [
        ("five", "fleet")]


def test_a_dollar_cap_over_a_window_waits_for_the_windows_reset_time(backend, session):
    settings = config(cap(name="win", period="window-5h", limit_usd=0.0001))
    assert reading.meter_session(backend, "s1", config=settings, now=NOW).held == []  # no window known yet
    reading.observe_status_line(backend, "s1", {"rate_limits": {"five_hour": {"used_percentage": 1,
                                                                             "resets_at": NOW + 3600}}},
                               config=settings, now=NOW)
    shutil.copy(session, session.with_name("more.jsonl"))
    backend.sessions.observe("s5", now=NOW, transcript_path=str(session.with_name("more.jsonl")), cli="claude")
    assert reading.meter_session(backend, "s5", config=settings, now=NOW + 1).held == [("win", "fleet")]


def test_an_entity_cap_counts_each_entity_apart(backend, session, tmp_path):
    settings = config(cap(name="per", scope="entity", limit_usd=100))
    reading.meter_session(backend, "s1", config=settings, now=NOW)
    counters = {c.bucket for c in backend.budget.counters()}
    assert len(counters) == 1 and next(iter(counters)).endswith("/ezra")


def test_gemini_responses_are_charged_once_each(backend):
    backend.sessions.observe("g", now=NOW, cli="gemini")
    payload = {"session_id": "g", "timestamp": "2026-11-28T12:00:00Z",
               "llm_request": {"model": "gemini-2.5-pro"},
               "llm_response": {"candidates": [{"finishReason": "STOP"}],
                                "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 100,
                                                  "totalTokenCount": 1100}}}
    first = reading.meter_gemini(backend, "g", payload, config=config(), now=NOW)
    reading.meter_gemini(backend, "g", payload, config=config(), now=NOW + 1)  # the same response again
    expected = float(price(TokenUsage("gemini", "gemini-2.5-pro", 1000, 100), when=NOW).usd)
    assert first.usd == pytest.approx(expected) and spent(backend) == pytest.approx(expected)


def test_unreadable_usage_lines_are_skipped_counted_and_named_by_doctor(backend, session):
    from leash.core.views.doctor import examine

    with session.open("ab") as handle:
        handle.write(b'{"type": "assistant", "message": {"usage": {"input_tokens": "lots"}}}\n')
    reading.meter_session(backend, "s1", config=config(), now=NOW)
    assert spent(backend) == pytest.approx(float(table_price(session)), rel=1e-6)  # the rest is counted
    said = [f.message for f in examine(backend=backend) if f.subject == "budget meter"]
    assert said == [f"1 line(s) of {session} (session s1) hold no usage leash can read; skipped, the rest counted"]


def test_why_names_the_cap_that_holds_a_session_and_how_to_raise_it(backend, session, home):
    from leash.core.views.why import summary, why

    (home / "config.toml").write_text('[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\n'
                                      'limit_usd = 0.0001\n')
    assert not why(session="s1", backend=backend, now=NOW)["held"]
    reading.meter_session(backend, "s1", config=config(cap(limit_usd=0.0001)), now=NOW)
    answer = why(session="s1", backend=backend, now=NOW)
    (rule,) = [r for r in answer["rules"] if r["rule"] == "budget_hold"]
    assert rule["subject"] == "daily" and rule["lift"].startswith("leash budget raise daily --to AMOUNT")
    assert summary(answer).startswith("budget cap daily reached: $0.")


def test_doctor_names_a_window_cap_that_waits_for_its_window(backend, session, home):
    from leash.core.views.doctor import examine

    (home / "config.toml").write_text('[[budget.cap]]\nname = "five"\nscope = "fleet"\nperiod = "window-5h"\n'
                                      'limit_usd = 20\n')

    def said(now: float) -> list[str]:
        return [f.message for f in examine(backend=backend, now=now) if f.subject == "budget cap"]

    assert said(NOW) == ["cap five counts nothing yet: no window-5h reset of any sessions is known (Claude Code's "
                         "status line reports it; `leash install` wires it); it waits for one"]
    reading.observe_status_line(backend, "s1", {"rate_limits": {"five_hour": {"used_percentage": 1,
                                                                             "resets_at": NOW + 3600}}},
                               config=config(), now=NOW)
    assert said(NOW + 60) == []
    assert len(said(NOW + 3600)) == 1  # the window reset and the next one is not reported yet


def test_a_reading_that_finds_nothing_new_writes_nothing(backend, session, tmp_path):
    reading.meter_session(backend, "s1", config=config(), now=NOW)
    backend.sessions.observe("gone", now=NOW, transcript_path=str(tmp_path / "absent.jsonl"), cli="claude")
    before = backend.budget.meters()
    reading.meter_session(backend, "s1", config=config(), now=NOW + 60)
    reading.meter_session(backend, "gone", config=config(), now=NOW + 60)
    assert backend.budget.meters() == before  # no write: nothing for the consoles' change feed to show
