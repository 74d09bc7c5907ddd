"""The PostgreSQL backend's ``examine`` (``leash doctor``'s look at the shared store).

It reports the connection (the server, never the password), the schema
version against this leash's, the roles (``core.store.pgroles``: the log's
trigger, who could alter or rewrite the log, what the runtime role lacks), the
LISTEN channel (a notice sent on it comes back), the ack log's chain and macs,
each log-backed state (stops, locks) against the replay of the log, and
whether the budget tables can be read (their counters and holds).
``repair`` applies missing migrations and grants as the owner, switches the
trigger on again, and stores the replay in place of a state that differs from
it (logged as ``state_rebuilt``, and announced: every leashd's mirror reads it
again).

Failure: a server that cannot be reached is one ``fail`` finding and nothing
else is examined; nothing here raises. Nothing is rebuilt from a log that
does not verify, that lost the line a state names, or that holds lines of a
store its state never applied (inserted past leash): those stay failures.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from leash.core.base.finding import Finding
from leash.core.store.pg import NOTIFY_CHANNEL, SCHEMA_VERSION, StoreOffline, migrate, notify, schema_version

if TYPE_CHECKING:
    from leash.core.base.logverify import ChainReport
    from leash.core.store.pg import Database
    from leash.core.store.pgacklog import PgAckLog
    from leash.core.store.pgroles import Facts
    from leash.core.store.pgstate import PgLogState
    from leash.core.store.protocols_budget import BudgetStore


class SharedStore(Protocol):
    """What these checks read of the shared store (``core.store.postgres.PostgresBackend``:
    named here, not imported, as it imports this module to examine itself)."""

    @property
    def db(self) -> Database: ...

    @property
    def acklog(self) -> PgAckLog: ...

    @property
    def stops(self) -> Any: ...  # the registries' stores (``registry.state``: its PgLogState)

    @property
    def locks(self) -> Any: ...

    @property
    def budget(self) -> BudgetStore: ...


LISTEN_CHECK_SECONDS = 5.0


def examine(backend: SharedStore, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
    db = backend.db
    try:
        with db.session() as conn:
            server = conn.info.parameter_status("server_version") or "?"
            version = schema_version(conn)
        if version < SCHEMA_VERSION and repair:
            with db.owner_session() as owner:
                migrate(owner, upgrade=True)
            yield Finding("fixed", "store", f"schema migrated from version {version} to {SCHEMA_VERSION}")
            version = SCHEMA_VERSION
    except (StoreOffline, *_driver_errors()) as exc:
        yield Finding("fail", "store", f"PostgreSQL unreachable: {' '.join(str(exc).split())[:300]}")
        return
    yield Finding("ok", "store", f"PostgreSQL {server} at {_where(db.url)}")
    if version == SCHEMA_VERSION:
        yield Finding("ok", "store", f"schema version {version}")
    else:
        yield Finding("fail", "store", f"schema version {version}, this leash needs {SCHEMA_VERSION} "
                                       "— run `leash doctor --repair` (or start `leash daemon`)")
        return  # the stores cannot be read against a schema this leash does not know
    yield from _roles(backend, repair)
    yield _listen_finding(db)
    yield from _acklog(backend.acklog.verify())
    from leash.core.store.pgstate import PgLogState

    for registry in (backend.stops.registry, backend.locks.registry):
        assert isinstance(registry.state, PgLogState)  # the shared store's log-backed rows
        yield from _examine_state(registry.state, repair=repair, now=now)
    yield _budget_finding(backend)


def _budget_finding(backend: SharedStore) -> Finding:
    """The budget tables read as the gate and ``leash budget`` read them (every host's holds are there)."""
    from leash.core.store.pgbudget import BudgetStoreOffline

    try:
        counters = backend.budget.counters()
    except BudgetStoreOffline as exc:
        return Finding("fail", "budget", f"the budget tables cannot be read: {' '.join(str(exc).split())[:300]} "
                                         "(the gate holds every session while it cannot read the holds)")
    held = sum(1 for counter in counters if counter.held)
    return Finding("ok", "budget", f"{len(counters)} cap counters, {held} held")


def _roles(backend: SharedStore, repair: bool) -> Iterator[Finding]:
    """The trigger and what the runtime role may do (``core.store.pgroles``);
    ``repair`` mends them as the owner."""
    from leash.core.store import pgroles

    db = backend.db
    try:
        with db.session() as conn:
            facts = pgroles.Facts(conn)
        if repair and facts.mendable(owner=bool(db.owner_url)):
            yield from _mend_roles(db, facts)
            with db.session() as conn:
                facts = pgroles.Facts(conn)
        yield from pgroles.findings(facts)
    except (StoreOffline, *_driver_errors()) as exc:
        yield Finding("fail", "store", f"the roles cannot be checked: {' '.join(str(exc).split())[:300]}")


def _mend_roles(db: Database, facts: Facts) -> Iterator[Finding]:
    from leash.core.store.pgroles import mend

    try:
        with db.owner_session() as owner, owner.transaction():
            done = mend(owner, facts)
    except (StoreOffline, *_driver_errors()) as exc:
        yield Finding("fail", "store", f"could not mend the roles as the owner: {' '.join(str(exc).split())[:300]}")
        return
    for message in done:
        yield Finding("fixed", "store", message)


def _acklog(report: ChainReport) -> Iterator[Finding]:
    if report.ok:
        yield Finding("ok", "acklog", f"chain verified ({report.lines} lines)")
    elif report.first_broken_line is None or report.first_broken_line > report.lines:
        yield Finding("fail", "acklog", report.problem)
    else:
        yield Finding("fail", "acklog", f"chain broken at line {report.first_broken_line}: {report.problem}")
    if report.macs:
        yield Finding("ok" if report.macs.startswith("macs checked") else "warn", "acklog", report.macs)


def _examine_state(state: PgLogState, *, repair: bool, now: float | None) -> Iterator[Finding]:
    try:
        stored = state.snapshot(now=now)
        replayed, _ = state.replay(now=now)
        distrust = state.distrust()
    except Exception as exc:  # any failure is the finding: doctor must not die of the store it examines
        yield Finding("fail", state.store, f"{state.what} unreadable: {exc}")
        return
    if distrust and "does not verify" not in distrust:  # the chain's own finding says that one
        yield Finding("fail", "acklog", distrust)
    if stored == state.transform(replayed):
        yield Finding("ok", state.store, f"{state.what} agree with the ack log")
    elif distrust:
        yield Finding("fail", state.store, f"{state.what} differ from the ack log, and are not rebuilt from it: "
                                           f"{distrust}")
    elif repair:
        state.rebuild("differs from the ack log", now=now)
        yield Finding("fixed", state.store, f"{state.what} rebuilt from the ack log (every leashd reads them "
                                            "again)")
    else:
        yield Finding("fail", state.store, f"{state.what} differ from the ack log — run `leash doctor --repair`")


def _listen_finding(db: Database) -> Finding:
    """A notice sent on the channel comes back to a listener (what leashd's mirror and the console rely on)."""
    heard = threading.Event()
    stop = threading.Event()

    def listen() -> None:
        try:
            for notice in db.listen(stop=stop, wake_seconds=0.1):
                if notice is None:
                    ready.set()
                elif notice.get("store") == "doctor":
                    heard.set()
                    return
        except StoreOffline:
            ready.set()

    ready = threading.Event()
    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(LISTEN_CHECK_SECONDS)
    try:
        with db.session() as conn:
            notify(conn, "doctor")
    except StoreOffline as exc:
        stop.set()
        return Finding("fail", "store", f"LISTEN {NOTIFY_CHANNEL}: {exc}")
    heard.wait(LISTEN_CHECK_SECONDS)
    stop.set()
    thread.join(LISTEN_CHECK_SECONDS)
    if heard.is_set():
        return Finding("ok", "store", f"LISTEN {NOTIFY_CHANNEL}: a notice came back")
    return Finding("fail", "store", f"LISTEN {NOTIFY_CHANNEL}: no notice came back within "
                                   f"{LISTEN_CHECK_SECONDS:.0f} s (leashd's mirror would go stale)")


def _where(url: str) -> str:
    """The server part of ``url`` without user or password."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or "local socket"
    return f"{host}{':' + str(parts.port) if parts.port else ''}{parts.path or ''}"


def _driver_errors() -> tuple:
    from leash.core.store.pg import errors

    return errors()
