"""The file backend's look at the stores that are caches of the ack log
(part of its ``examine``, ``leash.core.store.filecheck``).

For the stops and the hands-off locks it compares the file on disk with the
replay of the log: a file that is missing, unreadable, out of step with the
log's head or different in content (an edit that kept the recorded head) is a
failure, and ``--repair`` writes the log's truth over it (the old file is
quarantined, ``state_rebuilt`` logged). It also checks ``acklog.head`` against
the log. Expired locks are ignored on both sides: readers ignore them too.

Failure: checking never writes; a log that no longer holds the lines its head
names cannot be repaired from the log and stays a failure until the operator
decides (``leash log verify`` says what is missing).
"""
from __future__ import annotations

from typing import Iterator

from leash.core.base.clock import now_seconds, parse_iso
from leash.core.base.finding import Finding
from leash.core.base.statefile import StateCorrupt, locked, read_json
from leash.core.state.loghead import HeadMismatch, HeadMissing
from leash.core.state.logstate import LogBackedJSON, StateUnreadable


def examine_logged_stores(acklog, stops, locks, *, repair: bool = False,
                          now: float | None = None) -> Iterator[Finding]:
    """``acklog.head`` against the log, then the stop and lock registries against its replay."""
    yield from _check_head(acklog, repair)
    yield from _check_store(stops.state, _describe_stops, repair, now)
    yield from _check_store(locks.state, _describe_locks, repair, now)
    yield from _check_expired(locks, repair, now)


def examine_approvals(state: LogBackedJSON, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
    """``approvals.json`` against the replay of its ack-log lines."""
    yield from _check_store(state, _describe_approvals, repair, now)


def _describe_approvals(state: dict) -> str:
    return f"{len(state['waiting'])} approvals waiting"


def _check_expired(registry, repair: bool, now: float | None) -> Iterator[Finding]:
    try:
        stored = registry.state.validate(read_json(registry.path, {}) or {})
    except (StateCorrupt, OSError):
        return
    expired = len(stored) - len(_active(stored, "hands_off", now_seconds(now)))
    if not expired:
        return
    if repair:
        registry.prune(now=now)
        yield Finding("fixed", registry.state.name, f"pruned {expired} expired locks")
    else:
        yield Finding("warn", registry.state.name, f"{expired} expired locks (ignored; repair prunes)")


def _check_head(acklog, repair: bool) -> Iterator[Finding]:
    try:
        head = acklog.head.current(acklog)
    except HeadMissing as exc:
        if not repair:
            yield Finding("fail", "acklog.head", f"{exc}; every reader of a stop or lock fails closed (leash doctor "
                                                 "--repair writes it again from the log as it is)")
            return
        with locked(acklog.path):
            head = acklog.head.rewrite_from_log(acklog)
        yield Finding("fixed", "acklog.head", f"was missing; written again from the log as it is now (line "
                                              f"{head.get('seq')}): lines cut or added before this are accepted "
                                              "with it (leash log verify checks the chain and the macs)")
        return
    except HeadMismatch as exc:
        yield Finding("fail", "acklog.head", f"{exc}; every reader of a stop or lock fails closed "
                                             "(leash log verify shows what is missing)")
        return
    if head is None:
        yield Finding("ok", "acklog.head", "absent; nothing logged yet")
        return
    tail = acklog.tail(1)
    if tail and (tail[-1].get("seq"), tail[-1].get("hash")) != (head.get("seq"), head.get("hash")):
        if repair:
            with locked(acklog.path):
                acklog.head.rewrite_from_log(acklog)
            yield Finding("fixed", "acklog.head", "did not name the log's last line; recomputed from the log")
        else:
            yield Finding("fail", "acklog.head", f"names line {head.get('seq')} but the log ends at line "
                                                 f"{tail[-1].get('seq')} (leash doctor --repair recomputes it)")
        return
    yield Finding("ok", "acklog.head", f"line {head.get('seq')}")


def _active(state: dict, store: str, moment: float) -> dict:
    """What readers act on: for locks, only those not yet expired."""
    if store != "hands_off":
        return state
    kept = {}
    for entity, entry in state.items():
        try:
            if parse_iso(entry.get("expires_at")) <= moment:
                continue
        except (ValueError, TypeError):
            pass
        kept[entity] = entry
    return kept


def _check_store(store: LogBackedJSON, describe, repair: bool, now: float | None) -> Iterator[Finding]:
    moment = now_seconds(now)
    try:
        truth, head, _ = store.replay(now=now)
        raw = read_json(store.path, None)
        problem = _compare(store, raw, truth, head, moment)
    except StateCorrupt as exc:
        problem = f"unreadable ({exc.detail})"
    except (StateUnreadable, HeadMismatch, OSError) as exc:
        yield Finding("fail", store.name, f"cannot be checked: {exc}")
        return
    if problem is None:
        yield Finding("ok", store.name, describe(_active(truth, store.store, moment)))
        return
    if not repair:
        said = describe(_active(truth, store.store, moment))
        yield Finding("fail", store.name, f"{problem}; the ack log says {said} (leash doctor --repair restores it)")
        return
    try:
        with locked(store.path):
            store.force_rebuild(problem, now=now)
    except StateUnreadable as exc:
        yield Finding("fail", store.name, str(exc))
        return
    yield Finding("fixed", store.name, f"{problem}; rebuilt from the ack log: "
                                       f"{describe(_active(truth, store.store, moment))}")


def _compare(store: LogBackedJSON, raw: dict | None, truth: dict, head: dict | None, moment: float) -> str | None:
    if raw is None:
        return None if head is None else "missing"
    content = store.validate(raw)
    if raw.get(store.head_key) != head:
        return "out of step with the ack log"
    if _active(content, store.store, moment) != _active(truth, store.store, moment):
        return "differs from the replay of the ack log (edited by hand?)"
    return None


def _describe_stops(state: dict) -> str:
    return f"{len(state['sessions'])} stopped sessions, fleet {'STOPPED' if state['fleet'] else 'running'}"


def _describe_locks(state: dict) -> str:
    return f"{len(state)} active locks"


def examine_halts(home: str, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
    """halts.db against the replay of its ack-log lines, and the derived
    ``session_states`` table against the halts."""
    from leash.core.state.halts import ledger
    from leash.core.state.halts.store import DB_NAME, exists, open_store, write

    try:
        logged = ledger.log_head(home) is not None
    except HeadMismatch as exc:
        yield Finding("fail", DB_NAME, f"cannot be checked against the log: {exc}")
        return
    if not logged and not exists(home):
        return
    try:
        connection = open_store(home, create=True)
    except Exception as exc:  # noqa: BLE001 - the integrity check reports an unreadable database
        yield Finding("fail", DB_NAME, f"cannot be compared with the ack log ({exc})")
        return
    try:
        problems = ledger.differences(connection, home)
        if not ledger.in_step(connection, home):
            problems.insert(0, "out of step with the ack log")
        states = _stale_session_states(connection)
        if not problems and not states:
            yield Finding("ok", DB_NAME, "agrees with the ack log")
            return
        said = "; ".join((problems + states)[:5]) + (" ..." if len(problems + states) > 5 else "")
        if not repair:
            yield Finding("fail", DB_NAME, f"{said} (leash doctor --repair restores the ack log's truth)")
            return
        changed = ledger.rebuild(connection, home, now=now_seconds(now), problem="differed from the ack log",
                                 force=True)
        with write(connection):
            from leash.core.base.clock import iso
            from leash.core.state.halts.store import refresh_state as _refresh_state

            for session_id in _sessions(connection):
                _refresh_state(connection, session_id, iso(now_seconds(now)))
        yield Finding("fixed", DB_NAME, f"{said}; {changed} halts restored from the ack log")
    except HeadMismatch as exc:
        yield Finding("fail", DB_NAME, str(exc))
    finally:
        connection.close()


def _sessions(connection) -> set[str]:
    rows = connection.execute("SELECT session_id FROM halt_events UNION SELECT session_id FROM session_states")
    return {row[0] for row in rows}


def _stale_session_states(connection) -> list[str]:
    from leash.core.state.halts.store import state_of as _state_of

    stored = dict(connection.execute("SELECT session_id, state FROM session_states").fetchall())
    found = []
    for session_id in _sessions(connection):
        truth = _state_of(connection, session_id)
        if stored.get(session_id, "active") != truth:
            found.append(f"session {session_id} shows {stored.get(session_id, 'active')} but its halts make it {truth}")
    return found
