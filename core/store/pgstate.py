"""The stops, the hands-off locks and the sessions on PostgreSQL.

The stop and lock registries (``core.stop``, ``core.handsoff``) run here
unchanged: ``PgLogState`` is the database's twin of ``core.logstate``'s
``LogBackedJSON``. Each state is the fold of its store's ack-log lines (the
registry's own ``apply``), kept as one ``log_state`` row with the seq of the
last line it reflects, and every write appends its line and writes the row in
one transaction, holding the chain lock: the two never disagree, and writers on
every host queue behind one another. Every write of a row, a repair's
included, sends its store's notice, so every leashd's mirror reads it again;
a mirrored read notes the row's head and version for the mirror's check of
writes no notice announced (``core.store.pgmirror``). The sessions are one row
each (``PgSessionRows``, the shape of ``core.sessions.FileSessionRows``).

Failure: a state that cannot be read raises the registry's own "unreadable"
error (``StopStateUnreadable``, ``HandsOffUnreadable``), so the gate fails
closed; so does a row whose head names a line the log no longer holds (rows
of the log were deleted). A row whose content no longer has its shape is
rebuilt from the log (``state_rebuilt`` is logged), as a damaged file is, but
never from a log that does not verify, that lost the row's line, or that
holds lines of the store the row never applied (inserted past leash: forged).
A failed write leaves neither its line nor its row.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

from leash.core.base.statefile import StateCorrupt
from leash.core.state.loghead import HANDS_OFF_STORE, STOPS_STORE, STORE_OF_EVENT
from leash.core.state.sessions import last_seen_of
from leash.core.store.pg import CHAIN_LOCK, Database, StoreOffline, as_json, notify
from leash.core.store.pgacklog import PgAckLog

TYPE_CHECKING = False  # typing is for the type checker only
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from leash.core.base.logkey import MacKey
    from leash.core.state.handsoff import HandsOffRegistry
    from leash.core.state.sessions import SessionRegistry
    from leash.core.state.stop import StopRegistry
    from leash.core.store.pg import Connection
    from leash.core.store.pgmirror import Mirror

# The row, its head, its version (changed by any write of it), the head's line and the line before it.
READ_STATE = ("SELECT s.state, s.head_seq, s.xmin::text, a.line, p.line FROM log_state s "
              "LEFT JOIN acklog a ON a.seq = s.head_seq LEFT JOIN acklog p ON p.seq = s.head_seq - 1 "
              "WHERE s.store = %s")
PRUNE_EVERY_SECONDS = 60.0  # forgotten sessions are deleted at most this often per process
MIRRORED_SESSIONS = 100_000  # records a mirror keeps before it starts over


class PgLogState:
    """One log-backed state in the ``log_state`` table (see the module's docstring)."""

    def __init__(self, log: PgAckLog, store: str, *, validate: Callable[..., Any], apply: Callable[..., Any],
                 empty: Callable[[], Any], transform: Callable[[Any], Any] = lambda state: state,
                 what: str = "state", error: type[Exception] = StoreOffline, mirror: Mirror | None = None):
        self.log, self.db, self.store = log, log.db, store
        self.validate, self.apply, self.empty, self.transform = validate, apply, empty, transform
        self.what, self.error = what, error
        self.mirror = mirror
        self._cached: tuple[object, object] | None = None
        self._mirrored: tuple[tuple[int, int], object] | None = None  # (stamp, value) kept by the mirror

    # ------------------------------------------------------------ reading
    def snapshot(self, *, now: float | None = None) -> Any:
        """The transformed state; ``error`` when it cannot be read. With a
        mirror, memory answers while it is current (and, offline, as the
        offline policy allows)."""
        if self.mirror is None:
            return self._read(now=now)
        from leash.core.store.pgmirror import Offline

        held = self._mirrored
        if held is not None and self.mirror.current(self.store, held[0]):
            return held[1]
        if not self.mirror.reachable():
            try:
                if held is None:
                    raise Offline("the shared store is unreachable and has not been read since leashd started")
                self.mirror.answer_offline(self.what)
            except Offline as exc:
                raise self.error(f"{self.what} unreadable: {exc}") from None
            return held[1]
        stamp = self.mirror.stamp(self.store)
        value = self._read(now=now)
        self._mirrored = (stamp, value)
        return value

    def _read(self, *, now: float | None = None) -> Any:
        try:
            rows = self.db.rows(READ_STATE, (self.store,))
        except StoreOffline as exc:
            raise self.error(f"{self.what} unreadable ({exc}) — run `leash doctor`") from None
        if not rows:
            self._note(None)
            return self.transform(self.empty())
        stored, head, version, line, before = rows[0]
        self._note((head, version))
        if head and line is None:
            raise self.error(f"{self.what} unreadable: the ack log is shorter than its head (the {self.store} "
                             f"state names line {head}, which the log does not hold) — run `leash doctor`")
        unsigned = head and unsigned_line(self.log.mac_key()[0], head, line, before)
        if unsigned:
            raise self.error(f"{self.what} unreadable: the {self.store} state names line {head}, which is not "
                             f"signed with this host's key ({unsigned}: forged, or written by a host without the "
                             "key) — run `leash log verify` and `leash doctor`")
        cached = self._cached
        if cached is not None and cached[0] == stored:  # the same content: its transform is reused
            return cached[1]
        try:
            value = self.transform(self.validate(stored))
        except StateCorrupt as exc:
            return self.transform(self.rebuild(f"unreadable: {exc.detail}", now=now))
        self._cached = (stored, value)
        return value

    def _note(self, mark: tuple | None) -> None:
        if self.mirror is not None:
            self.mirror.note(self.store, mark)

    # ------------------------------------------------------------ writing
    @contextmanager
    def holding(self) -> Iterator[Connection]:
        """One transaction holding the chain lock: every writer on every host waits for it."""
        with self.db.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (CHAIN_LOCK,))
            yield conn

    @contextmanager
    def writing(self, *, now: float | None = None) -> Iterator[Any]:
        """``with state.writing(now=) as data:`` the current state as a mutable
        dict, for ``record``/``rewrite`` in the same transaction."""
        with self.holding() as conn:
            row = conn.execute("SELECT state FROM log_state WHERE store = %s FOR UPDATE", (self.store,)).fetchone()
            try:
                data = self.validate(row[0]) if row else self.empty()
            except StateCorrupt as exc:
                data = self.rebuild(f"unreadable: {exc.detail}", now=now)
            yield data

    def record(self, state: dict, event: str, *, now: float | None = None, **fields: Any) -> dict:
        """Append one line of this store, fold it into ``state`` and store it: one transaction."""
        with self.holding() as conn:
            line = self.log.append_line(event, now=now, **fields)
            self.apply(state, line, now)
            self._store(conn, state, line["seq"], key=str(line.get("entity") or line.get("session_id") or ""))
        return line

    def rewrite(self, state: dict) -> None:
        """Store ``state`` reflecting the same line as before (pruning expired locks)."""
        with self.holding() as conn:
            row = conn.execute("SELECT head_seq FROM log_state WHERE store = %s", (self.store,)).fetchone()
            self._store(conn, state, row[0] if row else 0)

    def replay(self, *, now: float | None = None) -> tuple[dict, int]:
        """(the state the log gives, the seq of its last line of this store)."""
        state, head = self.empty(), 0
        events = [event for event, store in STORE_OF_EVENT.items() if store == self.store]
        for line in self.log.lines_after(0):
            if line.get("event") in events:
                self.apply(state, line, now)
                head = line["seq"]
        return state, head

    def adopt_log(self, *, now: float | None = None) -> dict:
        """Store the replay of the log as this state, logging nothing (a copied
        log's own state: nothing was rebuilt)."""
        with self.holding() as conn:
            state, head = self.replay(now=now)
            self._store(conn, state, head)
        return state

    def rebuild(self, problem: str, *, now: float | None = None) -> dict:
        """Store the replay of the log in place of a row that lost its shape or
        differs from it (``doctor --repair``), and say so in the log; ``error``
        when the log cannot be trusted to say (``distrust``)."""
        with self.holding() as conn:
            refused = self.distrust()
            if refused:
                raise self.error(f"{self.what} not rebuilt from the ack log: {refused} — run `leash log verify`")
            state, head = self.replay(now=now)
            # The line first: the schema's guard lets the runtime role rewrite a
            # row only right after the log says it is rebuilding it.
            self.log.append_line("state_rebuilt", source="leash", session_id="", now=now, file=self.store,
                                 moved_to="", reason=f"{self.store} state {problem}; rebuilt from the ack log")
            self._store(conn, state, head)
        return state

    def distrust(self) -> str:
        """Why the log cannot be replayed into this state ("" when it can): it
        does not verify, it lost the line the row names, or it holds lines of
        this store after the row's head, which leash never writes (a line and
        its row are one transaction): lines inserted past leash."""
        problem = self.log.chain_problem()
        if problem:
            return f"the ack log does not verify ({problem})"
        rows = self.db.rows("SELECT head_seq FROM log_state WHERE store = %s", (self.store,))
        head = rows[0][0] if rows else 0
        events = [event for event, store in STORE_OF_EVENT.items() if store == self.store]
        if head and not self.db.rows("SELECT 1 FROM acklog WHERE seq = %s AND event = ANY(%s)", (head, events)):
            return f"the {self.store} state names line {head}, which the ack log does not hold (rows deleted)"
        later = self.db.rows("SELECT seq, event, session_id FROM acklog WHERE seq > %s AND event = ANY(%s) "
                             "ORDER BY seq LIMIT 1", (head, events))
        if later:
            seq, event, session = later[0]
            return (f"line {seq} ({event} {session}) is a {self.store} line the {self.store} state never applied: "
                    "not written by leash (inserted into the table: forged?)")
        return ""

    def _store(self, conn: Connection, state: dict, head: int, *, key: str = "") -> None:
        """The row, and its notice: every leashd's mirror reads it again."""
        conn.execute("INSERT INTO log_state (store, state, head_seq) VALUES (%s, %s, %s) ON CONFLICT (store) "
                     "DO UPDATE SET state = EXCLUDED.state, head_seq = EXCLUDED.head_seq",
                     (self.store, as_json(state), head))
        notify(conn, self.store, key)
        self._cached = self._mirrored = None


def unsigned_line(key: MacKey | None, seq: int, line: str, before: str | None) -> str:
    """Why line ``seq`` (its text ``line``; ``before``: the line before it) is
    not one leashd signed ("" when it is, or when there is no key to tell):
    a wrong mac, or none where the key says every line has one (from its
    ``since``, or once the line before carries one)."""
    if key is None:
        return ""
    record, previous = _json(line), _json(before)
    mac = record.get("mac")
    if mac is not None:
        return "" if key.verifies(str(record.get("hash", "")), mac) else "its mac is wrong"
    needed = seq >= key.since if key.since is not None else "mac" in previous
    return "it has no mac" if needed else ""


def _json(text: str | None) -> dict:
    import json

    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


class PgSessionRows:
    """The session registry's records, one row each (``FileSessionRows``'s shape)."""

    def __init__(self, db: Database, *, mirror: Mirror | None = None):
        self.db = db
        self.mirror = mirror
        self._pruned_at = 0.0
        self._rows: dict[str, tuple[tuple[int, int], dict | None]] = {}  # session -> (stamp, record)
        self._all: tuple[tuple[int, int], dict] | None = None

    def all(self, *, now: float | None = None) -> dict[str, dict]:
        held = self._all
        if held is not None and self._current(held[0]):
            return dict(held[1])
        if self._offline():
            return dict(held[1]) if held is not None else {}
        stamp = self._stamp()
        found = {sid: record for sid, record in self.db.rows("SELECT session_id, record FROM sessions "
                                                             "ORDER BY session_id")}
        if self.mirror is not None:
            self._all = (stamp, found)
        return dict(found)

    def get(self, session_id: str, *, now: float | None = None) -> dict | None:
        held = self._rows.get(session_id)
        if held is not None and self._current(held[0], session_id):
            return held[1]
        if self._offline():
            return held[1] if held is not None else None
        stamp = self._stamp()
        rows = self.db.rows("SELECT record FROM sessions WHERE session_id = %s", (session_id,))
        record = rows[0][0] if rows else None
        if self.mirror is not None:
            if len(self._rows) >= MIRRORED_SESSIONS:
                self._rows.clear()
            self._rows[session_id] = (stamp, record)
        return record

    def _current(self, stamp: tuple[int, int], key: str | None = None) -> bool:
        return self.mirror is not None and self.mirror.current("sessions", stamp, key)

    def _stamp(self) -> tuple[int, int]:
        return self.mirror.stamp("sessions") if self.mirror is not None else (0, 0)

    def _offline(self) -> bool:
        """Whether to answer from memory: the mirror's listener is down and the
        offline policy allows it (a session unknown then is a session never
        seen). Raises ``StoreOffline`` when it does not (the stops raise too)."""
        if self.mirror is None or self.mirror.reachable():
            return False
        from leash.core.store.pgmirror import Offline

        try:
            self.mirror.answer_offline("the sessions")
        except Offline as exc:
            raise StoreOffline(str(exc)) from None
        return True

    def update(self, session_id: str, change: Callable[[dict | None], dict | None], *, horizon: float,
               now: float | None = None) -> dict | None:
        with self.db.transaction() as conn:
            self._prune(conn, horizon)
            row = conn.execute("SELECT record FROM sessions WHERE session_id = %s FOR UPDATE",
                               (session_id,)).fetchone()
            changed = change(dict(row[0]) if row else None)
            if changed is None:
                return row[0] if row else None
            conn.execute("INSERT INTO sessions (session_id, record, last_seen) VALUES (%s, %s, to_timestamp(%s)) "
                         "ON CONFLICT (session_id) DO UPDATE SET record = EXCLUDED.record, "
                         "last_seen = EXCLUDED.last_seen",
                         (session_id, as_json(changed), last_seen_of(changed)))
            notify(conn, "sessions", session_id)
        self._rows.pop(session_id, None)
        self._all = None
        return changed

    def _prune(self, conn: Connection, horizon: float) -> None:
        if time.monotonic() - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = time.monotonic()
        conn.execute("DELETE FROM sessions WHERE last_seen < to_timestamp(%s)", (horizon,))


def registries(log: PgAckLog, home: str, *, host: str,
               mirror: Mirror | None = None) -> tuple[StopRegistry, HandsOffRegistry, SessionRegistry]:
    """The stop, lock and session registries of ``core`` over this database
    (read from ``mirror``'s memory while it is current, in leashd)."""
    from leash.core.state.handsoff import LOCK_FOLD, HandsOffRegistry
    from leash.core.state.sessions import SessionRegistry
    from leash.core.state.stop import STOP_FOLD, StopRegistry

    sessions = SessionRegistry(home, log, rows=PgSessionRows(log.db, mirror=mirror), host=host)
    stops = StopRegistry(home, log, state=PgLogState(log, STOPS_STORE, mirror=mirror, **STOP_FOLD),
                         sessions=sessions)
    locks = HandsOffRegistry(home, log, state=PgLogState(log, HANDS_OFF_STORE, mirror=mirror, **LOCK_FOLD),
                             sessions=sessions)
    return stops, locks, sessions
