"""``RemoteBackend``: the store protocols over leashd's operator socket, for a
process that cannot read the state home (an operator in the separated
profile) or should not (the console while a daemon runs).

Each call is one ``{"verb": "store", "store": ..., "method": ..., "args": ...,
"kwargs": ...}`` line and one reply. The daemon runs it on its own backend
(``core.daemon.storeverb``) and allows only the methods the store's protocol
names (``callable_methods``). Who acts is the daemon's business: a ``source`` or
``requester`` (an approval's ``by``) given here is replaced by the peer's user there. Records, the stop
state and ack-log reads travel as tagged JSON (``encode``/``decode``) and come
back as the same classes; the answers of ``PLAIN_ANSWERS`` (a warrant found or
pardoned, the spend totals: records of what were once plain dicts) travel as
those dicts, as they always did, and are made records again here. A halt unit's reads are separate calls, each in its
own unit of the daemon. A transaction is queued here and sent as one call.
The budget store offers its reads only: a budget unit holds its rows locked
until it ends, so it runs in the daemon (``RemoteStoreError`` here).

Failure: an error the store raises comes back as the same class when it is one
of ``errors()`` (``NotStopped``, ``HandsOffError``, ``StopStateUnreadable``,
``BudgetUnreadable`` ..., or a subclass of one, which comes back as that one);
anything else, and a daemon that cannot be reached, is ``RemoteStoreError``.
``follow``, claims and ``examine`` are not offered remotely: they belong to the
process that holds the store (the daemon's kennel, ``leash doctor`` on the home).
"""
from __future__ import annotations

import json
import socket

from leash.core.policy.halts.outcomes import CheckResult, HaltQuery
from leash.core.store import records, records_budget, records_halts, records_warrants

TYPE_CHECKING = False  # the protocols are for the type checker only
if TYPE_CHECKING:
    from typing import Any, AsyncIterator, Callable, Iterator

    from leash.core.base.finding import Finding
    from leash.core.store.protocols import AckLogStore, LockStore, SessionStore, StopStore
    from leash.core.store.protocols_budget import ApprovalStore, BudgetStore
    from leash.core.store.protocols_halts import HaltStore
    from leash.core.store.protocols_work import BreakerStore, KennelRegistry, ReplyLedger, WarrantStore

# What each store's protocol offers, minus what only the holder of the store may do.
NOT_REMOTE = frozenset({"follow", "claim_next", "claim_orphans", "unit", "reading"})
ACTOR_PARAMETERS = ("source", "requester", "by")


class RemoteStoreError(Exception):
    pass


def protocols() -> dict[str, type]:
    from leash.core.store import protocols as p
    from leash.core.store import protocols_budget as budget
    from leash.core.store import protocols_halts as halts
    from leash.core.store import protocols_work as work

    return {"acklog": p.AckLogStore, "stops": p.StopStore, "locks": p.LockStore, "sessions": p.SessionStore,
            "halts": halts.HaltStore, "warrants": work.WarrantStore, "breakers": work.BreakerStore,
            "replies": work.ReplyLedger, "kennels": work.KennelRegistry, "approvals": budget.ApprovalStore,
            "budget": budget.BudgetStore, "unit": halts.HaltUnit, "transaction": p.Transaction}


def callable_methods(protocol: type) -> frozenset[str]:
    return frozenset(name for name, value in vars(protocol).items()
                     if callable(value) and not name.startswith("_") and name not in NOT_REMOTE)


def errors() -> dict[str, type[Exception]]:
    from leash.core.state.halts.api import HaltRefused
    from leash.core.state.halts.store import HaltStoreUnavailable
    from leash.core.state.handsoff import HandsOffError, HandsOffUnreadable, NotLocked
    from leash.core.state.stop import NotStopped, StopStateUnreadable
    from leash.core.state.warrants import WarrantError
    from leash.core.store.approvals import AmbiguousApproval, ApprovalClosed, ApprovalsUnreadable, UnknownApproval
    from leash.core.store.budget import BudgetUnreadable

    found = (NotStopped, StopStateUnreadable, NotLocked, HandsOffError, HandsOffUnreadable, HaltRefused,
             HaltStoreUnavailable, WarrantError, UnknownApproval, AmbiguousApproval, ApprovalClosed,
             ApprovalsUnreadable, BudgetUnreadable, ValueError, KeyError, LookupError)
    return {cls.__name__: cls for cls in found}


# ------------------------------------------------------------------ tagged JSON
def encode(value: object) -> Any:
    """``value`` as tagged JSON: records, the stop state and ack-log reads keep their class."""
    if isinstance(value, HaltQuery):  # a listing's filter, sent as the seed's GetSessionHaltsInput
        return {"$halt_query": encode(value.as_input())}
    if isinstance(value, records.Record):
        return {"$record": type(value).__name__, "given": encode(value.as_dict()),
                "fields": {field: encode(getattr(value, field)) for field in value.FIELDS}}
    if isinstance(value, records.StopState):
        return {"$stop_state": {"sessions": encode(value.sessions), "fleet": encode(value.fleet),
                                "by_tmux_id": encode(value.by_tmux_id)}}
    if isinstance(value, records.LogLines):
        return {"$log_lines": [encode(line) for line in value], "torn_bytes": value.torn_bytes,
                "unreadable_lines": value.unreadable_lines}
    if isinstance(value, dict):
        return {"$dict": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [encode(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    fields = getattr(value, "__dict__", None) or {name: getattr(value, name)
                                                  for name in getattr(value, "__slots__", ())}
    return {"$object": {str(k): encode(v) for k, v in fields.items() if not k.startswith("_")}}


def decode(value: Any) -> Any:
    """What ``encode`` made, back as its classes (``RemoteStoreError`` for an untagged object)."""
    if isinstance(value, list):
        return [decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "$dict" in value:
        return {k: decode(v) for k, v in value["$dict"].items()}
    if "$object" in value:  # a report (``verify``'s): its attributes, read as attributes
        from types import SimpleNamespace

        return SimpleNamespace(**{k: decode(v) for k, v in value["$object"].items()})
    if "$halt_query" in value:
        return HaltQuery.of(decode(value["$halt_query"]))
    if "$record" in value:
        cls = records.KINDS.get(value["$record"])
        if cls is None:
            raise RemoteStoreError(f"not a record: {value['$record']!r}")
        record = cls.of(decode(value["given"]))
        for field, item in value["fields"].items():
            if field in cls.FIELDS:
                object.__setattr__(record, field, decode(item))
        return record
    if "$stop_state" in value:
        state = value["$stop_state"]
        return records.StopState(decode(state["sessions"]), decode(state["fleet"]), decode(state["by_tmux_id"]))
    if "$log_lines" in value:
        return records.LogLines([decode(line) for line in value["$log_lines"]], torn_bytes=value["torn_bytes"],
                                unreadable_lines=value["unreadable_lines"])
    raise RemoteStoreError("an untagged object in a store reply")


# Answers whose records stand for what the store once answered as plain dicts
# (the spend totals and meters, a warrant found or pardoned, the warrants' listing,
# a transaction's writes, a halt checked, recorded, acknowledged, listed or configured):
# leashd sends them as those dicts (its replies are byte for byte as they were,
# ``encode_answer``) and the client makes the records again (``remade``).
# (store, method) -> what makes the answer of its plain dicts.
PLAIN_ANSWERS: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("budget", "totals"): lambda rows: [records_budget.SpendTotal.of(row) for row in rows],
    ("warrants", "find"): lambda found: records_warrants.found_warrant(*found) if found is not None else None,
    ("warrants", "pardon"): lambda answer: (answer[0], records_warrants.DogRecord.of(answer[1])),
    ("warrants", "live_for"): records_warrants.WarrantRecord.of,
    ("warrants", "listing"): records_warrants.WarrantListing.of,
    ("budget", "meters"): lambda found: {session: {source: records_budget.MeterState.of(state)
                                                   for source, state in kept.items()}
                                         for session, kept in found.items()},
    ("transaction", "$apply"): list,  # made again by the client's transaction, which knows its writes
    # The halts' answers go as the seed's outputs (CheckHaltConditionsOutput, RecordHaltOutput, ...).
    ("halts", "check"): CheckResult.of,
    ("unit", "check"): CheckResult.of,
    ("halts", "record"): records_halts.RecordedHalt.of,
    ("halts", "acknowledge"): records_halts.AcknowledgedHalt.of,
    ("halts", "listing"): records_halts.HaltListing.of,
    ("halts", "config"): lambda rows: [records_halts.HaltConditionConfig.of(row) for row in rows],
    ("halts", "configure"): records_halts.HaltConfigChange.of,
}


def _plain(value: Any) -> Any:
    if isinstance(value, records.Record):
        return value.as_dict()
    if isinstance(value, CheckResult):
        return value.as_json()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def encode_answer(store: str, method: str, result: object) -> Any:
    """What leashd sends as the answer of ``store.method`` (``PLAIN_ANSWERS``: its records as plain dicts)."""
    return encode(_plain(result) if (store, method) in PLAIN_ANSWERS else result)


def remade(store: str, method: str, result: Any) -> Any:
    """A decoded answer as the store's method gives it (``PLAIN_ANSWERS``)."""
    make = PLAIN_ANSWERS.get((store, method))
    return make(result) if make is not None else result


RESUBSCRIBE_SECONDS = 2.0


async def subscribed_changes(path: str) -> AsyncIterator[records.Change]:
    """Changes from the daemon's ``subscribe`` stream (the console's live view), as
    ``Change`` records. While the daemon is away it asks for a full re-read
    every ``RESUBSCRIBE_SECONDS`` and subscribes again when it is back."""
    import asyncio

    from leash.core.store.records import Change
    from leash.core.wire.thinhook import connect

    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connect(conn, path)
            conn.setblocking(False)
            reader, writer = await asyncio.open_unix_connection(sock=conn)
        except OSError:
            conn.close()
            yield Change("*")
            await asyncio.sleep(RESUBSCRIBE_SECONDS)
            continue
        try:
            writer.write(b'{"verb": "subscribe"}\n')
            await writer.drain()
            yield Change("*")  # what changed while not subscribed
            while line := await reader.readline():
                change = json.loads(line).get("change")
                if isinstance(change, dict) and isinstance(change.get("store"), str):
                    key = change.get("key")
                    yield Change(change["store"], key if isinstance(key, str) else None)
        except (OSError, ValueError):
            pass
        finally:
            writer.close()


# ------------------------------------------------------------------ the client
class RemoteBackend:
    """A ``Backend`` whose every store is a ``RemoteStore``: each answers its
    protocol's methods by a call to the daemon (the type checker reads each
    store as its protocol)."""

    name = "remote"

    def __init__(self, operator_socket: str, *, timeout: float = 30.0):
        self.path = operator_socket
        self.timeout = timeout
        reply = self._exchange({"verb": "ping"})
        self.home: str = str(reply.get("home") or "")
        self.host: str = str(reply.get("host", ""))
        self.acklog: AckLogStore = RemoteStore(self, "acklog")
        self.stops: StopStore = RemoteStore(self, "stops")
        self.locks: LockStore = RemoteStore(self, "locks")
        # The daemon's own answer, not a remote call: "" unless its store is shared by many hosts.
        self.sessions: SessionStore = RemoteStore(self, "sessions", host=str(reply.get("shared_host") or ""))
        self.halts: HaltStore = RemoteStore(self, "halts")
        self.warrants: WarrantStore = RemoteStore(self, "warrants")
        self.breakers: BreakerStore = RemoteStore(self, "breakers")
        self.replies: ReplyLedger = RemoteStore(self, "replies")
        self.kennels: KennelRegistry = RemoteStore(self, "kennels")
        self.approvals: ApprovalStore = RemoteStore(self, "approvals")
        self.budget: BudgetStore = RemoteStore(self, "budget")

    def call(self, store: str, method: str, args: tuple, kwargs: dict) -> Any:
        """The daemon's answer to ``store.method(*args, **kwargs)``; what it raised, raised here."""
        reply = self._exchange({"verb": "store", "store": store, "method": method, "args": encode(list(args)),
                                "kwargs": encode(kwargs)})
        if "result" in reply:
            return decode(reply["result"])
        raised = errors().get(reply.get("raised", ""))
        message = reply.get("error", "no result")
        raise raised(message) if raised is not None else RemoteStoreError(message)

    def _exchange(self, message: dict) -> dict:
        from leash.core.wire.operator import DaemonUnreachable, request

        try:
            reply = request(self.path, message, timeout=self.timeout)
        except DaemonUnreachable as exc:
            raise RemoteStoreError(str(exc)) from None
        if "error" in reply and "raised" not in reply and "result" not in reply:
            raise RemoteStoreError(f"leash daemon: {reply['error']}")
        return reply

    def transaction(self, *, now: float | None = None) -> "RemoteTransaction":
        return RemoteTransaction(self, now)

    def close(self) -> None:
        """Nothing is held between calls: each opens its own connection."""

    def changes(self, *, debounce_ms: int = 150, stop_event: Any = None) -> AsyncIterator[records.Change]:
        """The daemon's own change stream (it debounces; ``debounce_ms`` is its)."""
        return subscribed_changes(self.path)

    def examine(self, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
        raise RemoteStoreError("leash doctor examines the stores where they are held: run it with the home")


class RemoteStore:
    """One store over the socket: every method its protocol names is a call (``RemoteBackend.call``)."""

    def __init__(self, backend: RemoteBackend, store: str, *, host: str = ""):
        self._backend, self._store = backend, store
        self.host = host  # the sessions store's: the daemon's own answer (see RemoteBackend)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            return remade(self._store, method, self._backend.call(self._store, method, args, kwargs))
        return call

    def unit(self, *, now: float | None = None) -> "RemoteUnit":
        if self._store == "budget":  # its rows stay locked for the unit: that cannot span calls
            raise RemoteStoreError("a budget unit runs where the store is held (leash daemon), not over its socket")
        return RemoteUnit(self._backend, now)

    reading = unit


class RemoteUnit:
    """A halt unit whose reads are each their own call (and unit) in the daemon."""

    def __init__(self, backend: RemoteBackend, now: float | None):
        self._backend, self._now = backend, now

    def __enter__(self) -> "RemoteUnit":
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            return remade("unit", method, self._backend.call("unit", method, args, {**kwargs, "$now": self._now}))
        return call


def _writes(steps: list[list]) -> list[tuple[str, str]]:
    """(stop | lock, its name) of each write that stores an entry, in the order the steps write them."""
    found: list[tuple[str, str]] = []
    for method, args, _ in steps:
        if method == "full_stop":  # its stop, then its lock (``core.store.transaction``)
            found += [("stop", args[0]), ("lock", args[1])]
        elif method in ("stop", "lock"):
            found.append((method, args[0]))
    return found


class RemoteTransaction:
    """Queued here, applied by the daemon as one transaction at the end."""

    def __init__(self, backend: RemoteBackend, now: float | None):
        self._backend, self._now = backend, now
        self._steps: list[list] = []
        self.results: list[records.StopRecord | records.LockRecord] = []

    def __enter__(self) -> "RemoteTransaction":
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        if kind is None:
            stored = self._backend.call("transaction", "$apply", (self._steps,), {"$now": self._now}) or []
            self.results = [records.StopRecord.of(entry, key=name) if written == "stop" else
                            records.LockRecord.of(entry, entity=name)
                            for (written, name), entry in zip(_writes(self._steps), stored, strict=True)]

    def __getattr__(self, method: str) -> Callable[..., None]:
        if method.startswith("_"):
            raise AttributeError(method)

        def queue(*args: Any, **kwargs: Any) -> None:
            self._steps.append([method, list(args), kwargs])
        return queue
