"""The halt engine's API, with the seed's JSON shapes.

``check_halt_conditions``, ``record_halt``, ``acknowledge_halt``,
``get_session_halts`` and ``update_halt_config`` take and return JSON-shaped
dicts exactly as the seed's ``...Input``/``...Output`` interfaces (extra keys are
documented in docs/halts.md). Every function takes ``home=`` and a keyword-only
``now=``.

Split by concept: this module is the seed's API; the lifecycle rules (session
states, which findings are auto-recorded, what needs caution) are
``core.halts.rules``; the store access (opening with housekeeping, the timeout
sweep, the condition config, shared reads) is ``core.halts.access``; what the
hooks record as evidence (files read, attempts) is ``core.halts.evidence``.
Their public names stay importable from here. What a store does around its
rows (a new halt's values and log lines, which findings become halts, which
acknowledgement is refused, the seed's answers, input checks) are plain
functions here that every backend's halt store calls.

Rules applied here:
* session states as ``core.halts.rules`` derives them;
* dismissing a critical halt needs ``continue_with_caution``; an escalated or
  timed-out halt can be acknowledged again (resolved or dismissed) by the
  human it was escalated to; a resolved or dismissed halt is final;
* an unacknowledged halt past its condition's ``escalate_after_minutes``
  becomes ``timeout`` and pauses its session (swept on every read);
* secrets are masked in descriptions, context, notes and errors before they
  are stored or logged.

Failure: when halts.db cannot be opened or read, ``check_halt_conditions``
returns ``should_halt=true`` at critical severity (the seed's fail-safe) and
notes the check in ``halts_unavailable.jsonl``; the other functions raise
``HaltStoreUnavailable``. Bad input raises ``HaltInputError``; a request the
state forbids raises ``HaltRefused``; neither changes anything.
"""
from __future__ import annotations

import json
import os

from leash.core.base.clock import iso, now_seconds
from leash.core.base.home import ensure_home, resolve_home
from leash.core.base.secrets import mask, mask_deep
from leash.core.policy.halts import engine
from leash.core.policy.halts.context import CheckContext, HaltInputError
from leash.core.policy.halts.rules import dismissal_needs_caution, to_auto_record
from leash.core.policy.halts.rules import refresh_state as _refresh_state

# The store access and the hook evidence are part of this API: their names stay importable from here.
from leash.core.state.halts import ledger
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
from leash.core.state.halts.store import (
    DEFAULT_CONDITIONS,
    HALT_TYPES,
    SEVERITIES,
    HaltStoreUnavailable,
    exists,
    new_id,
    open_store,
    write,
)

# The store's, named here too.
from leash.core.state.halts.store import RESOLUTIONS as RESOLUTIONS
from leash.core.state.halts.store import archive_old_events as archive_old_events

MAX_DESCRIPTION = 4000
FALLBACK_LOG = "halts_unavailable.jsonl"
USER_RESOLUTIONS = ("resolved", "escalated", "dismissed")
_LOG_EVENT = {"resolved": "halt_ack", "dismissed": "halt_dismiss", "escalated": "halt_escalate",
              "timeout": "halt_timeout"}


class HaltRefused(Exception):
    """The request is understood but the halt's state does not allow it."""


# ------------------------------------------------------------------ helpers
def _home(home) -> str:
    return ensure_home(home)


def _acklog(home: str):
    from leash.core.state.acklog import AckLog

    return AckLog(home)


def _source(source: str | None) -> str:
    if source:
        return source
    from leash.core.base.source import default_source

    return default_source()


# ------------------------------------------------------------------ record
def _validate_record(data: dict) -> None:
    if not isinstance(data, dict):
        raise HaltInputError("input must be a JSON object")
    session = data.get("session_token")
    if not isinstance(session, str) or not session.strip():
        raise HaltInputError("session_token must be a non-empty string")
    if data.get("halt_type") not in HALT_TYPES:
        raise HaltInputError(f"halt_type must be one of {', '.join(HALT_TYPES)}")
    if data.get("severity") not in SEVERITIES:
        raise HaltInputError(f"severity must be one of {', '.join(SEVERITIES)}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise HaltInputError("description is required")
    if len(description) > MAX_DESCRIPTION:
        raise HaltInputError(f"description is {len(description)} characters; at most {MAX_DESCRIPTION}")
    for key, kind in (("task_id", str), ("condition_name", str), ("context", dict), ("previous_error", str),
                      ("auto_escalate", bool)):
        if data.get(key) is not None and not isinstance(data[key], kind):
            raise HaltInputError(f"{key} must be a {kind.__name__ if kind is not dict else 'object'}")
    count = data.get("attempt_count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise HaltInputError("attempt_count must be a whole number >= 0")


def new_halt(data: dict, config: dict[str, dict], *, now: float, auto: bool) -> dict:
    """A validated halt about to be stored, as every backend stores it: its
    column values (texts masked, ``context`` a masked dict, ``escalate_at`` in
    seconds or None) and ``escalate``, whether it escalates at once."""
    condition = config.get(data.get("condition_name") or "", {})
    minutes = condition.get("escalate_after_minutes")
    escalate = bool(data.get("auto_escalate")) or bool(condition.get("auto_escalate"))
    return {"id": new_id(), "session_id": data["session_token"],
            "task_id": mask(data["task_id"]) if data.get("task_id") else None, "halt_type": data["halt_type"],
            "severity": data["severity"], "description": mask(data["description"])[:MAX_DESCRIPTION],
            "context": mask_deep(data["context"]) if data.get("context") is not None else None,
            "resolution": "escalated" if escalate else None, "attempt_count": data.get("attempt_count"),
            "previous_error": mask(data["previous_error"]) if data.get("previous_error") else None,
            "condition_name": data.get("condition_name"), "auto_recorded": auto, "escalate": escalate,
            "escalate_at": now + minutes * 60 if minutes is not None and not escalate else None}


def recorded_lines(halt: dict, data: dict) -> list[tuple[str, str, str, dict]]:
    """(event, source, reason, extra keys) of the ack-log lines that record ``halt``:
    ``halt_recorded``, and ``halt_escalate`` when it escalates at once."""
    auto, escalate = halt["auto_recorded"], halt["escalate"]
    escalate_at = iso(halt["escalate_at"]) if halt["escalate_at"] is not None else None
    lines = [("halt_recorded", "leash" if auto else "agent",
              f"{data['severity']} {data.get('condition_name') or data['halt_type']} halt recorded",
              ledger.recorded_line_fields(data, description=halt["description"], escalate=escalate,
                                          escalate_at=escalate_at, auto=auto))]
    if escalate:
        lines.append(("halt_escalate", "leash", "auto_escalate: escalated on record, session paused", {}))
    return lines


def recorded_answer(halt: dict, stamp: str) -> dict:
    """The seed's ``RecordHaltOutput`` for a stored halt."""
    return {"halt_id": halt["id"], "recorded_at": stamp, "requires_acknowledgment": halt["severity"] != "low",
            "escalation_triggered": halt["escalate"]}  # auto-escalated now; a critical halt is not, by itself


def _insert(connection, home: str, data: dict, config: dict[str, dict], *, now: float, auto: bool) -> dict:
    """Insert one halt inside an open write transaction, with its ack-log lines."""
    stamp = iso(now)
    halt = new_halt(data, config, now=now, auto=auto)
    connection.execute(
        "INSERT INTO halt_events (id, session_id, task_id, halt_type, severity, description, context, triggered_at,"
        " acknowledged, resolution, attempt_count, previous_error, created_at, updated_at, condition_name,"
        " escalate_at, auto_recorded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)",
        (halt["id"], halt["session_id"], halt["task_id"], halt["halt_type"], halt["severity"], halt["description"],
         json.dumps(halt["context"]) if halt["context"] is not None else None, stamp, halt["resolution"],
         halt["attempt_count"], halt["previous_error"], stamp, stamp, halt["condition_name"],
         iso(halt["escalate_at"]) if halt["escalate_at"] is not None else None, 1 if auto else 0))
    _refresh_state(connection, data["session_token"], stamp)
    for event, source, reason, extra in recorded_lines(halt, data):
        _log(connection, home, event, halt, source=source, now=now, reason=reason, **extra)
    return recorded_answer(halt, stamp)


def record_halt(data: dict, *, home=None, now: float | None = None) -> dict:
    """The seed's ``guardrail_record_halt``."""
    _validate_record(data)
    moment = now_seconds(now)
    home = _home(home)
    connection = _open(home, moment)
    try:
        config = load_config(connection, home)
        with write(connection):
            output = _insert(connection, home, data, config, now=moment, auto=False)
    finally:
        connection.close()
    return output


# ------------------------------------------------------------------ check
def fail_safe(home: str, data: object, problem: str, *, now: float) -> dict:
    """The seed's fail-safe answer (halt, critical), the check noted in ``halts_unavailable.jsonl``."""
    from leash.core.base.statefile import append_line

    line = json.dumps({"at": iso(now), "problem": mask(problem),
                       "session_token": data.get("session_token") if isinstance(data, dict) else None})
    try:
        append_line(os.path.join(home, FALLBACK_LOG), lambda: line.encode())
    except OSError:
        pass
    reason = {"halt_type": "execution", "condition_name": "halt_check_failed", "severity": "critical",
              "description": f"Halt check failed: {problem}", "auto_recorded": False}
    return {"should_halt": True, "halt_reasons": [reason], "highest_severity": "critical",
            "recommended_action": "HALT: the halt store is unavailable (fail safe); run `leash doctor`."}


def check_halt_conditions(data: dict, *, home=None, now: float | None = None, record: bool = True,
                          record_high: bool | None = None, connection=None) -> dict:
    """The seed's ``guardrail_check_halt_conditions``: evaluate, auto-record, answer.

    Auto-records (when ``should_halt``): every critical condition, high ones
    when ``record_high`` (config ``[halts] record_high``), and medium ones when
    two or more fired (``core.halts.rules.to_auto_record``). Creates halts.db
    only when something is recorded. ``record_high`` None reads ``[halts]
    record_high`` from config.toml."""
    moment = now_seconds(now)
    home = _home(home)
    ctx = CheckContext(data)  # validated before the store is touched
    owned = connection is None
    try:
        if owned:
            connection = _open(home, moment) if exists(home) else None
        config = load_config(connection, home) if connection else default_config_read()
        _add_attempts(connection, ctx, data, moment)
        fired = engine.evaluate(ctx, config)
        should_halt, to_record = halts_to_record(fired, home=home, record=record, record_high=record_high)
        recorded: dict[str, str] = {}
        if to_record:
            if connection is None:
                connection, owned = _open(home, moment), True
                config = load_config(connection, home)
            recorded = _record_findings(connection, home, ctx, to_record, config, now=moment)
    except HaltInputError:
        raise
    except HaltStoreUnavailable as exc:
        return fail_safe(home, data, f"database unavailable ({exc})", now=moment)
    except Exception as exc:  # the seed: a failed check halts
        return fail_safe(home, data, f"{exc.__class__.__name__}: {exc}", now=moment)
    finally:
        if owned and connection is not None:
            connection.close()
    return check_answer(fired, recorded, should_halt=should_halt, attempt_number=ctx.attempt_number)


def _add_attempts(connection, ctx: CheckContext, data: dict, moment: float) -> None:
    """The session's stored attempts at its task into the check's context (reset
    first when the call asks for a fresh start)."""
    task = data.get("task_id") or ""
    stored, errors = _stored_attempts(connection, data["session_token"], task) if connection else (0, [])
    ctx.stored_attempts, ctx.stored_errors = stored, list(errors)
    from leash.core.policy.halts.conditions.execution import reset_requested

    if connection and stored and reset_requested(ctx):
        with write(connection):
            connection.execute("UPDATE attempts SET count = 0, recent_errors = '[]', updated_at = ?"
                               " WHERE session_id = ? AND task_id = ?", (iso(moment), ctx.session_id, task))
        ctx.stored_attempts, ctx.stored_errors = 0, []


def halts_to_record(fired, *, home: str, record: bool, record_high: bool | None) -> tuple[bool, list]:
    """(should the call halt, the findings recorded as halts when ``record``)."""
    should_halt = any(engine.halts(f.severity) for f in fired)
    if not (should_halt and record):
        return should_halt, []
    return should_halt, to_auto_record(fired, record_high=_record_high(home, record_high, fired))


def _record_high(home: str, record_high: bool | None, fired) -> bool | None:
    """``record_high`` as given, else ``[halts] record_high`` (read only when a high one fired)."""
    if record_high is not None or not any(f.severity == "high" for f in fired):
        return record_high
    from leash.core.base.config import ConfigError
    from leash.core.base.config import load_config as load_settings

    try:
        return load_settings(home)["halts"]["record_high"]
    except ConfigError:
        return True


def _halt_context(fired, ctx: CheckContext) -> dict:
    """A recorded halt's context: the finding's, plus what the call was about."""
    context = dict(fired.finding.context)
    context.setdefault("operation", ctx.operation)
    if ctx.files_to_change:
        context.setdefault("file_paths", ctx.files_to_change)
    if ctx.commands:
        context.setdefault("commands", ctx.commands)
    return context


def _record_findings(connection, home: str, ctx: CheckContext, to_record, config: dict, *, now: float) -> dict:
    """Record each finding as a halt in one write; condition name -> halt id."""
    recorded = {}
    with write(connection):
        for f in to_record:
            output = _insert(connection, home, finding_halt(f, ctx), config, now=now, auto=True)
            recorded[f.name] = output["halt_id"]
    return recorded


def finding_halt(fired, ctx: CheckContext) -> dict:
    """The ``record_halt`` input that records a finding of a check as a halt."""
    return {"session_token": ctx.session_id, "task_id": ctx.task_id, "halt_type": fired.halt_type,
            "severity": fired.severity, "condition_name": fired.name,
            "description": fired.finding.description[:MAX_DESCRIPTION], "context": _halt_context(fired, ctx),
            "attempt_count": max(ctx.attempt_number or 0, ctx.stored_attempts) or None,
            "previous_error": ctx.all_errors[-1] if ctx.all_errors else None}


def check_answer(fired, recorded: dict, *, should_halt: bool, attempt_number) -> dict:
    """The seed's answer to a check, every text masked."""
    reasons = [{"halt_type": f.halt_type, "condition_name": f.name, "severity": f.severity,
                "description": mask(f.finding.description), "auto_recorded": f.name in recorded,
                **({"halt_id": recorded[f.name]} if f.name in recorded else {})} for f in fired]
    output = {"should_halt": should_halt, "halt_reasons": reasons, "highest_severity": engine.highest(fired),
              "recommended_action": engine.recommended_action(fired, attempt_number)}
    annotations = _annotations(fired)
    if annotations:
        output["context_annotations"] = annotations
    return output


def _annotations(fired) -> dict[str, list[str]]:
    annotations: dict[str, list[str]] = {}
    for f in fired:
        for key, values in f.finding.annotations.items():
            kept = annotations.setdefault(key, [])
            kept += [mask(v) for v in values if mask(v) not in kept]
    return annotations


# ------------------------------------------------------------------ acknowledge
def acknowledge_input(halt_id: str, session_id: str, resolution: str, *, notes: str | None = None,
                      caution: bool = False) -> dict[str, object]:
    """The seed's ``AcknowledgeHaltInput`` for a halt store's ``acknowledge`` arguments."""
    data: dict[str, object] = {"halt_id": halt_id, "session_token": session_id, "resolution": resolution}
    if notes is not None:
        data["resolution_notes"] = notes
    if caution:
        data["continue_with_caution"] = True
    return data


def acknowledge_request(data: dict) -> tuple[str, str, str, str | None]:
    """(halt id, session, resolution, notes) of a valid ``AcknowledgeHaltInput``; HaltInputError otherwise."""
    if not isinstance(data, dict):
        raise HaltInputError("input must be a JSON object")
    halt_id, session = data.get("halt_id"), data.get("session_token")
    resolution = data.get("resolution")
    if not isinstance(halt_id, str) or not halt_id:
        raise HaltInputError("halt_id is required")
    if not isinstance(session, str) or not session:
        raise HaltInputError("session_token is required")
    if resolution not in USER_RESOLUTIONS:
        raise HaltInputError(f"resolution must be one of {', '.join(USER_RESOLUTIONS)}")
    notes = data.get("resolution_notes")
    if notes is not None and not isinstance(notes, str):
        raise HaltInputError("resolution_notes must be a string")
    return halt_id, session, resolution, notes


def refuse_acknowledgement(row, data: dict) -> None:
    """HaltRefused when the stored halt ``row`` (None: none) may not take the
    acknowledgement ``data`` asks for."""
    halt_id, session, resolution = data["halt_id"], data["session_token"], data["resolution"]
    if row is None:
        raise HaltRefused(f"no halt {halt_id}")
    if row["session_id"] != session:
        raise HaltRefused(f"halt {halt_id} does not belong to session {session}")
    if row["resolution"] in ("resolved", "dismissed"):
        raise HaltRefused(f"halt {halt_id} was already {row['resolution']} at {row['acknowledged_at']}")
    if row["resolution"] in ("escalated", "timeout") and resolution == "escalated":
        raise HaltRefused(f"halt {halt_id} is already escalated; resolve or dismiss it")
    if resolution == "dismissed" and dismissal_needs_caution(row["severity"]) \
            and data.get("continue_with_caution") is not True:
        raise HaltRefused(f"halt {halt_id} is critical: dismissing it needs continue_with_caution")


def acknowledged_answer(row, *, resolution: str, stamp: str, state: str, remaining: int) -> dict:
    """The seed's ``AcknowledgeHaltOutput``, with its warnings."""
    output = {"confirmed": True, "halt_id": row["id"], "acknowledged_at": stamp,
              "session_can_resume": state == "active"}
    warnings = []
    if resolution == "dismissed":
        warnings.append(f"Dismissed a {row['severity']} halt ({row['condition_name'] or row['halt_type']}): "
                        "proceed with caution.")
    if state != "active":
        warnings.append(f"Session {row['session_id']} is still {state}: {remaining} unacknowledged halts remain.")
    if warnings:
        output["warnings"] = warnings
    return output


def acknowledge_halt(data: dict, *, home=None, now: float | None = None, source: str | None = None) -> dict:
    """The seed's ``guardrail_acknowledge_halt``."""
    halt_id, session, resolution, notes = acknowledge_request(data)
    moment = now_seconds(now)
    home = _home(home)
    who = data.get("acknowledged_by") or _source(source)
    connection = _open(home, moment)
    try:
        with write(connection):
            row = connection.execute("SELECT * FROM halt_events WHERE id = ?", (halt_id,)).fetchone()
            refuse_acknowledgement(row, data)
            stamp = iso(moment)
            connection.execute(
                "UPDATE halt_events SET acknowledged = 1, acknowledged_at = ?, acknowledged_by = ?, resolution = ?,"
                " resolution_notes = ?, updated_at = ? WHERE id = ?",
                (stamp, mask(who), resolution, mask(notes) if notes else None, stamp, halt_id))
            state = _refresh_state(connection, row["session_id"], stamp)
            remaining = connection.execute(
                "SELECT count(*) FROM halt_events WHERE session_id = ? AND acknowledged = 0",
                (row["session_id"],)).fetchone()[0]
            _log(connection, home, _LOG_EVENT[resolution], row, source=who, reason=notes or resolution, now=moment)
    finally:
        connection.close()
    return acknowledged_answer(row, resolution=resolution, stamp=stamp, state=state, remaining=remaining)


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


def listing_request(data: dict) -> tuple[str | None, int, int]:
    """(session or None, limit, offset) of a valid ``GetSessionHaltsInput``; HaltInputError otherwise."""
    if not isinstance(data, dict):
        raise HaltInputError("input must be a JSON object")
    session = data.get("session_token")
    if session is not None and (not isinstance(session, str) or not session):
        raise HaltInputError("session_token must be a non-empty string")
    limit, offset = data.get("limit", 50), data.get("offset", 0)
    for key, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise HaltInputError(f"{key} must be a whole number >= 0")
    if data.get("halt_type") is not None and data["halt_type"] not in HALT_TYPES:
        raise HaltInputError(f"halt_type must be one of {', '.join(HALT_TYPES)}")
    if data.get("severity") is not None and data["severity"] not in SEVERITIES:
        raise HaltInputError(f"severity must be one of {', '.join(SEVERITIES)}")
    return session, limit, offset


def listing_filters(data: dict, session: str | None, *, mark: str, false: str,
                    as_text: str) -> tuple[tuple[str, list], tuple[str, list]]:
    """The WHERE clauses of a listing, in the dialect named by ``mark`` (the
    parameter mark), ``false`` and ``as_text`` (an enum column's cast):
    ((the session's scope, its parameters), (the filters, their parameters))."""
    scope, params = ["1 = 1"], []
    if session is not None:
        scope.append(f"session_id = {mark}")
        params.append(session)
    filters, fparams = list(scope), list(params)
    if data.get("pending"):
        filters.append(f"(acknowledged = {false} OR resolution = 'escalated')")
    elif not data.get("include_acknowledged"):
        filters.append(f"acknowledged = {false}")
    for key in ("halt_type", "severity"):
        if data.get(key):
            filters.append(f"{key}{as_text} = {mark}")
            fparams.append(data[key])
    return (" AND ".join(scope), params), (" AND ".join(filters), fparams)


def get_session_halts(data: dict, *, home=None, now: float | None = None, connection=None) -> dict:
    """The seed's ``guardrail_get_session_halts``. ``session_token`` may be
    omitted for every session; ``pending: true`` lists what waits on a human
    (unacknowledged, escalated or timed out)."""
    session, limit, offset = listing_request(data)
    moment = now_seconds(now)
    home = resolve_home(home)
    owned = connection is None
    if owned:
        if not exists(home):
            return {"total_count": 0, "halts": [], "unacknowledged_count": 0}
        connection = _open(home, moment)
    try:
        (scope, params), (where, fparams) = listing_filters(data, session, mark="?", false="0", as_text="")
        total = connection.execute(f"SELECT count(*) FROM halt_events WHERE {where}", fparams).fetchone()[0]
        rows = connection.execute(
            f"SELECT * FROM halt_events WHERE {where} ORDER BY CASE severity WHEN 'critical' THEN 0"
            " WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, triggered_at, id LIMIT ? OFFSET ?",
            fparams + [limit, offset]).fetchall()
        unacknowledged = connection.execute(
            f"SELECT count(*) FROM halt_events WHERE {scope} AND acknowledged = 0", params).fetchone()[0]
    finally:
        if owned:
            connection.close()
    return {"total_count": total, "halts": [halt_event(r) for r in rows], "unacknowledged_count": unacknowledged}


# ------------------------------------------------------------------ config
_CONFIG_CHECKS = {
    "enabled": lambda v: isinstance(v, bool), "severity": lambda v: v in SEVERITIES,
    "threshold": lambda v: isinstance(v, dict), "auto_escalate": lambda v: isinstance(v, bool),
    "escalate_after_minutes": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)}
CONFIG_KEYS = tuple(_CONFIG_CHECKS)  # the settings of a condition a caller may change


def config_request(data: dict) -> dict:
    """The settings a valid ``UpdateHaltConfigInput`` changes (checked before
    anything is stored); HaltInputError otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("condition_name"), str):
        raise HaltInputError("condition_name is required")
    from leash.core.policy.halts import thresholds

    for key, ok in _CONFIG_CHECKS.items():
        if key in data and not ok(data[key]):
            raise HaltInputError(f"invalid {key}: {data[key]!r}")
    unknown = set(data) - set(CONFIG_KEYS) - {"condition_name"}
    if unknown:
        raise HaltInputError(f"unknown settings: {', '.join(sorted(unknown))}")
    if "threshold" in data and data["condition_name"] in {c[0] for c in DEFAULT_CONDITIONS} | set(thresholds.SPECS):
        thresholds.validate(data["condition_name"], data["threshold"])  # before anything is stored
    if "escalate_after_minutes" in data:
        thresholds.validate_escalate_after(data["escalate_after_minutes"])
    return {k: v for k, v in data.items() if k in CONFIG_KEYS}


def config_answer(previous: dict, changes: dict) -> tuple[dict, dict]:
    """(the condition's config after ``changes``, the seed's ``UpdateHaltConfigOutput``)."""
    current = {**previous, **changes}
    return current, {"updated": current != previous, "previous_values": {k: previous[k] for k in CONFIG_KEYS},
                     "current_values": {k: current[k] for k in CONFIG_KEYS}}


def update_halt_config(data: dict, *, home=None, now: float | None = None) -> dict:
    """The seed's ``guardrail_update_halt_config``: previous and current values."""
    changes = config_request(data)
    moment = now_seconds(now)
    home = _home(home)
    connection = _open(home, moment)
    try:
        with write(connection):
            row = connection.execute("SELECT * FROM halt_conditions_config WHERE condition_name = ?",
                                     (data["condition_name"],)).fetchone()
            if row is None:
                raise HaltRefused(f"no condition {data['condition_name']!r} (leash halts config lists them)")
            current, answer = config_answer(_row_config(row), changes)
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
    home = _home(home)
    connection = open_store(home)
    try:
        return list(load_config(connection, home).values())
    finally:
        connection.close()
