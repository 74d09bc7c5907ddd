"""The approvals' and the budget's protocols (``core.store.protocols`` has
the rest): agents' calls waiting for an operator; spend, cap counters, holds,
subscription windows and the unit the meter writes them in. Records are
``core.store.records``'s ``ApprovalRecord`` and ``core.store.records_budget``'s.

Failure: as each member says (``UnknownApproval``, ``AmbiguousApproval``,
``ApprovalClosed``, ``BudgetUnreadable``); for type checking and documentation only.
"""
from __future__ import annotations

from typing import ContextManager, Protocol

from leash.core.store.records import ApprovalRecord
from leash.core.store.records_budget import (
    BudgetCounterRecord,
    BudgetWindowRecord,
    MeterState,
    SpendRecord,
    SpendTotal,
)


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
