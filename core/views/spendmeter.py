"""Reading spend into the caps: ``meter_session`` (a Claude Code transcript
and its subagents', a Codex CLI rollout), ``meter_gemini`` (one Gemini CLI
``AfterModel`` payload) and ``observe_status_line`` (Claude Code's status
line: the subscription windows and the percent caps' use). Each reading's
writes — the meter's cursor, the spend rows, the counters it moves — land in
one ``BudgetUnit``: a crash reads again, never counts twice. What a counter
moved to does (a warn point logged, a hold placed) is ``core.views.metering``'s.

Failure: a store that cannot be written raises to the caller (leashd's meter
says so once and reads again at the next hook or timer); a file that cannot
be read raises ``OSError`` likewise; unreadable lines are counted, never fatal.
"""
from __future__ import annotations

import math

from leash.core.policy.caps import period_of
from leash.core.state.budgetmeter import GEMINI_SOURCE, Charge, gemini_reading, read_source
from leash.core.store.records_budget import BudgetWindowRecord, MeterState, SpendRecord
from leash.core.views.metering import (
    HOUR,
    WINDOW_KEYS,
    Member,
    MeterOutcome,
    advance,
    bucket_for,
    budget_of,
    counter_for,
    member_of,
    moment_of,
    period_for,
    window_bucket,
)

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


# ------------------------------------------------------------------ metering
def meter_session(backend: Backend, session_id: str, *, config: dict, now: float, transcript_path: str | None = None,
                  cli: str | None = None) -> MeterOutcome:
    """Read and charge what the session spent since the last reading."""
    from leash.core.state.meterread import claude_code_files

    found = backend.sessions.get(session_id)
    record = found.as_dict() if found is not None else {}
    member = member_of(backend, session_id, record=record)
    cli = cli or member.cli
    transcript = transcript_path or record.get("transcript_path") or ""
    if cli == GEMINI_SOURCE or not transcript or cli not in ("claude", "codex"):
        return MeterOutcome()
    paths = [str(p) for p in claude_code_files(transcript)] if cli == "claude" else [transcript]
    caps, accounts, overrides = budget_of(config)
    outcome = MeterOutcome()
    with backend.budget.unit(now=now) as unit:
        charges: dict[str, Charge] = {}
        for path in paths:
            meter = unit.meter(session_id, path)
            kept = meter.as_dict() if meter is not None else None
            reading = read_source(path, kept, cli=cli, overrides=overrides, now=now)
            if _changed(kept, reading.state):
                unit.set_meter(session_id, path, MeterState.of(reading.state))
            outcome.skipped += reading.skipped
            for charge in reading.charges:
                charges.setdefault(charge.model, Charge(charge.model)).add(charge)
        _charge(backend, unit, member, list(charges.values()), caps, accounts, outcome, now=now)
    return outcome


def _changed(kept: dict | None, state: dict) -> bool:
    """Whether a reading moved the meter (a reading that found nothing new, or
    a file not there yet, writes nothing: each write is a change every
    console's feed shows)."""
    def moved(values: dict | None) -> dict:
        return {key: value for key, value in (values or {}).items() if key != "read_at"}

    return moved(kept) != moved(state) and (kept is not None or state.get("cursor") is not None)


def meter_gemini(backend: Backend, session_id: str, payload: dict, *, config: dict, now: float) -> MeterOutcome:
    """Charge one Gemini CLI ``AfterModel`` payload's usage (a response's last chunk, once)."""
    member = member_of(backend, session_id)
    caps, accounts, overrides = budget_of(config)
    outcome = MeterOutcome()
    with backend.budget.unit(now=now) as unit:
        kept = unit.meter(session_id, GEMINI_SOURCE)
        reading = gemini_reading(payload, kept.as_dict() if kept is not None else None, overrides=overrides, now=now)
        if reading.found or reading.skipped:
            unit.set_meter(session_id, GEMINI_SOURCE, MeterState.of(reading.state))
        outcome.skipped = reading.skipped
        _charge(backend, unit, Member(member.session_id, member.entity, member.host, GEMINI_SOURCE),
                reading.charges, caps, accounts, outcome, now=now)
    return outcome


def _charge(backend: Backend, unit, member: Member, charges: list[Charge], caps, accounts: dict,
            outcome: MeterOutcome, *, now: float) -> None:
    if not charges:
        return
    hour = math.floor(now / HOUR) * HOUR
    for charge in charges:
        unit.charge(SpendRecord(hour=hour, session_id=member.session_id, model=charge.model, host=member.host,
                                entity=member.entity, cli=member.cli, usd=charge.usd, estimated=charge.estimated,
                                **dict(zip(("input", "output", "cache_write", "cache_read", "reasoning", "requests"),
                                           charge.counts, strict=True))))
        outcome.usd += charge.usd
        outcome.estimated = outcome.estimated or charge.estimated
    for cap in sorted(caps, key=lambda c: c.name):  # rows locked in the order tick and raise_cap lock them
        if cap.unit != "usd":
            continue
        bucket = bucket_for(cap, member, accounts)
        period = period_for(unit, cap, member, accounts, now=now)
        if bucket is None or period is None:
            continue
        counter = counter_for(unit, cap, bucket, period, now=now)
        advance(backend, unit, cap, counter, counter.used + outcome.usd, outcome, session_id=member.session_id,
                 estimated=outcome.estimated, accounts=accounts, now=now)


# ------------------------------------------------------------------ status line
def observe_status_line(backend: Backend, session_id: str, status: dict, *, config: dict, now: float) -> MeterOutcome:
    """Claude Code's status JSON: its windows (``rate_limits``) are stored for the
    session's account (or the fleet's login) and set the percent caps' use."""
    member = member_of(backend, session_id)
    caps, accounts, _ = budget_of(config)
    windows = _windows_of(status)
    outcome = MeterOutcome()
    if not windows:
        return outcome
    bucket_of_window = window_bucket(member, accounts)
    with backend.budget.unit(now=now) as unit:
        for window, (percent, resets_at) in windows.items():
            unit.put_window(BudgetWindowRecord(bucket=bucket_of_window, window=window, used_percent=percent,
                                               resets_at=resets_at, session_id=session_id, at=now))
        for cap in caps:
            if cap.unit != "percent" or cap.period not in windows:
                continue
            bucket = bucket_for(cap, member, accounts)
            percent, resets_at = windows[cap.period]
            period = period_of(cap.period, now=now, reset_at=resets_at)
            if bucket is None or period is None:
                continue
            counter = counter_for(unit, cap, bucket, period, now=now)
            advance(backend, unit, cap, counter, max(float(counter.used or 0.0), percent), outcome,
                     session_id=session_id, estimated=False, accounts=accounts, now=now)
    return outcome


def _windows_of(status: dict) -> dict[str, tuple[float, float | None]]:
    """``window-5h``/``window-7d`` -> (used percent, reset time) from ``rate_limits``."""
    limits = status.get("rate_limits") if isinstance(status, dict) else None
    found: dict[str, tuple[float, float | None]] = {}
    if not isinstance(limits, dict):
        return found
    for key, window in WINDOW_KEYS.items():
        entry = limits.get(key)
        if not isinstance(entry, dict):
            continue
        percent = entry.get("used_percentage")
        if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not math.isfinite(percent):
            continue
        resets = entry.get("resets_at")
        reset_at = moment_of(resets, -1.0) if resets is not None else -1.0
        found[window] = (max(0.0, float(percent)), reset_at if reset_at > 0 else None)
    return found
