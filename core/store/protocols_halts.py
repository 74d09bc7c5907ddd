"""The halts' protocols (``core.store.protocols`` has the rest): a unit of
reads that see one state, and the halt store. The decision
(``core.policy.halts.decision``) judges; a store keeps rows and answers
records (``core.store.records_halts``; a check's ``CheckResult``).

The seed's JSON documents a member takes (``record``'s ``RecordHaltInput``,
``configure``'s ``UpdateHaltConfigInput``, ``check``'s
``CheckHaltConditionsInput``) stay the parsed JSON: the decision validates each
once. Failure: as each member says (``HaltStoreUnavailable``, ``HaltRefused``,
``HaltInputError``); for type checking and documentation only.
"""
from __future__ import annotations

from typing import ContextManager, Protocol

from leash.core.policy.halts.outcomes import CheckResult, HaltQuery
from leash.core.store.records_halts import (
    AcknowledgedHalt,
    HaltConditionConfig,
    HaltConfigChange,
    HaltEventRecord,
    HaltListing,
    HaltRecord,
    RecordedHalt,
)


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

    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None) -> CheckResult:
        """``HaltStore.check`` inside this unit: the gate's reads and its check see one state
        (``data``: the seed's ``CheckHaltConditionsInput`` as parsed, validated once by the decision)."""


class HaltStore(Protocol):
    """Halts as records: the decision (``core.policy.halts.decision``) judges,
    the store keeps rows. Every member raises ``HaltStoreUnavailable`` when the
    store cannot be read or written, but ``check``, which then answers the
    fail-safe halt."""

    def unit(self, *, now: float | None = None) -> ContextManager[HaltUnit]:
        """A unit whose reads see one state (one transaction, or one halts.db connection)."""

    def record(self, data: dict, *, now: float | None = None) -> RecordedHalt:
        """``data`` (the seed's ``RecordHaltInput`` as parsed JSON, validated once by the
        decision) recorded: the halt's id, when, whether it needs an acknowledgement
        (``as_json()``: the seed's ``RecordHaltOutput``). ``HaltInputError`` for input
        that is not valid."""

    def acknowledge(self, halt_id: str, session_id: str, resolution: str, *, notes: str | None = None,
                    caution: bool = False, source: str | None = None, now: float | None = None) -> AcknowledgedHalt:
        """A halt resolved, dismissed or escalated: whether its session may resume and the
        ``warnings`` (``as_json()``: the seed's ``AcknowledgeHaltOutput``).
        ``HaltRefused`` when it cannot be: no such halt,
        another session's, already resolved or dismissed, escalated again, or a critical one
        dismissed without ``caution``."""

    def state(self, session_id: str, *, now: float | None = None) -> str:
        """The session's state from its halts: ``active``, ``halted`` or ``paused``."""

    def listing(self, query: HaltQuery, *, now: float | None = None) -> HaltListing:
        """The page of halts ``query`` asks for (``HaltQuery.of`` reads the seed's
        ``GetSessionHaltsInput``) with ``total_count`` and ``unacknowledged_count``
        (``as_json()``: the seed's ``GetSessionHaltsOutput``); ``HaltStoreUnavailable``
        when the store cannot be read."""

    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None,
              now: float | None = None) -> CheckResult:
        """``data`` (the seed's ``CheckHaltConditionsInput``, read once into a check
        context) judged, recording what fires unless ``record`` is false;
        ``as_json()`` of the result is the seed's ``CheckHaltConditionsOutput``.
        ``HaltInputError`` for input that is not valid; a store that cannot be
        read answers the fail-safe halt, never raises."""

    def find(self, halt_id: str) -> HaltEventRecord | None:
        """One halt event by id, or by an unambiguous prefix of six characters or more."""

    def config(self) -> list[HaltConditionConfig]:
        """Every condition's configuration (``as_dict()``: its row as ``leash halts config --json`` prints it)."""

    def configure(self, data: dict, *, now: float | None = None) -> HaltConfigChange:
        """``data`` (the seed's ``UpdateHaltConfigInput`` as parsed JSON, validated once by
        the decision) applied: previous and current settings (``as_json()``: the seed's
        ``UpdateHaltConfigOutput``). ``HaltInputError`` for a setting that is not valid,
        ``HaltRefused`` for a condition the store has no row for."""

    def reading(self, *, now: float | None = None) -> ContextManager[HaltUnit]:
        """A unit for a reader that reads again and again (the console): what it
        opens may be kept between units, and reading writes nothing a watcher of
        the store would take for a change."""

    def record_reads(self, session_id: str, paths: list[str], *, now: float | None = None) -> None:
        """Files the session read (its PostToolUse evidence, for modifying_unread_code)."""

    def record_attempt(self, session_id: str, task_id: str, *, error: str | None, now: float | None = None) -> int:
        """A failed (``error``) or successful attempt at a task; the failures in a row."""
