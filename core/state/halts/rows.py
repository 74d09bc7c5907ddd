"""``HaltStorage`` over one home's ``halts.db``: the rows the halt decision
(``core.policy.halts.decision``) reads and the rows it hands back to write.
Storage only: nothing here decides whether a call halts, what is recorded or
which acknowledgement is refused.

The connection is one the caller holds (a hook's unit of reads), or one opened
here on first use (with the housekeeping every opener does) and closed by
``close()``. Reads of a home without ``halts.db`` answer the defaults and
create nothing; ``insert`` creates it. Each write is one ``BEGIN IMMEDIATE``
transaction holding the rows, the sessions' states and the ack-log lines
(``core.state.halts.ledger``): a line that cannot be appended rolls it back.

Failure: a database that cannot be opened raises ``HaltStoreUnavailable``;
what ``allowed`` raises in ``settle`` rolls the write back.
"""
from __future__ import annotations

import json
import os

from leash.core.base.clock import iso
from leash.core.policy.halts.outcomes import Acknowledgement, NewHalt, Settled
from leash.core.state.halts.access import _log, _open, default_config_read, load_config
from leash.core.state.halts.evidence import _stored_attempts
from leash.core.state.halts.store import exists, refresh_state, write

TYPE_CHECKING = False  # for the type checker only: typing is not imported on the hook path
if TYPE_CHECKING:
    from typing import Callable, Mapping, Sequence

FAILED_CHECKS_LOG = "halts_unavailable.jsonl"  # checks that failed safe, one JSON line each


class FileHaltRows:
    """``HaltStorage`` over ``halts.db`` in ``home`` (see the module's docstring)."""

    def __init__(self, home: str, *, now: float, connection=None, create: bool = False):
        """``create``: open (creating) ``halts.db`` for the first read too, as a
        write that follows needs it; else a home without one reads the defaults."""
        self.home, self.now = home, now
        self.connection = connection
        self._owned = False
        self._create = create

    def _connection(self, *, create: bool):
        if self.connection is None and (create or exists(self.home)):
            self.connection, self._owned = _open(self.home, self.now), True
        return self.connection

    def close(self) -> None:
        if self._owned and self.connection is not None:
            self.connection.close()
        self.connection, self._owned = None, False

    # ------------------------------------------------------------ reads
    def condition_config(self) -> dict[str, dict]:
        connection = self._connection(create=self._create)
        return load_config(connection, self.home) if connection is not None else default_config_read()

    def stored_attempts(self, session_id: str, task_id: str) -> tuple[int, list[str]]:
        connection = self._connection(create=False)
        return _stored_attempts(connection, session_id, task_id) if connection is not None else (0, [])

    # ------------------------------------------------------------ writes
    def reset_attempts(self, session_id: str, task_id: str, *, now: float) -> None:
        connection = self._connection(create=False)
        if connection is None:
            return
        with write(connection):
            connection.execute("UPDATE attempts SET count = 0, recent_errors = '[]', updated_at = ?"
                               " WHERE session_id = ? AND task_id = ?", (iso(now), session_id, task_id))

    def insert(self, halts: Sequence[NewHalt], *, now: float) -> None:
        connection = self._connection(create=True)
        stamp = iso(now)
        with write(connection):
            for halt in halts:
                connection.execute(
                    "INSERT INTO halt_events (id, session_id, task_id, halt_type, severity, description, context,"
                    " triggered_at, acknowledged, resolution, attempt_count, previous_error, created_at,"
                    " updated_at, condition_name, escalate_at, auto_recorded)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (halt.id, halt.session_id, halt.task_id, halt.halt_type, halt.severity, halt.description,
                     json.dumps(halt.context) if halt.context is not None else None, stamp, halt.resolution,
                     halt.attempt_count, halt.previous_error, stamp, stamp, halt.condition_name,
                     iso(halt.escalate_at) if halt.escalate_at is not None else None,
                     1 if halt.auto_recorded else 0))
                refresh_state(connection, halt.session_id, stamp)
                row = halt.row()
                for line in halt.lines:
                    _log(connection, self.home, line.event, row, source=line.source, now=now, reason=line.reason,
                         **line.fields)

    def settle(self, halt_id: str, allowed: Callable[[Mapping | None], Acknowledgement], *,
               now: float) -> Settled:
        connection = self._connection(create=True)
        stamp = iso(now)
        with write(connection):
            row = connection.execute("SELECT * FROM halt_events WHERE id = ?", (halt_id,)).fetchone()
            change = allowed(row)
            connection.execute(
                "UPDATE halt_events SET acknowledged = 1, acknowledged_at = ?, acknowledged_by = ?, resolution = ?,"
                " resolution_notes = ?, updated_at = ? WHERE id = ?",
                (stamp, change.by, change.resolution, change.notes, stamp, halt_id))
            state = refresh_state(connection, row["session_id"], stamp)
            remaining = connection.execute("SELECT count(*) FROM halt_events WHERE session_id = ?"
                                           " AND acknowledged = 0", (row["session_id"],)).fetchone()[0]
            _log(connection, self.home, change.line.event, row, source=change.line.source, reason=change.line.reason,
                 now=now, **change.line.fields)
        return Settled(row, state, remaining)

    def note_failed_check(self, session_id: str | None, problem: str, *, now: float) -> None:
        note_failed_check(self.home, session_id, problem, now=now)


def note_failed_check(home: str, session_id: str | None, problem: str, *, now: float) -> None:
    """A check that failed safe, noted in ``halts_unavailable.jsonl`` (every
    backend's: the home is there when its database is not); never raises."""
    from leash.core.base.statefile import append_line

    line = json.dumps({"at": iso(now), "problem": problem, "session_token": session_id})
    try:
        append_line(os.path.join(home, FAILED_CHECKS_LOG), lambda: line.encode())
    except OSError:
        pass
