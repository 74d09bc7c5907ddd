"""The halt decision, written once for every backend: a check evaluated,
what it records decided and answered; an agent's halt recorded; an
acknowledgement allowed or refused; a change to a condition's config checked
and answered.

Each function takes the backend's ``HaltStorage`` (``core.policy.halts.storage``)
as a parameter: the storage reads evidence (the condition config, a session's
stored attempts, a halt's row) and writes what it is handed in one
transaction; it decides nothing. So ``halts.db`` (``core.state.halts``) and
PostgreSQL (``core.store.pghalts``) give the same answer from the same code.

Rules applied here:
* a check halts when a finding is medium or worse; what is recorded of it is
  ``core.policy.halts.rules.to_auto_record`` (``record_high`` None reads
  ``[halts] record_high`` from the home's config.toml, only when a high one fired);
* a call asking for a fresh start resets the session's stored attempts first;
* a new halt escalates at once when its call or its condition says
  ``auto_escalate``, else times out after its condition's
  ``escalate_after_minutes``; secrets are masked in every stored text;
* a resolved or dismissed halt is final; an escalated or timed-out one can be
  resolved or dismissed but not escalated again; dismissing a critical halt
  needs ``continue_with_caution``; a halt answers only to its own session.

Failure: bad input raises ``HaltInputError`` before the storage is touched;
a refused acknowledgement raises ``HaltRefused`` inside the storage's write,
which then changes nothing; a check whose storage fails (or whose own code
raises) answers the seed's fail-safe halt at critical severity, noted by the
storage (``note_failed_check``).
"""
from __future__ import annotations

from leash.core.base.clock import iso
from leash.core.base.secrets import mask, mask_deep
from leash.core.policy.halts import engine
from leash.core.policy.halts.context import CheckContext, HaltInputError
from leash.core.policy.halts.outcomes import (
    HALT_TYPES,
    SEVERITIES,
    Acknowledgement,
    CheckResult,
    HaltLine,
    HaltReason,
    HaltRefused,
    HaltStoreUnavailable,
    NewHalt,
    new_id,
)
from leash.core.policy.halts.rules import dismissal_needs_caution, to_auto_record

TYPE_CHECKING = False  # the protocol is for the type checker: typing is not imported on the hook path
if TYPE_CHECKING:
    from typing import Collection

    from leash.core.policy.halts.storage import HaltStorage

MAX_DESCRIPTION = 4000
DESCRIPTION_IN_LOG = 1000  # characters of a description kept on its log line
USER_RESOLUTIONS = ("resolved", "escalated", "dismissed")
LOG_EVENT = {"resolved": "halt_ack", "dismissed": "halt_dismiss", "escalated": "halt_escalate",
             "timeout": "halt_timeout"}


# ------------------------------------------------------------------ check
def check_input(data: dict) -> CheckContext:
    """A check's input, validated (before any store is touched); HaltInputError otherwise."""
    return CheckContext(data)


def check(storage: HaltStorage, ctx: CheckContext, *, record: bool = True, record_high: bool | None = None,
          now: float) -> CheckResult:
    """The seed's ``guardrail_check_halt_conditions``: evaluate, auto-record, answer."""
    try:
        config = storage.condition_config()
        _with_stored_attempts(storage, ctx, now=now)
        fired = engine.evaluate(ctx, config)
        should_halt = any(engine.halts(f.severity) for f in fired)
        to_record = to_auto_record(fired, record_high=_record_high(storage.home, record_high, fired)) \
            if should_halt and record else []
        recorded: dict[str, str] = {}
        if to_record:
            halts = [new_halt(finding_halt(f, ctx), config, now=now, auto=True) for f in to_record]
            storage.insert(halts, now=now)
            recorded = {f.name: halt.id for f, halt in zip(to_record, halts, strict=True)}
    except HaltInputError:
        raise
    except HaltStoreUnavailable as exc:
        return fail_safe(storage, ctx.session_id, f"database unavailable ({exc})", now=now)
    except Exception as exc:  # the seed: a failed check halts
        return fail_safe(storage, ctx.session_id, f"{exc.__class__.__name__}: {exc}", now=now)
    return check_answer(fired, recorded, should_halt=should_halt, attempt_number=ctx.attempt_number)


def _with_stored_attempts(storage: HaltStorage, ctx: CheckContext, *, now: float) -> None:
    """The session's stored attempts at its task into the check's context (reset
    first when the call asks for a fresh start)."""
    from leash.core.policy.halts.conditions.execution import reset_requested

    task = ctx.task_id or ""
    stored, errors = storage.stored_attempts(ctx.session_id, task)
    ctx.stored_attempts, ctx.stored_errors = stored, list(errors)
    if stored and reset_requested(ctx):
        storage.reset_attempts(ctx.session_id, task, now=now)
        ctx.stored_attempts, ctx.stored_errors = 0, []


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


def fail_safe(storage: HaltStorage, session_id: str | None, problem: str, *, now: float) -> CheckResult:
    """The seed's fail-safe answer (halt, critical), the failed check noted by the storage."""
    storage.note_failed_check(session_id, mask(problem), now=now)
    reason = HaltReason("execution", "halt_check_failed", "critical", f"Halt check failed: {problem}")
    return CheckResult(True, [reason], "critical",
                       "HALT: the halt store is unavailable (fail safe); run `leash doctor`.")


def finding_halt(fired, ctx: CheckContext) -> dict:
    """The ``record_halt`` input that records a finding of a check as a halt."""
    return {"session_token": ctx.session_id, "task_id": ctx.task_id, "halt_type": fired.halt_type,
            "severity": fired.severity, "condition_name": fired.name,
            "description": fired.finding.description[:MAX_DESCRIPTION], "context": _halt_context(fired, ctx),
            "attempt_count": max(ctx.attempt_number or 0, ctx.stored_attempts) or None,
            "previous_error": ctx.all_errors[-1] if ctx.all_errors else None}


def _halt_context(fired, ctx: CheckContext) -> dict:
    """A recorded halt's context: the finding's, plus what the call was about."""
    context = dict(fired.finding.context)
    context.setdefault("operation", ctx.operation)
    if ctx.files_to_change:
        context.setdefault("file_paths", ctx.files_to_change)
    if ctx.commands:
        context.setdefault("commands", ctx.commands)
    return context


def check_answer(fired, recorded: dict[str, str], *, should_halt: bool, attempt_number: int | None) -> CheckResult:
    """The seed's answer to a check, every text masked."""
    reasons = [HaltReason(f.halt_type, f.name, f.severity, mask(f.finding.description),
                          auto_recorded=f.name in recorded, halt_id=recorded.get(f.name)) for f in fired]
    annotations: dict[str, list[str]] = {}
    for f in fired:
        for key, values in f.finding.annotations.items():
            kept = annotations.setdefault(key, [])
            kept += [mask(v) for v in values if mask(v) not in kept]
    return CheckResult(should_halt, reasons, engine.highest(fired),
                       engine.recommended_action(fired, attempt_number), annotations)


# ------------------------------------------------------------------ record
def record(storage: HaltStorage, data: dict, *, now: float) -> dict:
    """The seed's ``guardrail_record_halt``: its ``RecordHaltOutput``."""
    validate_record(data)
    halt = new_halt(data, storage.condition_config(), now=now, auto=False)
    storage.insert([halt], now=now)
    return {"halt_id": halt.id, "recorded_at": iso(now), "requires_acknowledgment": halt.severity != "low",
            "escalation_triggered": halt.escalate}  # auto-escalated now; a critical halt is not, by itself


def validate_record(data: object) -> None:
    """HaltInputError unless ``data`` is a valid ``RecordHaltInput``."""
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


def new_halt(data: dict, config: dict[str, dict], *, now: float, auto: bool) -> NewHalt:
    """A validated halt about to be stored, with the ack-log lines that record it:
    ``halt_recorded``, and ``halt_escalate`` when it escalates at once."""
    condition = config.get(data.get("condition_name") or "", {})
    minutes = condition.get("escalate_after_minutes")
    escalate = bool(data.get("auto_escalate")) or bool(condition.get("auto_escalate"))
    escalate_at = now + minutes * 60 if minutes is not None and not escalate else None
    description = mask(data["description"])[:MAX_DESCRIPTION]
    context = mask_deep(data["context"]) if data.get("context") is not None else None  # an object, masked
    lines = [HaltLine("halt_recorded", "leash" if auto else "agent",
                      f"{data['severity']} {data.get('condition_name') or data['halt_type']} halt recorded",
                      recorded_line_fields(data, description=description, escalate=escalate,
                                           escalate_at=iso(escalate_at) if escalate_at is not None else None,
                                           auto=auto))]
    if escalate:
        lines.append(HaltLine("halt_escalate", "leash", "auto_escalate: escalated on record, session paused"))
    return NewHalt(id=new_id(), session_id=data["session_token"],
                   task_id=mask(data["task_id"]) if data.get("task_id") else None, halt_type=data["halt_type"],
                   severity=data["severity"], description=description,
                   context=context if isinstance(context, dict) else None,
                   resolution="escalated" if escalate else None, attempt_count=data.get("attempt_count"),
                   previous_error=mask(data["previous_error"]) if data.get("previous_error") else None,
                   condition_name=data.get("condition_name"), auto_recorded=auto, escalate=escalate,
                   escalate_at=escalate_at, lines=lines)


def recorded_line_fields(data: dict, *, description: str, escalate: bool, escalate_at: str | None,
                         auto: bool) -> dict:
    """The keys a ``halt_recorded`` line carries besides the common ones (what
    ``core.state.halts.ledger`` replays a lost halt from)."""
    fields = {"halt_type": data["halt_type"], "condition_name": data.get("condition_name") or "",
              "description": description[:DESCRIPTION_IN_LOG], "escalated": escalate,
              "auto_recorded": auto}
    if escalate_at:
        fields["escalate_at"] = escalate_at
    if data.get("task_id"):
        fields["task_id"] = data["task_id"]
    return fields


# ------------------------------------------------------------------ acknowledge
def acknowledge(storage: HaltStorage, data: dict, *, by: str | None = None, now: float) -> dict:
    """The seed's ``guardrail_acknowledge_halt``: its ``AcknowledgeHaltOutput``.
    ``by``: who acknowledges (else this process's default source)."""
    halt_id, _, resolution, notes = acknowledge_request(data)
    who = by or _default_source()

    def allowed(row) -> Acknowledgement:
        refuse_acknowledgement(row, data)
        return Acknowledgement(resolution, mask(who), mask(notes) if notes else None,
                               HaltLine(LOG_EVENT[resolution], who, notes or resolution))

    settled = storage.settle(halt_id, allowed, now=now)
    return acknowledged_answer(settled.row, resolution=resolution, stamp=iso(now), state=settled.state,
                               remaining=settled.remaining)


def acknowledge_input(halt_id: str, session_id: str, resolution: str, *, notes: str | None = None,
                      caution: bool = False) -> dict[str, object]:
    """The seed's ``AcknowledgeHaltInput`` for a halt store's ``acknowledge`` arguments."""
    data: dict[str, object] = {"halt_id": halt_id, "session_token": session_id, "resolution": resolution}
    if notes is not None:
        data["resolution_notes"] = notes
    if caution:
        data["continue_with_caution"] = True
    return data


def acknowledge_request(data: object) -> tuple[str, str, str, str | None]:
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


def _default_source() -> str:
    from leash.core.base.source import default_source

    return default_source()


# ------------------------------------------------------------------ config
_CONFIG_CHECKS = {
    "enabled": lambda v: isinstance(v, bool), "severity": lambda v: v in SEVERITIES,
    "threshold": lambda v: isinstance(v, dict), "auto_escalate": lambda v: isinstance(v, bool),
    "escalate_after_minutes": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)}
CONFIG_KEYS = tuple(_CONFIG_CHECKS)  # the settings of a condition a caller may change


def config_request(data: dict, *, known: Collection[str]) -> dict:
    """The settings a valid ``UpdateHaltConfigInput`` changes, checked before
    anything is stored (a threshold against its spec when the condition is one
    of ``known``, those the store keeps a row for, or has a spec); HaltInputError otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("condition_name"), str):
        raise HaltInputError("condition_name is required")
    from leash.core.policy.halts import thresholds

    for key, ok in _CONFIG_CHECKS.items():
        if key in data and not ok(data[key]):
            raise HaltInputError(f"invalid {key}: {data[key]!r}")
    unknown = set(data) - set(CONFIG_KEYS) - {"condition_name"}
    if unknown:
        raise HaltInputError(f"unknown settings: {', '.join(sorted(unknown))}")
    if "threshold" in data and (data["condition_name"] in known or data["condition_name"] in thresholds.SPECS):
        thresholds.validate(data["condition_name"], data["threshold"])  # before anything is stored
    if "escalate_after_minutes" in data:
        thresholds.validate_escalate_after(data["escalate_after_minutes"])
    return {k: v for k, v in data.items() if k in CONFIG_KEYS}


def config_answer(previous: dict, changes: dict) -> tuple[dict, dict]:
    """(the condition's config after ``changes``, the seed's ``UpdateHaltConfigOutput``)."""
    current = {**previous, **changes}
    return current, {"updated": current != previous, "previous_values": {k: previous[k] for k in CONFIG_KEYS},
                     "current_values": {k: current[k] for k in CONFIG_KEYS}}
