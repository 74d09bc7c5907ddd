"""``leash halts ...``: the halt engine from the command line.

Parsers and handlers for list, check, record, ack, dismiss, escalate and
config. Every handler calls the backend's halt store (``backend.halts``); what
it refuses (the core's ``HaltRefused``, an unknown halt) is a ``Refused``;
``--json`` prints the seed's output shapes as exact ASCII JSON. Human-readable lines show agent text (session ids,
descriptions) escaped on one line (``core.text.printable``).
"""
from __future__ import annotations

import json
import sys
from argparse import Namespace

from leash.console.errors import Refused, UsageError
from leash.core.base.text import printable
from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.store.protocols import Backend

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from argparse import ArgumentParser, _SubParsersAction
    from typing import Callable

    from leash.core.store.protocols_halts import HaltStore
    from leash.core.store.records_halts import AcknowledgedHalt, HaltConditionConfig, HaltEventRecord, RecordedHalt


def add_parsers(sub: _SubParsersAction, common: ArgumentParser, acting: ArgumentParser,
                parser_class: type[ArgumentParser], positive_int: Callable[[str], int]) -> None:
    p = sub.add_parser("halts", parents=[common], help="safety halts: list, check, record, acknowledge, configure")
    halts = p.add_subparsers(dest="halts_command", metavar="ACTION", parser_class=parser_class, required=True)

    q = halts.add_parser("list", parents=[common], help="pending halts (unacknowledged or escalated)")
    q.add_argument("--session")
    q.add_argument("--all", action="store_true", help="acknowledged halts too")
    q.add_argument("--type", dest="halt_type")
    q.add_argument("--severity")
    q.add_argument("--limit", type=positive_int, default=50)
    q.add_argument("--offset", type=positive_int, default=0)
    q.add_argument("--json", action="store_true", help="the seed's GetSessionHaltsOutput")

    q = halts.add_parser("check", parents=[common], help="evaluate a CheckHaltConditionsInput read on stdin")
    q.add_argument("--json", action="store_true", help="print the seed's CheckHaltConditionsOutput")
    q.add_argument("--no-record", action="store_true", help="evaluate only; record nothing")

    q = halts.add_parser("record", parents=[acting], help="record a halt event")
    q.add_argument("--session", required=True)
    q.add_argument("--type", dest="halt_type", required=True)
    q.add_argument("--severity", required=True)
    q.add_argument("--description", required=True)
    q.add_argument("--task")
    q.add_argument("--condition")
    q.add_argument("--context", type=_json_object, help="a JSON object (file_paths, commands, error_messages, ...)")
    q.add_argument("--attempt", type=positive_int)
    q.add_argument("--previous-error")
    q.add_argument("--auto-escalate", action="store_true")
    q.add_argument("--json", action="store_true")

    for name, text in (("ack", "resolve a halt: the session may resume"),
                       ("escalate", "hand a halt to a human: the session pauses"),
                       ("dismiss", "proceed anyway (a critical halt needs --caution)")):
        q = halts.add_parser(name, parents=[acting], help=text)
        q.add_argument("halt_id", metavar="ID")
        q.add_argument("--note", help="resolution notes")
        q.add_argument("--session", help="refuse unless the halt belongs to this session")
        q.add_argument("--json", action="store_true")
        if name == "dismiss":
            q.add_argument("--caution", action="store_true", help="continue with caution (required for critical)")

    q = halts.add_parser("config", parents=[common], help="show or change a condition's configuration")
    q.add_argument("name", nargs="?")
    q.add_argument("--enabled", type=_boolean)
    q.add_argument("--severity")
    q.add_argument("--threshold", type=_json_object)
    q.add_argument("--escalate-after", type=_minutes, metavar="MIN", help="minutes; 'none' clears")
    q.add_argument("--auto-escalate", type=_boolean)
    q.add_argument("--json", action="store_true")


def _boolean(text: str) -> bool:
    import argparse

    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"must be true or false, got {text!r}")


def _json_object(text: str) -> dict:
    import argparse

    try:
        value = json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {text!r}")
    return value


class _Clear:
    pass


def _minutes(text: str) -> object:
    import argparse

    if text.strip().lower() in ("none", "null", "off"):
        return _Clear
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"must be whole minutes or 'none', got {text!r}")
    return int(text)


def _out(text: str = "") -> None:
    """One line for a person: agent text in it is escaped and cannot break it."""
    sys.stdout.write(printable(text) + "\n")


def _out_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=True) + "\n")


def _action(command: str, result: RecordedHalt | AcknowledgedHalt) -> dict:
    """An action's ``--json`` object: ``ok``, ``command``, ``exit_code``, then the seed's output keys."""
    return {"ok": True, "command": command, "exit_code": 0, **result.as_json()}


def run(backend: Backend, args: Namespace) -> int:
    from leash.core.state.halts import HaltRefused, HaltStoreUnavailable

    try:
        if args.halts_command == "check":  # [halts] record_high of the operator's config.toml
            return _check(backend.halts, args, home=backend.home)
        return HANDLERS[args.halts_command](backend.halts, args)
    except HaltRefused as exc:
        raise Refused(str(exc)) from None
    except HaltStoreUnavailable as exc:
        raise Refused(f"halt store unavailable: {exc} (leash doctor)") from None


def _list(halts: HaltStore, args: Namespace) -> int:
    query = HaltQuery(session=args.session or None, pending=not args.all, include_acknowledged=args.all,
                      halt_type=args.halt_type, severity=args.severity, limit=args.limit, offset=args.offset)
    result = halts.listing(query)
    if args.json:
        _out_json(result.as_json())
        return 0
    _out(f"{len(result.halts)} of {result.total_count} matching halts; "
         f"{result.unacknowledged_count} unacknowledged")
    for h in result.halts:
        state = h.resolution or ("acknowledged" if h.acknowledged else "pending")
        _out(f"  {h.halt_id[:8]}  {h.severity:<8} {h.halt_type:<12} {h.condition_name or '-':<24} "
             f"{h.session_id}  {h.triggered_at}  {state}")
        _out(f"            {h.description}")
    return 0


def _check(halts: HaltStore, args: Namespace, *, home: str | None) -> int:
    raw = sys.stdin.buffer.read()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"stdin is not JSON ({exc})") from None
    from leash.core.base.config import load_config

    record_high = load_config(home)["halts"]["record_high"]  # a bad config.toml is a usage error, as before any check
    result = halts.check(data, record=not args.no_record, record_high=record_high).as_json()
    if args.json:
        _out_json(result)
    else:
        verdict = "HALT" if result["should_halt"] else "proceed"
        _out(f"{verdict} (highest severity {result['highest_severity']}): {result['recommended_action']}")
        for reason in result["halt_reasons"]:
            recorded = f"  recorded {reason['halt_id'][:8]}" if reason.get("halt_id") else ""
            _out(f"  {reason['severity']:<8} {reason['condition_name']:<24} {reason['description']}{recorded}")
    return 3 if result["should_halt"] else 0


def _record(halts: HaltStore, args: Namespace) -> int:
    data = {"session_token": args.session, "halt_type": args.halt_type, "severity": args.severity,
            "description": args.description}
    for key, value in (("task_id", args.task), ("condition_name", args.condition),
                       ("attempt_count", args.attempt), ("previous_error", args.previous_error)):
        if value is not None:
            data[key] = value
    if args.context is not None:
        data["context"] = _context_object(args.context)
    if args.auto_escalate:
        data["auto_escalate"] = True
    result = halts.record(data)
    if args.json:
        _out_json(_action("halts record", result))
    else:
        _out(f"recorded {result.halt_id} at {result.recorded_at}"
             f"{' (escalation triggered)' if result.escalation_triggered else ''}")
    return 0


def _context_object(value: object) -> dict:
    """``--context`` as a dict: parsed already by the parser, or a string
    (an operator request's arguments) that must hold a JSON object."""
    import argparse

    if isinstance(value, dict):
        return value
    try:
        return _json_object(str(value))
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--context {exc}") from None


HALT_PREFIX_MIN = 8  # the prefix `leash halts list` and `leash why` show
PREFIX_PAGE = 500    # halts read at once while counting those a prefix matches


def _prefix_matches(halts: HaltStore, prefix: str) -> int:
    """How many stored halts have an id starting with ``prefix``."""
    count, offset = 0, 0
    while True:
        page = halts.listing(HaltQuery(include_acknowledged=True, limit=PREFIX_PAGE, offset=offset))
        count += sum(1 for h in page.halts if h.halt_id.lower().startswith(prefix.lower()))
        offset += len(page.halts)
        if not page.halts or offset >= page.total_count:
            return count


def _find(halts: HaltStore, halt_id: str) -> HaltEventRecord:
    """The halt ``halt_id`` names (its id, or a prefix of at least
    ``HALT_PREFIX_MIN`` characters that only it has); UsageError for a prefix
    too short or shared, Refused when no halt has it."""
    found = halts.find(halt_id) if halt_id.strip() else None
    if found is not None and found.id == halt_id:
        return found
    if len(halt_id) < HALT_PREFIX_MIN:
        raise UsageError(f"halt ID prefix {halt_id!r} is shorter than {HALT_PREFIX_MIN} characters; "
                         f"give at least {HALT_PREFIX_MIN} (leash halts list shows them)")
    if found is not None:
        return found
    matches = _prefix_matches(halts, halt_id)
    if matches > 1:
        raise UsageError(f"halt ID prefix {halt_id!r} matches {matches} halts; give more of the ID "
                         "(leash halts list --all --json shows whole IDs)")
    raise Refused(f"no halt {halt_id}")


def _acknowledge(halts: HaltStore, args: Namespace) -> int:
    from leash.core.policy.halts.rules import dismissal_needs_caution

    found = _find(halts, args.halt_id)
    resolution = {"ack": "resolved", "escalate": "escalated", "dismiss": "dismissed"}[args.halts_command]
    if resolution == "dismissed" and not args.caution and dismissal_needs_caution(found.severity) \
            and found.resolution not in ("resolved", "dismissed"):
        raise Refused(f"halt {found.id} is {found.severity}: dismissing it means going on with caution; "
                      "add --caution")
    result = halts.acknowledge(found.id, args.session or found.session_id, resolution, notes=args.note or None,
                               caution=getattr(args, "caution", False), source=args.source)
    if args.json:
        _out_json(_action(f"halts {args.halts_command}", result))
    else:
        resume = "the session may resume" if result.session_can_resume else "the session stays held"
        _out(f"{resolution} {found.id}: {resume}")
        for warning in result.warnings or []:
            _out(f"  warning: {warning}")
    return 0


def _config(halts: HaltStore, args: Namespace) -> int:
    changes = _config_changes(args)
    if changes and not args.name:
        raise UsageError("name the condition to change")
    rows = halts.config()
    if args.name and args.name not in {r.condition_name for r in rows}:
        raise UsageError(f"no condition {args.name!r}; the conditions are: "
                         f"{', '.join(sorted(str(r.condition_name) for r in rows))}")
    if changes:
        return _configure(halts, args, changes)
    if args.name:
        rows = [r for r in rows if r.condition_name == args.name]
    if args.json:
        _out_json([r.as_dict() for r in rows])
    else:
        _show_config(rows, named=bool(args.name))
    return 0


def _config_changes(args: Namespace) -> dict:
    """The settings ``halts config NAME`` was asked to change."""
    changes = {k: v for k, v in (("enabled", args.enabled), ("severity", args.severity),
                                 ("threshold", args.threshold), ("auto_escalate", args.auto_escalate))
               if v is not None}
    if args.escalate_after is not None:
        changes["escalate_after_minutes"] = None if args.escalate_after is _Clear else args.escalate_after
    return changes


def _configure(halts: HaltStore, args: Namespace, changes: dict) -> int:
    result = halts.configure({"condition_name": args.name, **changes})
    if args.json:
        _out_json(result.as_json())
        return 0
    before_values = result.previous_values.as_dict()
    for key, value in result.current_values.as_dict().items():
        before = before_values[key]
        mark = f"  (was {json.dumps(before)})" if before != value else ""
        _out(f"{args.name}.{key} = {json.dumps(value)}{mark}")
    return 0


def _show_config(rows: list[HaltConditionConfig], *, named: bool) -> None:
    """A line per condition; a condition named alone gets its rule's text too."""
    from leash.core.policy.halts.conditions import load_all

    registry = load_all()
    for r in rows:
        after = f", escalate after {r.escalate_after_minutes} min" if r.escalate_after_minutes is not None else ""
        auto = ", auto-escalate" if r.auto_escalate else ""
        _out(f"{r.condition_name:<26} {r.halt_type:<12} {r.severity:<8} "
             f"{'on ' if r.enabled else 'off'} threshold {json.dumps(r.threshold)}{after}{auto}")
        if named and r.condition_name in registry:
            _out(f"  {registry[r.condition_name].doc}")


HANDLERS = {"list": _list, "record": _record, "ack": _acknowledge, "escalate": _acknowledge,
            "dismiss": _acknowledge, "config": _config}
