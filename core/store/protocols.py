"""What every backend offers: one ``typing.Protocol`` per store and ``Backend``.

Callers hold a ``Backend`` and its stores; they never see paths, file
descriptors or SQL connections. Times are injected with keyword-only ``now=``
(seconds since the epoch). Records are the classes of
``leash.core.store.records``. ``leash.core.store.files.FileBackend`` is the
embedded backend; a shared one implements the same protocols and passes the same
contract tests (tests/store/test_store_contract.py).

Failure: each store raises what its documentation names (``NotStopped``,
``NotLocked``, ``HandsOffError``, ``StopStateUnreadable``,
``HaltStoreUnavailable``, ``HaltRefused``, ``WarrantError``,
``UnknownApproval``, ``AmbiguousApproval``, ``ApprovalClosed``, ``ValueError``
for a bad name); a reader that cannot read the stop state raises rather than
answering "not stopped", so the gate can fail closed. This module is for type
checking and documentation: nothing on the hook path imports it.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, ContextManager, Iterator, Protocol, Sequence

from leash.core.base.finding import Finding
from leash.core.policy.halts.outcomes import CheckResult, HaltQuery
from leash.core.store.records import (
    ApprovalRecord,
    BreakerRecord,
    BudgetCounterRecord,
    BudgetWindowRecord,
    ChainAnchor,
    Change,
    DogRecord,
    HaltEventRecord,
    HaltRecord,
    HeartbeatRecord,
    KennelOwner,
    LockRecord,
    LogLine,
    LogLines,
    MeterState,
    PardonRequest,
    SessionRecord,
    SpendRecord,
    SpendTotal,
    StopRecord,
    StopState,
    WarrantRecord,
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


class HaltUnit(Protocol):
    """One unit of work on the halt store: several reads that see one state."""

    def state(self, session_id: str) -> str:
        """The session's state from its halts: ``active``, ``halted`` or ``paused``."""

    def states(self) -> dict[str, str]:
        """Every session that is not ``active``, with its state."""

    def pending(self, *, session_id: str | None = None, limit: int = 50) -> list[HaltRecord]:
        """Halts waiting on a human (unacknowledged, escalated or timed out), most severe first."""

    def pending_counts(self) -> dict[str, int]:
        """How many halts wait on a human, per session."""

    def files_read(self, session_id: str) -> list[str] | None:
        """Files the session has read; None when it never reported any (no evidence either way)."""

    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None) -> dict:
        """``HaltStore.check`` inside this unit: the gate's reads and its check see one state."""


class HaltStore(Protocol):
    """Halts as records: the decision (``core.policy.halts.decision``) judges,
    the store keeps rows. Every member raises ``HaltStoreUnavailable`` when the
    store cannot be read or written, but ``check``, which then answers the
    fail-safe halt."""

    def unit(self, *, now: float | None = None) -> ContextManager[HaltUnit]:
        """A unit whose reads see one state (one transaction, or one halts.db connection)."""

    def record(self, data: dict, *, now: float | None = None) -> dict:
        """The seed's ``RecordHaltInput`` recorded: its ``RecordHaltOutput`` (the halt's id,
        when, whether it needs an acknowledgement). ``HaltInputError`` for input that is not valid."""

    def acknowledge(self, halt_id: str, session_id: str, resolution: str, *, notes: str | None = None,
                    caution: bool = False, source: str | None = None, now: float | None = None) -> dict:
        """A halt resolved, dismissed or escalated: the seed's ``AcknowledgeHaltOutput``
        (``session_can_resume``, ``warnings``). ``HaltRefused`` when it cannot be: no such halt,
        another session's, already resolved or dismissed, escalated again, or a critical one
        dismissed without ``caution``."""

    def state(self, session_id: str, *, now: float | None = None) -> str:
        """The session's state from its halts: ``active``, ``halted`` or ``paused``."""

    def listing(self, query: HaltQuery, *, now: float | None = None) -> dict:
        """The seed's ``GetSessionHaltsOutput`` (``total_count``, ``halts``,
        ``unacknowledged_count``) for ``query`` (``HaltQuery.of`` reads the seed's
        ``GetSessionHaltsInput``); ``HaltStoreUnavailable`` when the store cannot be read."""

    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None,
              now: float | None = None) -> CheckResult:
        """``data`` (the seed's ``CheckHaltConditionsInput``, read once into a check
        context) judged, recording what fires unless ``record`` is false;
        ``as_json()`` of the result is the seed's ``CheckHaltConditionsOutput``.
        ``HaltInputError`` for input that is not valid; a store that cannot be
        read answers the fail-safe halt, never raises."""

    def find(self, halt_id: str) -> HaltEventRecord | None:
        """One halt event by id, or by an unambiguous prefix of six characters or more."""

    def config(self) -> list[dict]:
        """Every condition's configuration row."""

    def configure(self, data: dict, *, now: float | None = None) -> dict:
        """The seed's ``update_halt_config``: previous and current values."""

    def reading(self, *, now: float | None = None) -> ContextManager[HaltUnit]:
        """A unit for a reader that reads again and again (the console): what it
        opens may be kept between units, and reading writes nothing a watcher of
        the store would take for a change."""

    def record_reads(self, session_id: str, paths: list[str], *, now: float | None = None) -> None:
        """Files the session read (its PostToolUse evidence, for modifying_unread_code)."""

    def record_attempt(self, session_id: str, task_id: str, *, error: str | None, now: float | None = None) -> int:
        """A failed (``error``) or successful attempt at a task; the failures in a row."""


class Claim(Protocol):
    """A warrant held by one worker until ``release()`` or ``complete()``."""

    warrant: WarrantRecord
    state: dict

    def renew(self, *, now: float | None = None) -> bool:
        """Whether the claim is still this worker's (its lease moved on); False: another worker took it."""

    def release(self) -> None:
        """Let the warrant go unfinished, for another worker to claim; nothing to return."""

    def complete(self, outcome: str, *, by: str | None = None, note: str = "", now: float | None = None,
                 timeouts: Sequence[float] = ()) -> DogRecord:
        """Seal the outcome (its ack-log lines and the epitaph, which names ``timeouts``), then release;
        the completed dog's record. A state already sealed (its worker died while completing) is
        completed again, never logged twice; ``WarrantError`` when another worker holds it now."""

    def save(self) -> None:
        """Store ``state`` as it is now, so a worker that takes the claim over resumes from it."""

    def pardon_request(self) -> PardonRequest | None:
        """An operator's pardon waiting for this warrant, or None."""


class WarrantStore(Protocol):
    def file(self, target: str, *, reason: str, requester: str = "operator",
             now: float | None = None) -> tuple[WarrantRecord, bool]:
        """(the warrant, True) when filed, (the live one, False) when the target has one; ``WarrantError``."""

    def pending(self) -> list[WarrantRecord]:
        """The warrants no worker has claimed yet, oldest first."""

    def active(self) -> list[DogRecord]:
        """The warrants being worked, with their dogs' states."""

    def completed(self, newest: int | None = None) -> list[DogRecord]:
        """The finished warrants (the ``newest`` of them when given), with their outcomes."""

    def claim_next(self, *, owner: KennelOwner, now: float | None = None) -> Claim | None:
        """The oldest pending warrant, now held by ``owner``; None when none waits."""

    def claim_orphans(self, *, owner: KennelOwner, skip: set[str] = ..., limit: int | None = None,
                      now: float | None = None) -> list[Claim]:
        """Active warrants whose worker is gone or whose lease lapsed, now held by ``owner``."""

    def pardon(self, warrant_id: str, *, source: str, reason: str = "",
               now: float | None = None) -> tuple[str, DogRecord]:
        """("pardoned", the completed dog) for a pending or idle warrant, pardoned at once;
        ("requested", the working dog) for a worked one, whose worker is asked.
        ``WarrantError`` for an unknown or finished warrant."""

    def find(self, warrant_id: str) -> tuple[str, WarrantRecord | DogRecord] | None:
        """("pending", the warrant) or ("active" | "completed", its dog) for an id or an unambiguous
        prefix; None when none has it; ``WarrantError`` for a prefix several have."""

    def live_for(self, target: str, target_id: str | None = None) -> WarrantRecord | None:
        """The pending or active warrant on this target (by its bound id when both have one), or None."""

    def listing(self) -> dict[str, list]:
        """``pending``, ``active``, ``completed``, ``quarantined`` and ``unreadable``."""

    def has_pending(self) -> bool:
        """Whether a warrant waits for a worker (cheap: a kennel asks every loop)."""

    def tidy(self) -> None:
        """A worker's housekeeping between heartbeats (the file backend removes
        reports of finished dogs it has filed away); never loses a record."""


class BreakerStore(Protocol):
    def record_boot(self, name: str, *, window_seconds: float, max_gap_seconds: float = 0,
                    now: float | None = None) -> list[float]:
        """The breaker's boots in its window, this one included."""

    def tripped(self, name: str, *, max_restarts: int, window_seconds: float, max_gap_seconds: float = 0,
                now: float | None = None) -> bool:
        """Whether ``max_restarts`` boots fell in ``window_seconds`` (a restart loop)."""

    def reset(self, name: str, *, source: str, reason: str = "", now: float | None = None) -> bool:
        """Whether there were boots to forget (the reset is logged); ``ValueError`` for a bad name."""

    def names(self) -> list[str]:
        """The breakers that have boots recorded, sorted."""

    def describe(self, name: str, *, config: dict | None = None, now: float | None = None) -> BreakerRecord:
        """The breaker's boots and verdict under ``config`` (its ``[loop]`` settings; the defaults when None)."""

    def check_and_record(self, name: str, *, max_restarts: int, window_seconds: float, max_gap_seconds: float = 0,
                         source: str = "leash", now: float | None = None) -> bool:
        """Record a boot and say whether the breaker is tripped (``loop_tripped`` logged when it trips)."""


class ReplyLedger(Protocol):
    def record(self, channel: str, key: str, direction: str, *, now: float) -> int:
        """The row id of one message (``direction`` "in" or "out") on ``channel`` about ``key``; ``ValueError``."""

    def pending(self, channel: str, key: str) -> bool:
        """Whether the newest message on ``channel`` about ``key`` is an inbound one (awaiting an answer)."""


class KennelRegistry(Protocol):
    """Kennel heartbeats; liveness is the heartbeat's age, never a signal to a pid."""

    def beat(self, *, pid: int, host: str, started_at: str, dogs: int, working: list[str] = ...,
             stopped: bool = False, now: float | None = None) -> HeartbeatRecord:
        """The kennel's heartbeat, written now (``stopped``: its last one)."""

    def alive(self, *, now: float | None = None) -> HeartbeatRecord | None:
        """The heartbeat of a kennel that beat recently, or None when none runs."""


class ApprovalStore(Protocol):
    """Agents' calls waiting for an operator, and how each ended
    (``core.approvals.store``; every change is an ack-log line first).

    For a console: ``pending()`` (oldest first) are the rows; a row's
    ``summary`` is one masked line, ``detail`` the command or the Edit's diff;
    ``answer(id, allow=True|False, by=..., via="console", message=..., note=...)``
    answers one (through leashd, ``by`` is the peer's user whatever is sent).
    ``ApprovalClosed`` (its text names who answered first and how) and
    ``UnknownApproval`` are the answers a human must be shown."""

    def request(self, session_id: str, tool: str, tool_input: object = None, *, kind: str = "permission",
                rule: str = "", timeout_s: float, now: float | None = None) -> ApprovalRecord:
        """Open one ("waiting", deadline now + ``timeout_s``); ``kind`` "permission" or "ask" (``rule``: its text)."""

    def answer(self, approval_id: str, *, allow: bool, by: str, via: str, message: str = "", note: str = "",
               now: float | None = None) -> ApprovalRecord:
        """The first answer wins: ``ApprovalClosed`` for a closed one, ``UnknownApproval`` for an unknown id,
        ``AmbiguousApproval`` for a prefix of several. ``via``: cli, console, serve, pane or leash."""

    def close(self, approval_id: str, outcome: str = "timeout", *, via: str = "leash",
              now: float | None = None) -> ApprovalRecord:
        """Leash closes a waiting one: "timeout" or "withdrawn" (``via`` "pane": Claude Code's own dialog
        was answered first); ``ApprovalClosed`` when it was answered."""

    def get(self, approval_id: str) -> ApprovalRecord:
        """By id or a unique prefix (``UnknownApproval``, ``AmbiguousApproval``)."""

    def pending(self, *, now: float | None = None) -> list[ApprovalRecord]:
        """The waiting ones, oldest first."""

    def recent(self, count: int = 20) -> list[ApprovalRecord]:
        """The last ``count`` closed ones, newest first."""


class BudgetUnit(Protocol):
    """One step on the budget store (``core.views.metering`` charges, holds,
    raises and releases through it): what it reads and writes lands together
    at its end, or not at all when it raises. A shared store locks each
    counter row ``counter`` reads until the step ends, so two hosts adding to
    one fleet cap add in turn."""

    def meter(self, session_id: str, source: str) -> MeterState | None:
        """What the meter kept for one source of a session (``source``: a file's
        path, or ``gemini`` for AfterModel payloads), None the first time."""

    def set_meter(self, session_id: str, source: str, state: MeterState) -> None:
        """Keep ``state`` as what the meter read of one source of a session; nothing to return."""

    def charge(self, spend: SpendRecord) -> None:
        """Add ``spend`` to the row of its (hour, session_id, model): usd, tokens
        and requests added, ``estimated`` kept once set, host/entity/cli the latest."""

    def counter(self, cap: str, bucket: str, period: str) -> BudgetCounterRecord | None:
        """The counter of (cap, bucket, period), None when none was written."""

    def put_counter(self, counter: BudgetCounterRecord) -> None:
        """Write ``counter`` (insert or replace its (cap, bucket, period) row)."""

    def counters(self, *, cap: str | None = None, held: bool | None = None) -> list[BudgetCounterRecord]:
        """Counters of one cap or all; ``held``: only held ones (True) or only others (False)."""

    def window(self, bucket: str, window: str) -> BudgetWindowRecord | None:
        """The subscription window as last reported for ``bucket``, or None."""

    def put_window(self, record: BudgetWindowRecord) -> None:
        """Write ``record`` (insert or replace its (bucket, window) row); nothing to return."""


class BudgetStore(Protocol):
    """Spend, cap counters, holds and subscription windows (``core.views.metering``
    writes; the gate reads ``holds``; ``leash costs``, ``leash budget`` and the
    console read the rest). Failure: ``BudgetUnreadable`` (``core.store.budget``)
    when the store cannot be read; ``holds`` raises it rather than answering
    "none", so the gate can fail closed."""

    def unit(self, *, now: float | None = None) -> ContextManager[BudgetUnit]:
        """One step of reads and writes that lands together at its end (``BudgetUnreadable``)."""

    def holds(self) -> list[BudgetCounterRecord]:
        """The counters held now (``held``): the gate's read on every tool call
        while caps are configured, so it is cheap (no database opened on the
        file backend)."""

    def counters(self, *, cap: str | None = None) -> list[BudgetCounterRecord]:
        """Every cap counter (of one ``cap`` when given); ``BudgetUnreadable``."""

    def spend(self, *, since: float | None = None, until: float | None = None,
              session_id: str | None = None) -> list[SpendRecord]:
        """Spend rows whose hour starts at or after ``since`` and before ``until``."""

    def totals(self, by: str, *, since: float | None = None, until: float | None = None) -> list[SpendTotal]:
        """Spend grouped ``by`` "session", "entity", "host", "model", "cli", "day" or
        "hour" (a UTC day or hour's start, unix seconds), largest ``usd`` first
        (``day``/``hour``: oldest first). ``ValueError`` for another ``by``."""

    def windows(self) -> list[BudgetWindowRecord]:
        """Every subscription window as last reported; ``BudgetUnreadable``."""

    def meters(self) -> dict[str, dict[str, MeterState]]:
        """Every session's kept meter states: session id -> source -> state."""


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
