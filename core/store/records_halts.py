"""The halts' records (``core.store.protocols_halts``): a halt as a listing
shows it and as it is stored, and the answers of recording one,
acknowledging one, listing them and configuring a condition. Each answer's
``as_json()`` is the seed's output, byte for byte as leash prints and sends it
(``leash halts ... --json``, leashd's replies). The answer of a check is
``core.policy.halts.outcomes.CheckResult``, which the decision makes.

Records as ``core.store.records`` makes them (plain, slotted, built with
``of(dict)``); failure is theirs: ``of`` never raises on a missing key.
"""
from __future__ import annotations

from leash.core.store.records import Record

TYPE_CHECKING = False  # typing is for the type checker only
if TYPE_CHECKING:
    from typing import Any


class HaltRecord(Record):
    """One halt event (halts.db's ``halt_events`` row, as the API returns it)."""

    FIELDS = ("halt_id", "session_id", "task_id", "halt_type", "severity", "description", "condition_name",
              "acknowledged", "resolution", "triggered_at")
    __slots__ = FIELDS
    halt_id: str
    session_id: str
    task_id: str | None
    halt_type: str
    severity: str
    description: str
    condition_name: str
    acknowledged: bool
    resolution: str | None
    triggered_at: str


class HaltEventRecord(Record):
    """One stored halt, every column (``halts.db``'s ``halt_events`` row, the
    shared store's the same): what ``HaltStore.find`` gives."""

    FIELDS = ("id", "session_id", "task_id", "halt_type", "severity", "description", "context", "triggered_at",
              "acknowledged", "acknowledged_at", "acknowledged_by", "resolution", "resolution_notes",
              "attempt_count", "previous_error", "condition_name", "escalate_at", "auto_recorded")
    __slots__ = FIELDS
    id: str
    session_id: str
    task_id: str | None
    halt_type: str
    severity: str
    description: str
    context: Any
    triggered_at: str
    acknowledged: bool
    acknowledged_at: str | None
    acknowledged_by: str | None
    resolution: str | None
    resolution_notes: str | None
    attempt_count: int | None
    previous_error: str | None
    condition_name: str
    escalate_at: str | None
    auto_recorded: bool | None


class RecordedHalt(Record):
    """A halt recorded (``HaltStore.record``): its id, when (ISO-8601 UTC),
    whether it waits for an acknowledgement (all but a low one) and whether it
    escalated at once; ``as_json()`` is the seed's ``RecordHaltOutput``."""

    FIELDS = ("halt_id", "recorded_at", "requires_acknowledgment", "escalation_triggered")
    __slots__ = FIELDS
    halt_id: str
    recorded_at: str
    requires_acknowledgment: bool
    escalation_triggered: bool

    def as_json(self) -> dict[str, Any]:
        return self.as_dict()


class AcknowledgedHalt(Record):
    """A halt resolved, dismissed or escalated (``HaltStore.acknowledge``):
    when, whether its session may resume now, and the ``warnings`` a person
    should read (None when there are none); ``as_json()`` is the seed's
    ``AcknowledgeHaltOutput``."""

    FIELDS = ("confirmed", "halt_id", "acknowledged_at", "session_can_resume", "warnings")
    __slots__ = FIELDS
    confirmed: bool
    halt_id: str
    acknowledged_at: str
    session_can_resume: bool
    warnings: list[str] | None

    def as_json(self) -> dict[str, Any]:
        return self.as_dict()


class HaltListing(Record):
    """A page of halts (``HaltStore.listing``): the ``halts`` on it, how many
    match the query (``total_count``) and how many of the query's sessions'
    halts are unacknowledged; ``as_json()`` is the seed's ``GetSessionHaltsOutput``."""

    FIELDS = ("total_count", "halts", "unacknowledged_count")
    __slots__ = FIELDS
    NESTED = {"halts": HaltRecord}
    total_count: int
    halts: list[HaltRecord]
    unacknowledged_count: int

    def as_json(self) -> dict[str, Any]:
        return self.as_dict()


class HaltConditionConfig(Record):
    """A condition's configuration (``HaltStore.config``), or the settings of
    one a change reports (``HaltConfigChange``: those a caller may change,
    without ``condition_name`` and ``halt_type``)."""

    FIELDS = ("condition_name", "halt_type", "enabled", "severity", "threshold", "auto_escalate",
              "escalate_after_minutes")
    __slots__ = FIELDS
    condition_name: str | None
    halt_type: str | None
    enabled: bool
    severity: str
    threshold: dict
    auto_escalate: bool
    escalate_after_minutes: int | None


class HaltConfigChange(Record):
    """A condition's configuration changed (``HaltStore.configure``): whether
    anything changed, its settings before and after; ``as_json()`` is the
    seed's ``UpdateHaltConfigOutput``."""

    FIELDS = ("updated", "previous_values", "current_values")
    __slots__ = FIELDS
    NESTED = {"previous_values": HaltConditionConfig, "current_values": HaltConditionConfig}
    updated: bool
    previous_values: HaltConditionConfig
    current_values: HaltConditionConfig

    def as_json(self) -> dict[str, Any]:
        return self.as_dict()
