"""The PostgreSQL side of the storage seam: what every PostgreSQL store stands on.

One database is shared by every host. ``Database`` holds a store's
connections (a bounded pool; a thread's nested ``session()`` blocks share one
connection, so a ``transaction()`` spans whatever the stores do inside it),
applies the versioned schema, and sends change notices (``NOTIFY leash``, a
JSON ``{"store", "key"}``, delivered at commit). ``chain`` extends the ack log
under a transaction-scoped advisory lock, so appends from many hosts
interleave into one chain whose lines are the file log's lines, byte for byte.

psycopg is imported here and only here (about 150 ms: hooks never import it;
they ask leashd). The stores are ``pgacklog``, ``pgstate`` and their siblings.

With an owner's url (``[store] owner_url``; ``core.store.pgroles``) the schema
is created and migrated on a connection of the owner's, which then grants the
runtime role what it lacks; the pool's connections are the runtime role's.

Failure: a database that cannot be reached or written raises ``StoreOffline``
(one line naming the problem, never the password); a write that fails leaves
nothing, since every write and its log line are one transaction. A connection
that broke is dropped, never handed out again. ``migrate`` applies the schema
versions it knows under an advisory lock and refuses a database whose schema is
newer than this leash. A runtime role that may not change the schema is told
to give the owner's url.
"""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager

from leash.core.base.clock import iso, now_seconds
from leash.core.state.acklog import GENESIS_HASH, chain_hash
from leash.core.store.pgschema import MIGRATIONS, SCHEMA_VERSION

TYPE_CHECKING = False  # typing is for the type checker only
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from leash.core.base.logkey import MacKey
    from leash.core.store.pgschema import Connection

# pg_advisory_xact_lock keys: "leash" in ASCII, then what the lock guards.
SCHEMA_LOCK = 0x6C65617368_01
CHAIN_LOCK = 0x6C65617368_02
NOTIFY_CHANNEL = "leash"
POOL_SIZE = 8  # leashd's threads share these; a thread waits for one rather than opening more
POOL_WAIT_SECONDS = 10.0
CONNECT_TIMEOUT_SECONDS = 5
LISTEN_WAKE_SECONDS = 0.5  # how often a listener looks at its stop event
RELISTEN_SECONDS = 1.0  # a lost listener connects again after this
# SQLSTATEs of a role that may not create or change the schema: "permission denied", "must be owner",
# and "no schema has been selected to create in" (no CREATE on any schema of its search path).
CANNOT_CHANGE_SCHEMA = ("42501", "3F000")


class StoreOffline(Exception):
    """The database cannot be reached or used."""


def errors() -> tuple[type[BaseException], ...]:
    """What a database call raises when the server or the statement fails."""
    import psycopg

    return (psycopg.Error,)


def said(exc: BaseException) -> str:
    """One line about a database error (psycopg's messages never carry the password)."""
    return " ".join(str(exc).split())[:300] or exc.__class__.__name__


def connect(url: str, password: str | None = None) -> Connection:
    """A connection to ``url``; StoreOffline otherwise. Autocommit: every write
    is an explicit ``transaction()`` block, and a read outside one leaves no
    transaction open behind it. ``password`` None: libpq's own sources
    (PGPASSWORD, PGPASSFILE)."""
    import psycopg

    secret: dict = {} if password is None else {"password": password}
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS, autocommit=True, **secret)
    except psycopg.Error as exc:
        raise StoreOffline(f"PostgreSQL store unreachable: {said(exc)}") from None


def schema_version(conn: Connection) -> int:
    row = conn.execute("SELECT to_regclass('leash_meta')").fetchone()
    if row is None or row[0] is None:
        return 0
    found = conn.execute("SELECT value FROM leash_meta WHERE key = 'schema_version'").fetchone()
    return int(found[0]) if found else 0


def migrate(conn: Connection, *, upgrade: bool = True) -> int:
    """Bring the schema to ``SCHEMA_VERSION``; the version it is at after.
    Without ``upgrade`` only an empty database gets the schema: one at an older
    version is refused (``leash daemon`` and ``leash doctor --repair`` upgrade
    it, so no other command changes the schema under a running fleet)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreOffline(f"the database's schema is version {version}; this leash knows {SCHEMA_VERSION}")
        if 0 < version < SCHEMA_VERSION and not upgrade:
            raise StoreOffline(f"the database's schema is version {version}, this leash needs {SCHEMA_VERSION}: "
                               "run `leash doctor --repair` or start `leash daemon` to upgrade it")
        for number in range(version + 1, SCHEMA_VERSION + 1):
            conn.execute(MIGRATIONS[number - 1])
            conn.execute("INSERT INTO leash_meta (key, value) VALUES ('schema_version', %s) "
                         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (str(number),))
    return SCHEMA_VERSION


class Database:
    """One PostgreSQL store's connections (see the module's docstring)."""

    def __init__(self, url: str, *, password: str | None = None, size: int = POOL_SIZE,
                 migrate_schema: bool = True, upgrade: bool = False, owner_url: str = "",
                 owner_password: str | None = None):
        """``migrate_schema``: create the schema in an empty database (and with
        ``upgrade``, bring an older one up to date); refuse one it cannot use.
        ``owner_url``: the schema owner's (None of it when it names ``url``)."""
        self.url = url
        self._password = password
        self.owner_url = owner_url if owner_url and owner_url != url else ""
        self._owner_password = owner_password
        self._idle: list = []
        self._idle_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self._local = threading.local()
        if migrate_schema:
            try:
                self._apply_schema(upgrade)
            except errors() as exc:
                hint = ("" if getattr(exc, "sqlstate", "") not in CANNOT_CHANGE_SCHEMA or self.owner_url else
                        " (this role cannot create or change the schema: give the owner's url in [store] owner_url "
                        "or LEASH_STORE_OWNER_URL)")
                raise StoreOffline(f"PostgreSQL store: the schema cannot be applied: {said(exc)}{hint}") from None

    def _apply_schema(self, upgrade: bool) -> None:
        """The schema at this leash's version, migrated by the owner (by this
        role when one serves both), and the runtime role granted what it lacks."""
        from leash.core.store.pgroles import grant_runtime, missing_grants, runtime_user

        with self.session() as conn:
            if not self.owner_url:
                migrate(conn, upgrade=upgrade)
                return
            role = runtime_user(conn)
            try:
                if schema_version(conn) == SCHEMA_VERSION and not missing_grants(conn, role):
                    return
            except errors():
                pass  # the runtime role cannot even look yet: the owner sets it up
        with self.owner_session() as owner:
            migrate(owner, upgrade=upgrade)
            if runtime_user(owner) != role:
                with owner.transaction():
                    grant_runtime(owner, role)

    @contextmanager
    def owner_session(self) -> Iterator[Connection]:
        """A connection of the schema's owner for the block (its own, closed
        after), or this thread's pooled one when one role serves both."""
        if not self.owner_url:
            with self.session() as conn:
                yield conn
            return
        conn = connect(self.owner_url, self._owner_password)
        try:
            yield conn
        finally:
            conn.close()

    @contextmanager
    def session(self) -> Iterator[Connection]:
        """This thread's connection for the block (the same one in nested blocks)."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        if not self._slots.acquire(timeout=POOL_WAIT_SECONDS):
            raise StoreOffline("PostgreSQL store: every connection stayed busy")
        conn = None
        try:
            conn = self._take()
            self._local.conn = conn
            yield conn
        finally:
            self._local.conn = None
            self._local.settle = None
            if conn is not None:
                self._give_back(conn)
            self._slots.release()

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction on this thread's connection (a savepoint when nested);
        a database error in it is ``StoreOffline`` and leaves nothing written."""
        with self.session() as conn:
            settle = getattr(self._local, "settle", None)
            if settle is not None:
                self._local.settle = None
                settle()
            try:
                with conn.transaction():
                    yield conn
            except errors() as exc:
                raise StoreOffline(f"PostgreSQL store: nothing was written: {said(exc)}") from None

    def before_next_write(self, settle: Callable[[], object] | None) -> None:
        """``settle()`` runs once, before this thread's next ``transaction()``
        begins (None: no longer). A reader holding a read-only snapshot on the
        thread's connection (``pghalts_unit``) ends it there, so whatever store
        writes next starts from the committed state, never inside the snapshot."""
        self._local.settle = settle

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A ``REPEATABLE READ, READ ONLY`` transaction on this thread's
        connection, begun by one statement (several reads that see one state)."""
        import psycopg

        with self.session() as conn:
            conn.isolation_level, conn.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
            try:
                with self.transaction() as held:
                    yield held
            finally:
                if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                    conn.isolation_level, conn.read_only = None, None

    def rows(self, query: str, params: tuple = ()) -> list[tuple]:
        """The rows of one read (its own implicit transaction unless inside
        one). A read outside a transaction whose kept connection turns out dead
        (the server restarted) is tried once more on a new one: reading twice
        changes nothing."""
        nested = getattr(self._local, "conn", None) is not None
        for attempt in (1, 2):
            with self.session() as conn:
                try:
                    return conn.execute(query, params).fetchall()
                except errors() as exc:
                    if nested or attempt == 2 or not conn.broken:
                        raise StoreOffline(f"PostgreSQL store: {said(exc)}") from None
        raise AssertionError("unreachable")

    def discard_idle(self) -> None:
        """Close the kept connections (the server went away: they are dead
        even if nothing has noticed yet)."""
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def listen(self, *, stop: Any = None, wake_seconds: float = LISTEN_WAKE_SECONDS) -> Iterator[dict | None]:
        """Change notices (``{"store", "key"}``) on a connection of their own,
        as they are committed; ``None`` first, after every (re)connect, meaning
        "re-read everything" (notices sent while not listening are not
        replayed). Ends when ``stop`` (an ``Event``) is set; raises
        ``StoreOffline`` when the connection is lost."""
        conn = connect(self.url, self._password)
        try:
            conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            yield None
            while stop is None or not stop.is_set():
                for notice in conn.notifies(timeout=wake_seconds):
                    try:
                        payload = json.loads(notice.payload)
                    except ValueError:
                        payload = None
                    yield payload if isinstance(payload, dict) else None
                    if stop is not None and stop.is_set():
                        return
        except errors() as exc:
            raise StoreOffline(f"PostgreSQL store: listening stopped: {said(exc)}") from None
        finally:
            conn.close()

    def notices(self, *, stop: Any, on_lost: Callable[[StoreOffline], object] | None = None,
                retry_seconds: float = RELISTEN_SECONDS) -> Iterator[dict | None]:
        """``listen`` for as long as ``stop`` (anything with ``is_set()``) is
        not set, connecting again after a loss (``on_lost(StoreOffline)`` is
        told of it): ``None`` after every (re)connect, "re-read everything",
        then each notice."""
        import time

        while not stop.is_set():
            try:
                yield from self.listen(stop=stop)
            except StoreOffline as exc:
                if on_lost is not None:
                    on_lost(exc)
                resume_at = time.monotonic() + retry_seconds
                while not stop.is_set() and time.monotonic() < resume_at:
                    time.sleep(LISTEN_WAKE_SECONDS / 5)

    def close(self) -> None:
        self.discard_idle()

    def _take(self) -> Connection:
        with self._idle_lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed and not conn.broken:
                    return conn
        return connect(self.url, self._password)

    def _give_back(self, conn: Connection) -> None:
        import psycopg

        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if conn.closed or conn.broken or not idle:
            conn.close()
            return
        with self._idle_lock:
            self._idle.append(conn)


def notify(conn: Connection, store: str, key: str = "") -> None:
    """Tell every listener ``store`` changed (at ``key``) once the transaction commits."""
    conn.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, json.dumps({"store": store, "key": key})))


def new_line(event: str, *, source: str, session_id: str, reason: str, now: float | None, extra: dict) -> dict:
    """A log line's head and extras, masked (no line holds a secret, whoever
    wrote its text); ``chain`` adds its place in the chain."""
    from leash.core.base.secrets import mask, mask_deep

    record: dict = {"timestamp": iso(now_seconds(now)), "event": event, "source": mask(str(source)),
                    "session_id": str(session_id), "reason": mask(str(reason))}
    record.update({key: mask_deep(value) for key, value in extra.items()})
    return record


def chain(conn: Connection, record: dict, *, key: MacKey | None = None) -> None:
    """Append ``record`` (its head keys and extras set) as the log's next line,
    inside the caller's transaction: the chain lock is held until it ends, so
    whatever the transaction also writes commits with the line or not at all.
    ``key`` (``core.logkey.MacKey``): the line's ``mac``."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (CHAIN_LOCK,))
    tip = conn.execute("SELECT seq, line FROM acklog ORDER BY seq DESC LIMIT 1").fetchone()
    named = conn.execute("SELECT max(head_seq) FROM log_state").fetchone()[0] or 0
    if named > (tip[0] if tip else 0):  # appending would take the lost line's seq and hide the loss
        raise StoreOffline(f"the ack log is shorter than its head (a state names line {named}, the log ends at "
                           f"{tip[0] if tip else 0}): nothing is appended — leash doctor")
    record["seq"] = tip[0] + 1 if tip else 1
    record["prev"] = json.loads(tip[1])["hash"] if tip else GENESIS_HASH
    record["hash"] = chain_hash(record["prev"], record)
    if key is not None:
        record["mac"] = key.sign(record["hash"])
    conn.execute("INSERT INTO acklog (seq, ts, event, session_id, source, line) VALUES (%s, %s, %s, %s, %s, %s)",
                 (record["seq"], record["timestamp"], record["event"], record["session_id"], record["source"],
                  json.dumps(record, ensure_ascii=True)))
    notify(conn, "acklog")


def as_json(value: object) -> Any:
    """``value`` as a parameter for a jsonb column."""
    from psycopg.types.json import Jsonb

    return Jsonb(value)
