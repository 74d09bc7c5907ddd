"""What every backend offers: one ``typing.Protocol`` per store and ``Backend``.

Callers hold a ``Backend`` and its stores; they never see paths, file
descriptors or SQL connections. Times are injected with keyword-only ``now=``
(seconds since the epoch). Records are the classes of
``leash.core.store.records`` (and ``records_halts``, ``records_warrants``,
``records_budget``). This module holds the ack log's, the stops', the locks' and
the sessions' protocols, the transaction's and ``Backend``; the halts' are
``core.store.protocols_halts``, the warrants', breakers', replies' and kennels'
``core.store.protocols_work``, the approvals' and the budget's
``core.store.protocols_budget``. ``leash.core.store.files.FileBackend`` is the
embedded backend; a shared one implements the same protocols and passes the same
contract tests (tests/store/test_store_contract.py). Every member answers a
record, a scalar or a collection of them, never a bare ``dict`` standing for
one (tests/project/test_typed_seam.py).

Failure: each store raises what its documentation names (``NotStopped``,
``NotLocked``, ``HandsOffError``, ``StopStateUnreadable``,
``HaltStoreUnavailable``, ``HaltRefused``, ``WarrantError``,
``UnknownApproval``, ``AmbiguousApproval``, ``ApprovalClosed``, ``ValueError``
for a bad name); a reader that cannot read the stop state raises rather than
answering "not stopped", so the gate can fail closed. These modules are for type
checking and documentation: nothing on the hook path imports them.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, ContextManager, Iterator, Protocol

from leash.core.base.finding import Finding
from leash.core.store.protocols_budget import ApprovalStore, BudgetStore
from leash.core.store.protocols_halts import HaltStore
from leash.core.store.protocols_work import BreakerStore, KennelRegistry, ReplyLedger, WarrantStore
from leash.core.store.records import (
    ChainAnchor,
    Change,
    LockRecord,
    LogLine,
    LogLines,
    SessionRecord,
    StopRecord,
    StopState,
)


class ChainStatus(Protocol):
    """What ``AckLogStore.verify`` says of the hash chain: a
    ``core.base.logverify.ChainReport``, or its attributes as they come
    through leashd (``core.store.remote``)."""

    ok: bool
    lines: int
    first_broken_line: int | None
    problem: str
    torn_bytes: int  # a final line without its newline, skipped
    torn_file_bytes: int  # bytes set aside in the .torn file
    macs: str  # what was found of the lines' MACs ("" when there is nothing to say)


class AckLogStore(Protocol):
    """The hash-chained log every control action is appended to first."""

    def append(self, event: str, *, source: str, session_id: str, reason: str = "", now: float | None = None,
               **extra: object) -> LogLine:
        """The line appended (masked, chained after the last one); ``ValueError`` for an unknown ``event``."""

    def read(self, *, session: str | None = None, event: str | None = None, since: float | None = None,
             source: str | None = None) -> LogLines:
        """The matching lines, with the counts of what could not be read."""

    def tail(self, count: int) -> list[LogLine]:
        """The last ``count`` lines, oldest first ([] for an empty log)."""

    def follow(self, *, from_start: bool = True, stop_after: float | None = None,
               poll_seconds: float = 0.25) -> Iterator[LogLine]:
        """Each line as it is appended (from the first with ``from_start``), until ``stop_after`` seconds pass."""

    def verify(self, *, anchor: ChainAnchor | None = None) -> ChainStatus:
        """What the hash chain says of itself (``anchor``: a head written down earlier that must still be there)."""


class StopStore(Protocol):
    def stop(self, session_id: str, *, source: str, reason: str = "", now: float | None = None,
             **extra: object) -> StopRecord:
        """The stop filed on the session (its line logged first); ``ValueError`` for a bad name."""

    def resume(self, session_id: str, *, source: str, reason: str = "", now: float | None = None) -> StopRecord:
        """The stop lifted; ``NotStopped`` when the session is not stopped."""

    def stop_fleet(self, *, source: str, reason: str = "", now: float | None = None) -> StopRecord:
        """The fleet stop filed: every session's next tool call is refused."""

    def resume_fleet(self, *, source: str, reason: str = "", now: float | None = None) -> StopRecord:
        """The fleet stop lifted; ``NotStopped`` when the fleet is not stopped."""

    def stopped(self, *, now: float | None = None) -> dict[str, StopRecord]:
        """Every stopped session by its key (``StopStateUnreadable`` when it cannot be read)."""

    def fleet(self, *, now: float | None = None) -> StopRecord | None:
        """The fleet stop, or None (``StopStateUnreadable`` when it cannot be read)."""

    def covering(self, names: list[str], *, tmux_session_id: str = "") -> tuple[str, str | None] | None:
        """("session", its key) of the stop holding a session known by ``names`` (or by the tmux
        session id it was bound to), ("fleet", None), or None: resuming that one frees it."""

    def current(self, *, now: float | None = None) -> StopState:
        """Sessions, fleet and tmux-id bindings in one read (``StopStateUnreadable`` when it cannot be read)."""


class LockStore(Protocol):
    def lock(self, entity: str, *, hours: float, reason: str = "", source: str, session_id: str | None = None,
             now: float | None = None) -> LockRecord:
        """The lock filed for ``hours`` (a later expiry already there is kept); ``ValueError`` for a bad entity."""

    def release(self, entity: str, *, source: str, reason: str = "", now: float | None = None) -> LockRecord:
        """The lock lifted; ``NotLocked`` when the entity is not hands-off."""

    def active(self, *, now: float | None = None) -> dict[str, LockRecord]:
        """Every lock in force by its entity (``HandsOffUnreadable`` when they cannot be read)."""

    def lock_of(self, entity: str, *, now: float | None = None) -> LockRecord | None:
        """The lock in force on ``entity``, or None."""

    def lock_for_path(self, file_path: str, *, cwd: str | None = None, now: float | None = None,
                      subtree: bool = False) -> LockRecord | None:
        """The first active ``path:`` lock covering the file (with ``subtree``: the directory or anything under it)."""

    def covering(self, names: list[str], *, tmux_session_id: str = "", now: float | None = None) -> LockRecord | None:
        """The first active lock on one of ``names`` or on the tmux session id it was bound to when
        filed; ``HandsOffUnreadable`` when the locks cannot be read (never "not locked")."""

    def view(self, *, now: float | None = None) -> LockStore:
        """These locks read once: every read of the view answers from that reading
        (one tool call's many path checks read the registry once)."""

    def has_path_locks(self, *, now: float | None = None) -> bool:
        """Whether any ``path:`` lock is in force (most calls need no path read then)."""


class SessionStore(Protocol):
    host: str  # this host's name in a store shared by many hosts; "" in a home of one

    def hosted(self, value: str) -> str:
        """A tmux session name, id or pane as the store keeps it (``HOST/value`` when shared)."""

    def observe(self, session_id: str, *, now: float | None = None, **fields: Any) -> SessionRecord | None:
        """Record that the session is alive (and what it does); the record as stored now."""

    def get(self, session_id: str, *, now: float | None = None) -> SessionRecord | None:
        """The session's record, or None when the hooks never saw it."""

    def all(self, *, now: float | None = None) -> dict[str, SessionRecord]:
        """Every session seen by its id."""

    def set_entity(self, session_id: str, entity: str, *, now: float | None = None) -> None:
        """Name the entity the session works on (its locks then cover it); nothing to return."""

    def lineage(self, session_id: str, *, now: float | None = None) -> list[str]:
        """The sessions this one was resumed or forked from, nearest first."""

    def predecessor_in_pane(self, session_id: str, pane: str, *, now: float | None = None) -> str:
        """The session that last ran in tmux pane ``pane`` before this one ("" when none)."""


class Transaction(Protocol):
    """Writes queued under ``Backend.transaction()``, applied as one step at its end."""

    results: list[StopRecord | LockRecord]
    """After the step: the records of the stop and lock writes, in order."""

    def stop(self, session_id: str, *, source: str, reason: str = "", **extra: object) -> None:
        """Queue a stop on the session (as ``StopStore.stop``); applied at the transaction's end."""

    def lock(self, entity: str, *, hours: float, source: str, reason: str = "",
             session_id: str | None = None) -> None:
        """Queue a lock on ``entity`` (as ``LockStore.lock``); applied at the transaction's end."""

    def set_entity(self, session_id: str, entity: str) -> None:
        """Queue naming the session's entity; applied at the transaction's end."""

    def full_stop(self, session_id: str, entity: str, *, hours: float, source: str, reason: str = "") -> None:
        """Stop, lock ``entity`` for the session and, unless it is a path
        pattern, make it the session's entity."""


class Backend(Protocol):
    """Every store of one home, whatever holds them. Read-only members: a
    backend may build a store on first use (the hook path never pays for the
    stores it does not call)."""

    @property
    def name(self) -> str:
        """"file", "postgres" or "remote": which backend this is."""

    @property
    def home(self) -> str:
        """This host's leash home (config.toml, sockets), whatever holds the stores."""

    @property
    def host(self) -> str:
        """This host's name where the stores are shared or leashd's; "" for one home's files."""

    @property
    def acklog(self) -> AckLogStore:
        """The ack log every control action is appended to first."""

    @property
    def stops(self) -> StopStore:
        """The stops on sessions and on the fleet."""

    @property
    def locks(self) -> LockStore:
        """The hands-off locks."""

    @property
    def sessions(self) -> SessionStore:
        """The agent sessions the hooks have seen."""

    @property
    def halts(self) -> HaltStore:
        """The halt conditions, events and acknowledgements (built on first use)."""

    @property
    def warrants(self) -> WarrantStore:
        """The death warrants and their dogs (built on first use)."""

    @property
    def breakers(self) -> BreakerStore:
        """The restart-loop breakers (built on first use)."""

    @property
    def replies(self) -> ReplyLedger:
        """The ledger of notification replies (built on first use)."""

    @property
    def kennels(self) -> KennelRegistry:
        """The kennels' heartbeats (built on first use)."""

    @property
    def approvals(self) -> ApprovalStore:
        """The agents' calls waiting for an operator (built on first use)."""

    @property
    def budget(self) -> BudgetStore:
        """Spend, cap counters, holds and subscription windows (built on first use)."""

    def transaction(self, *, now: float | None = None) -> ContextManager[Transaction]:
        """Stop, lock and entity writes queued in the block, applied as one step at its end."""

    def changes(self, *, debounce_ms: int = 150, stop_event: Any = None) -> AsyncIterator[Change]:
        """Each store that changed, once per debounced burst, until ``stop_event`` (a
        ``threading.Event``) is set."""

    def examine(self, *, repair: bool = False, now: float | None = None) -> Iterator[Finding]:
        """doctor's findings (``level``, ``subject``, ``message``)."""

    def close(self) -> None:
        """Let go of what the backend holds (connections, a pool); safe to call twice."""
