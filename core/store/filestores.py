"""The file backend's warrant, breaker, reply, kennel, approval and budget stores
(its halt store is ``core.store.filehalts``).

Each delegates to the module that owns its file: ``WarrantQueue`` over ``warrants/`` and ``dogs/``, ``loopguard``
over ``<name>/restart_loop.json``, ``replyledger`` over ``replies.db`` and the
kennel's ``kennel.json``, ``core.store.budget`` over ``budget.db`` and
``budget-holds.json``. Built on first use by ``FileBackend``: the hook path
imports this module only for the budget store's holds (nothing costly is
imported here).

Failure: the owners' policies hold. ``HaltStoreUnavailable`` when halts.db
cannot be read; a breaker that cannot be read is not tripped; a kennel whose
heartbeat cannot be read or is older than ``HEARTBEAT_STALE_SECONDS`` is not
alive. A warrant claim is an object: its flock is the file backend's business,
and ``release()`` twice is harmless.
"""
from __future__ import annotations

import os

from leash.core.base.clock import iso, now_seconds
from leash.core.store.records import BreakerRecord, LoopLimits
from leash.core.store.records_warrants import (
    DogRecord,
    DogState,
    HeartbeatRecord,
    KennelOwner,
    PardonRequest,
    WarrantListing,
    WarrantRecord,
    found_warrant,
)

TYPE_CHECKING = False  # for the type checker only: the gate imports this module for the budget holds
if TYPE_CHECKING:
    from typing import Any, Callable, Sequence

    from leash.core.state.acklog import AckLog
    from leash.core.state.warrants.queue import WarrantQueue
    from leash.core.store.approvals import ApprovalRegistry
    from leash.core.store.budget import FileBudget
    from leash.core.store.filehalts import FileHalts
    from leash.core.store.protocols_work import Claim


# ---------------------------------------------------------------- warrants
class FileClaim:
    """A warrant this process holds (a held flock on its ``.claim`` file)."""

    def __init__(self, queue: WarrantQueue, state: dict, fd: int):
        self.queue = queue
        self.state = DogState.of(state)
        self.warrant = WarrantRecord.of(state.get("warrant") or {})
        self._fd: int | None = fd

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def held(self) -> bool:
        return self._fd is not None

    def renew(self, *, now: float | None = None) -> bool:
        """A file claim lasts as long as it is held: renewing only says whether it is."""
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            self.queue.release(self.id, fd)

    def save(self) -> None:
        from leash.core.base.statefile import write_json

        write_json(self.queue.active_path(self.id), self.state.as_dict())

    def pardon_request(self) -> PardonRequest | None:
        return PardonRequest.of(self.queue.pardon_request(self.id))

    def complete(self, outcome: str, *, by: str | None = None, note: str = "", now: float | None = None,
                 timeouts: Sequence[float] = ()) -> DogRecord:
        """Seal the outcome (ack-log lines, epitaph, ``dogs/completed``), then release."""
        from leash.core.state.warrants.outcome import complete, finish

        if self._fd is None:
            raise RuntimeError(f"warrant {self.id} is not held")
        stored = self.state.as_dict()
        try:
            if self.state.state == "complete":  # sealed by a worker that died before filing it away
                done = complete(self.queue, stored, now=now_seconds(now), resumed=True)
            else:
                done = finish(self.queue, stored, outcome, now=now_seconds(now), timeouts=timeouts, by=by, note=note)
        finally:
            self.release()
        self.state.update(**done)  # sealed: its outcome and epitaph, as filed
        return DogRecord.of(done)


class FileWarrants:
    def __init__(self, home: str, acklog: AckLog | None = None):
        from leash.core.state.warrants.queue import WarrantQueue

        self.queue = WarrantQueue(home, acklog)

    def file(self, target: str, *, reason: str, requester: str = "operator",
             now: float | None = None) -> tuple[WarrantRecord, bool]:
        warrant, filed = self.queue.file(target, reason=reason, requester=requester, now=now)
        return WarrantRecord.of(warrant), filed

    def pending(self) -> list[WarrantRecord]:
        return [WarrantRecord.of(w) for w in self.queue.pending()]

    def active(self) -> list[DogRecord]:
        return [DogRecord.of(state) for state in self.queue.active()]

    def completed(self, newest: int | None = None) -> list[DogRecord]:
        return [DogRecord.of(state) for state in self.queue.completed(newest)]

    def claim_next(self, *, owner: KennelOwner, now: float | None = None) -> FileClaim | None:
        taken = self.queue.claim_next(owner=owner.as_dict(), now=now)
        return FileClaim(self.queue, *taken) if taken is not None else None

    def claim_orphans(self, *, owner: KennelOwner, skip: frozenset[str] | set[str] = frozenset(),
                      limit: int | None = None, now: float | None = None) -> list[Claim]:
        return [FileClaim(self.queue, state, fd) for state, fd in
                self.queue.claim_orphans(owner=owner.as_dict(), skip=set(skip), limit=limit, now=now)]

    def pardon(self, warrant_id: str, *, source: str, reason: str = "",
               now: float | None = None) -> tuple[str, DogRecord]:
        result, dog = self.queue.pardon(warrant_id, source=source, reason=reason, now=now)
        return result, DogRecord.of(dog)

    def find(self, warrant_id: str) -> tuple[str, WarrantRecord | DogRecord] | None:
        found = self.queue.find(warrant_id)
        return found_warrant(*found) if found is not None else None

    def live_for(self, target: str, target_id: str | None = None) -> WarrantRecord | None:
        return WarrantRecord.of(self.queue.live_for(target, target_id))

    def listing(self) -> WarrantListing:
        return WarrantListing.of(self.queue.listing())

    def has_pending(self) -> bool:
        return self.queue.has_pending()

    def tidy(self) -> None:
        """A finished dog's ``<id>.done`` is its report to the kennel (the
        seed's completion file); once its state is in ``dogs/completed`` the
        report has been read and goes."""
        self.queue.ensure_dirs()
        active = self.queue.active_dir
        for name in os.listdir(active):
            if name.endswith(".done") and os.path.exists(self.queue.completed_path(name[:-len(".done")])):
                try:
                    os.unlink(os.path.join(active, name))
                except FileNotFoundError:
                    pass


# ---------------------------------------------------------------- breakers
class FileBreakers:
    def __init__(self, home: str, acklog: AckLog | None = None):
        self.home = home

    def record_boot(self, name: str, *, window_seconds: float, max_gap_seconds: float = 0,
                    now: float | None = None) -> list[float]:
        from leash.core.state import loopguard

        return loopguard.record_restart_interrupted_boot(window_seconds, now=now, name=loopguard.check_name(name),
                                                         home=self.home, max_gap_seconds=max_gap_seconds)

    def tripped(self, name: str, *, max_restarts: int, window_seconds: float, max_gap_seconds: float = 0,
                now: float | None = None) -> bool:
        from leash.core.state import loopguard

        return loopguard.is_restart_loop_tripped(max_restarts, window_seconds, now=now, name=name, home=self.home,
                                                 max_gap_seconds=max_gap_seconds)

    def check_and_record(self, name: str, *, max_restarts: int, window_seconds: float, max_gap_seconds: float = 0,
                         source: str = "leash", now: float | None = None) -> bool:
        from leash.core.state import loopguard

        return loopguard.check_and_record(max_restarts, window_seconds, now=now, name=loopguard.check_name(name),
                                          home=self.home, max_gap_seconds=max_gap_seconds, source=source)

    def reset(self, name: str, *, source: str, reason: str = "", now: float | None = None) -> bool:
        from leash.core.state import loopguard

        return loopguard.reset(name=name, home=self.home, source=source, reason=reason, now=now)

    def names(self) -> list[str]:
        from leash.core.state import loopguard

        return loopguard.breaker_names(self.home)

    def describe(self, name: str, *, limits: LoopLimits | None = None, now: float | None = None) -> BreakerRecord:
        from leash.core.state import loopguard

        config = {"loop": {name: limits.as_dict()}} if limits is not None else None
        return BreakerRecord.of(loopguard.describe(name, home=self.home, config=config, now=now))


# ---------------------------------------------------------------- replies
class FileReplies:
    def __init__(self, home: str, acklog: AckLog | None = None):
        self.home = home

    def record(self, channel: str, key: str, direction: str, *, now: float) -> int:
        from leash.core.state import replyledger

        return replyledger.record(self.home, channel, key, direction, now=now)

    def pending(self, channel: str, key: str) -> bool:
        from leash.core.state import replyledger

        return replyledger.reply_pending(self.home, channel, key)


# ---------------------------------------------------------------- kennels
KENNEL_NAME = "kennel.json"
HEARTBEAT_STALE_SECONDS = 5.0  # a heartbeat older than this is a dead kennel's


class FileKennels:
    """``kennel.json``: one heartbeat per home (pid, host, started_at,
    heartbeat_at, dogs, working, and stopped_at once it stopped)."""

    def __init__(self, home: str, acklog: AckLog | None = None):
        self.path = os.path.join(os.fspath(home), KENNEL_NAME)

    def beat(self, *, pid: int, host: str, started_at: str, dogs: int, working: Sequence[str] = (),
             stopped: bool = False, now: float | None = None) -> HeartbeatRecord:
        from leash.core.base.statefile import write_json

        moment = now_seconds(now)
        record = {"pid": pid, "host": host, "started_at": started_at, "heartbeat_at": iso(moment), "dogs": dogs,
                  "working": sorted(working)}
        if stopped:
            record["stopped_at"] = iso(moment)
        write_json(self.path, record)
        return HeartbeatRecord.of(record)

    def alive(self, *, now: float | None = None) -> HeartbeatRecord | None:
        """The heartbeat of a running kennel, or None: stopped, stale,
        unreadable, or from a pid on this host that is gone (a pid on another
        host is never signalled: the heartbeat's age speaks for it)."""
        import socket

        from leash.core.base.clock import parse_iso
        from leash.core.base.statefile import read_json

        try:
            data = read_json(self.path, None)
        except Exception:
            return None
        if not isinstance(data, dict) or data.get("stopped_at"):
            return None
        try:
            fresh = now_seconds(now) - parse_iso(data.get("heartbeat_at", "")) < HEARTBEAT_STALE_SECONDS
        except ValueError:
            return None
        if not fresh:
            return None
        if data.get("host") == socket.gethostname():
            try:
                os.kill(int(data.get("pid", 0)), 0)
            except (OSError, ValueError):
                return None
        return HeartbeatRecord.of(data)


def file_approvals(home: str, log: AckLog) -> ApprovalRegistry:
    """The approvals over ``approvals.json`` (``core.approvals.store``)."""
    from leash.core.store import approvals as store

    return store.file_approvals(home, log)


def file_budget(home: str, log: AckLog) -> FileBudget:
    """The budget store over ``budget.db`` and its holds mirror (``core.store.budget``)."""
    from leash.core.store.budget import FileBudget

    return FileBudget(home, log)


# store name -> maker(home, its AckLog), for the stores built on first use.
def file_halts(home: str, log: AckLog) -> FileHalts:
    from leash.core.store.filehalts import FileHalts

    return FileHalts(home, log)


STORES: dict[str, Callable[[str, AckLog], Any]] = {
    "halts": file_halts, "warrants": FileWarrants, "breakers": FileBreakers, "replies": FileReplies,
    "kennels": FileKennels, "approvals": file_approvals, "budget": file_budget}
