"""What each ``leash`` subcommand does: call the core, print the result.

No policy lives here; the core decides, this module words the answer. Every
command gets a ``Context`` (``console.cli.context``): the home, checked and
created, and the ``Backend`` of it (``core.store.protocols``) it reads and
writes. What is refused is a ``Refused`` (``console.errors``, exit 1; a
``UsageError``, exit 2), which ``leash`` prints as one line. The commands on
the state of sessions (stop, resume, locks, breakers, replies, halts,
approvals) are here; ``console.cli.status`` has status, why, log and doctor,
``console.cli.warrants`` the warrants and the kennel, ``console.cli.install``
install, store, setup and notify. Every line goes out through
``console.cli.output``: agent text escaped, ``--json`` exact.
"""
from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any, Callable

from leash.console.cli.context import Context
from leash.console.cli.install import cmd_install, cmd_notify, cmd_setup, cmd_store
from leash.console.cli.output import done, finish, out, out_json, plain
from leash.console.cli.status import cmd_doctor, cmd_log, cmd_status, cmd_why
from leash.console.cli.warrants import cmd_kennel, cmd_warrant
from leash.console.errors import Refused, UsageError
from leash.core.base.clock import now_seconds
from leash.core.base.text import printable
from leash.core.store.protocols import Backend
from leash.core.store.records import LockRecord, StopRecord


def run(args: Namespace) -> int:
    from leash.core.base.config import ConfigError
    from leash.core.base.home import MissingHome, UnsafeHome, enter_home, resolve_home
    from leash.core.base.source import default_source
    from leash.core.state.handsoff import NotLocked
    from leash.core.state.stop import NotStopped
    from leash.core.store.pg import StoreOffline
    from leash.core.store.select import StoreSelectionError

    home, created = resolve_home(getattr(args, "home", None)), False
    try:
        home, created = enter_home(getattr(args, "home", None), create=may_create_home(args))
        context = Context(home)
    except MissingHome as exc:
        if args.command not in NEEDS_NO_HOME:
            raise UsageError(f"{exc}; {_how_to_create(args, exc.path)}") from None
        context = Context(home)
    except UnsafeHome as exc:
        if args.command == "hook":  # a hook answers in its own protocol: pre-tool-use denies
            from leash.core.hook.hooks import run as run_hook

            return run_hook(args.event, home=getattr(args, "home", None))
        if args.command != "doctor":  # doctor alone looks at an unsafe home, to report and mend it
            raise UsageError(str(exc)) from None
        context = Context(resolve_home(getattr(args, "home", None)))
    except OSError as exc:
        raise Refused(f"cannot use state home: {exc.strerror}: {exc.filename}") from None
    if getattr(args, "source", None) is None and args.command in ACTING:
        args.source = default_source()
    try:
        code = _first_use(COMMANDS[args.command], context, args, home if created else None)
    except (NotStopped, NotLocked, StoreOffline, StoreSelectionError) as exc:
        raise Refused(str(exc)) from None
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return code


def _first_use(command: Callable[[Context, Namespace], int], context: Context, args: Namespace,
               created: str | None) -> int:
    """Run the command; in a home it has just ``created``, say so when it
    succeeded (a misspelt --home is seen at once), and take the home away
    again, while it is still empty, when it raised."""
    if created is None:
        return command(context, args)
    try:
        code = command(context, args)
    except BaseException:
        import os

        try:
            os.rmdir(created)
        except OSError:  # something was written in it: kept
            pass
        raise
    if code == 0 and args.command != "hook":
        sys.stderr.write(f"leash: created state home {printable(created)} (its first use)\n")
    return code


# Commands that only read: they never create a home (a missing one is an error).
READ_ONLY = frozenset({"status", "why", "log", "console", "serve", "completion"})
# A shell's script (names of a missing home are none); the separated profile (its own --state-home).
NEEDS_NO_HOME = frozenset({"completion", "setup"})
READ_ONLY_ACTIONS = {"loop_command": "status", "halts_command": "list", "approvals_command": "list",
                     "warrant_command": "list"}


def may_create_home(args: Namespace) -> bool:
    """Whether the command may create a missing home (in an existing parent):
    one that changes state or sets up (stop, hands-off, install, demo,
    ``doctor --repair``...); never one that only reads."""
    if args.command in READ_ONLY | NEEDS_NO_HOME or (args.command == "doctor" and not getattr(args, "repair", False)):
        return False
    if args.command == "approvals" and getattr(args, "approvals_command", None) is None:  # its default: list
        return False
    return not any(getattr(args, attribute, None) == action for attribute, action in READ_ONLY_ACTIONS.items())


def _how_to_create(args: Namespace, path: str) -> str:
    """What makes the home, for the one-line error."""
    import os

    if not os.path.isdir(os.path.dirname(path)):
        return "check --home and $LEASH_HOME, or make its parent directory first"
    named = f" --home {path}" if getattr(args, "home", None) else ""
    return (f"check --home and $LEASH_HOME, or create it with `leash doctor --repair{named}` "
            f"(or `leash install`, `leash demo`, `leash daemon`)")


# ------------------------------------------------------------------ stop/resume
def cmd_stop(context: Context, args: Namespace) -> int:
    if args.all:
        if args.session or args.entity:
            raise UsageError("stop --all takes no SESSION or --entity")
        if not args.reason.strip():
            raise UsageError("stop --all needs --reason (every agent will read it)")
        backend = context.backend
        record = backend.stops.stop_fleet(source=args.source, reason=args.reason)
        said: dict[str, Any] = {"action": "fleet_stop", "stop": plain(record)}
        if not args.json:
            out(f"fleet stopped since {record.stopped_at}: every agent's next tool call is refused")
        return _interrupt(context, backend, args, None, said) if args.interrupt else finish(args, said)
    if not args.session:
        raise UsageError("stop needs a SESSION (or --all)")
    if args.hours is not None and not args.entity:
        raise UsageError("--hours applies to the --entity lock; give --entity too")
    backend = context.backend
    if not args.force:
        _refuse_unknown(backend, args.session)
    if args.entity:
        hours = args.hours if args.hours is not None else context.default_hours()
        with backend.transaction() as step:  # the stop and the lock: both or neither
            step.full_stop(args.session, args.entity, hours=hours, source=args.source, reason=args.reason)
        stopped, lock = step.results
        assert isinstance(stopped, StopRecord) and isinstance(lock, LockRecord)  # a full stop: its stop, then its lock
        record = stopped
        said = {"action": "full_stop", "session": args.session, "stop": plain(record), "entity": args.entity,
                "lock": plain(lock)}
        if not args.json:
            out(f"stopped {args.session} and locked {args.entity} hands-off until {lock.expires_at}")
    else:
        record = backend.stops.stop(args.session, source=args.source, reason=args.reason)
        said = {"action": "stop", "session": args.session, "stop": plain(record)}
        if not args.json:
            out(f"stopped {args.session} (since {record.stopped_at})")
    warning = _warn_if_nothing_answers(backend, args.session, record)
    if warning:
        said["warning"] = warning
    return _interrupt(context, backend, args, record, said) if args.interrupt else finish(args, said)


def _refuse_unknown(backend: Backend, name: str) -> None:
    """Refused (exit 1, nothing filed) when nothing knows ``name``, with the
    known names near it (``core.views.names``); ``--force`` files it anyway."""
    from leash.core.views.names import unknown

    why = unknown(backend, name)
    if why:
        import shlex

        raise Refused(f"{why}; nothing was filed (`leash stop --force {shlex.quote(name)}` files it for a session "
                      "not yet seen)")


def _warn_if_nothing_answers(backend: Backend, name: str, stop: StopRecord | dict) -> str:
    """One line on stderr (the stop stays filed, exit 0) when no session the
    hooks have seen and no tmux session answers to ``name``, or it only looks
    like a known name (``core.nameguard``); the line, or ""."""
    from leash.core.base.nameguard import known_names, warning_for
    from leash.core.state.sessions import bound_tmux_ids

    if bound_tmux_ids(plain(stop)):  # a tmux session of that name runs now
        return ""
    warning = warning_for(name, known_names(backend.sessions.all()))
    if warning:
        sys.stderr.write(f"leash: {printable(warning)}\n")
    return warning or ""


def _interrupt(context: Context, backend: Backend, args: Namespace, stop: StopRecord | dict | None,
               said: dict[str, Any]) -> int:
    """After the stop is filed: cancel the call in flight (``core.interrupt``);
    Refused (exit 1, the stop still filed) when nothing could be interrupted
    (with ``--json``: the object says both, ``ok`` false and ``error``)."""
    from leash.core.state.sessions import bound_tmux_ids
    from leash.core.warrants.interrupt import interrupt, interrupt_fleet

    if stop is None:
        report = interrupt_fleet(backend=backend, source=args.source, reason=args.reason, home=context.home)
    else:  # by the name given, and by the tmux session it was bound to when filed (a rename escapes nothing)
        names = [args.session] + bound_tmux_ids(plain(stop))
        report = interrupt(names, backend=backend, source=args.source, reason=args.reason, home=context.home)
    said = {**said, "interrupted": list(report.done), "not_interrupted": list(report.refused),
            "no_call_in_flight": len(report.quiet)}
    if not args.json:
        for line in report.done:
            said_of = line.extra  # what the interrupt line says besides its session
            running = f" while it ran {said_of['tool']}" if said_of.get("tool") else ""
            running += f": {said_of['input']}" if said_of.get("input") else ""
            out(f"interrupted {line.session_id} ({said_of['method']} to {said_of['target']}){running}")
    if not report.ok:
        failure = report.failure("the fleet" if stop is None else args.session)
        if args.json:
            sys.stderr.write(f"leash: error: {printable(failure)}\n")
            return done(args, 1, error=failure, **said)
        raise Refused(failure)
    if not args.json:
        for refusal in report.refused:
            out(f"not interrupted: {refusal}")
        if report.quiet:
            out(f"{len(report.quiet)} sessions had no call in flight (idle, ended or waiting for input): left alone")
    return finish(args, said)


def cmd_resume(context: Context, args: Namespace) -> int:
    if args.all:
        if args.session:
            raise UsageError("resume --all takes no SESSION")
        stops = context.backend.stops
        lifted = stops.resume_fleet(source=args.source, reason=args.reason)
        still = stops.stopped()
        if args.json:
            return done(args, action="fleet_resume", stop=plain(lifted), still_stopped=sorted(still))
        tail = f"; {len(still)} sessions stay stopped one by one (leash status)" if still else ""
        out(f"fleet resumed{tail}")
        return 0
    if not args.session:
        raise UsageError("resume needs a SESSION (or --all)")
    from leash.core.state.stop import NotStopped
    from leash.core.views.names import did_you_mean

    stops = context.backend.stops
    try:
        lifted = stops.resume(args.session, source=args.source, reason=args.reason)
    except NotStopped as exc:  # the stopped names near it: a typo is named at once
        raise Refused(f"{exc}{did_you_mean(args.session, stops.stopped())}") from None
    if args.json:
        return done(args, action="resume", session=args.session, stop=plain(lifted))
    out(f"resumed {args.session}")
    return 0


def cmd_hands_off(context: Context, args: Namespace) -> int:
    hours = args.hours if args.hours is not None else context.default_hours()
    lock = context.backend.locks.lock(args.entity, hours=hours, reason=args.reason, source=args.source,
                                      session_id=args.session)
    if args.json:
        return done(args, action="hands_off", entity=args.entity, lock=plain(lock),
                    kept_longer=bool(lock.extra.get("kept_longer")))
    kept = " (it was already locked longer; the later expiry is kept)" if lock.extra.get("kept_longer") else ""
    out(f"{args.entity} is hands-off until {lock.expires_at}{kept}")
    return 0


def cmd_release(context: Context, args: Namespace) -> int:
    if not args.entity.strip():
        raise UsageError("release needs an ENTITY (leash status lists the locks)")
    lock = context.backend.locks.release(args.entity, source=args.source, reason=args.reason)
    if args.json:
        return done(args, action="release", entity=args.entity, lock=plain(lock))
    out(f"released {args.entity}")
    return 0


# ------------------------------------------------------------------ breakers, replies, halts, approvals
def cmd_loop(context: Context, args: Namespace) -> int:
    from leash.core.base.config import load_config
    from leash.core.state import loopguard
    from leash.core.store.records import LoopLimits, loop_limits

    config = load_config(context.home)
    breakers = context.backend.breakers
    if args.loop_command == "check-and-record":
        kept = breakers.describe(args.name)  # the limits its newest boot came with, over the defaults
        limits: dict[str, Any] = loopguard.limits_for(args.name, config, kept=kept.as_dict(), given={
            key: getattr(args, key) for key in loopguard.LIMIT_KEYS if getattr(args, key) is not None})
        tripped = breakers.check_and_record(args.name, source=args.source, **limits)
        state = breakers.describe(args.name, limits=LoopLimits.of(dict(limits)))
        if args.json:
            return done(args, 3 if tripped else 0, action="loop_check", name=args.name, tripped=bool(tripped),
                        breaker=plain(state))
        verdict = "TRIPPED: skip auto-resume" if tripped else "not tripped"
        out(f"{args.name}: {state.in_loop} boots in loop, threshold {limits['max_restarts']}: {verdict}")
        return 3 if tripped else 0
    if args.loop_command == "reset":
        if not breakers.reset(args.name, source=args.source, reason=args.reason):
            raise Refused(f"breaker {args.name!r} has no recorded boots")
        if args.json:
            return done(args, action="loop_reset", name=args.name)
        out(f"reset {args.name}")
        return 0
    configured = loop_limits(config)
    states = [breakers.describe(n, limits=configured.get(n)).as_dict() for n in breakers.names()]
    if args.json:
        out_json(states, indent=2)
        return 0
    if not states:
        out("no restart-loop breakers recorded")
    for s in states:
        gap = f", max gap {s['max_gap_seconds']:g}s" if s["max_gap_seconds"] else ""
        out(f"{s['name']}: {s['in_loop']}/{s['max_restarts']} boots (window {s['window_seconds']:g}s{gap})"
            f"{'  TRIPPED' if s['tripped'] else ''}")
    return 0


def cmd_reply(context: Context, args: Namespace) -> int:
    context.backend.replies.record(args.channel, args.key, args.direction, now=now_seconds())
    out(f"recorded {args.direction} on {args.channel} / {args.key}")
    return 0


def cmd_halts(context: Context, args: Namespace) -> int:
    from leash.console.cli.halts import run as run_halts

    return run_halts(context.backend, args)


def cmd_approvals(context: Context, args: Namespace) -> int:
    from leash.console.cli.approvals import run as run_approvals

    return run_approvals(context.backend, args)


def cmd_budget(context: Context, args: Namespace) -> int:
    from leash.console.cli.budget import run_budget

    return run_budget(context.backend, args)


def cmd_costs(context: Context, args: Namespace) -> int:
    from leash.console.cli.budget import run_costs

    return run_costs(context.backend, args)


# ------------------------------------------------------------------ console, completion, hook
def cmd_console(context: Context, args: Namespace) -> int:
    from leash.console.tui import run_console
    from leash.core.base.tmux import Tmux
    from leash.core.wire.operator import answers, operator_socket

    backend = context.backend
    path, _ = operator_socket(context.home)
    if path is not None and answers(path):
        # With a daemon, every read and key goes through it (as the operator the
        # kernel says you are), its stream keeps the view live and its kennel
        # works the queue (the console sees its heartbeat and runs none).
        from leash.core.store.remote import RemoteBackend

        backend = RemoteBackend(path)
    return run_console(context.home, tmux=Tmux(home=context.home), backend=backend, run_kennel=not args.no_kennel,
                       read_only=getattr(args, "read_only", False),
                       changes=backend.changes() if backend.name == "remote" else None)


def cmd_demo(context: Context, args: Namespace) -> int:
    from leash.console.tui import run_demo

    # only a --home given here: $LEASH_HOME is the operator's real home, never the demo's
    return run_demo(keep=args.keep, home=getattr(args, "home", None))


def cmd_serve(context: Context, args: Namespace) -> int:
    from leash.console.serve import run_serve

    return run_serve(context.home, port=args.port, read_only=args.read_only, no_kennel=args.no_kennel,
                     token_file=args.token_file, max_clients=args.max_clients)


def cmd_completion(context: Context, args: Namespace) -> int:
    from leash.console.cli.completion import NAMES_WORD, names, script
    from leash.console.cli.parser import build_parser

    if args.shell == NAMES_WORD:  # what the scripts offer (``leash completion names`` is answered before here)
        for name in names(args.kind or "sessions", home=context.home):
            out(name)
        return 0
    if args.kind:
            raise UsageError(f"completion {args.shell} takes no KIND (only 'completion names KIND' does)")
    sys.stdout.write(script(args.shell, build_parser()))
    return 0


def cmd_hook(context: Context, args: Namespace) -> int:
    from leash.core.hook.hooks import run as run_hook

    return run_hook(args.event, home=context.home)


COMMANDS: dict[str, Callable[[Context, Namespace], int]] = {
    "stop": cmd_stop, "resume": cmd_resume, "hands-off": cmd_hands_off, "release": cmd_release,
    "status": cmd_status, "log": cmd_log, "doctor": cmd_doctor, "hook": cmd_hook, "install": cmd_install,
    "loop": cmd_loop, "reply": cmd_reply, "halts": cmd_halts, "warrant": cmd_warrant, "kennel": cmd_kennel,
    "console": cmd_console, "demo": cmd_demo, "serve": cmd_serve, "why": cmd_why, "completion": cmd_completion,
    "store": cmd_store, "setup": cmd_setup, "notify": cmd_notify, "approvals": cmd_approvals,
    "budget": cmd_budget, "costs": cmd_costs,
}
ACTING = {"stop", "resume", "hands-off", "release", "loop", "halts", "warrant", "approvals", "budget"}
