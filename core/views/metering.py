"""Spend and the caps it reaches: leashd's meter charges what sessions spent
and holds the sessions of a cap that is reached, until a human raises it.

* reading spend (``core.views.spendmeter``: ``meter_session``,
  ``meter_gemini``, ``observe_status_line``) moves counters with ``advance``
  here: a warn point crossed is logged once, a reached limit holds.
* ``raise_cap``: the operator's acknowledgement — the cap's limit for its
  current period is raised, its holds lift, their ``budget`` halts are
  acknowledged.
* ``tick``: what time alone does — a ``resume_at_reset`` cap's window resets
  and releases its hold, a limit lowered in config.toml holds at once, a
  meter silent while its session works warns or holds (``on_stale``).

Every reading's writes (the meter's cursor, the spend, the counters) land in
one ``BudgetUnit``: a crash reads again, never counts twice. Each warn point,
hold, raise and reset is an ack-log line first (``budget_warn``,
``budget_hold``, ``budget_raised``, ``budget_reset``, ``budget_stale``), which
the notifier turns into a ``budget`` notification. A hold is a counter with
``held_since`` (``BudgetCounterRecord.held``): the gate denies every call of
the sessions it covers (``core.hook.budgetgate``). One model request can
overshoot a cap: the spend is known after it is made. A counter is written
only as read with its row locked (``locked``: ``BudgetUnit.counter``), so on
the shared store a raise or a tick on one host never writes over a charge
another host's meter was making.

It sits with the operator's other verbs over a backend (``core.views.protocol``
stops and locks): leashd's meter, its status verb, the CLI and the console
call it, and it reads and writes only through the backend's stores.

``config`` is the whole configuration (``load_config(home)``). A session's
host is named as the gate names it: its record's, else the store's, else
this machine's. Failure: a store that cannot be written raises to the caller
(leashd's meter says so once and reads again later); ``raise_cap`` raises
``ValueError`` with one line for the operator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from leash.core.policy import budgethold
from leash.core.policy.caps import Cap, caps_of, period_of, reset_releases
from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.store.records_budget import BudgetCounterRecord, MeterState

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

SOURCE = "leash"  # who the meter's log lines are from
HOUR = 3600.0
WINDOW_KEYS = {"five_hour": "window-5h", "seven_day": "window-7d"}
BUDGET_CONDITION = "budget"
RAISE_RESOLUTION = "resolved"
BUCKETS_NAMED = 5  # a raise naming no bucket the cap has lists this many of those it has


@dataclass
class MeterOutcome:
    """What one reading did: dollars charged, whether any was estimated, lines
    it could not read, and the (cap, bucket) pairs it warned about or held."""

    usd: float = 0.0
    estimated: bool = False
    skipped: int = 0
    warned: list[tuple[str, str, float]] = field(default_factory=list)
    held: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Member:
    session_id: str
    entity: str
    host: str
    cli: str
    lineage: tuple[str, ...] = ()


# ------------------------------------------------------------------ sessions
def member_of(backend: Backend, session_id: str, *, record: dict | None = None) -> Member:
    """The session as caps see it (its entity and host named as the gate names them)."""
    from leash.core.state.sessions import host_of

    if record is None:
        found = backend.sessions.get(session_id)
        record = found.as_dict() if found is not None else {}
    host = host_of(record) or backend.sessions.host
    if not host:
        from leash.core.base.config import host_name

        host = host_name(backend.home)
    return Member(session_id, str(record.get("entity") or ""), host, str(record.get("cli") or "claude"))


def budget_of(config: dict) -> tuple[tuple[Cap, ...], dict, dict]:
    budget = config.get("budget") or {}
    return caps_of(budget), budget.get("accounts") or {}, budget.get("prices") or {}


def bucket_for(cap: Cap, member: Member, accounts: dict) -> str | None:
    return budgethold.bucket_of(cap.scope, cap.account, session_id=member.session_id, entity=member.entity,
                                host=member.host, accounts=accounts)


def window_bucket(member: Member, accounts: dict) -> str:
    """Whose subscription a session's windows are: its account, else the fleet's one login."""
    return budgethold.account_named(member.entity, member.host, accounts) or "fleet"


def period_for(unit, cap: Cap, member: Member, accounts: dict, *, now: float):
    reset_at = None
    if cap.period.startswith("window-"):
        window = unit.window(window_bucket(member, accounts), cap.period)
        reset_at = window.resets_at if window is not None else None
    return period_of(cap.period, now=now, reset_at=reset_at)


def counter_for(unit, cap: Cap, bucket: str, period, *, now: float) -> BudgetCounterRecord:
    found = unit.counter(cap.name, bucket, period.key)
    if found is not None:
        return found
    return BudgetCounterRecord(cap=cap.name, bucket=bucket, period=period.key, period_end=period.end, unit=cap.unit,
                               used=0.0, estimated=False, raised_to=None, warned=[], held_since=None, held_use=None,
                               released_at=None, released_by=None, updated_at=now)


def limit_of(counter: BudgetCounterRecord, cap: Cap) -> float:
    """The limit a counter is held at: what an operator raised it to this period, else the cap's."""
    return float(counter.raised_to) if counter.raised_to is not None else cap.limit


def advance(backend: Backend, unit, cap: Cap, counter: BudgetCounterRecord, used: float, outcome: MeterOutcome, *,
             session_id: str, estimated: bool, accounts: dict, now: float) -> None:
    """Set the counter's use to ``used``: warn points crossed are logged once,
    a reached limit holds (a cap held and released is held again once its
    new limit is reached)."""
    limit = limit_of(counter, cap)
    fraction = used / limit if limit > 0 else math.inf
    warned = [float(p) for p in (counter.warned or [])]
    fresh = [p for p in cap.warn_at if fraction >= p and p not in warned and fraction < 1.0]
    for point in fresh:
        backend.acklog.append("budget_warn", source=SOURCE, session_id=session_id,
                              reason=f"cap {cap.name} at {fraction:.0%} of its limit", cap=cap.name,
                              bucket=counter.bucket, period=counter.period, point=point, used=round(used, 6),
                              limit=limit, unit=cap.unit, now=now)
        outcome.warned.append((cap.name, counter.bucket, point))
    values = counter.as_dict()
    values.update(used=used, warned=sorted(set(warned) | set(fresh)), updated_at=now,
                  estimated=bool(counter.estimated) or estimated)
    if fraction >= 1.0 and not counter.held:
        log_hold(backend, cap, counter, used, limit, session_id=session_id, accounts=accounts, now=now)
        values.update(held_since=now, held_use=used, released_at=None, released_by=None)
        outcome.held.append((cap.name, counter.bucket))
    unit.put_counter(BudgetCounterRecord.of(values))


def log_hold(backend: Backend, cap: Cap, counter: BudgetCounterRecord, used: float, limit: float, *, session_id: str,
              accounts: dict, now: float, why: str = "") -> None:
    held = _sessions_in(backend, cap, counter.bucket, accounts)
    backend.acklog.append("budget_hold", source=SOURCE, session_id=session_id,
                          reason=why or f"cap {cap.name} reached: {used:.6g} of {limit:.6g} {cap.unit}",
                          cap=cap.name, bucket=counter.bucket, period=counter.period, used=round(used, 6),
                          limit=limit, unit=cap.unit, sessions=held[:50], now=now)


def _sessions_in(backend: Backend, cap: Cap, bucket: str, accounts: dict) -> list[str]:
    """The sessions the store knows in the cap's bucket (for the hold's log line)."""
    found = []
    for session_id, record in backend.sessions.all().items():
        member = member_of(backend, session_id, record=record.as_dict())
        if bucket_for(cap, member, accounts) == bucket and record.status != "ended":
            found.append(session_id)
    return sorted(found)


def moment_of(value: object, default: float) -> float:
    """Seconds since the epoch from a number or an ISO-8601 text (``default`` otherwise)."""
    from leash.core.base.clock import parse_iso

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return parse_iso(value)
    except (TypeError, ValueError):
        return default


# ------------------------------------------------------------------ the operator
def raise_cap(backend: Backend, cap_name: str, *, to: float, reason: str, source: str, config: dict, now: float,
              bucket: str | None = None) -> list[BudgetCounterRecord]:
    """Raise ``cap_name``'s limit to ``to`` for its current period (each bucket,
    or ``bucket``): logged ``budget_raised``, its holds lifted and their
    ``budget`` halts acknowledged. ``ValueError``, one line: an unknown cap or
    bucket, a ``to`` that is not a finite number above the use, no reason."""
    from leash.core.base.tomllines import did_you_mean

    caps, accounts, _ = budget_of(config)
    cap = next((c for c in caps if c.name == cap_name), None)
    if cap is None:
        raise ValueError(f"no cap named {cap_name!r} in [budget]{did_you_mean(cap_name, [c.name for c in caps])}")
    if isinstance(to, bool) or not isinstance(to, (int, float)) or not math.isfinite(to) or to <= 0:
        raise ValueError(f"--to must be a finite number above 0, got {to!r}")
    if not reason.strip():
        raise ValueError("a raise needs a reason (--reason)")
    raised: list[BudgetCounterRecord] = []
    with backend.budget.unit(now=now) as unit:
        chosen = [c for c in unit.counters(cap=cap.name) if _current(c, now) and (bucket is None or c.bucket == bucket)]
        chosen = [locked(unit, c) for c in chosen]
        if not chosen:
            if bucket is not None:
                _known_bucket(backend, unit, cap, bucket, accounts)
            chosen = [_fresh_counter(unit, cap, bucket, now=now)]
        for counter in chosen:
            if to <= float(counter.used or 0.0):
                raise ValueError(f"cap {cap.name} ({counter.bucket}): {to:g} is not above its use, "
                                 f"{float(counter.used):.6g} {cap.unit}")
        for counter in chosen:
            backend.acklog.append("budget_raised", source=source, session_id="", reason=reason, cap=cap.name,
                                  bucket=counter.bucket, period=counter.period, **{"from": limit_of(counter, cap)},
                                  to=float(to), unit=cap.unit, now=now)
            values = counter.as_dict()
            values.update(raised_to=float(to), updated_at=now)
            if counter.held:
                values.update(released_at=now, released_by="raise")
            record = BudgetCounterRecord.of(values)
            unit.put_counter(record)
            raised.append(record)
    acknowledge_released(backend, cap.name, config=config, source=source, now=now)
    return raised


def locked(unit, counter: BudgetCounterRecord) -> BudgetCounterRecord:
    """``counter`` read again with its row locked until the unit ends
    (``BudgetUnit.counter``): what another host's meter wrote meanwhile is
    kept, never written over with the unlocked read."""
    return unit.counter(counter.cap, counter.bucket, counter.period) or counter


def _current(counter: BudgetCounterRecord, now: float) -> bool:
    return counter.held or counter.period_end is None or float(counter.period_end) > now


def _known_bucket(backend: Backend, unit, cap: Cap, bucket: str, accounts: dict) -> None:
    """``ValueError`` unless ``bucket`` is one ``cap`` counts: the fleet's or its
    account's, one it has counted, or one of a session the store knows."""
    from leash.core.base.tomllines import did_you_mean

    known = {"fleet"} if cap.scope == "fleet" else {cap.account} if cap.scope == "account" else set()
    if cap.scope not in ("fleet", "account"):
        known |= {c.bucket for c in unit.counters(cap=cap.name)}
        for session_id, record in backend.sessions.all().items():
            known.add(bucket_for(cap, member_of(backend, session_id, record=record.as_dict()), accounts) or "")
    known.discard("")
    if bucket not in known:
        hint = did_you_mean(bucket, known) or (f" (its buckets: {', '.join(sorted(known))})"
                                               if 0 < len(known) <= BUCKETS_NAMED else "")
        raise ValueError(f"cap {cap.name} has no bucket {bucket!r}{hint}")


def _fresh_counter(unit, cap: Cap, bucket: str | None, *, now: float) -> BudgetCounterRecord:
    """A counter for a cap nothing has been counted against yet this period."""
    if bucket is None:
        if cap.scope != "fleet" and cap.scope != "account":
            raise ValueError(f"cap {cap.name} has no use this period; name the bucket to raise (--bucket)")
        bucket = "fleet" if cap.scope == "fleet" else cap.account
    reset_at = None
    if cap.period.startswith("window-"):
        window = unit.window(bucket if cap.scope == "account" else "fleet", cap.period)
        reset_at = window.resets_at if window is not None else None
    period = period_of(cap.period, now=now, reset_at=reset_at)
    if period is None:
        raise ValueError(f"cap {cap.name}: its window's reset is not known yet; nothing to raise")
    return counter_for(unit, cap, bucket, period, now=now)


def acknowledge_released(backend: Backend, cap_name: str, *, config: dict, source: str, now: float) -> int:
    """Acknowledge the pending ``budget`` halts of ``cap_name`` whose session no
    hold covers any more; how many."""
    budget = config.get("budget") or {}
    holds = backend.budget.holds()
    task = f"{BUDGET_CONDITION}:{cap_name}"
    pending = backend.halts.listing(HaltQuery(pending=True, limit=1000), now=now).halts
    done = 0
    for halt in pending:
        if halt.condition_name != BUDGET_CONDITION or halt.task_id != task:
            continue
        session_id = halt.session_id or ""
        member = member_of(backend, session_id)
        if budgethold.covering(holds, budget.get("cap", []), budget.get("accounts", {}), session_ids=(session_id,),
                               entity=member.entity, host=member.host) is not None:
            continue
        backend.halts.acknowledge(halt.halt_id, session_id, RAISE_RESOLUTION,
                                  notes=f"cap {cap_name} raised", source=source, now=now)
        done += 1
    return done


# ------------------------------------------------------------------ time
def tick(backend: Backend, *, config: dict, now: float) -> list[str]:
    """What time alone does (see the module's docstring); one line for each thing done."""
    caps, accounts, _ = budget_of(config)
    by_name = {cap.name: cap for cap in caps}
    done: list[str] = []
    released: set[str] = set()
    with backend.budget.unit(now=now) as unit:
        for seen in unit.counters():
            cap = by_name.get(seen.cap)
            if cap is None or seen.unit != cap.unit or not _due(cap, seen, now):
                continue
            counter = locked(unit, seen)  # as another host's meter may have just left it
            if not _due(cap, counter, now):
                continue
            if counter.held:
                values = counter.as_dict()
                backend.acklog.append("budget_reset", source=SOURCE, session_id="",
                                      reason=f"cap {cap.name}'s period {counter.period} has reset", cap=cap.name,
                                      bucket=counter.bucket, period=counter.period, now=now)
                values.update(released_at=now, released_by="reset", updated_at=now)
                unit.put_counter(BudgetCounterRecord.of(values))
                released.add(cap.name)
                done.append(f"reset {cap.name} {counter.bucket}")
            else:  # a limit lowered in config.toml, now reached
                outcome = MeterOutcome()
                advance(backend, unit, cap, counter, float(counter.used or 0.0), outcome, session_id="",
                         estimated=False, accounts=accounts, now=now)
                done += [f"held {name} {bucket}" for name, bucket in outcome.held]
        done += _stale(backend, unit, caps, accounts, now=now)
    for name in released:
        acknowledge_released(backend, name, config=config, source=SOURCE, now=now)
    return done


def _due(cap: Cap, counter: BudgetCounterRecord, now: float) -> bool:
    """Whether time alone moves ``counter``: its held period reset, or its limit (lowered) reached."""
    if counter.held:
        return _reset_passed(cap, counter, now)
    return _current(counter, now) and float(counter.used or 0.0) >= limit_of(counter, cap)


def _reset_passed(cap: Cap, counter: BudgetCounterRecord, now: float) -> bool:
    from leash.core.policy.caps import Period

    end = counter.period_end
    return reset_releases(cap, Period(counter.period, None, float(end) if end is not None else None), now=now)


WORKING = ("working", "thinking")


def _stale(backend: Backend, unit, caps, accounts: dict, *, now: float) -> list[str]:
    """Meters silent past a cap's ``stale_after`` while their session works: a
    ``budget_stale`` line once per silence, and with ``on_stale = "hold"`` a hold."""
    done: list[str] = []
    usd_caps = [cap for cap in caps if cap.unit == "usd"]
    if not usd_caps:
        return done
    meters = backend.budget.meters()
    holds = backend.budget.holds()
    caps_config = [{"name": c.name, "scope": c.scope, "account": c.account} for c in caps]
    for session_id, record in backend.sessions.all().items():
        if record.status not in WORKING:
            continue
        states = meters.get(session_id, {})
        last = max([float(s.found_at or 0.0) for s in states.values()] or [0.0])
        since = record.status_since
        started = moment_of(since, now)
        member = member_of(backend, session_id, record=record.as_dict())
        if budgethold.covering(holds, caps_config, accounts, session_ids=(session_id,), entity=member.entity,
                               host=member.host) is not None:
            continue  # held: its meter is silent because it may not spend
        for cap in usd_caps:
            bucket = bucket_for(cap, member, accounts)
            silent_from = max(last, started)
            if bucket is None or now - silent_from <= cap.stale_after * 60:
                continue
            noted = states.get(f"stale:{cap.name}")
            if noted is not None and float(noted.at or 0.0) >= silent_from:
                continue  # this silence was said already
            backend.acklog.append("budget_stale", source=SOURCE, session_id=session_id,
                                  reason=f"no spend read for {int((now - silent_from) // 60)} minutes while working",
                                  cap=cap.name, bucket=bucket, on_stale=cap.on_stale, now=now)
            states[f"stale:{cap.name}"] = note = MeterState.of({"at": now})
            unit.set_meter(session_id, f"stale:{cap.name}", note)
            done.append(f"stale {session_id} {cap.name}")
            if cap.on_stale == "hold":
                period = period_for(unit, cap, member, accounts, now=now)
                if period is None:
                    continue
                counter = counter_for(unit, cap, bucket, period, now=now)
                if not counter.held:
                    why = f"cap {cap.name}: the meter of {session_id} is silent while it works (on_stale = hold)"
                    log_hold(backend, cap, counter, float(counter.used or 0.0), limit_of(counter, cap),
                              session_id=session_id, accounts=accounts, now=now, why=why)
                    values = counter.as_dict()
                    values.update(held_since=now, held_use=counter.used, released_at=None, released_by=None,
                                  updated_at=now)
                    unit.put_counter(BudgetCounterRecord.of(values))
    return done
