"""``leash warrant ...`` and ``leash kennel``: death warrants filed, pardoned
and listed, and a kennel whose dogs work them.

Each calls the command's backend (``Context.backend``: its warrant store and
kennel registry); a warrant the store refuses is a ``Refused`` (exit 1).
"""
from __future__ import annotations

import os
import sys
from argparse import Namespace

from leash.console.cli.context import Context
from leash.console.cli.output import ago, done, out, out_json, plain, section
from leash.console.errors import Refused
from leash.core.base.clock import human_duration, now_seconds, parse_iso
from leash.core.store.protocols_work import WarrantStore
from leash.core.store.records_warrants import DogRecord, WarrantRecord

PARDON_WAIT_SECONDS = 5.0  # how long `warrant pardon` waits for the dog to take a requested pardon
PARDON_POLL_SECONDS = 0.1


def cmd_warrant(context: Context, args: Namespace) -> int:
    from leash.core.state.warrants import WarrantError

    try:
        if args.warrant_command == "file":
            return _file(context, args)
        if args.warrant_command == "pardon":
            return _pardon(context, args)
    except WarrantError as exc:
        raise Refused(str(exc)) from None
    return _list(context, args)


def _file(context: Context, args: Namespace) -> int:
    backend = context.backend
    warrant, created = backend.warrants.file(args.target, reason=args.reason, requester=args.requester or args.source)
    if args.json:
        return done(args, action="warrant_file", target=args.target, created=bool(created),
                    warrant=plain(warrant), kennel_running=bool(backend.kennels.alive()))
    if not created:
        out(f"{args.target} already has a live warrant: {warrant.id} (nothing filed)")
        return 0
    kennel = "" if backend.kennels.alive() else " (no kennel is running: leash kennel)"
    bound = f" (tmux session {warrant.target_id})" if warrant.target_id else ""
    out(f"filed {warrant.id} against {args.target}{bound}{kennel}")
    if not warrant.target_id:
        out(f"no tmux session is named {args.target!r} now: its dog will find it already dead")
    return 0


def _pardon(context: Context, args: Namespace) -> int:
    warrants = context.backend.warrants
    args.warrant_id = _warrant_named(warrants, args.warrant_id, home=context.home)
    result, dog = warrants.pardon(args.warrant_id, source=args.source, reason=args.reason)
    if result != "requested":
        if args.json:
            return done(args, action="warrant_pardon", id=dog.id, pardoned=True, requested=False,
                        warrant=plain(dog))
        out(f"pardoned {dog.id}: {dog.warrant['target']} lives")
        return 0
    pardoned = _pardoned_within(warrants, dog.id or args.warrant_id, seconds=PARDON_WAIT_SECONDS)
    if args.json:
        return done(args, action="warrant_pardon", id=dog.id, pardoned=pardoned is not None,
                    requested=pardoned is None, warrant=plain(pardoned or dog))
    if pardoned is not None:
        out(f"pardoned {pardoned.id}: {pardoned.warrant['target']} lives ({pardoned.outcome})")
    else:
        out(f"pardon requested for {dog.id}; its dog acts on it at its next poll")
    return 0


def _pardoned_within(warrants: WarrantStore, warrant_id: str, *, seconds: float) -> DogRecord | None:
    """The finished record of a warrant whose dog took the pardon within ``seconds``, else None."""
    import time

    deadline = time.time() + seconds
    while time.time() < deadline and _where(warrants, warrant_id)[0] != "completed":
        time.sleep(PARDON_POLL_SECONDS)
    kind, finished = _where(warrants, warrant_id)
    return finished if kind == "completed" and isinstance(finished, DogRecord) else None


def _list(context: Context, args: Namespace) -> int:
    from leash.core.state.warrants.records import attempt_label, configured_attempts

    listing = context.backend.warrants.listing()
    if args.json:
        out_json(listing.as_dict(), indent=2)
        return 0
    moment = now_seconds()
    names_now = _tmux_names(context.home) if listing.pending or listing.active else {}
    attempts = configured_attempts(context.home) if listing.active else None

    def target(w: dict) -> str:  # the name filed, and the session's name now when it was renamed
        now_named = names_now.get(w.get("target_id") or "")
        return w["target"] + (f" (now {now_named})" if now_named and now_named != w["target"] else "")
    section("pending", listing.pending, lambda w: (
        f"{w.id}  {target(w.as_dict())}  filed {ago(w.filed_at, moment)} by {w.requester}: {w.reason}"))
    section("active", listing.active, lambda d: (
        f"{d.id}  {target(d.warrant)}  {d.state}  attempt {attempt_label(d.as_dict(), attempts)}"
        + (f"  gate closes in {human_duration(parse_iso(d.next_timeout) - moment)}" if d.next_timeout and
           d.state == "interrogating" else "")))
    section("finished", listing.completed, lambda d: (
        f"{d.id}  {d.warrant['target']}  {d.outcome}  attempt {d.attempt or 0}  "
        f"{ago(d.completed_at or '', moment)}"))
    if listing.unreadable:
        section("unreadable (the kennel quarantines them)", listing.unreadable,
                lambda u: f"{u.file}: {u.problem}")
    if listing.quarantined:
        section("quarantined (kept for inspection)", listing.quarantined, lambda path: path)
    return 0


def _where(warrants: WarrantStore, warrant_id: str) -> tuple[str, WarrantRecord | DogRecord | None]:
    """Where the warrant is now ("pending", "active", "completed") and its record; ("", None) when it is gone."""
    found = warrants.find(warrant_id)
    return found if found is not None else ("", None)


def _warrant_named(warrants: WarrantStore, given: str, *, home: str) -> str:
    """The id of the warrant ``given`` names: an id or id prefix as it is,
    else the live warrant whose target is that tmux session (by name, or by
    the id it was bound to when filed)."""
    if warrants.find(given) is not None:
        return given
    from leash.core.state.sessions import tmux_session_id_for

    live = warrants.live_for(given, tmux_session_id_for(given, home=home) or None)
    return live.id if live is not None else given


def _tmux_names(home: str) -> dict[str, str]:
    """tmux session id -> its name now ({} when tmux cannot be asked)."""
    from leash.core.base.tmux import Tmux

    try:
        return {s["id"]: s["name"] for s in Tmux(home=home).list_sessions()}
    except Exception:
        return {}


def cmd_kennel(context: Context, args: Namespace) -> int:
    from leash.core.warrants.kennel import Kennel

    other = context.backend.kennels.alive()
    if other and other.pid != os.getpid():
        out(f"another kennel is running (pid {other.pid} on {other.host}); claims keep them apart")
    import asyncio

    kennel = Kennel(context.home, dogs=args.dogs, until_idle=args.until_idle)
    ending = ("it ends when no warrant is pending or active, or on Ctrl-C or SIGTERM" if args.until_idle
              else "Ctrl-C or SIGTERM stops it; active dogs keep their state for the next kennel")

    def say_running() -> None:  # once Ctrl-C and SIGTERM stop it cleanly, as the line says
        out(f"kennel running: {kennel.size} dog{'s' if kennel.size != 1 else ''}, home {context.home}, "
            f"host {kennel.owner.host}; {ending}")
        sys.stdout.flush()  # said now, in a pipe too: the kennel may run for days

    finished = asyncio.run(kennel.run(on_start=say_running))
    for state in finished:
        out(f"{state['id']}  {state['warrant']['target']}  {state['outcome']}")
    return 0
