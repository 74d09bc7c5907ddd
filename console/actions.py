"""What each ``leash`` subcommand does: call the core, print the result.

No policy lives here; the core decides, this module words the answer.

Names, reasons and descriptions come from agents: every human-readable line
goes out through ``_out``, which shows it as one line with its control
characters escaped (``core.text.printable``), so no stored text can forge a
line or drive the terminal. ``--json`` goes out through ``_out_json``: exact
JSON, ASCII only (every control and non-ASCII character as ``\\uXXXX``).
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from leash.core.base.clock import human_duration, now_seconds, parse_iso
from leash.core.base.text import printable


class Refused(Exception):
    """The operation was understood but cannot be done; exit 1."""


def run(args) -> int:
    from leash.console.errors import UsageError
    from leash.core.base.config import ConfigError
    from leash.core.base.home import UnsafeHome, resolve_home
    from leash.core.base.source import default_source
    from leash.core.state.handsoff import NotLocked
    from leash.core.state.stop import NotStopped
    from leash.core.store.pg import StoreOffline
    from leash.core.store.select import StoreSelectionError
    from leash.core.views.protocol import StopProtocol

    try:
        protocol = StopProtocol(getattr(args, "home", None))
    except UnsafeHome as exc:
        if args.command == "hook":  # a hook answers in its own protocol: pre-tool-use denies
            from leash.core.hook.hooks import run as run_hook

            return run_hook(args.event, home=getattr(args, "home", None))
        if args.command != "doctor":  # doctor alone looks at an unsafe home, to report and mend it
            raise UsageError(str(exc)) from None
        protocol = resolve_home(getattr(args, "home", None))
    except OSError as exc:
        raise Refused(f"cannot use state home: {exc.strerror}: {exc.filename}") from None
    if getattr(args, "source", None) is None and args.command in ACTING:
        args.source = default_source()
    try:
        return COMMANDS[args.command](protocol, args)
    except (NotStopped, NotLocked, StoreOffline, StoreSelectionError) as exc:
        raise Refused(str(exc)) from None
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _out(text: str = "") -> None:
    """One line for a person: agent text in it is escaped and cannot break it."""
    sys.stdout.write(printable(text) + "\n")


def _out_painted(*pieces: tuple[str, str | None]) -> None:
    """One line of (text, style) pieces: each escaped, then coloured when stdout is a terminal."""
    from leash.console.colour import paint

    sys.stdout.write("".join(paint(printable(text), style) for text, style in pieces) + "\n")


def _out_json(value: Any, *, indent: int | None = None) -> None:
    sys.stdout.write(json.dumps(value, indent=indent, ensure_ascii=True) + "\n")


def _plain(value: Any) -> Any:
    """A store's record (``as_dict``) or a dict, as JSON data."""
    if hasattr(value, "as_dict"):
        return value.as_dict()
    return dict(value) if isinstance(value, dict) else value


def _done(args, code: int = 0, **fields: Any) -> int:
    """``--json``: the one object an action prints (``ok``, ``command``,
    ``exit_code`` and what happened); returns ``code``."""
    from leash.console.parser import command_name

    _out_json({"ok": code == 0, "command": command_name(args), "exit_code": code, **fields})
    return code


def _ago(stamp: str, moment: float) -> str:
    try:
        seconds = moment - parse_iso(stamp)
    except ValueError:
        return "?"
    return human_duration(seconds) + (" ago" if seconds >= 0 else " from now")


def _backend(protocol):
    """The stores a subcommand reads and writes: the shared store when the home
    names one (``[store] url``, ``LEASH_STORE_URL``), else the home's files over
    the registries ``protocol`` already holds. One per command."""
    from leash.core.views.status import backend_of

    return backend_of(protocol)


# ------------------------------------------------------------------ stop/resume
def cmd_stop(protocol, args) -> int:
    from leash.console.errors import UsageError

    if args.all:
        if args.session or args.entity:
            raise UsageError("stop --all takes no SESSION or --entity")
        if not args.reason.strip():
            raise UsageError("stop --all needs --reason (every agent will read it)")
        backend = _backend(protocol)
        record = backend.stops.stop_fleet(source=args.source, reason=args.reason)
        said: dict[str, Any] = {"action": "fleet_stop", "stop": _plain(record)}
        if not args.json:
            _out(f"fleet stopped since {record['stopped_at']}: every agent's next tool call is refused")
        return _interrupt(protocol, backend, args, None, said) if args.interrupt else _finish(args, said)
    if not args.session:
        raise UsageError("stop needs a SESSION (or --all)")
    if args.hours is not None and not args.entity:
        raise UsageError("--hours applies to the --entity lock; give --entity too")
    backend = _backend(protocol)
    if args.entity:
        hours = args.hours if args.hours is not None else protocol.default_hours()
        with backend.transaction() as step:  # the stop and the lock: both or neither
            step.full_stop(args.session, args.entity, hours=hours, source=args.source, reason=args.reason)
        record, lock = step.results
        said = {"action": "full_stop", "session": args.session, "stop": _plain(record), "entity": args.entity,
                "lock": _plain(lock)}
        if not args.json:
            _out(f"stopped {args.session} and locked {args.entity} hands-off until {lock['expires_at']}")
    else:
        record = backend.stops.stop(args.session, source=args.source, reason=args.reason)
        said = {"action": "stop", "session": args.session, "stop": _plain(record)}
        if not args.json:
            _out(f"stopped {args.session} (since {record['stopped_at']})")
    warning = _warn_if_nothing_answers(backend, args.session, record)
    if warning:
        said["warning"] = warning
    return _interrupt(protocol, backend, args, record, said) if args.interrupt else _finish(args, said)


def _finish(args, said: dict[str, Any], code: int = 0) -> int:
    """``said`` as the ``--json`` object when asked for; the exit code."""
    return _done(args, code, **said) if getattr(args, "json", False) else code


def _warn_if_nothing_answers(backend, name: str, stop) -> str:
    """One line on stderr (the stop stays filed, exit 0) when no session the
    hooks have seen and no tmux session answers to ``name``, or it only looks
    like a known name (``core.nameguard``); the line, or ""."""
    from leash.core.base.nameguard import known_names, warning_for
    from leash.core.state.sessions import bound_tmux_ids

    if bound_tmux_ids(stop):  # a tmux session of that name runs now
        return ""
    warning = warning_for(name, known_names(backend.sessions.all()))
    if warning:
        sys.stderr.write(f"leash: {printable(warning)}\n")
    return warning or ""


def _interrupt(protocol, backend, args, stop, said: dict[str, Any]) -> int:
    """After the stop is filed: cancel the call in flight (``core.interrupt``);
    Refused (exit 1, the stop still filed) when nothing could be interrupted
    (with ``--json``: the object says both, ``ok`` false and ``error``)."""
    from leash.core.state.sessions import bound_tmux_ids
    from leash.core.warrants.interrupt import interrupt, interrupt_fleet

    if stop is None:
        report = interrupt_fleet(backend=backend, source=args.source, reason=args.reason, home=protocol.home)
    else:  # by the name given, and by the tmux session it was bound to when filed (a rename escapes nothing)
        names = [args.session] + bound_tmux_ids(stop)
        report = interrupt(names, backend=backend, source=args.source, reason=args.reason, home=protocol.home)
    said = {**said, "interrupted": list(report.done), "not_interrupted": list(report.refused),
            "no_call_in_flight": len(report.quiet)}
    if not args.json:
        for line in report.done:
            running = f" while it ran {line['tool']}" if line.get("tool") else ""
            running += f": {line['input']}" if line.get("input") else ""
            _out(f"interrupted {line['session_id']} ({line['method']} to {line['target']}){running}")
    if not report.ok:
        failure = report.failure("the fleet" if stop is None else args.session)
        if args.json:
            sys.stderr.write(f"leash: error: {printable(failure)}\n")
            return _done(args, 1, error=failure, **said)
        raise Refused(failure)
    if not args.json:
        for refusal in report.refused:
            _out(f"not interrupted: {refusal}")
        if report.quiet:
            _out(f"{len(report.quiet)} sessions had no call in flight (idle, ended or waiting for input): left alone")
    return _finish(args, said)


def cmd_resume(protocol, args) -> int:
    from leash.console.errors import UsageError

    if args.all:
        if args.session:
            raise UsageError("resume --all takes no SESSION")
        stops = _backend(protocol).stops
        lifted = stops.resume_fleet(source=args.source, reason=args.reason)
        still = stops.stopped()
        if args.json:
            return _done(args, action="fleet_resume", stop=_plain(lifted), still_stopped=sorted(still))
        tail = f"; {len(still)} sessions stay stopped one by one (leash status)" if still else ""
        _out(f"fleet resumed{tail}")
        return 0
    if not args.session:
        raise UsageError("resume needs a SESSION (or --all)")
    lifted = _backend(protocol).stops.resume(args.session, source=args.source, reason=args.reason)
    if args.json:
        return _done(args, action="resume", session=args.session, stop=_plain(lifted))
    _out(f"resumed {args.session}")
    return 0


def cmd_hands_off(protocol, args) -> int:
    hours = args.hours if args.hours is not None else protocol.default_hours()
    lock = _backend(protocol).locks.lock(args.entity, hours=hours, reason=args.reason, source=args.source,
                                         session_id=args.session)
    if args.json:
        return _done(args, action="hands_off", entity=args.entity, lock=_plain(lock),
                     kept_longer=bool(lock.get("kept_longer")))
    kept = " (it was already locked longer; the later expiry is kept)" if lock.get("kept_longer") else ""
    _out(f"{args.entity} is hands-off until {lock['expires_at']}{kept}")
    return 0


def cmd_release(protocol, args) -> int:
    lock = _backend(protocol).locks.release(args.entity, source=args.source, reason=args.reason)
    if args.json:
        return _done(args, action="release", entity=args.entity, lock=_plain(lock))
    _out(f"released {args.entity}")
    return 0


# ------------------------------------------------------------------ status
def cmd_status(protocol, args) -> int:
    """The snapshot, and what is wrong around it (``core.views.status.problems``):
    a broken config.toml is shown with the state (exit 2, as for any bad
    config) unless it may name the shared store, when no state can be shown."""
    from leash.console.errors import EXIT_USAGE, UsageError
    from leash.core.views.status import CONFIG_BROKEN, config_broken, problems, snapshot, store_may_be_named

    moment = now_seconds()
    broken = config_broken(protocol.home)
    if broken is None:
        backend = _backend(protocol)
    elif store_may_be_named(protocol.home):
        raise UsageError(f"{CONFIG_BROKEN}: {broken}; it may name the shared store, so no state is shown")
    else:  # it names no shared store: the home's files are the state, shown with the problem
        from leash.core.store.files import FileBackend

        backend = protocol.backend = FileBackend.sharing(protocol)
    state = snapshot(backend=backend, now=moment)
    _add_session_states(backend, state["sessions"], moment)
    here = [row for row in state["sessions"] if row.get("host", state.get("host")) == state.get("host")]
    found = problems(protocol.home, here)
    if found:  # the key is there only when something is wrong
        state["problems"] = found
    code = EXIT_USAGE if broken else 0
    if broken:
        sys.stderr.write(f"leash: error: {printable(CONFIG_BROKEN + ': ' + broken)}\n")
    if args.json:
        _out_json(state, indent=2)
        return code
    _out(f"home: {protocol.home}")
    for problem in found:  # one line each, first: what the rest of the view is missing
        _out_painted((problem["kind"], "alarm"), (f": {problem['message']}", None))
    if "stop_state_error" in state:
        _out_painted(("STOP STATE UNREADABLE", "alarm"), (f": {state['stop_state_error']} (every tool call is denied)",
                                                          None))
    if state["fleet_stopped"]:
        fleet = state["fleet_stopped"][0]
        _out_painted(("fleet: ", None), ("STOPPED", "alarm"),
                     (f" {_ago(fleet['stopped_at'], moment)} by {fleet['source']}: {fleet['reason']}", None))
    else:
        _out_painted(("fleet: ", None), ("running", "green"))
    _section("stopped sessions", state["stopped_sessions"], lambda r: (
        f"{r['session_id']}  {_ago(r.get('stopped_at', ''), moment)} by {r.get('source', '?')}: "
        f"{r.get('reason') or '-'}"))
    _section("hands-off locks", state["hands_off"], lambda r: (
        f"{r['entity']}  {human_duration(parse_iso(r['expires_at']) - moment)} left, by {r.get('source', '?')}: "
        f"{r.get('reason') or '-'}"))
    if "halt_store_error" in state:
        _out(f"HALT STORE UNREADABLE: {state['halt_store_error']} (every session is held; leash doctor)")
    _section("pending halts", state["pending_halts"], lambda r: (
        f"{r['halt_id'][:8]}  {r['severity']}  {r.get('condition_name') or r['halt_type']}  {r['session_id']}  "
        f"{_ago(r['triggered_at'], moment)}: {r['description'][:100]}"))
    _section("warrants", state["warrants"], lambda r: (
        f"{r['id']}  {r['target']}  {r['state']}  attempt {r.get('attempt', 0)}: {r.get('reason', '')}"))
    _section("restart-loop breakers", state["loops"], lambda r: (
        f"{r['name']}  {r['in_loop']}/{r['max_restarts']} boots{'  TRIPPED' if r['tripped'] else ''}"))
    from leash.console.colour import STATE_STYLE

    _out_painted(("sessions seen", "bold"), (f": {len(state['sessions'])}", None))
    for r in state["sessions"]:
        _out_painted(("  " + r["session_id"] + "  ", None), (r["state"], STATE_STYLE.get(r["state"].split(",")[0])), (
            f"  {r.get('cli') or 'claude'}  tmux {r.get('tmux_session') or '-'}  entity {r.get('entity') or '-'}  "
            f"last tool {r.get('last_tool') or '-'}  seen {_ago(r.get('last_seen', ''), moment)}", None))
    return code


def _add_session_states(backend, sessions: list[dict[str, Any]], moment: float) -> None:
    """Each seen session's state as the console shows it (``core.fleet``):
    stopped, paused, halted, under warrant, hands-off, running, or what the
    hooks last said of it (waiting for input, ended)."""
    from leash.core.views.fleet import view

    rows = {row["name"]: row for row in view(backend=backend, now=moment)["sessions"]}
    for session in sessions:
        row = rows.get(session["session_id"], {})
        state = row.get("state") or "running"
        status = row.get("status")
        session["state"] = f"{state}, {status}" if status and status != state and state != "running" else \
            (status or state)


def _section(title: str, rows: list[dict[str, Any]], line) -> None:
    _out_painted((title, "bold"), (f": {len(rows)}", None))
    for row in rows:
        _out("  " + line(row))


# ------------------------------------------------------------------ why
def cmd_why(protocol, args) -> int:
    """Every rule that holds a session now; exit 3 when one does."""
    from leash.core.views.why import describe, why

    answer = why(session=args.session, backend=_backend(protocol))
    if args.json:
        _out_json(answer, indent=2)
        return 3 if answer["held"] else 0 if answer["known"] else 1
    if not answer["known"]:
        raise Refused(f"nothing knows {args.session!r}: no agent session, tmux session, stop, lock or halt by "
                      "that name (leash status lists them)")
    if not answer["held"]:
        _out_painted((args.session, "bold"), (" is free: nothing holds it now", "green"))
    else:
        count = len(answer["rules"])
        _out_painted((args.session, "bold"), (f" is held by {count} rule{'s' if count != 1 else ''}:", "red"))
        for rule in answer["rules"]:
            text, _, lift = describe(rule).rpartition(" [")
            _out_painted(("  " + text, None))
            _out_painted(("      lift: ", "dim"), (lift.rstrip("]"), "cyan"))
    for lock in answer["path_locks_elsewhere"]:
        _out(f"  (also in force: {lock['entity']}, which covers no file under its working directory now)")
    return 3 if answer["held"] else 0


def cmd_completion(protocol, args) -> int:
    from leash.console.completion import NAMES_WORD, names, script
    from leash.console.parser import build_parser

    if args.shell == NAMES_WORD:  # what the scripts offer (``leash completion names`` is answered before here)
        for name in names(args.kind or "sessions", home=protocol.home):
            _out(name)
        return 0
    if args.kind:
        from leash.console.errors import UsageError

        raise UsageError(f"completion {args.shell} takes no KIND (only 'completion names KIND' does)")
    sys.stdout.write(script(args.shell, build_parser()))
    return 0


# ------------------------------------------------------------------ log
def format_line(record: dict[str, Any]) -> str:
    extra = {k: v for k, v in record.items()
             if k not in ("timestamp", "event", "source", "session_id", "reason", "seq", "prev", "hash", "mac")}
    extras = "".join(f"  {k}={v}" for k, v in extra.items())
    reason = record.get("reason") or "-"
    return (f"{record.get('seq', '?'):>5}  {record.get('timestamp', '?')}  {record.get('event', '?'):<17} "
            f"{record.get('source', '?')}  {record.get('session_id') or '-'}  {reason or '-'}{extras}")


def cmd_log(protocol, args) -> int:
    from leash.core.state.acklog import ACK_LOG_NAME

    log = _backend(protocol).acklog
    if args.action == "verify":
        report = log.verify(anchor=args.anchor)
        notes = []
        if report.torn_bytes:
            notes.append(f"torn tail of {report.torn_bytes} bytes skipped")
        if report.torn_file_bytes:
            notes.append(f"{report.torn_file_bytes} bytes in {ACK_LOG_NAME}.torn")
        if getattr(report, "macs", ""):
            notes.append(report.macs)
        note = f" ({'; '.join(notes)})" if notes else ""
        if args.json:
            _out_json({"ok": report.ok, "lines": report.lines, "first_broken_line": report.first_broken_line,
                       "problem": report.problem, "torn_bytes": report.torn_bytes,
                       "macs": getattr(report, "macs", "")})
        elif report.ok:
            _out(f"ok: {report.lines} lines, hash chain intact{note}")
        else:
            where = f"chain broken at line {report.first_broken_line}: " if report.first_broken_line else ""
            sys.stderr.write(printable(f"leash: {where}{report.problem}{note}") + "\n")
        return 0 if report.ok else 3
    filters = dict(session=args.session, event=args.event, since=args.since, source=args.source)
    show = _out_json if args.json else (lambda r: _out(format_line(r)))
    if args.follow:
        for line in log.follow(**filters):
            show(line.as_dict())
            sys.stdout.flush()
        return 0
    read = log.read(**filters)
    for line in read:
        show(line.as_dict())
    if read.torn_bytes or read.unreadable_lines:
        sys.stderr.write(f"leash: skipped {read.unreadable_lines} unreadable lines and a torn tail of "
                         f"{read.torn_bytes} bytes (leash log verify)\n")
    return 0


# ------------------------------------------------------------------ doctor
def cmd_doctor(protocol, args) -> int:
    from leash.console.errors import EXIT_USAGE, EXIT_VERDICT
    from leash.core.views.doctor import examine
    from leash.core.views.status import CONFIG_BROKEN

    failures, broken = 0, False
    found = []
    for finding in examine(protocol, repair=args.repair):
        failures += finding.level == "fail"
        broken = broken or finding.subject == CONFIG_BROKEN
        if args.json:
            found.append({"level": finding.level, "subject": finding.subject, "message": finding.message})
        else:
            _out(f"{finding.level:<6}{finding.subject}: {finding.message}")
    if failures:
        hint = " (mend config.toml first)" if broken else "" if args.repair else " (try leash doctor --repair)"
        sys.stderr.write(f"leash: {failures} problem{'s' if failures != 1 else ''} found{hint}\n")
    # A bad config.toml is bad input for every command (exit 2); other problems are the doctor's verdict (3).
    code = EXIT_USAGE if broken else EXIT_VERDICT if failures else 0
    if args.json:
        return _done(args, code, home=str(protocol.home if hasattr(protocol, "home") else protocol),
                     repair=bool(args.repair), problems=failures, findings=found)
    return code


# ------------------------------------------------------------------ loop
def cmd_loop(protocol, args) -> int:
    from leash.core.base.config import load_config
    from leash.core.state import loopguard

    config = load_config(protocol.home)
    breakers = _backend(protocol).breakers
    if args.loop_command == "check-and-record":
        limits = loopguard.thresholds(config, args.name)
        for key in ("max_restarts", "window_seconds", "max_gap_seconds"):
            if getattr(args, key) is not None:
                limits[key] = getattr(args, key)
        tripped = breakers.check_and_record(args.name, source=args.source, **limits)
        state = breakers.describe(args.name, config={"loop": {args.name: limits}})
        if args.json:
            return _done(args, 3 if tripped else 0, action="loop_check", name=args.name, tripped=bool(tripped),
                         breaker=_plain(state))
        verdict = "TRIPPED: skip auto-resume" if tripped else "not tripped"
        _out(f"{args.name}: {state['in_loop']} boots in loop, threshold {limits['max_restarts']}: {verdict}")
        return 3 if tripped else 0
    if args.loop_command == "reset":
        if not breakers.reset(args.name, source=args.source, reason=args.reason):
            raise Refused(f"breaker {args.name!r} has no recorded boots")
        if args.json:
            return _done(args, action="loop_reset", name=args.name)
        _out(f"reset {args.name}")
        return 0
    states = [breakers.describe(n, config=config).as_dict() for n in breakers.names()]
    if args.json:
        _out_json(states, indent=2)
        return 0
    if not states:
        _out("no restart-loop breakers recorded")
    for s in states:
        gap = f", max gap {s['max_gap_seconds']:g}s" if s["max_gap_seconds"] else ""
        _out(f"{s['name']}: {s['in_loop']}/{s['max_restarts']} boots (window {s['window_seconds']:g}s{gap})"
             f"{'  TRIPPED' if s['tripped'] else ''}")
    return 0


def cmd_reply(protocol, args) -> int:
    _backend(protocol).replies.record(args.channel, args.key, args.direction, now=now_seconds())
    _out(f"recorded {args.direction} on {args.channel} / {args.key}")
    return 0


def cmd_halts(protocol, args) -> int:
    from leash.console.halts_cli import run as run_halts

    return run_halts(_backend(protocol), args, Refused)


def cmd_approvals(protocol, args) -> int:
    from leash.console.approvals_cli import run as run_approvals

    return run_approvals(_backend(protocol), args, Refused)


# ------------------------------------------------------------------ warrants
def cmd_warrant(protocol, args) -> int:
    from leash.core.state.warrants import WarrantError
    from leash.core.state.warrants.records import attempt_label, configured_attempts

    backend = _backend(protocol)
    warrants = backend.warrants
    try:
        if args.warrant_command == "file":
            warrant, created = warrants.file(args.target, reason=args.reason, requester=args.requester or args.source)
            if args.json:
                return _done(args, action="warrant_file", target=args.target, created=bool(created),
                             warrant=_plain(warrant), kennel_running=bool(backend.kennels.alive()))
            if created:
                kennel = "" if backend.kennels.alive() else " (no kennel is running: leash kennel)"
                bound = f" (tmux session {warrant['target_id']})" if warrant.get("target_id") else ""
                _out(f"filed {warrant['id']} against {args.target}{bound}{kennel}")
                if not warrant.get("target_id"):
                    _out(f"no tmux session is named {args.target!r} now: its dog will find it already dead")
            else:
                _out(f"{args.target} already has a live warrant: {warrant['id']} (nothing filed)")
            return 0
        if args.warrant_command == "pardon":
            args.warrant_id = _warrant_named(warrants, args.warrant_id, home=protocol.home)
            result, record = warrants.pardon(args.warrant_id, source=args.source, reason=args.reason)
            if result == "requested":
                import time

                deadline = time.time() + 5
                while time.time() < deadline and warrants.find(record.get("id", args.warrant_id))[0] != "completed":
                    time.sleep(0.1)
                kind, done = warrants.find(record.get("id", args.warrant_id))
                if args.json:
                    return _done(args, action="warrant_pardon", id=record.get("id"),
                                 pardoned=kind == "completed", requested=kind != "completed",
                                 warrant=_plain(done if kind == "completed" else record))
                if kind == "completed":
                    _out(f"pardoned {done['id']}: {done['warrant']['target']} lives ({done['outcome']})")
                else:
                    _out(f"pardon requested for {record.get('id')}; its dog acts on it at its next poll")
            elif args.json:
                return _done(args, action="warrant_pardon", id=record.get("id"), pardoned=True, requested=False,
                             warrant=_plain(record))
            else:
                _out(f"pardoned {record['id']}: {record['warrant']['target']} lives")
            return 0
    except WarrantError as exc:
        raise Refused(str(exc)) from None
    listing = warrants.listing()
    if args.json:
        _out_json(listing, indent=2)
        return 0
    moment = now_seconds()
    names_now = _tmux_names(protocol.home) if listing["pending"] or listing["active"] else {}
    attempts = configured_attempts(protocol.home) if listing["active"] else None

    def target(w: dict) -> str:  # the name filed, and the session's name now when it was renamed
        now_named = names_now.get(w.get("target_id") or "")
        return w["target"] + (f" (now {now_named})" if now_named and now_named != w["target"] else "")
    _section("pending", listing["pending"], lambda w: (
        f"{w['id']}  {target(w)}  filed {_ago(w['filed_at'], moment)} by {w['requester']}: {w['reason']}"))
    _section("active", listing["active"], lambda d: (
        f"{d['id']}  {target(d['warrant'])}  {d['state']}  attempt {attempt_label(d, attempts)}"
        + (f"  gate closes in {human_duration(parse_iso(d['next_timeout']) - moment)}" if d.get("next_timeout") and
           d["state"] == "interrogating" else "")))
    _section("finished", listing["completed"], lambda d: (
        f"{d['id']}  {d['warrant']['target']}  {d.get('outcome')}  attempt {d.get('attempt', 0)}  "
        f"{_ago(d.get('completed_at', ''), moment)}"))
    if listing["unreadable"]:
        _section("unreadable (the kennel quarantines them)", listing["unreadable"],
                 lambda u: f"{u['file']}: {u['problem']}")
    if listing["quarantined"]:
        _section("quarantined (kept for inspection)", listing["quarantined"], lambda path: path)
    return 0


def _warrant_named(warrants, given: str, *, home) -> str:
    """The id of the warrant ``given`` names: an id or id prefix as it is,
    else the live warrant whose target is that tmux session (by name, or by
    the id it was bound to when filed)."""
    if warrants.find(given) is not None:
        return given
    from leash.core.state.sessions import tmux_session_id_for

    live = warrants.live_for(given, tmux_session_id_for(given, home=home) or None)
    return live["id"] if live else given


def _tmux_names(home) -> dict[str, str]:
    """tmux session id -> its name now ({} when tmux cannot be asked)."""
    from leash.core.base.tmux import Tmux

    try:
        return {s["id"]: s["name"] for s in Tmux(home=home).list_sessions()}
    except Exception:
        return {}


def cmd_kennel(protocol, args) -> int:
    from leash.core.warrants.kennel import Kennel

    other = _backend(protocol).kennels.alive()
    if other and other.get("pid") != os.getpid():
        _out(f"another kennel is running (pid {other['pid']} on {other['host']}); claims keep them apart")
    import asyncio

    kennel = Kennel(protocol.home, dogs=args.dogs, until_idle=args.until_idle)
    finished = asyncio.run(kennel.run())
    for state in finished:
        _out(f"{state['id']}  {state['warrant']['target']}  {state['outcome']}")
    return 0


# ------------------------------------------------------------------ console
def cmd_console(protocol, args) -> int:
    from leash.console.app import LeashApp
    from leash.console.keymap import KeymapError
    from leash.core.base.tmux import Tmux
    from leash.core.wire.operator import answers, operator_socket

    backend = _backend(protocol)
    path, _ = operator_socket(protocol.home)
    if path is not None and answers(path):
        # With a daemon, every read and key goes through it (as the operator the
        # kernel says you are), its stream keeps the view live and its kennel
        # works the queue (the console sees its heartbeat and runs none).
        from leash.core.store.remote import RemoteBackend

        backend = RemoteBackend(path)
    try:
        app = LeashApp(protocol.home, tmux=Tmux(home=protocol.home), run_kennel=not args.no_kennel,
                       read_only=getattr(args, "read_only", False), backend=backend,
                       changes=backend.changes() if backend.name == "remote" else None)
    except KeymapError as exc:
        from leash.console.errors import UsageError

        raise UsageError(str(exc)) from None
    app.run()
    return 0


def cmd_demo(protocol, args) -> int:
    from leash.console.demo import run_demo

    return run_demo(keep=args.keep)


def cmd_serve(protocol, args) -> int:
    from leash.console.serve import serve

    return serve(protocol.home, port=args.port, read_only=args.read_only, no_kennel=args.no_kennel,
                 token_file=args.token_file, max_clients=args.max_clients)


def cmd_install(protocol, args) -> int:
    if getattr(args, "agent", "claude") != "claude":
        return _install_agent(protocol, args)
    from leash.core.hook import install, wiring
    path = install.settings_path(project=args.project, user=args.user, managed=args.managed)
    if args.check:
        findings = (install.check(project=args.project) + wiring.check_findings(project=args.project,
                                                                                 home=protocol.home)
                    + _on_failure_findings(install, args.project)
                    + wiring.home_findings(protocol.home, project=args.project))
        if any(level == "fail" for level, _, _ in findings):  # "wired with timeouts" is not all right then
            findings = [finding for finding in findings if finding[0] != "ok"]
        for level, subject, message in findings:
            _out(f"{level:<5} {subject}: {message}")
        return 3 if any(level == "fail" for level, _, _ in findings) else 0
    from leash.core.base import claudeversion

    version = claudeversion.installed_version() if not args.uninstall else None
    on_failure = claudeversion.supports_on_failure(version)
    daemon_uid = install.daemon_uid_of(args.socket) if args.socket else None
    runner = install.hook_runner()
    wait = install.approval_wait(protocol.home)  # the approvals' timeout the deadlines must outlast
    # The hooks use this home whatever the agents' environment says (the operator and they meet in it).
    pinned = None if args.uninstall else os.path.abspath(protocol.home)
    # The record first: a ConfigChange that sees the new settings compares them with it.
    try:
        previous = wiring.write_record(protocol.home, path, runner, socket=args.socket, daemon_uid=daemon_uid,
                                       on_failure=on_failure, uninstall=args.uninstall, wait=wait,
                                       pinned_home=pinned)
    except OSError as exc:
        raise Refused(f"cannot record the wiring in {wiring.record_path(protocol.home)}: {exc.strerror}; "
                      "nothing changed") from None
    try:
        changed = install.install(path, runner, uninstall=args.uninstall, socket=args.socket,
                                  on_failure=on_failure, daemon_uid=daemon_uid, wait=wait, home=pinned)
    except (install.SettingsError, PermissionError) as exc:
        wiring.restore_record(protocol.home, previous)
        if isinstance(exc, PermissionError):
            raise Refused(f"{path}: {exc.strerror} (managed settings need root)") from None
        raise Refused(str(exc)) from None
    verb = "removed leash's hooks from" if args.uninstall else "wired leash's hooks into"
    _out(f"{verb} {path}" if changed else f"{path} already as wanted; nothing changed")
    if not args.uninstall:
        how = ('onFailure "block" and `|| exit 2`' if on_failure else
               "`|| exit 2` (onFailure needs Claude Code 2.1.295 or later)")
        _out(f"Claude Code {claudeversion.shown(version)}: a gating hook that cannot run blocks through {how}")
        if args.socket:
            _out(f"leashd's user pinned: uid {daemon_uid} (the owner of {args.socket})" if daemon_uid is not None
                 else "leashd runs as this user: each hook checks that the home's daemon holds its lock")
        _out(f"the hooks use the home {pinned} (pinned in each command, whatever the agents' LEASH_HOME)")
        _out(f"recorded in {wiring.record_path(protocol.home)}: `leash install --check` compares with it")
    return 0


def _install_agent(protocol, args) -> int:
    """``leash install --agent gemini|codex``: that CLI's wiring written, or checked (exit 3 on a failure)."""
    from leash.core.hook import codexwiring, geminiwiring, install

    gemini = args.agent == "gemini"
    user = args.user or (not gemini and not args.project and not args.managed)  # Codex's hooks are the user's
    if args.check:
        findings = (geminiwiring.check_gemini(project=args.project or ".") if gemini
                    else codexwiring.check_codex(project=args.project))
        for level, subject, message in findings:
            _out(f"{level:<5} {subject}: {message}")
        return 3 if any(level == "fail" for level, _, _ in findings) else 0
    wait = install.approval_wait(protocol.home)
    try:
        if gemini:
            path = geminiwiring.gemini_settings_path(project=args.project, user=args.user, managed=args.managed)
            changed = geminiwiring.install_gemini(path, project=None if (user or args.managed) else args.project or ".",
                                                 uninstall=args.uninstall, wait=wait, socket=args.socket,
                                                 home=protocol.home)
        else:
            path = codexwiring.codex_config_path(project=args.project, user=user, managed=args.managed)
            changed = codexwiring.install_codex(path, managed=args.managed, uninstall=args.uninstall, wait=wait,
                                                socket=args.socket, home=protocol.home)
    except PermissionError as exc:
        raise Refused(f"{exc.filename}: {exc.strerror} (system settings need root)") from None
    except (install.SettingsError, OSError) as exc:
        raise Refused(str(exc)) from None
    verb = "removed leash's hooks from" if args.uninstall else "wired leash's hooks into"
    for name in changed:
        _out(f"{verb} {name}" if name == path else f"updated {name}")
    if not changed:
        _out(f"{path} already as wanted; nothing changed")
    if not args.uninstall:
        _out(f"`leash install --agent {args.agent} --check` verifies it")
    return 0


def _on_failure_findings(install, project: str | None) -> list[tuple[str, str, str]]:
    """A warning when the installed Claude Code knows ``onFailure`` and a
    gating leash hook does not use it (``leash install`` adds it)."""
    from leash.core.base import claudeversion

    version = claudeversion.installed_version()
    if not claudeversion.supports_on_failure(version):
        return []
    lacking = sorted({event for event, hook in install.wired_hooks(project=project)
                      if install.VERBS_BY_EVENT[event].fail_closed
                      and hook.get("onFailure") != install.ON_FAILURE_BLOCK})
    if not lacking:
        return []
    return [("warn", "onFailure", f"Claude Code {claudeversion.shown(version)} supports onFailure \"block\" but "
                                  f"{', '.join(lacking)} lack it (run leash install again)")]


def cmd_store(protocol, args) -> int:
    from leash.core.base.config import store_url_problem
    from leash.core.base.home import resolve_home
    from leash.core.store.copy import CopyRefused, copy_home
    from leash.core.store.select import host_name, password

    problem = store_url_problem(args.target)
    if problem is not None and not problem.startswith("holds a password"):  # given on a command line: allowed
        from leash.console.errors import UsageError

        raise UsageError(f"--to {problem}")
    source = resolve_home(args.source)
    try:
        report = copy_home(source, args.target, password=password(source), host=host_name(source))
    except CopyRefused as exc:
        raise Refused(str(exc)) from None
    for line in report.said():
        _out(line)
    _out(f"copied {source} into the shared store: set [store] url (or LEASH_STORE_URL) to use it")
    return 0


def cmd_setup(protocol, args) -> int:
    """``leash setup separated``: each step a line; exit 1 when an agent user cannot run the hook."""
    import os

    from leash.core.hook import separated

    try:
        if args.undo:
            for line in separated.undo():
                _out(line)
            return 0
        operators = args.operators if args.operators is not None else \
            [name for name in (os.environ.get("SUDO_USER", ""),) if name and name != "root"]
        plan = separated.Plan(user=args.user, home=args.state_home, run_dir=args.run_dir, operators=operators,
                              agent_users=args.agent_users)
        done, problems = separated.setup(plan)
    except separated.SetupError as exc:
        raise Refused(str(exc)) from None
    for line in done:
        _out(line)
    for line in problems:
        sys.stderr.write(f"leash: {printable(line)}\n")
    return 1 if problems else 0


# ------------------------------------------------------------------ notify
def cmd_notify(protocol, args) -> int:
    """``leash notify test``: each route's answer to a test message; exit 1 when any failed."""
    from leash.core.notify.runner import probe
    from leash.core.store.select import host_name

    results = probe(protocol.home, number=args.route, host=host_name(protocol.home))
    if not results:
        raise Refused("config.toml has no [[notify.route]] table: nothing to test")
    for route, problem in results:
        _out(f"route {route.number} ({route.label}): {'ok' if problem is None else f'failed: {problem}'}")
    return 1 if any(problem is not None for _, problem in results) else 0


def cmd_hook(protocol, args) -> int:
    from leash.core.hook.hooks import run as run_hook

    return run_hook(args.event, home=protocol.home)


COMMANDS = {
    "stop": cmd_stop, "resume": cmd_resume, "hands-off": cmd_hands_off, "release": cmd_release,
    "status": cmd_status, "log": cmd_log, "doctor": cmd_doctor, "hook": cmd_hook, "install": cmd_install,
    "loop": cmd_loop, "reply": cmd_reply, "halts": cmd_halts, "warrant": cmd_warrant, "kennel": cmd_kennel,
    "console": cmd_console, "demo": cmd_demo, "serve": cmd_serve, "why": cmd_why, "completion": cmd_completion,
    "store": cmd_store, "setup": cmd_setup, "notify": cmd_notify, "approvals": cmd_approvals,
}
ACTING = {"stop", "resume", "hands-off", "release", "loop", "halts", "warrant", "approvals"}
