"""Lines that lift control, written into leashd's home behind its back.

While leashd runs, every operator's change reaches the home through it (the
CLI and the console use its operator socket; hooks its agent socket), so every
ack-log line that lifts control — a ``resume``, a ``fleet_resume``, a lock's
``release``, a halt's ``halt_ack`` or ``halt_dismiss`` — is one leashd wrote
itself. In the single-user profile the agent is the operator's own user: a
script of its own can use leash's Python API (and the home's log key) to
append such a line, and the stop, lock or halt is gone. This thread reads each
line the log gains and answers one leashd did not write
(``core.state.acklog.written_here``) as ``supervisor_tampering``:

* a forged ``resume`` or ``halt_ack``/``halt_dismiss`` of a session: a
  critical ``supervisor_tampering`` halt holds that session again;
* a forged ``fleet_resume``: the fleet is stopped again;
* a forged ``release`` of a lock: the lock is filed again (``DEFAULT_RELOCK_HOURS``);

each with a ``tamper_blocked`` line naming the forged one. (Approvals are
judged where they are obeyed: ``core.daemon.approvaldesk``.)

Only a home of files is watched: on a shared PostgreSQL store every host's
leashd writes, and agents have no database credentials.

Failure: what cannot be read is read again at the next change; an answer that
cannot be written is said on stderr (the next forged line is still judged).
What this cannot see: the calls a forged line lets through between its write
and leashd's answer to it (the change feed's debounce, tens of
milliseconds), and lines written while leashd is not running (``leash doctor``
and ``leash log verify`` are the tools then).
"""
from __future__ import annotations

import os
import threading

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Any

    from leash.core.store.protocols import Backend

LIFTING_EVENTS = frozenset({"resume", "fleet_resume", "release", "halt_ack", "halt_dismiss"})
HELD_AGAIN = frozenset({"resume", "halt_ack", "halt_dismiss"})  # the session is held by a halt again
FLEET = "*"  # the session id of a fleet line
WATCHED_STORES = frozenset({"acklog", "stops", "locks", "halts", "*"})
FEED_WAIT_SECONDS = 1.0
DEFAULT_RELOCK_HOURS = 8.0
SOURCE = "leash"


class TamperWatch:
    def __init__(self, backend: Backend, *, feed, clock, say):
        self.backend, self.feed, self.clock, self.say = backend, feed, clock, say
        self.log: Any = backend.acklog  # read by offset below only when it is the file store's (its AckLog)
        self.path = getattr(getattr(self.log, "log", None), "path", None)  # the file store's AckLog
        self.offset, self.last_seq = 0, 0
        self.closed = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if getattr(self.backend, "name", "") != "file" or self.path is None:
            return
        try:
            self.offset = os.path.getsize(self.path)  # lines before leashd started are not its to judge
        except OSError:
            self.offset = 0
        inbox = self.feed.join()
        self.thread = threading.Thread(target=self._follow, args=(inbox,), name="tamper watch", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closed.set()

    def _follow(self, inbox) -> None:
        self.feed.follow(inbox, WATCHED_STORES, self.look, closed=self.closed, wait=FEED_WAIT_SECONDS)

    def look(self) -> int:
        """Judge the lines the log gained since the last look; how many were forged."""
        from leash.core.state.acklog import written_here

        assert self.path is not None
        try:
            size = os.path.getsize(self.path)
            if size < self.offset:  # cut or rewritten: leash log verify says so; start from here
                self.offset = size
                return 0
            lines = list(self.log.log.lines(start=self.offset))
            self.offset = size
        except OSError as exc:
            self.say("tamper-watch-unreadable", problem=f"{exc.__class__.__name__}: {exc}")
            return 0
        fresh = [line for line in lines if isinstance(line.get("seq"), int) and line["seq"] > self.last_seq]
        self.last_seq = max([self.last_seq] + [line["seq"] for line in fresh])
        forged = [line for line in fresh if line.get("event") in LIFTING_EVENTS
                  and not written_here(self.path, line["seq"])]
        for line in forged:
            try:
                self._answer(line)
            except Exception as exc:  # said; the next forged line is still judged
                self.say("tamper-answer-failed", seq=line.get("seq"), problem=f"{exc.__class__.__name__}: {exc}")
        return len(forged)

    def _answer(self, line: dict) -> None:
        event, session = line["event"], str(line.get("session_id") or "")
        now = self.clock()
        summary = (f"line {line['seq']} ({event} {session or line.get('entity') or ''}) was written into the home "
                   "outside leash daemon")
        self.say("tamper-forged-line", seq=line["seq"], line_event=event, session=session)
        if event == "fleet_resume":
            self.backend.stops.stop_fleet(source=SOURCE, reason=f"restored: {summary}", now=now)
        elif event == "release":
            entity = str(line.get("entity") or "")
            if entity:
                self.backend.locks.lock(entity, hours=DEFAULT_RELOCK_HOURS, reason=f"restored: {summary}",
                                        source=SOURCE, now=now)
        if event in HELD_AGAIN and session and session != FLEET:
            self.backend.halts.record({"session_token": session, "halt_type": "security", "severity": "critical",
                                       "condition_name": "supervisor_tampering", "description": summary}, now=now)
        self.log.append("tamper_blocked", source=SOURCE, session_id=session, reason=summary, now=now)
