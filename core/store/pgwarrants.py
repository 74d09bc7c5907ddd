"""Death warrants on PostgreSQL: ``PgWarrants`` (``WarrantStore``) and ``PgClaim`` (``Claim``).

One ``warrants`` row per warrant: the warrant as filed (``record``, the file
backend's keys plus ``host``), its status (``pending``, ``active``,
``completed``), and once a worker took it the dog's state (``state``), the
claim that holds it (``claimed_by``, one token per claim object) and the
claim's lease (``lease_until``). Ids are UUIDs whose leading bits are the
filing time (the UUIDv7 layout), so they sort in filing order as the file
backend's ids do; a home's warrants copied in keep their ``w-`` ids (the ack
log names them). ``find`` takes an id or an unambiguous prefix of six
characters or more.

Hosts: a target ``HOST/NAME`` belongs to host HOST, a bare one to the filing
store's own host. Each store claims only its host's warrants: ``claim_next``
takes the oldest pending one (``FOR UPDATE SKIP LOCKED``, so two workers never
take the same row) and gives it a lease of ``LEASE_SECONDS``, which its worker
renews with its heartbeat. An active warrant whose claim was released or whose
lease lapsed is an orphan: ``claim_orphans`` takes it over with the state its
last worker saved. A target on this host is bound to its tmux session id when
filed; one filed from another host is bound by the claiming host.

The lines each action logs are the file backend's (``warrant_filed``,
``warrant_pardoned``/``warrant_executed``/``warrant_blocked``, ``epitaph``),
each written in the transaction that writes its row. Listings show every
host's warrants; ``has_pending`` asks for this host's only (a kennel's loop).

Failure: a database that cannot be reached raises ``StoreOffline`` (nothing is
half written). A claim that lost its warrant to another worker cannot save or
complete it (``WarrantError``) and renews as False, so its dog stops; a renew
that cannot reach the database is False too. Releasing never raises: a lease
that cannot be cleared lapses by itself. A dog state that no longer has its
shape (edited by hand) is not claimed.
"""
from __future__ import annotations

import os
import uuid

from leash.core.base.clock import iso, now_seconds
from leash.core.state.warrants.queue import DEFAULT_REQUESTER, WarrantError
from leash.core.state.warrants.records import dog_problem, reason_problem, validate_target
from leash.core.store.pg import Database, StoreOffline, as_json, notify
from leash.core.store.pgacklog import PgAckLog
from leash.core.store.records_warrants import (
    DogRecord,
    DogState,
    KennelOwner,
    PardonRequest,
    WarrantListing,
    WarrantRecord,
    found_warrant,
)

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Sequence

    from leash.core.base.tmux import Tmux
    from leash.core.store.files import FileBackend
    from leash.core.store.pg import Connection
    from leash.core.store.protocols_work import Claim

LEASE_SECONDS = 30.0  # a claim not renewed for this long is an orphan another worker may take
FILING_LOCK = 0x6C65617368_10  # pg_advisory_xact_lock key: one live warrant per target
PREFIX_MIN_LENGTH = 6  # the shortest id prefix ``find`` accepts
HOST_SEPARATOR = "/"
COLUMNS = "id, status, record, state"
FILING_ORDER = "filed_at, seq"


def filing_id(moment: float) -> str:
    """A UUID whose 48 leading bits are ``moment`` in milliseconds (UUIDv7)."""
    millis = int(moment * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis << 80) | (0x7 << 76) | (((rand >> 62) & 0xFFF) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def entry(status: str, record: dict, state: dict | None) -> dict:
    """What a listing shows for a row: the warrant while pending, the dog's state after."""
    return record if status == "pending" or state is None else state


class PgWarrants:
    """``WarrantStore`` over the ``warrants`` table (see the module's docstring)."""

    def __init__(self, db: Database, log: PgAckLog, home: str, host: str, *, tmux: Tmux | None = None):
        self.db, self.log, self.home, self.host = db, log, os.fspath(home), host
        self.tmux = tmux  # the tmux server this host's targets are bound on; the home's when None

    # ------------------------------------------------------------ targets
    def placed(self, target: str) -> tuple[str, str]:
        """(host, session name on that host) for a target; ``ValueError`` for ``/x`` or ``host/``."""
        host, separator, name = target.rpartition(HOST_SEPARATOR)  # as the sessions store splits HOST/NAME
        if not separator:
            return self.host, target
        if not host or not name:
            raise ValueError(f"a warrant target is NAME or HOST/NAME, got {target!r}")
        return host, name

    def bind(self, name: str) -> str | None:
        """The tmux session id ``name`` names on this host now (None: none, or tmux cannot say)."""
        try:
            if self.tmux is None:
                from leash.core.base.tmux import Tmux

                self.tmux = Tmux(home=self.home)
            found = self.tmux.resolve(name)
        except Exception:  # no tmux, no server: nothing to bind to
            return None
        return found["id"] if found else None

    # ------------------------------------------------------------ filing
    def file(self, target: str, *, reason: str, requester: str = DEFAULT_REQUESTER,
             now: float | None = None) -> tuple[WarrantRecord, bool]:
        validate_target(target)
        problem = reason_problem(reason)
        if problem:
            raise ValueError(problem)
        from leash.core.base.secrets import mask  # a warrant never holds a secret

        host, name = self.placed(target)
        reason, requester = mask(reason), mask(requester or DEFAULT_REQUESTER) or DEFAULT_REQUESTER
        moment = now_seconds(now)
        warrant: dict = {"id": filing_id(moment), "target": target}
        if host == self.host:  # another host's target is bound by the host that claims it
            warrant["target_id"] = self.bind(name)
        warrant.update(reason=reason, requester=requester, filed_at=iso(moment), host=host)
        with self.db.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (FILING_LOCK,))
            live = self._live(conn, host, name, warrant.get("target_id"))
            if live is not None:
                return WarrantRecord.of(live), False
            conn.execute("INSERT INTO warrants (id, target, target_id, host, name, reason, requester, filed_at, "
                         "record, status) VALUES (%s, %s, %s, %s, %s, %s, %s, to_timestamp(%s), %s, 'pending')",
                         (warrant["id"], target, warrant.get("target_id"), host, name, reason, requester, moment,
                          as_json(warrant)))
            self.log.append("warrant_filed", source=requester, session_id=target, reason=reason, now=moment,
                            warrant_id=warrant["id"], target_id=warrant.get("target_id"))
            notify(conn, "warrants", warrant["id"])
        return WarrantRecord.of(warrant), True

    def _live(self, conn: Connection, host: str, name: str, target_id: str | None) -> dict | None:
        """The pending or active warrant on this session: the same tmux id when
        both are bound, else the same name on the same host."""
        row = conn.execute(
            f"SELECT {COLUMNS} FROM warrants WHERE status <> 'completed' AND host = %s AND CASE "
            "WHEN %s::text IS NOT NULL AND target_id IS NOT NULL THEN target_id = %s ELSE name = %s END "
            f"ORDER BY status = 'active', {FILING_ORDER} LIMIT 1", (host, target_id, target_id, name)).fetchone()
        if row is None:
            return None
        _, status, record, state = row
        return (state or {}).get("warrant") or record if status == "active" else record

    def live_for(self, target: str, target_id: str | None = None) -> WarrantRecord | None:
        host, name = self.placed(target)
        with self.db.transaction() as conn:
            return WarrantRecord.of(self._live(conn, host, name, target_id))

    # ------------------------------------------------------------ reading
    def _entries(self, where: str, params: tuple = (), *, newest: int | None = None) -> list[dict]:
        query = f"SELECT {COLUMNS} FROM warrants WHERE {where} ORDER BY {FILING_ORDER}"
        if newest is not None:
            query = (f"SELECT * FROM (SELECT {COLUMNS}, filed_at, seq FROM warrants WHERE {where} "
                     f"ORDER BY filed_at DESC, seq DESC LIMIT {max(0, int(newest))}) newest ORDER BY {FILING_ORDER}")
        return [entry(status, record, state) for _, status, record, state, *_ in self.db.rows(query, params)]

    def pending(self) -> list[WarrantRecord]:
        return [WarrantRecord.of(record) for record in self._entries("status = 'pending'")]

    def active(self) -> list[DogRecord]:
        return [DogRecord.of(state) for state in self._entries("status = 'active'")]

    def completed(self, newest: int | None = None) -> list[DogRecord]:
        return [DogRecord.of(state) for state in self._entries("status = 'completed'", newest=newest)]

    def find(self, warrant_id: str) -> tuple[str, WarrantRecord | DogRecord] | None:
        found = self._found(warrant_id)
        return found_warrant(*found) if found is not None else None

    def _found(self, warrant_id: str) -> tuple[str, dict] | None:
        """("pending" | "active" | "completed", its stored entry) for an id or an unambiguous prefix."""
        if not isinstance(warrant_id, str) or not warrant_id:
            return None
        wanted = warrant_id
        rows = self.db.rows(f"SELECT {COLUMNS} FROM warrants WHERE id = %s OR (%s AND id LIKE %s) "
                            "ORDER BY id = %s DESC LIMIT 2",
                            (wanted, len(wanted) >= PREFIX_MIN_LENGTH, like_prefix(wanted), wanted))
        if rows and rows[0][0] != wanted and len(rows) > 1:
            from leash.core.state.warrants.queue import ambiguous

            raise ambiguous(wanted, [row[0] for row in rows])
        if not rows:
            return None
        _, status, record, state = rows[0]
        return status, entry(status, record, state)

    def listing(self) -> WarrantListing:
        """No file here can be torn or moved aside: ``quarantined`` and ``unreadable`` are empty."""
        return WarrantListing(pending=self.pending(), active=self.active(), completed=self.completed(),
                              quarantined=[], unreadable=[])

    def has_pending(self) -> bool:
        """Whether a warrant of this host waits for a worker (one index probe)."""
        return bool(self.db.rows("SELECT EXISTS (SELECT 1 FROM warrants WHERE status = 'pending' AND host = %s)",
                                 (self.host,))[0][0])

    def tidy(self) -> None:
        """Nothing to tidy: a finished warrant is one row, with no report left beside it."""

    # ------------------------------------------------------------ claiming
    def claim_next(self, *, owner: KennelOwner, now: float | None = None) -> PgClaim | None:
        """The oldest pending warrant of this host, claimed with a fresh lease; None when none waits."""
        moment = now_seconds(now)
        token = uuid.uuid4().hex
        with self.db.transaction() as conn:
            row = conn.execute("SELECT id, name, record FROM warrants WHERE status = 'pending' AND host = %s "
                               f"ORDER BY {FILING_ORDER} LIMIT 1 FOR UPDATE SKIP LOCKED", (self.host,)).fetchone()
            if row is None:
                return None
            warrant_id, name, warrant = row
            if "target_id" not in warrant:  # filed on another host: bound here, where the session runs
                warrant = {"id": warrant_id, "target": warrant["target"], "target_id": self.bind(name),
                           **{k: v for k, v in warrant.items() if k not in ("id", "target")}}
            state = {"id": warrant_id, "warrant": warrant, "state": "received", "attempt": 0,
                     "started_at": iso(moment), "last_message_at": None, "next_timeout": None,
                     "kennel": owner.as_dict()}
            conn.execute("UPDATE warrants SET status = 'active', record = %s, target_id = %s, state = %s, "
                         "claimed_by = %s, lease_until = to_timestamp(%s) WHERE id = %s",
                         (as_json(warrant), warrant["target_id"], as_json(state), token, moment + LEASE_SECONDS,
                          warrant_id))
            notify(conn, "warrants", warrant_id)
        return PgClaim(self, state, token)

    def claim_orphans(self, *, owner: KennelOwner, skip: frozenset[str] | set[str] = frozenset(),
                      limit: int | None = None, now: float | None = None) -> list[Claim]:
        """Up to ``limit`` active warrants of this host that no live claim holds
        (released, the lease lapsed, or its worker was a process of this machine
        that is gone), each resumed from its saved state."""
        moment = now_seconds(now)
        claims: list[Claim] = []
        with self.db.transaction() as conn:
            rows = conn.execute(
                "SELECT id, state, claimed_by IS NULL OR lease_until <= to_timestamp(%s) FROM warrants "
                "WHERE status = 'active' AND host = %s AND NOT id = ANY(%s::text[]) "
                f"ORDER BY {FILING_ORDER} FOR UPDATE SKIP LOCKED",
                (moment, self.host, sorted(skip))).fetchall()
            for warrant_id, state, lapsed in rows:
                if limit is not None and len(claims) >= limit:
                    break
                if not (lapsed or _worker_gone(state)) or dog_problem(state, f"{warrant_id}.json"):
                    continue
                token = uuid.uuid4().hex
                state["kennel"] = owner.as_dict()
                conn.execute("UPDATE warrants SET state = %s, claimed_by = %s, lease_until = to_timestamp(%s) "
                             "WHERE id = %s", (as_json(state), token, moment + LEASE_SECONDS, warrant_id))
                notify(conn, "warrants", warrant_id)
                claims.append(PgClaim(self, state, token))
        return claims

    # ------------------------------------------------------------ pardon
    def pardon(self, warrant_id: str, *, source: str, reason: str = "",
               now: float | None = None) -> tuple[str, DogRecord]:
        """("pardoned" | "requested", the dog): a pending warrant, or an active one
        no live claim holds, is closed at once; a worked one asks its worker."""
        from leash.core.state.warrants.outcome import DEFAULT_TIMEOUTS
        from leash.core.state.warrants.queue import pardonable

        moment = now_seconds(now)
        kind, record = pardonable(self._found(warrant_id), warrant_id)
        warrant_id = record["id"]
        with self.db.transaction() as conn:
            status, warrant, state, held = conn.execute(
                "SELECT status, record, state, claimed_by IS NOT NULL AND lease_until > to_timestamp(%s) "
                "FROM warrants WHERE id = %s FOR UPDATE", (moment, warrant_id)).fetchone()
            if status == "completed":
                raise WarrantError(f"warrant {warrant_id} finished meanwhile ({(state or {}).get('outcome')})")
            if status == "active" and held:
                request = {"source": source, "reason": reason, "at": iso(moment)}
                conn.execute("UPDATE warrants SET pardon = %s WHERE id = %s", (as_json(request), warrant_id))
                notify(conn, "warrants", warrant_id)
                return "requested", DogRecord.of(state)
            if status == "pending":
                state = {"id": warrant_id, "warrant": warrant, "state": "pardoned", "attempt": 0,
                         "started_at": iso(moment), "last_message_at": None, "next_timeout": None}
            done = self.close(conn, state, "pardoned", now=moment, timeouts=DEFAULT_TIMEOUTS, by=source, note=reason)
        return "pardoned", DogRecord.of(done)

    def copy_from(self, home: FileBackend, *, conn: Connection) -> int:
        """A home's warrants (``leash store copy``) with their ids, dog states,
        outcomes and pardon requests; an active one is unclaimed, so this
        host's kennel resumes it. Records the home cannot work are left there."""
        from leash.core.state.warrants.records import warrant_problem
        from leash.core.store.filestores import FileWarrants

        warrants = home.warrants
        assert isinstance(warrants, FileWarrants)  # a home's own
        copied = 0
        for status, records in (("pending", [w.as_dict() for w in home.warrants.pending()]),
                                ("active", [d.as_dict() for d in home.warrants.active()]),
                                ("completed", [d.as_dict() for d in home.warrants.completed()])):
            for record in records:
                name = f"{record.get('id')}.json"
                if (warrant_problem if status == "pending" else dog_problem)(record, name):
                    continue
                state = None if status == "pending" else record
                request = warrants.queue.pardon_request(record["id"]) if status == "active" else None
                self._copy(conn, status, record if state is None else state["warrant"], state, request)
                copied += 1
        return copied

    def _copy(self, conn: Connection, status: str, warrant: dict, state: dict | None, request: dict | None) -> None:
        from leash.core.base.clock import parse_iso

        host, name = self.placed(warrant["target"])
        warrant = {**warrant, "host": host}
        if state is not None:
            state = {**state, "warrant": warrant}
        try:
            filed = parse_iso(warrant.get("filed_at"))
        except ValueError:
            filed = 0.0  # ordered first: its filing time is lost, not the warrant
        conn.execute("INSERT INTO warrants (id, target, target_id, host, name, reason, requester, filed_at, record, "
                     "state, status, pardon, outcome) VALUES (%s, %s, %s, %s, %s, %s, %s, to_timestamp(%s), %s, %s, "
                     "%s, %s, %s)",
                     (warrant["id"], warrant["target"], warrant.get("target_id"), host, name,
                      str(warrant.get("reason", "")), str(warrant.get("requester", DEFAULT_REQUESTER)), filed,
                      as_json(warrant), None if state is None else as_json(state), status,
                      None if request is None else as_json(request), (state or {}).get("outcome")))

    # ------------------------------------------------------------ finishing
    def close(self, conn: Connection, state: dict, outcome: str, *, now: float, timeouts: Sequence[float] = (),
              by: str | None = None,
              note: str = "", resumed: bool = False) -> dict:
        """Seal ``state`` (unless ``resumed``: it was sealed before), log its
        lines unless a resumed one has them already, and file it as completed,
        all in the caller's transaction holding the row."""
        from leash.core.state.warrants.outcome import log_outcome, seal

        warrant_id = state["id"]
        if not resumed:
            seal(state, outcome, now=now, timeouts=timeouts, by=by, note=note)
        if not (resumed and self._epitaph_logged(conn, warrant_id)):
            log_outcome(self.log, state, now=now)
        conn.execute("UPDATE warrants SET status = 'completed', state = %s, outcome = %s, "
                     "completed_at = to_timestamp(%s), claimed_by = NULL, lease_until = NULL, pardon = NULL "
                     "WHERE id = %s", (as_json(state), state["outcome"], now, warrant_id))
        notify(conn, "warrants", warrant_id)
        return state

    @staticmethod
    def _epitaph_logged(conn: Connection, warrant_id: str) -> bool:
        return conn.execute("SELECT EXISTS (SELECT 1 FROM acklog WHERE event = 'epitaph' "
                            "AND (line::jsonb) ->> 'warrant_id' = %s)", (warrant_id,)).fetchone()[0]


def _worker_gone(state: dict) -> bool:
    """Whether the claim's worker was a process of this machine that no longer
    runs (a kennel restarted here resumes its dogs at once, not after the
    lease); a worker elsewhere is judged by its lease alone."""
    import os
    import socket

    worker = state.get("kennel") if isinstance(state, dict) else None
    if not isinstance(worker, dict) or worker.get("host") != socket.gethostname():
        return False
    pid = worker.get("pid")
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, as another user
        return False
    return False


class PgClaim:
    """A warrant this worker holds: its row's ``claimed_by`` is this claim's token."""

    def __init__(self, store: PgWarrants, state: dict, token: str):
        self.store = store
        self.state = DogState.of(state)
        self.warrant = WarrantRecord.of(state.get("warrant") or {})
        self._token: str | None = token

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def held(self) -> bool:
        return self._token is not None

    def _held_write(self, sql: str, params: tuple) -> bool:
        """Run an update of this claim's row while it holds it; whether it did."""
        with self.store.db.transaction() as conn:
            done = conn.execute(sql + " WHERE id = %s AND claimed_by = %s AND status = 'active'",
                                (*params, self.id, self._token)).rowcount == 1
            if done:
                notify(conn, "warrants", self.id)
            return done

    def renew(self, *, now: float | None = None) -> bool:
        """Extend the lease; False when this claim no longer holds the warrant
        (released, completed, taken over) or the database cannot say."""
        if self._token is None:
            return False
        try:
            return self._held_write("UPDATE warrants SET lease_until = to_timestamp(%s)",
                                    (now_seconds(now) + LEASE_SECONDS,))
        except StoreOffline:
            return False

    def release(self) -> None:
        if self._token is None:
            return
        try:
            self._held_write("UPDATE warrants SET claimed_by = NULL, lease_until = NULL", ())
        except StoreOffline:
            pass  # the lease lapses by itself
        finally:
            self._token = None

    def save(self) -> None:
        if self._token is None or not self._held_write("UPDATE warrants SET state = %s",
                                                       (as_json(self.state.as_dict()),)):
            raise WarrantError(f"warrant {self.id} is no longer held by this worker")

    def pardon_request(self) -> PardonRequest | None:
        rows = self.store.db.rows("SELECT pardon FROM warrants WHERE id = %s", (self.id,))
        request = rows[0][0] if rows else None
        return PardonRequest.of(request) if isinstance(request, dict) else None

    def complete(self, outcome: str, *, by: str | None = None, note: str = "", now: float | None = None,
                 timeouts: Sequence[float] = ()) -> DogRecord:
        """Seal the outcome and file it as completed in one transaction, then release."""
        if self._token is None:
            raise RuntimeError(f"warrant {self.id} is not held")
        moment = now_seconds(now)
        try:
            with self.store.db.transaction() as conn:
                row = conn.execute("SELECT claimed_by, status FROM warrants WHERE id = %s FOR UPDATE",
                                   (self.id,)).fetchone()
                if row is None or tuple(row) != (self._token, "active"):
                    raise WarrantError(f"warrant {self.id} is no longer held by this worker")
                resumed = self.state.state == "complete"  # sealed by a worker that died before filing it
                done = self.store.close(conn, self.state.as_dict(), outcome, now=moment, timeouts=timeouts,
                                        by=by, note=note, resumed=resumed)
        finally:
            self.release()
        self.state.update(**done)  # sealed: its outcome and epitaph, as filed
        return DogRecord.of(done)
