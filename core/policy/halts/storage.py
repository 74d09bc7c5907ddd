"""What the halt decision (``core.policy.halts.decision``) needs of a backend:
``HaltStorage`` reads evidence and writes what it is handed, and decides nothing.

One implementation per backend: ``core.state.halts.rows.FileHaltRows`` over
``halts.db`` and ``core.store.pghalts_unit.PgHaltRows`` over PostgreSQL. For
the type checker only: the decision imports this module under
``TYPE_CHECKING``, so the hook path never loads ``typing``.

Failure: a method that cannot reach its store raises ``HaltStoreUnavailable``
(``core.policy.halts.outcomes``); a write that raises changes nothing.
"""
from __future__ import annotations

from typing import Callable, Mapping, Protocol, Sequence

from leash.core.policy.halts.outcomes import Acknowledgement, NewHalt, Settled


class HaltStorage(Protocol):
    home: str
    """The state home: its config.toml holds ``[halts] record_high``."""

    def condition_config(self) -> dict[str, dict]:
        """Condition name -> its config as the engine reads it (``enabled``,
        ``severity``, ``threshold``, ``halt_type``, ``auto_escalate``,
        ``escalate_after_minutes``); the defaults when nothing is stored yet."""

    def stored_attempts(self, session_id: str, task_id: str) -> tuple[int, list[str]]:
        """The session's failed attempts in a row at the task, and their recent errors."""

    def reset_attempts(self, session_id: str, task_id: str, *, now: float) -> None:
        """Start the session's count at the task again (a call asked for a fresh start)."""

    def insert(self, halts: Sequence[NewHalt], *, now: float) -> None:
        """Store the halts as they are, each session's state as its halts now
        give it, and each halt's lines in the ack log: all in one write."""

    def settle(self, halt_id: str, allowed: Callable[[Mapping | None], Acknowledgement], *,
               now: float) -> Settled:
        """In one write: read the halt ``halt_id`` (None when there is none) and
        hand it to ``allowed``, which raises ``HaltRefused`` (nothing changes)
        or says what to write; write that, the session's state and the line."""

    def note_failed_check(self, session_id: str | None, problem: str, *, now: float) -> None:
        """Keep a note of a check that failed safe (``problem`` already masked);
        never raises."""
