"""The halt engine's API over one home's ``halts.db``, with the seed's JSON shapes.

``check_halt_conditions``, ``record_halt``, ``acknowledge_halt``,
``get_session_halts`` and ``update_halt_config`` take and return JSON-shaped
dicts exactly as the seed's ``...Input``/``...Output`` interfaces (extra keys are
documented in docs/halts.md). Every function takes ``home=`` and a keyword-only
``now=``.

Split by concept: what a check, a record or an acknowledgement decides is
``core.policy.halts.decision``, the one home every backend calls; this module
hands it ``halts.db``'s rows (``core.state.halts.rows``). The store access
(opening with housekeeping, the timeout sweep, the condition config, shared
reads) is ``core.state.halts.access``; what the hooks record as evidence
(files read, attempts) is ``core.state.halts.evidence``. Their public names stay
importable from here. A listing's query (``listing_filters``) is a plain
function here that the PostgreSQL store calls too.

Rules applied here: an unacknowledged halt past its condition's
``escalate_after_minutes`` becomes ``timeout`` and pauses its session (swept on
every read); the rest are the decision's.

Failure: when halts.db cannot be opened or read, ``check_halt_conditions``
returns ``should_halt=true`` at critical severity (the seed's fail-safe) and
notes the check in ``halts_unavailable.jsonl``; the other functions raise
``HaltStoreUnavailable``. Bad input raises ``HaltInputError``; a request the
state forbids raises ``HaltRefused``; neither changes anything.
"""
from __future__ import annotations

import json

from leash.core.base.clock import iso, now_seconds
from leash.core.base.home import ensure_home, resolve_home
from leash.core.policy.halts import decision
from leash.core.policy.halts.outcomes import CheckResult, HaltInputError, HaltQuery, HaltRefused

# The store access and the hook evidence are part of this API: their names stay importable from here.
from leash.core.state.halts.access import (  # noqa: F401
    _config_cache,
    _log,
    _open,
    _row_config,
    connected,
    default_config,
    default_config_read,
    find_halt,
    load_config,
    pending_counts,
    reading,
    session_state,
    session_states,
    sweep_timeouts,
)
from leash.core.state.halts.evidence import (  # noqa: F401
    RECENT_ERRORS_KEPT,
    _stored_attempts,
    files_read,
    record_attempt,
    record_files_read,
    stored_attempts,
)
from leash.core.state.halts.rows import FileHaltRows
from leash.core.state.halts.store import (
    CONDITION_NAMES,
    HaltStoreUnavailable,
    exists,
    open_store,
    write,
)

# The store's, named here too.
from leash.core.state.halts.store import RESOLUTIONS as RESOLUTIONS
from leash.core.state.halts.store import archive_old_events as archive_old_events

__all__ = ["HaltInputError", "HaltRefused", "HaltStoreUnavailable", "acknowledge_input"]
acknowledge_input = decision.acknowledge_input  # a halt store's ``acknowledge`` arguments as the seed's input


# ------------------------------------------------------------------ the decision over halts.db
def record_halt(data: dict, *, home=None, now: float | None = None) -> dict:
    """The seed's ``guardrail_record_halt``."""
    decision.validate_record(data)  # before halts.db is created
    moment = now_seconds(now)
    rows = FileHaltRows(ensure_home(home), now=moment, create=True)
    try:
        return decision.record(rows, data, now=moment)
    finally:
        rows.close()


def check_halt_conditions(data: dict, *, home=None, now: float | None = None, record: bool = True,
                          record_high: bool | None = None, connection=None) -> dict:
    """The seed's ``guardrail_check_halt_conditions``: ``check_halts`` as its JSON answer."""
    return check_halts(data, home=home, now=now, record=record, record_high=record_high,
                       connection=connection).as_json()


def check_halts(data: dict, *, home=None, now: float | None = None, record: bool = True,
                record_high: bool | None = None, connection=None) -> CheckResult:
    """``data`` judged (``core.policy.halts.decision.check``) over ``connection``
    or one opened here. Creates halts.db only when something is recorded.
    ``record_high`` None reads ``[halts] record_high`` from config.toml."""
    moment = now_seconds(now)
    home = ensure_home(home)
    ctx = decision.check_input(data)  # validated before the store is touched
    rows = FileHaltRows(home, now=moment, connection=connection)
    try:
        return decision.check(rows, ctx, record=record, record_high=record_high, now=moment)
    finally:
        rows.close()


def acknowledge_halt(data: dict, *, home=None, now: float | None = None, source: str | None = None) -> dict:
    """The seed's ``guardrail_acknowledge_halt``; ``acknowledged_by`` in ``data`` names who, else ``source``."""
    decision.acknowledge_request(data)  # before halts.db is created
    moment = now_seconds(now)
    rows = FileHaltRows(ensure_home(home), now=moment, create=True)
    try:
        return decision.acknowledge(rows, data, by=data.get("acknowledged_by") or source, now=moment)
    finally:
        rows.close()


# ------------------------------------------------------------------ list
def halt_event(row) -> dict:
    """The seed's ``HaltEvent`` (and the session, task and condition) of a stored row."""
    event = {"halt_id": row["id"], "halt_type": row["halt_type"], "severity": row["severity"],
             "description": row["description"], "triggered_at": row["triggered_at"],
             "acknowledged": bool(row["acknowledged"])}
    if row["acknowledged_at"]:
        event["acknowledged_at"] = row["acknowledged_at"]
    if row["resolution"]:
        event["resolution"] = row["resolution"]
    event.update({"session_id": row["session_id"], "task_id": row["task_id"],
                  "condition_name": row["condition_name"]})
    return event


def listing_filters(query: HaltQuery, *, mark: str, false: str,
                    as_text: str) -> tuple[tuple[str, list], tuple[str, list]]:
    """The WHERE clauses of a listing, in the dialect named by ``mark`` (the
    parameter mark), ``false`` and ``as_text`` (an enum column's cast):
    ((the session's scope, its parameters), (the filters, their parameters))."""
    scope: list[str] = ["1 = 1"]
    params: list = []
    if query.session is not None:
        scope.append(f"session_id = {mark}")
        params.append(query.session)
    filters, fparams = list(scope), list(params)
    if query.pending:
        filters.append(f"(acknowledged = {false} OR resolution = 'escalated')")
    elif not query.include_acknowledged:
        filters.append(f"acknowledged = {false}")
    for column, value in (("halt_type", query.halt_type), ("severity", query.severity)):
        if value:
            filters.append(f"{column}{as_text} = {mark}")
            fparams.append(value)
    return (" AND ".join(scope), params), (" AND ".join(filters), fparams)


def get_session_halts(data: dict, *, home=None, now: float | None = None, connection=None) -> dict:
    """The seed's ``guardrail_get_session_halts``. ``session_token`` may be
    omitted for every session; ``pending: true`` lists what waits on a human
    (unacknowledged, escalated or timed out)."""
    query = HaltQuery.of(data)
    moment = now_seconds(now)
    home = resolve_home(home)
    owned = connection is None
    if owned:
        if not exists(home):
            return {"total_count": 0, "halts": [], "unacknowledged_count": 0}
        connection = _open(home, moment)
    try:
        (scope, params), (where, fparams) = listing_filters(query, mark="?", false="0", as_text="")
        total = connection.execute(f"SELECT count(*) FROM halt_events WHERE {where}", fparams).fetchone()[0]
        rows = connection.execute(
            f"SELECT * FROM halt_events WHERE {where} ORDER BY CASE severity WHEN 'critical' THEN 0"
            " WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, triggered_at, id LIMIT ? OFFSET ?",
            fparams + [query.limit, query.offset]).fetchall()
        unacknowledged = connection.execute(
            f"SELECT count(*) FROM halt_events WHERE {scope} AND acknowledged = 0", params).fetchone()[0]
    finally:
        if owned:
            connection.close()
    return {"total_count": total, "halts": [halt_event(r) for r in rows], "unacknowledged_count": unacknowledged}


# ------------------------------------------------------------------ config
def update_halt_config(data: dict, *, home=None, now: float | None = None) -> dict:
    """The seed's ``guardrail_update_halt_config``: previous and current values."""
    changes = decision.config_request(data, known=CONDITION_NAMES)
    moment = now_seconds(now)
    home = ensure_home(home)
    connection = _open(home, moment)
    try:
        with write(connection):
            row = connection.execute("SELECT * FROM halt_conditions_config WHERE condition_name = ?",
                                     (data["condition_name"],)).fetchone()
            if row is None:
                raise HaltRefused(f"no condition {data['condition_name']!r} (leash halts config lists them)")
            current, answer = decision.config_answer(_row_config(row), changes)
            if answer["updated"]:
                connection.execute(
                    "UPDATE halt_conditions_config SET enabled = ?, severity = ?, threshold = ?, auto_escalate = ?,"
                    " escalate_after_minutes = ?, updated_at = ? WHERE condition_name = ?",
                    (int(current["enabled"]), current["severity"], json.dumps(current["threshold"]),
                     int(current["auto_escalate"]), current["escalate_after_minutes"], iso(moment),
                     data["condition_name"]))
    finally:
        connection.close()
    _config_cache.pop(home, None)
    return answer


def stored_config_problems(*, home=None, repair: bool = False, now: float | None = None) -> list[str]:
    """What is not valid in the stored condition config (the engine reads each
    as its default), for ``leash doctor``; ``repair`` stores those defaults."""
    home = resolve_home(home)
    if not exists(home):
        return []
    connection = open_store(home, create=False)
    try:
        problems: list[str] = []
        with write(connection):
            for row in connection.execute("SELECT * FROM halt_conditions_config ORDER BY condition_name").fetchall():
                found: list[str] = []
                usable = _row_config(row, found)
                problems += found
                if found and repair:
                    connection.execute(
                        "UPDATE halt_conditions_config SET threshold = ?, escalate_after_minutes = ?, updated_at = ?"
                        " WHERE condition_name = ?", (json.dumps(usable["threshold"]),
                                                      usable["escalate_after_minutes"], iso(now_seconds(now)),
                                                      row["condition_name"]))
    finally:
        connection.close()
    _config_cache.pop(home, None)
    return problems


def list_config(*, home=None) -> list[dict]:
    home = ensure_home(home)
    connection = open_store(home)
    try:
        return list(load_config(connection, home).values())
    finally:
        connection.close()
