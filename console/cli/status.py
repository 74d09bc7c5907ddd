"""``leash status``, ``leash why``, ``leash log`` and ``leash doctor``: what the
state is, why a session is held, the ack log and its chain, and what is wrong.

Each reads the command's backend (``Context.backend``) through the core's
views (``core.views.status``, ``core.views.why``, ``core.views.doctor``); no
policy lives here, this module words the answer.
"""
from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from leash.console.cli.context import Context
from leash.console.cli.output import ago, done, out, out_json, out_painted, section
from leash.console.errors import EXIT_USAGE, EXIT_VERDICT, Refused, UsageError
from leash.core.base.clock import human_duration, now_seconds, parse_iso
from leash.core.base.text import printable
from leash.core.store.protocols import Backend

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.records import LogLine


def cmd_status(context: Context, args: Namespace) -> int:
    """The snapshot, and what is wrong around it (``core.views.status.problems``):
    a broken config.toml is shown with the state (exit 2, as for any bad
    config) unless it may name the shared store, when no state can be shown."""
    from leash.core.views.status import CONFIG_BROKEN, config_broken, problems, snapshot, store_may_be_named

    moment = now_seconds()
    broken = config_broken(context.home)
    backend: Backend
    if broken is None:
        backend = context.backend
    elif store_may_be_named(context.home):
        raise UsageError(f"{CONFIG_BROKEN}: {broken}; it may name the shared store, so no state is shown")
    else:  # it names no shared store: the home's files are the state, shown with the problem
        from leash.core.store.files import FileBackend

        backend = FileBackend(context.home)
    state = snapshot(backend=backend, now=moment)
    _add_session_states(backend, state["sessions"], moment, _tmux_listing(context.home))
    here = [row for row in state["sessions"] if row.get("host", state.get("host")) == state.get("host")]
    found = problems(context.home, here)
    if found:  # the key is there only when something is wrong
        state["problems"] = found
    code = EXIT_USAGE if broken else 0
    if broken:
        sys.stderr.write(f"leash: error: {printable(CONFIG_BROKEN + ': ' + broken)}\n")
    if args.json:
        out_json(state, indent=2)
        return code
    out(f"home: {context.home}")
    for problem in found:  # one line each, first: what the rest of the view is missing
        out_painted((problem["kind"], "alarm"), (f": {problem['message']}", None))
    _say_fleet(state, moment)
    _say_held(state, moment)
    _say_budget(state)
    _say_sessions(state, moment)
    return code


def _say_fleet(state: dict, moment: float) -> None:
    """The fleet's line: stopped (by whom), held (which store cannot be read), or running."""
    if "stop_state_error" in state:
        out_painted(("STOP STATE UNREADABLE", "alarm"), (f": {state['stop_state_error']} (every tool call is denied)",
                                                         None))
    if state["fleet_stopped"]:
        fleet = state["fleet_stopped"][0]
        out_painted(("fleet: ", None), ("STOPPED", "alarm"),
                    (f" {ago(fleet['stopped_at'], moment)} by {fleet['source']}: {fleet['reason']}", None))
    elif "stop_state_error" in state:  # the gate denies every call while it lasts: the fleet is not running
        out_painted(("fleet: ", None), ("STOPPED", "alarm"), (" (stop state unreadable: every tool call is denied)",
                                                              None))
    elif "halt_store_error" in state:  # the gate holds every call while it lasts
        out_painted(("fleet: ", None), ("HELD", "alarm"),
                    (" (halt store unreadable: every tool call is held until it can be read; leash doctor)", None))
    elif "budget_holds_error" in state:  # the gate holds every call while caps are configured
        out_painted(("fleet: ", None), ("HELD", "alarm"),
                    (" (budget store unreadable: every tool call is held until it can be read; leash doctor)", None))
    else:
        out_painted(("fleet: ", None), ("running", "green"))


def _say_held(state: dict, moment: float) -> None:
    """What holds sessions: stops, locks, pending halts, warrants and tripped breakers."""
    from leash.core.views.sessionrows import natural_key

    state["stopped_sessions"].sort(key=lambda r: natural_key(r["session_id"]))
    section("stopped sessions", state["stopped_sessions"], lambda r: (
        f"{r['session_id']}  {ago(r.get('stopped_at', ''), moment)} by {r.get('source', '?')}: "
        f"{r.get('reason') or '-'}"))
    section("hands-off locks", state["hands_off"], lambda r: (
        f"{r['entity']}  {human_duration(parse_iso(r['expires_at']) - moment)} left, by {r.get('source', '?')}: "
        f"{r.get('reason') or '-'}"))
    if "halt_store_error" in state:
        out(f"HALT STORE UNREADABLE: {state['halt_store_error']} (every session is held; leash doctor)")
    section("pending halts", state["pending_halts"], lambda r: (
        f"{r['halt_id'][:8]}  {r['severity']}  {r.get('condition_name') or r['halt_type']}  {r['session_id']}  "
        f"{ago(r['triggered_at'], moment)}: {r['description'][:100]}"))
    section("warrants", state["warrants"], lambda r: (
        f"{r['id']}  {r['target']}  {r['state']}  attempt {r.get('attempt', 0)}: {r.get('reason', '')}"))
    section("restart-loop breakers", state["loops"], lambda r: (
        f"{r['name']}  {r['in_loop']}/{r['max_restarts']} boots{'  TRIPPED' if r['tripped'] else ''}"))


def _say_sessions(state: dict, moment: float) -> None:
    """Every session seen, with its state, its CLI, tmux session, entity, last tool and spend."""
    from leash.console.cli.budget import money
    from leash.console.cli.colour import STATE_STYLE

    out_painted(("sessions seen", "bold"), (f": {len(state['sessions'])}", None))
    for r in state["sessions"]:
        tmux = r.get("tmux_session") or "-"
        tmux += " (gone)" if r.get("gone") and r.get("tmux_session") else ""  # never shown as its live one
        cost = f"  cost {money(r['cost_usd'], r.get('cost_estimated', False))}" if "cost_usd" in r else ""
        out_painted(("  " + r["session_id"] + "  ", None), (r["state"], STATE_STYLE.get(r["state"].split(",")[0])), (
            f"  {r.get('cli') or 'claude'}  tmux {tmux}  entity {r.get('entity') or '-'}  "
            f"last tool {r.get('last_tool') or '-'}  seen {ago(r.get('last_seen', ''), moment)}{cost}", None))


def _say_budget(state: dict) -> None:
    """The spend today and each cap's hold with the raise that lifts it; nothing
    for a home with no caps and no spend today (``leash budget`` has the rest)."""
    from leash.console.cli.budget import figure, money

    if "budget_error" in state:
        out_painted(("BUDGET STORE UNREADABLE", "alarm"), (f": {state['budget_error']} (leash doctor)", None))
        return
    budget = state.get("budget") or {}
    if not budget.get("caps") and not budget.get("today_usd"):
        return
    out(f"spend today: {money(budget['today_usd'], budget['estimated'])} (UTC)")
    section("budget holds", budget["held"], lambda r: (
        f"{r['cap']}  {r['scope']}:{r['bucket'] or '-'}  {figure(r['used'], r['unit'], r['estimated'])} of "
        f"{figure(r['limit'], r['unit'])}: leash budget raise {r['cap']} "
        f"--to {'PERCENT' if r['unit'] == 'percent' else 'AMOUNT'} --reason ..."))


def _tmux_listing(home: str) -> list[dict] | None:
    """The sessions of the tmux server leash uses, for telling which seen
    sessions are gone; None when tmux cannot be asked."""
    try:
        from leash.core.base.tmux import Tmux

        return Tmux(home=home).list_sessions()
    except Exception:  # no tmux, a bad [tmux] socket (status reports it): nothing is said gone by tmux
        return None


def _add_session_states(backend: Backend, sessions: list[dict[str, Any]], moment: float,
                        tmux_sessions: list[dict] | None) -> None:
    """Each seen session's state as the console shows it (``core.views.fleet``,
    by the row its agent is in): stopped, paused, halted, under warrant,
    hands-off, running, what the hooks last said of it (waiting for input,
    ended), or gone (``gone`` true: its tmux session is not its live one).
    The sessions are sorted as the console sorts names (``natural_key``)."""
    from leash.core.views.fleet import view
    from leash.core.views.sessionrows import natural_key

    rows = view(backend=backend, tmux_sessions=tmux_sessions, now=moment)["sessions"]
    by_agent = {agent: row for row in rows for agent in row["agents"]}
    for session in sessions:
        row = by_agent.get(session["session_id"], {})
        session["state"] = row.get("state") or "running"
        session["gone"] = bool(row.get("gone"))
    sessions.sort(key=lambda session: natural_key(session["session_id"]))


def cmd_why(context: Context, args: Namespace) -> int:
    """Every rule that holds a session now; exit 3 when one does."""
    from leash.core.views.names import did_you_mean, known_names
    from leash.core.views.why import describe, why

    if not args.session.strip():
        raise UsageError("why needs a SESSION: an agent session id or a tmux session name (leash status lists them)")
    answer = why(session=args.session, backend=context.backend)
    if args.json:
        out_json(answer, indent=2)
        return 3 if answer["held"] else 0 if answer["known"] else 1
    if not answer["known"]:
        near = did_you_mean(args.session, known_names(context.backend))
        raise Refused(f"nothing knows {args.session!r}: no agent session, tmux session, stop, lock or halt by "
                      f"that name (leash status lists them){near}")
    if not answer["held"]:
        out_painted((args.session, "bold"), (" is free: nothing holds it now", "green"))
    else:
        count = len(answer["rules"])
        out_painted((args.session, "bold"), (f" is held by {count} rule{'s' if count != 1 else ''}:", "red"))
        for rule in answer["rules"]:
            text, _, lift = describe(rule).rpartition(" [")
            out_painted(("  " + text, None))
            out_painted(("      lift: ", "dim"), (lift.rstrip("]"), "cyan"))
    for lock in answer["path_locks_elsewhere"]:
        out(f"  (also in force: {lock['entity']}, which covers no file under its working directory now)")
    return 3 if answer["held"] else 0


def format_line(record: dict[str, Any]) -> str:
    extra = {k: v for k, v in record.items()
             if k not in ("timestamp", "event", "source", "session_id", "reason", "seq", "prev", "hash", "mac")}
    extras = "".join(f"  {k}={v}" for k, v in extra.items())
    reason = record.get("reason") or "-"
    return (f"{record.get('seq', '?'):>5}  {record.get('timestamp', '?')}  {record.get('event', '?'):<17} "
            f"{record.get('source', '?')}  {record.get('session_id') or '-'}  {reason or '-'}{extras}")


def cmd_log(context: Context, args: Namespace) -> int:
    from leash.core.state.acklog import ACK_LOG_NAME

    log = context.backend.acklog
    if args.action == "verify":
        report = log.verify(anchor=args.anchor)
        notes = []
        if report.torn_bytes:
            notes.append(f"torn tail of {report.torn_bytes} bytes skipped")
        if report.torn_file_bytes:
            notes.append(f"{report.torn_file_bytes} bytes in {ACK_LOG_NAME}.torn")
        if report.macs:
            notes.append(report.macs)
        note = f" ({'; '.join(notes)})" if notes else ""
        if args.json:
            out_json({"ok": report.ok, "lines": report.lines, "first_broken_line": report.first_broken_line,
                      "problem": report.problem, "torn_bytes": report.torn_bytes,
                      "macs": getattr(report, "macs", "")})
        elif report.ok:
            out(f"ok: {report.lines} lines, hash chain intact{note}")
        else:
            where = f"chain broken at line {report.first_broken_line}: " if report.first_broken_line else ""
            sys.stderr.write(printable(f"leash: {where}{report.problem}{note}") + "\n")
        return 0 if report.ok else 3
    filters, wanted = _log_filters(context, args)
    show = out_json if args.json else (lambda r: out(format_line(r)))
    if args.follow:
        for line in log.follow(**filters):
            if wanted(line):
                show(line.as_dict())
                sys.stdout.flush()
        return 0
    read = log.read(**filters)
    for line in read:
        if wanted(line):
            show(line.as_dict())
    if read.torn_bytes or read.unreadable_lines:
        sys.stderr.write(f"leash: skipped {read.unreadable_lines} unreadable lines and a torn tail of "
                         f"{read.torn_bytes} bytes (leash log verify)\n")
    return 0


def _log_filters(context: Context, args: Namespace) -> tuple[dict[str, Any], Any]:
    """The filters the log applies itself, and the test each line it yields
    must pass too: ``--session`` by any of the session's names and ``--event``
    by a name or an alias (``core.views.history``) may each mean several."""
    from leash.core.views.history import UnknownEvent, resolve_events, session_names

    try:
        events = set(resolve_events(args.event)) if args.event is not None else None
    except UnknownEvent as exc:
        raise UsageError(str(exc)) from None
    names = session_names(context.backend, args.session) if args.session is not None else None
    filters = dict(since=args.since, source=args.source,
                   session=next(iter(names)) if names and len(names) == 1 else None,
                   event=next(iter(events)) if events and len(events) == 1 else None)

    def wanted(line: LogLine) -> bool:
        return (names is None or line.session_id in names) and (events is None or line.event in events)

    return filters, wanted


def cmd_doctor(context: Context, args: Namespace) -> int:
    """Every finding on the home and its store (``core.views.doctor``, which
    opens the backend itself: an unsafe home, or a broken config.toml, has none)."""
    from leash.core.views.doctor import examine
    from leash.core.views.status import CONFIG_BROKEN

    failures, broken = 0, False
    found = []
    for finding in examine(context.home, repair=args.repair):
        failures += finding.level == "fail"
        broken = broken or finding.subject == CONFIG_BROKEN
        if args.json:
            found.append({"level": finding.level, "subject": finding.subject, "message": finding.message})
        else:
            out(f"{finding.level:<6}{finding.subject}: {finding.message}")
    if failures:
        hint = " (mend config.toml first)" if broken else "" if args.repair else " (try leash doctor --repair)"
        sys.stderr.write(f"leash: {failures} problem{'s' if failures != 1 else ''} found{hint}\n")
    # A bad config.toml is bad input for every command (exit 2); other problems are the doctor's verdict (3).
    code = EXIT_USAGE if broken else EXIT_VERDICT if failures else 0
    if args.json:
        return done(args, code, home=context.home, repair=bool(args.repair), problems=failures, findings=found)
    return code
