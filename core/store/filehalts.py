"""The file backend's halt store: ``halts.db`` through the halt API
(``core.state.halts.api``), its answers made records
(``core.store.records_halts``; a check's ``CheckResult``). Built on first use
by ``FileBackend``; the gate's unit reads come through here on every tool call
that may halt, so the records' module is imported only by the members that
answer them.

Failure: ``HaltStoreUnavailable`` when halts.db cannot be read; a check then
answers the fail-safe halt (``core.policy.halts.decision``). With no halts.db
yet a unit reads "active", no halts and no evidence.
"""
from __future__ import annotations

TYPE_CHECKING = False  # for the type checker only: the gate reads halts through this module
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from leash.core.policy.halts.outcomes import CheckResult, HaltQuery
    from leash.core.state.acklog import AckLog
    from leash.core.store.records_halts import (
        AcknowledgedHalt,
        HaltConditionConfig,
        HaltConfigChange,
        HaltEventRecord,
        HaltListing,
        HaltRecord,
        RecordedHalt,
    )


class FileHaltUnit:
    """Reads over one connection to halts.db (None when there is no halts.db)."""

    def __init__(self, connection: sqlite3.Connection | None, home: str, now: float | None = None):
        self.connection = connection
        self.home = home
        self.now = now

    def state(self, session_id: str) -> str:
        if self.connection is None:
            return "active"
        from leash.core.state.halts.api import session_state

        return session_state(self.home, session_id, connection=self.connection)

    def states(self) -> dict[str, str]:
        from leash.core.state.halts.api import session_states

        return session_states(self.connection) if self.connection is not None else {}

    def pending(self, *, session_id: str | None = None, limit: int = 50) -> list[HaltRecord]:
        if self.connection is None:
            return []
        from leash.core.state.halts.api import get_session_halts
        from leash.core.store.records_halts import HaltRecord

        query = {"pending": True, "limit": limit, **({"session_token": session_id} if session_id else {})}
        return [HaltRecord.of(h) for h in get_session_halts(query, home=self.home, connection=self.connection)["halts"]]

    def pending_counts(self) -> dict[str, int]:
        from leash.core.state.halts.api import pending_counts
        from leash.core.state.halts.store import SEVERITIES

        return pending_counts(self.connection) if self.connection is not None else {s: 0 for s in SEVERITIES}

    def files_read(self, session_id: str) -> list[str] | None:
        if self.connection is None:
            return None
        from leash.core.state.halts.api import files_read

        return files_read(self.home, session_id, connection=self.connection)

    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None) -> CheckResult:
        """Over this unit's connection; with no halts.db yet, as ``FileHalts.check``
        (it creates one only when something is recorded)."""
        from leash.core.state.halts.api import check_halts

        return check_halts(data, home=self.home, now=self.now, record=record, record_high=record_high,
                           connection=self.connection)


class _HaltUnitScope:
    def __init__(self, home: str, now: float | None, *, kept: bool = False):
        from leash.core.state.halts.api import connected, reading

        self.home = home
        self.now = now
        self.connected = reading(home, now) if kept else connected(home, now)

    def __enter__(self) -> FileHaltUnit:
        return FileHaltUnit(self.connected.__enter__(), self.home, self.now)

    def __exit__(self, *exc_info: Any) -> None:
        self.connected.__exit__(*exc_info)


class FileHalts:
    """``keep_connection``: every unit over the one connection this process
    keeps (``reading``), as a long-lived process (leashd) wants."""

    def __init__(self, home: str, acklog: AckLog | None = None, *, keep_connection: bool = False):
        self.home = home
        self.keep_connection = keep_connection

    def unit(self, *, now: float | None = None) -> _HaltUnitScope:
        return _HaltUnitScope(self.home, now, kept=self.keep_connection)

    def record(self, data: dict, *, now: float | None = None) -> RecordedHalt:
        from leash.core.state.halts.api import record_halt
        from leash.core.store.records_halts import RecordedHalt

        return RecordedHalt.of(record_halt(data, home=self.home, now=now))

    def acknowledge(self, halt_id: str, session_id: str, resolution: str, *, notes: str | None = None,
                    caution: bool = False, source: str | None = None, now: float | None = None) -> AcknowledgedHalt:
        from leash.core.state.halts.api import acknowledge_halt, acknowledge_input
        from leash.core.store.records_halts import AcknowledgedHalt

        data = acknowledge_input(halt_id, session_id, resolution, notes=notes, caution=caution)
        return AcknowledgedHalt.of(acknowledge_halt(data, home=self.home, now=now, source=source))

    def state(self, session_id: str, *, now: float | None = None) -> str:
        from leash.core.state.halts.api import session_state

        return session_state(self.home, session_id, now=now)

    def listing(self, query: HaltQuery, *, now: float | None = None) -> HaltListing:
        from leash.core.state.halts.api import get_session_halts
        from leash.core.store.records_halts import HaltListing

        return HaltListing.of(get_session_halts(query.as_input(), home=self.home, now=now))

    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None,
              now: float | None = None) -> CheckResult:
        from leash.core.state.halts.api import check_halts

        return check_halts(data, home=self.home, now=now, record=record, record_high=record_high)

    def find(self, halt_id: str) -> HaltEventRecord | None:
        from leash.core.state.halts.api import find_halt
        from leash.core.store.records_halts import HaltEventRecord

        return HaltEventRecord.of(find_halt(halt_id, home=self.home))

    def config(self) -> list[HaltConditionConfig]:
        from leash.core.state.halts.api import list_config
        from leash.core.store.records_halts import HaltConditionConfig

        return [HaltConditionConfig.of(row) for row in list_config(home=self.home)]

    def configure(self, data: dict, *, now: float | None = None) -> HaltConfigChange:
        from leash.core.state.halts.api import update_halt_config
        from leash.core.store.records_halts import HaltConfigChange

        return HaltConfigChange.of(update_halt_config(data, home=self.home, now=now))

    def record_reads(self, session_id: str, paths: list[str], *, now: float | None = None) -> None:
        from leash.core.state.halts.evidence import record_files_read

        record_files_read(self.home, session_id, paths, now=now)

    def record_attempt(self, session_id: str, task_id: str, *, error: str | None, now: float | None = None) -> int:
        from leash.core.state.halts.evidence import record_attempt

        return record_attempt(self.home, session_id, task_id, error=error, now=now)

    def reading(self, *, now: float | None = None) -> _HaltUnitScope:
        """Over the connection this process keeps open for its repeated reads
        (``core.halts.access.reading``): no WAL file comes and goes per read."""
        return _HaltUnitScope(self.home, now, kept=True)
