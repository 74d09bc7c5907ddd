"""Kennel heartbeats, restart-loop breakers and the reply ledger on PostgreSQL.

``PgKennels`` (``KennelRegistry``): one ``kennels`` row per host, its
kennel's last heartbeat (the file backend's ``kennel.json`` keys); a kennel is
alive when its host's row is younger than ``HEARTBEAT_STALE_SECONDS`` and not
stopped; liveness is the heartbeat's age, never a signal to a pid.

``PgBreakers`` (``BreakerStore``): one ``breakers`` row per (host, name) with
its boots and the limits its supervisor passed with the newest; a breaker
guards a process of one host, as a home's breakers do. The rules are
``core.loopguard``'s (window, chain, future stamps, at most ``MAX_BOOTS_KEPT``),
and so are the warnings and ack-log lines (``loop_tripped``, ``loop_reset``),
each written in the transaction of its row.

``PgReplies`` (``ReplyLedger``): the ``replies`` table, one row per message
direction, shared by every host (a conversation is the channel's, not a
host's); a reply is pending while the newest row of a conversation is inbound.

Failure: as the file backend's. A heartbeat that cannot be read is no live
kennel; a breaker that cannot be read is not tripped, and a boot that cannot
be recorded is warned about and returned alone (fail open: a broken breaker
never wedges a gateway); boots that are not a list of numbers read as none and
are replaced on the next record. Everything else that cannot reach the
database raises ``StoreOffline`` (the stop hook treats a ledger error as "no
reply pending").
"""
from __future__ import annotations

import logging

from leash.core.base.clock import iso, now_seconds, parse_iso
from leash.core.base.statefile import StateCorrupt
from leash.core.state import loopguard
from leash.core.store.filestores import HEARTBEAT_STALE_SECONDS
from leash.core.store.pg import Database, StoreOffline, as_json, notify
from leash.core.store.pgacklog import PgAckLog
from leash.core.store.records import BreakerRecord, LoopLimits
from leash.core.store.records_warrants import HeartbeatRecord

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Sequence

    from leash.core.store.files import FileBackend
    from leash.core.store.pg import Connection

logger = logging.getLogger("leash.loopguard")


# ---------------------------------------------------------------- kennels
class PgKennels:
    """This host's kennel heartbeat in the ``kennels`` table."""

    def __init__(self, db: Database, log: PgAckLog, home: str, host: str):
        self.db, self.host = db, host

    def beat(self, *, pid: int, host: str, started_at: str, dogs: int, working: Sequence[str] = (),
             stopped: bool = False, now: float | None = None) -> HeartbeatRecord:
        moment = now_seconds(now)
        record: dict = {"pid": pid, "host": host, "started_at": started_at, "heartbeat_at": iso(moment),
                        "dogs": dogs, "working": sorted(working)}
        if stopped:
            record["stopped_at"] = iso(moment)
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO kennels (host, record, heartbeat_at, stopped) VALUES (%s, %s, to_timestamp(%s), "
                         "%s) ON CONFLICT (host) DO UPDATE SET record = EXCLUDED.record, "
                         "heartbeat_at = EXCLUDED.heartbeat_at, stopped = EXCLUDED.stopped",
                         (self.host, as_json(record), moment, stopped))
            notify(conn, "kennels", self.host)
        return HeartbeatRecord.of(record)

    def alive(self, *, now: float | None = None) -> HeartbeatRecord | None:
        """This host's running kennel, or None: none, stopped, stale or unreadable."""
        try:
            rows = self.db.rows("SELECT record FROM kennels WHERE host = %s AND NOT stopped", (self.host,))
        except StoreOffline:
            return None
        record = rows[0][0] if rows else None
        if not isinstance(record, dict) or record.get("stopped_at"):
            return None
        try:
            fresh = now_seconds(now) - parse_iso(record.get("heartbeat_at", "")) < HEARTBEAT_STALE_SECONDS
        except ValueError:
            return None
        return HeartbeatRecord.of(record) if fresh else None

    def copy_from(self, home: FileBackend, *, conn: Connection) -> int:
        """Nothing: a heartbeat says a kennel runs now, and a home is copied with none running."""
        return 0


# ---------------------------------------------------------------- breakers
def parsed_boots(name: str, boots: object) -> list[float]:
    """Stored boots as loopguard reads them; [] (with a warning) when they are not a list."""
    try:
        return loopguard.parse_boots({"boots": boots})
    except StateCorrupt as exc:
        logger.warning("restart-loop state %r unreadable (%s); breaker reads as not tripped", name, exc.detail)
        return []


class PgBreakers:
    """This host's restart-loop breakers in the ``breakers`` table."""

    def __init__(self, db: Database, log: PgAckLog, home: str, host: str):
        self.db, self.log, self.host = db, log, host

    def _boots(self, name: str) -> list[float]:
        rows = self.db.rows("SELECT boots FROM breakers WHERE host = %s AND name = %s", (self.host, name))
        return parsed_boots(name, rows[0][0]) if rows else []

    def _record(self, name: str, *, window_seconds: float, max_gap_seconds: float, moment: float,
                trip_at: int = 0, max_restarts: int | None = None, source: str = "leash") -> list[float]:
        """Store this boot and the limits it came with; with ``trip_at`` > 0,
        log ``loop_tripped`` in the same transaction when the loop reaches it.
        Best effort (loopguard's)."""
        loopguard.check_name(name)
        passed = loopguard.passed_limits(window_seconds, max_gap_seconds, max_restarts)
        try:
            with self.db.transaction() as conn:
                conn.execute("INSERT INTO breakers (host, name, boots) VALUES (%s, %s, '[]') ON CONFLICT DO NOTHING",
                             (self.host, name))
                stored, limits = conn.execute("SELECT boots, limits FROM breakers WHERE host = %s AND name = %s "
                                              "FOR UPDATE", (self.host, name)).fetchone()
                boots = loopguard.kept_boots(parsed_boots(name, stored) + [moment], window_seconds, max_gap_seconds,
                                        moment)
                conn.execute("UPDATE breakers SET boots = %s, limits = %s WHERE host = %s AND name = %s",
                             (as_json(boots), as_json({**loopguard.valid_limits(limits), **passed}), self.host,
                              name))
                size = loopguard.loop_size(boots, window_seconds, max_gap_seconds, moment)
                if 0 < trip_at <= size:
                    self.log.append("loop_tripped", source=source, session_id="", now=moment, name=name, boots=size,
                                    reason=f"{size} restart-interrupted boots, threshold {trip_at}: "
                                           "auto-resume skipped")
                notify(conn, "breakers", name)
            return boots
        except StoreOffline as exc:
            logger.warning("could not record restart-interrupted boot for %r: %s", name, exc)
            return [moment]

    def record_boot(self, name: str, *, window_seconds: float, max_gap_seconds: float = 0,
                    now: float | None = None) -> list[float]:
        return self._record(name, window_seconds=window_seconds, max_gap_seconds=max_gap_seconds,
                            moment=now_seconds(now))

    def tripped(self, name: str, *, max_restarts: int, window_seconds: float, max_gap_seconds: float = 0,
                now: float | None = None) -> bool:
        """Fails open: a breaker that cannot be read (or a bad name) is not tripped."""
        if max_restarts <= 0:
            return False
        moment = now_seconds(now)
        try:
            boots = self._boots(loopguard.check_name(name))
        except (StoreOffline, ValueError):
            return False
        return loopguard.loop_size(boots, window_seconds, max_gap_seconds, moment) >= max_restarts

    def check_and_record(self, name: str, *, max_restarts: int, window_seconds: float, max_gap_seconds: float = 0,
                         source: str = "leash", now: float | None = None) -> bool:
        moment = now_seconds(now)
        boots = self._record(name, window_seconds=window_seconds, max_gap_seconds=max_gap_seconds, moment=moment,
                             trip_at=max(0, max_restarts), max_restarts=max_restarts, source=source)
        return loopguard.loop_tripped(name, boots, max_restarts=max_restarts, window_seconds=window_seconds,
                                      max_gap_seconds=max_gap_seconds, moment=moment)

    def reset(self, name: str, *, source: str, reason: str = "", now: float | None = None) -> bool:
        """Forget the boots and log ``loop_reset``; False when there were none."""
        loopguard.check_name(name)
        with self.db.transaction() as conn:
            had = conn.execute("DELETE FROM breakers WHERE host = %s AND name = %s", (self.host, name)).rowcount > 0
            if had:
                self.log.append("loop_reset", source=source, session_id="", reason=reason, now=now, name=name)
                notify(conn, "breakers", name)
        return had

    def names(self) -> list[str]:
        return [name for (name,) in self.db.rows("SELECT name FROM breakers WHERE host = %s ORDER BY name",
                                                 (self.host,))]

    def copy_from(self, home: FileBackend, *, conn: Connection) -> int:
        """A home's breakers, as this host's, with the boots they keep."""
        names = home.breakers.names()
        for name in names:
            conn.execute("INSERT INTO breakers (host, name, boots, limits) VALUES (%s, %s, %s, %s)",
                         (self.host, name, as_json(home.breakers.describe(name).boots),
                          as_json(loopguard.stored_limits(name, home=home.home))))
        return len(names)

    def describe(self, name: str, *, limits: LoopLimits | None = None, now: float | None = None) -> BreakerRecord:
        """Its boots and verdict by the limits its supervisor passed with its
        newest boot, over ``limits`` (config.toml's ``[loop.NAME]``) and the defaults."""
        moment = now_seconds(now)
        rows = self.db.rows("SELECT boots, limits FROM breakers WHERE host = %s AND name = %s",
                            (self.host, loopguard.check_name(name)))
        boots = parsed_boots(name, rows[0][0]) if rows else []
        configured = {"loop": {name: limits.as_dict()}} if limits is not None else {}
        found = {**loopguard.thresholds(configured, name), **(loopguard.valid_limits(rows[0][1]) if rows else {})}
        size = loopguard.loop_size(boots, found["window_seconds"], found["max_gap_seconds"], moment)
        return BreakerRecord.of({"name": name, "boots": boots, "in_loop": size, **found,
                                 "tripped": found["max_restarts"] > 0 and size >= found["max_restarts"]})


# ---------------------------------------------------------------- replies
class PgReplies:
    """The reply ledger in the ``replies`` table (``core.replyledger``'s rule)."""

    def __init__(self, db: Database, log: PgAckLog, home: str, host: str):
        self.db = db

    def record(self, channel: str, key: str, direction: str, *, now: float) -> int:
        from leash.core.state.replyledger import DIRECTIONS

        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'in' or 'out', got {direction!r}")
        for what, value in (("channel", channel), ("key", key)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"a reply {what} must be a non-empty string")
        with self.db.transaction() as conn:
            (row_id,) = conn.execute("INSERT INTO replies (channel, key, direction, recorded_at) "
                                     "VALUES (%s, %s, %s, %s) RETURNING id", (channel, key, direction, now)).fetchone()
            notify(conn, "replies", str(row_id))
        return int(row_id)

    def copy_from(self, home: FileBackend, *, conn: Connection) -> int:
        """A home's reply ledger, every direction in the order it was recorded."""
        from leash.core.state.replyledger import messages

        rows = messages(home.home)
        for row in rows:
            conn.execute("INSERT INTO replies (channel, key, direction, recorded_at) VALUES (%s, %s, %s, %s)", row)
        return len(rows)

    def pending(self, channel: str, key: str) -> bool:
        rows = self.db.rows("SELECT direction FROM replies WHERE channel = %s AND key = %s ORDER BY id DESC LIMIT 1",
                            (channel, key))
        return bool(rows) and rows[0][0] == "in"
