"""The protocols of the stores a worker and a supervisor use
(``core.store.protocols`` has the rest): a claimed warrant, the warrants, the
restart-loop breakers, the ledger of notification replies and the kennels'
heartbeats. Records are ``core.store.records_warrants``'s and
``core.store.records``'s.

Failure: as each member says (``WarrantError``, ``ValueError``); for type
checking and documentation only.
"""
from __future__ import annotations

from typing import Protocol, Sequence

from leash.core.store.records import BreakerRecord, LoopLimits
from leash.core.store.records_warrants import (
    DogRecord,
    DogState,
    HeartbeatRecord,
    KennelOwner,
    PardonRequest,
    WarrantListing,
    WarrantRecord,
)


class Claim(Protocol):
    """A warrant held by one worker until ``release()`` or ``complete()``."""

    warrant: WarrantRecord
    state: DogState  # where its dog is: the dog changes it, ``save()`` stores it

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

    def listing(self) -> WarrantListing:
        """``pending``, ``active``, ``completed``, ``quarantined`` and ``unreadable`` in one record."""

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

    def describe(self, name: str, *, limits: LoopLimits | None = None, now: float | None = None) -> BreakerRecord:
        """The breaker's boots and verdict by the limits its newest boot came with, over ``limits``
        (its ``[loop.NAME]`` settings, read once by the caller: ``records.loop_limits``), over the defaults."""

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
