"""``leash approvals ...``: agents' calls waiting for an operator, from the command line.

``leash approvals [list] [--json]`` lists the waiting ones, oldest first (id,
session, tool, what it would do, age, kind and rule); ``leash approvals allow
ID [--note N]`` and ``leash approvals deny ID [--message M]`` answer one (an
id or a unique prefix of one). Every handler calls the backend's approval
store (``backend.approvals``); the answer's ``via`` is "cli", its ``by`` the
``--source`` (through leashd: the peer's user, whatever the client says).

Failure: an id answered or closed already exits 1 naming who answered and
how; an unknown or ambiguous id exits 1 saying which. Agent text (session
ids, commands) is shown escaped on one line (``core.text.printable``).
"""
from __future__ import annotations

import json
import sys
from argparse import Namespace

from leash.console.errors import Refused
from leash.core.base.text import printable
from leash.core.store.protocols import Backend

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from argparse import ArgumentParser, _SubParsersAction

ANSWER_VIA = "cli"


def add_parsers(sub: _SubParsersAction, common: ArgumentParser, acting: ArgumentParser,
                parser_class: type[ArgumentParser]) -> None:
    p = sub.add_parser("approvals", parents=[common],
                       help="agents' calls waiting for an operator: list, allow, deny")
    p.add_argument("--json", action="store_true", help="list: the waiting approvals as JSON")
    actions = p.add_subparsers(dest="approvals_command", metavar="ACTION", parser_class=parser_class)
    q = actions.add_parser("list", parents=[common], help="the waiting approvals, oldest first (the default)")
    q.add_argument("--json", action="store_true", help="the waiting approvals as JSON (each with its detail)")
    q = actions.add_parser("allow", parents=[acting], help="allow a waiting call (an id or a unique prefix)")
    q.add_argument("approval_id", metavar="ID")
    q.add_argument("--note", default="", help="why, for the ack log (the agent is told it was allowed)")
    q.add_argument("--json", action="store_true", help="one JSON object: the answered approval")
    q = actions.add_parser("deny", parents=[acting], help="deny a waiting call (an id or a unique prefix)")
    q.add_argument("approval_id", metavar="ID")
    q.add_argument("--message", default="", help="what the agent reads as the reason")
    q.add_argument("--json", action="store_true", help="one JSON object: the answered approval")


def _out(text: str) -> None:
    sys.stdout.write(printable(text) + "\n")


def run(backend: Backend, args: Namespace) -> int:
    from leash.core.store.approvals import ApprovalError

    command = args.approvals_command or "list"
    try:
        if command == "list":
            return _list(backend, args)
        return _answer(backend, args, allow=command == "allow")
    except ApprovalError as exc:
        raise Refused(str(exc)) from None


def _list(backend: Backend, args: Namespace) -> int:
    from leash.core.base.clock import human_duration, now_seconds, parse_iso

    waiting = backend.approvals.pending()
    if args.json:
        sys.stdout.write(json.dumps([record.as_dict() for record in waiting], ensure_ascii=True) + "\n")
        return 0
    if not waiting:
        _out("no approval is waiting")
        return 0
    moment = now_seconds()
    for record in waiting:
        try:
            age = human_duration(moment - parse_iso(record.requested_at))
        except ValueError:
            age = "?"
        kind = f"ask {record.rule}" if record.kind == "ask" else str(record.kind)
        _out(f"{record.id}  {record.session_id}  {record.tool}  {age}  {kind}  {record.summary}")
    return 0


def _answer(backend: Backend, args: Namespace, *, allow: bool) -> int:
    record = backend.approvals.answer(args.approval_id, allow=allow, by=args.source, via=ANSWER_VIA,
                                      message="" if allow else args.message, note=args.note if allow else "")
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps({"ok": True, "command": f"approvals {args.approvals_command}", "exit_code": 0,
                                     "action": "approval_allowed" if allow else "approval_denied",
                                     "approval": record.as_dict()}, ensure_ascii=True) + "\n")
        return 0
    _out(f"{record.status} {record.id} ({record.session_id}: {record.summary})")
    return 0
