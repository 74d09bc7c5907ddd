"""Reading the stores into events: ``Gatherer.gather(now=)``.

One reading reads every source through the backend's protocols:

* ``halt``: the pending halts (``HaltStore.reading``, the kept connection a
  long-lived reader uses, so reading creates no file a watcher would see);
* ``waiting``: the sessions whose status has been "waiting for input" for
  ``[notify] waiting_after_s`` or longer (``status_since``);
* ``approval``: the waiting approvals: the backend's approvals store
  (``pending()``, ``core.approvals.store``), or the source given (an
  ``ApprovalSource``'s ``waiting(now=)``); each is sent once and reminded
  every ``remind_after_s`` while it waits;
* ``warrant``, ``breaker`` and ``budget``: the ack log's last ``LOG_TAIL_LINES`` lines
  (cheap on both backends, and read again only when the last line moved):
  finished warrants, ``loop_tripped`` and ``budget_warn``/``budget_hold``/``budget_stale`` lines no older than
  ``ONE_OFF_HORIZON_SECONDS`` nor than the notifier's first run;
* ``offline``: the shared store unreachable past its grace (leashd's mirror),
  and other hosts whose kennel heartbeat is ``HOST_GONE_SECONDS`` old and not
  stopped (``core.store.leases.kennel_beats``).

An event is made (and its text masked) once per occurrence and kept while it
is offered.

Failure: a source that raises is left out of that reading, its kinds not
counted as read (so nothing it reported earlier is taken as over), and its
problem is said once on leashd's log until it changes.
"""
from __future__ import annotations

from leash.core.base.clock import iso
from leash.core.notify.events import (
    Event,
    approval_event,
    breaker_event,
    budget_event,
    halt_event,
    host_offline_event,
    moment,
    store_offline_event,
    waiting_event,
    warrant_event,
)
from leash.core.state.sessions import STATUS_WAITING_APPROVAL, STATUS_WAITING_INPUT, host_of

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


HALTS_READ = 500  # pending halts read at most; a fuller reading is not taken as complete
LOG_TAIL_LINES = 500
ONE_OFF_HORIZON_SECONDS = 900.0  # a warrant or breaker line older than this is history, not news
HOST_GONE_SECONDS = 30.0  # a kennel heartbeat this old (and not stopped) is a host gone
# A session waiting for approval with no approval of leash's open is showing
# Claude Code's own dialog: told as waiting (leash's own approvals are told as approvals).
WAITING_STATUSES = (STATUS_WAITING_INPUT, STATUS_WAITING_APPROVAL)
LOG_EVENTS = frozenset({"warrant_executed", "warrant_undelivered", "warrant_pardoned", "loop_tripped",
                        "budget_warn", "budget_hold", "budget_stale"})


class Gatherer:
    def __init__(self, backend: Backend, *, host: str, waiting_after_s: float, since: float, approvals=None, say=None):
        self.backend = backend
        self.host = host
        self.waiting_after_s = waiting_after_s
        self.since = since
        self.approvals = _approval_reader(approvals if approvals is not None else backend.approvals)
        self.say = say or (lambda *args, **kwargs: None)
        self.made: dict[tuple, Event] = {}
        self.fresh: dict[tuple, Event] = {}
        self.problems: dict[str, str] = {}
        self.sessions: dict = {}
        self.log_head: tuple | None = None
        self.log_lines: list = []

    def gather(self, *, now: float) -> tuple[list[Event], set[str]]:
        """(every event the stores show now, the kinds read completely)."""
        events: list[Event] = []
        read: set[str] = set()
        self.fresh = {}
        for kinds, source in ((("waiting",), self._waiting), (("halt",), self._halts),
                              (("approval",), self._approvals), (("warrant", "breaker", "budget"), self._log),
                              (("offline",), self._offline)):
            try:
                found, complete = source(now)
            except Exception as exc:  # one store's trouble leaves the others' news
                self._problem(kinds[0], f"{exc.__class__.__name__}: {exc}")
                continue
            self.problems.pop(kinds[0], None)
            events.extend(found)
            if complete:
                read.update(kinds)
        self.made = self.fresh
        return events, read

    def _made(self, key: tuple, build) -> Event:
        event = self.made.get(key) or build()
        self.fresh[key] = event
        return event

    def _problem(self, source: str, problem: str) -> None:
        if self.problems.get(source) != problem:
            self.problems[source] = problem
            self.say("notify-read-failed", source=source, problem=problem)

    # ------------------------------------------------------------ sources
    def _waiting(self, now: float) -> tuple[list[Event], bool]:
        # the events are built from the stored fields (as_dict): a record and a fixture read alike
        self.sessions = {sid: record.as_dict() for sid, record in self.backend.sessions.all(now=now).items()}
        found = []
        for session_id, record in self.sessions.items():
            if record.get("status") not in WAITING_STATUSES:
                continue
            if record.get("status") == STATUS_WAITING_APPROVAL and session_id in self.held_sessions(now):
                continue  # an approval of leash's: its own event, with its buttons
            since = moment(record.get("status_since"), now)
            if now - since >= self.waiting_after_s:
                found.append(self._made(("waiting", session_id, iso(since)), lambda s=session_id, r=record, t=since:
                                        waiting_event(s, r, host=host_of(r) or self.host, since=t, now=now)))
        return found, True

    def held_sessions(self, now: float) -> set[str]:
        """The sessions an approval of leash's holds now."""
        if self.approvals is None:
            return set()
        try:
            return {str(approval.get("session_id")) for approval in self.approvals(now)}
        except Exception:  # unreadable: every waiting session is told (better twice than never)
            return set()

    def _halts(self, now: float) -> tuple[list[Event], bool]:
        with self.backend.halts.reading(now=now) as unit:
            pending = unit.pending(limit=HALTS_READ)
        found = []
        for halt in pending:
            record = self.sessions.get(halt.session_id)
            host = (host_of(record) if record is not None else "") or self.host
            found.append(self._made(("halt", halt.halt_id),
                                    lambda h=halt, where=host: halt_event(h.as_dict(), host=where, now=now)))
        return found, len(pending) < HALTS_READ

    def _approvals(self, now: float) -> tuple[list[Event], bool]:
        if self.approvals is None:
            return [], True
        found = []
        for approval in self.approvals(now):
            found.append(self._made(("approval", approval.get("id")),
                                    lambda a=approval: approval_event(a, host=self.host, now=now)))
        return found, True

    def _log_lines(self) -> list:
        """The tail's lines of interest, read again only when the log's last line moved."""
        last = self.backend.acklog.tail(1)
        head = (last[0].seq, last[0].hash) if last else None
        if head != self.log_head:
            self.log_lines = [line.as_dict() for line in self.backend.acklog.tail(LOG_TAIL_LINES)
                              if line.event in LOG_EVENTS]
            self.log_head = head
        return self.log_lines

    def _log(self, now: float) -> tuple[list[Event], bool]:
        floor = max(self.since, now - ONE_OFF_HORIZON_SECONDS)
        found: list[Event] = []
        for line in self._log_lines():
            event = line.get("event")
            if moment(line.get("timestamp"), 0.0) < floor:
                continue
            key = ("log", line.get("seq"), line.get("hash"))
            if event == "loop_tripped":
                found.append(self._made(key, lambda li=line: breaker_event(li, host=self.host, now=now)))
            elif str(event).startswith("budget_"):
                made = self.made.get(key) or budget_event(line, host=self.host, now=now)
                if made is not None:
                    self.fresh[key] = made
                    found.append(made)
            else:
                made = self.made.get(key) or warrant_event(line, host=self.host, now=now)
                if made is not None:
                    self.fresh[key] = made
                    found.append(made)
        return found, True

    def _offline(self, now: float) -> tuple[list[Event], bool]:
        found = self._store_lost(now)
        try:
            found += self._hosts_gone(now)
        except Exception as exc:  # the store's loss is told above; the hosts are unknown meanwhile
            self._problem("hosts", f"{exc.__class__.__name__}: {exc}")
            return found, False
        return found, True

    def _store_lost(self, now: float) -> list[Event]:
        """The shared store unreachable past its grace, from leashd's mirror."""
        mirror = _mirror_of(self.backend)
        lost_at = mirror.lost_at if mirror is not None else None
        if mirror is None or lost_at is None or mirror.listening:
            return []
        down = mirror.clock() - lost_at
        if down < mirror.grace_seconds:
            return []
        return [self._made(("store", lost_at), lambda: store_offline_event(host=self.host, down_seconds=down,
                                                                           lost_at=lost_at, now=now))]

    def _hosts_gone(self, now: float) -> list[Event]:
        """Other hosts whose kennel heartbeat stopped without their kennel saying it stopped."""
        from leash.core.store.leases import kennel_beats

        found = []
        for beat in kennel_beats(self.backend):
            host = beat.host
            if not host or host == self.host or beat.stopped_at:
                continue
            since = moment(beat.heartbeat_at, now)
            if now - since >= HOST_GONE_SECONDS:
                found.append(self._made(("host", host, beat.started_at),
                                        lambda b=beat, t=since: host_offline_event(b.as_dict(), since=t, now=now)))
        return found


def _approval_reader(found):
    """``read(now)`` -> the waiting approvals of an approvals store (``pending()``)
    or of an ``ApprovalSource`` (``waiting(now=)``); None for neither."""
    if callable(getattr(found, "waiting", None)):
        return lambda now: found.waiting(now=now)
    if callable(getattr(found, "pending", None)):  # an approvals store: its records' stored fields
        return lambda now: [approval.as_dict() for approval in found.pending(now=now)]
    return None


def _mirror_of(backend: Backend):
    """leashd's mirror of the shared store (``core.store.pgmirror``), or None:
    one home's files, or a store opened without one, are never "lost"."""
    if backend.name != "postgres":
        return None
    from leash.core.store.postgres import PostgresBackend

    return backend.mirror if isinstance(backend, PostgresBackend) else None
