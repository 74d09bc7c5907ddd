"""``PostgresBackend``: every store of the seam in one PostgreSQL database shared by all hosts.

The ack log, stops, locks and sessions live in ``pgacklog`` and ``pgstate``
(the stop, lock and session registries of ``core`` over database rows); the
halt, warrant, breaker, reply, kennel, approval and budget stores register their makers in
``PG_STORES`` and are built on first use. Each store takes the one
``Database`` (a pool), the ack log (so a write and its line are one
transaction), this host's home (its ``config.toml``) and this host's name.
``changes()`` is LISTEN on the store's channel.

Failure: a database that cannot be reached raises ``StoreOffline`` when the
backend is opened; afterwards each store raises what its protocol names (the
stop and lock readers raise their "unreadable" errors, so the gate fails
closed). A change stream whose connection is lost says "re-read everything"
(a ``Change`` without a key for every store) once it is back.
"""
from __future__ import annotations

import asyncio
import os
import threading

from leash.core.store.files import RegistryLocks, RegistrySessions, RegistryStops
from leash.core.store.lazystores import LazyStores
from leash.core.store.pg import Database, StoreOffline
from leash.core.store.pgacklog import PgAckLog
from leash.core.store.pgstate import registries
from leash.core.store.records import Change

TYPE_CHECKING = False  # the protocols are for the type checker only
if TYPE_CHECKING:
    from typing import Any, AsyncIterator, Callable, ContextManager, Iterator

    from leash.core.base.finding import Finding
    from leash.core.store.protocols import Transaction
    from leash.core.store.protocols_budget import ApprovalStore, BudgetStore
    from leash.core.store.protocols_halts import HaltStore
    from leash.core.store.protocols_work import BreakerStore, KennelRegistry, ReplyLedger, WarrantStore

    # What builds a store on first use: (the database, the ack log, this host's home, this host's name).
    Maker = Callable[[Database, PgAckLog, str, str], Any]


def _halts(db: Database, log: PgAckLog, home: str, host: str) -> HaltStore:
    """The halt store (imported when first used: it loads the halt engine's rules)."""
    from leash.core.store.pghalts import PgHalts

    return PgHalts(db, log, home, host)


def _warrants(db: Database, log: PgAckLog, home: str, host: str) -> WarrantStore:
    from leash.core.store.pgwarrants import PgWarrants

    return PgWarrants(db, log, home, host)


def _small(name: str) -> Maker:
    """The maker of a ``pgsmall`` store (imported when first used)."""
    def make(db: Database, log: PgAckLog, home: str, host: str) -> BreakerStore | ReplyLedger | KennelRegistry:
        from leash.core.store import pgsmall

        return getattr(pgsmall, name)(db, log, home, host)

    return make


# store name -> maker(db, log, home, host), for the stores built on first use.
def _approvals(db: Database, log: PgAckLog, home: str, host: str) -> ApprovalStore:
    from leash.core.store.approvals import pg_approvals

    return pg_approvals(db, log, home, host)


def _budget(db: Database, log: PgAckLog, home: str, host: str) -> BudgetStore:
    from leash.core.store.pgbudget import PgBudget

    return PgBudget(db, log, home, host)


PG_STORES: dict[str, Maker] = {"halts": _halts, "warrants": _warrants, "breakers": _small("PgBreakers"),
                   "replies": _small("PgReplies"), "kennels": _small("PgKennels"), "approvals": _approvals,
                   "budget": _budget}
EVERY_STORE = ("acklog", "stops", "locks", "sessions", "halts", "warrants", "breakers", "replies", "kennels",
               "approvals", "budget")
STORE_OF_NOTICE = {"hands_off": "locks"}  # the log-backed states notify under their log store's name


class PostgresBackend(LazyStores):
    """The shared backend (see the module's docstring)."""

    name = "postgres"

    def __init__(self, url: str, *, home: str | os.PathLike, host: str, password: str | None = None,
                 mirrored: bool = False, offline_grace_s: float = 10.0, offline: str = "closed",
                 say: Callable[..., object] | None = None,
                 schema: str = "create", owner_url: str = "", owner_password: str | None = None):
        """``mirrored`` (leashd): stops, locks and sessions are answered from
        memory kept current by LISTEN, under the ``offline`` policy.
        ``schema``: "create" (an empty database gets it; an older one is
        refused), "upgrade" (leashd, doctor --repair) or "as-is" (doctor looks).
        ``owner_url``: the schema owner's (``core.store.pgroles``): it migrates
        and grants; "" when ``url``'s role is both."""
        from leash.core.base.home import ensure_home

        self.home = ensure_home(home)
        self.host = host
        self.url = url
        self.db = Database(url, password=password, migrate_schema=schema != "as-is", upgrade=schema == "upgrade",
                           owner_url=owner_url, owner_password=owner_password)
        self.acklog = PgAckLog(self.db, home=self.home)
        self.mirror = None
        if mirrored:
            from leash.core.store.pgmirror import Mirror

            self.mirror = Mirror(self.db, grace_seconds=offline_grace_s, policy=offline, say=say)
            if not self.mirror.start():
                self.close()
                raise StoreOffline("PostgreSQL store: LISTEN could not start")
        stops, locks, sessions = registries(self.acklog, self.home, host=host, mirror=self.mirror)
        self.stops, self.locks, self.sessions = RegistryStops(stops), RegistryLocks(locks), RegistrySessions(sessions)

    def _make(self, name: str) -> Any:
        return PG_STORES[name](self.db, self.acklog, self.home, self.host)

    def transaction(self, *, now: float | None = None) -> ContextManager[Transaction]:
        from leash.core.store.transaction import transaction

        return transaction(self.stops.registry, self.locks.registry, self.sessions.registry, now=now)

    async def changes(self, *, debounce_ms: int = 150, stop_event: Any = None) -> AsyncIterator[Change]:
        """Each store that changed, once per debounced burst, from LISTEN."""
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue = asyncio.Queue()
        halt = stop_event if stop_event is not None else threading.Event()
        thread = threading.Thread(target=self._listen, args=(loop, inbox, halt), name="pg-changes", daemon=True)
        thread.start()
        try:
            while not halt.is_set():
                try:
                    first = await asyncio.wait_for(inbox.get(), timeout=0.5)
                except asyncio.TimeoutError:
                    continue
                burst = [first]
                await asyncio.sleep(debounce_ms / 1000)
                while not inbox.empty():
                    burst.append(inbox.get_nowait())
                seen: list[Change] = []
                for change in burst:
                    if change not in seen:
                        seen.append(change)
                for change in seen:
                    yield change
        finally:
            if stop_event is None:
                halt.set()

    def _listen(self, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue, halt: threading.Event) -> None:
        connected_before = False
        try:
            for notice in self.db.notices(stop=halt):
                if notice is None:
                    if connected_before:  # notices missed while away: everything is re-read
                        for store in EVERY_STORE:
                            loop.call_soon_threadsafe(inbox.put_nowait, Change(store))
                    connected_before = True
                    continue
                store = str(notice.get("store", ""))
                change = Change(STORE_OF_NOTICE.get(store, store), str(notice.get("key") or "") or None)
                loop.call_soon_threadsafe(inbox.put_nowait, change)
        except RuntimeError:  # the loop closed under us: nobody is listening any more
            return

    def examine(self, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
        from leash.core.store.pgcheck import examine

        return examine(self, repair=repair, now=now)

    def close(self) -> None:
        if self.mirror is not None:
            self.mirror.stop()
        self.db.close()
