"""``HaltStore`` on PostgreSQL: the halt engine's store shared by every host.

The seed's ``halt_events`` and ``halt_conditions_config`` with real types
(``uuid`` ids that leash generates, ``jsonb`` context and thresholds, the
seed's enum types, ``timestamptz``) and its indexes, partial ones included;
plus leash's own tables as ``halts.db`` has them (``session_states``,
``attempts``, ``files_read``, ``tracked_sessions``, ``halt_events_archive``).
The schema is one element of ``pg.MIGRATIONS``; the default condition rows
are stored on first use (``ON CONFLICT DO NOTHING``, so a condition added
later gets its row too).

What a check, a record or an acknowledgement decides is the one decision
every backend calls (``core.policy.halts.decision``), handed this store's rows
(``pghalts_unit.PgHaltRows``); the rest of the rules are the file backend's
own functions (``core.state.halts.api``, ``evidence``, ``ledger``): this
module only moves rows. Every write
that changes a halt takes the ack log's chain lock first (so halt writers on
every host queue behind one another and never deadlock on rows), writes its
rows, appends the same ack-log lines as the file backend in the same
transaction (both commit or neither) and sends a ``halts`` change notice keyed
by the session. The evidence the hooks record (files read, attempts) is
written without a notice: it changes nothing a reader of halts shows.
Reads of a unit see one snapshot (``pghalts_unit``).

Failure: a database that cannot be reached or used raises
``HaltStoreUnavailable`` (one line, never the password), and ``check`` answers
the seed's fail-safe halt at critical severity, so the gate fails closed. Bad
input raises ``HaltInputError`` and a request the halt's state forbids
``HaltRefused``, as the file backend does; neither writes anything.
"""
from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from typing import Any, Iterator

from leash.core.base.clock import now_seconds
from leash.core.base.secrets import mask
from leash.core.policy.halts import decision
from leash.core.policy.halts.outcomes import CheckResult, HaltQuery, HaltRefused
from leash.core.state.halts import ledger
from leash.core.state.halts.access import TIMEOUT_REASON, _row_config
from leash.core.state.halts.evidence import next_attempts
from leash.core.state.halts.store import (
    ARCHIVE_AFTER_DAYS,
    ARCHIVE_EVERY_SECONDS,
    CONDITION_NAMES,
    DEFAULT_CONDITIONS,
    HaltStoreUnavailable,
    new_id,
)
from leash.core.store.pg import CHAIN_LOCK, Database, as_json, notify
from leash.core.store.pgacklog import PgAckLog
from leash.core.store.pghalts_unit import PgHaltRows, UnitScope, as_uuid, at, dicts, one, reachable, state_of
from leash.core.store.records_halts import (
    AcknowledgedHalt,
    HaltConditionConfig,
    HaltConfigChange,
    HaltEventRecord,
    HaltListing,
    RecordedHalt,
)

CONFIG_CACHE_SECONDS = 60  # the seed: condition config cached in memory, refreshed every 60 s
FIND_PREFIX_MIN = 6  # an id prefix shorter than this never names a halt
SWEEP_EVERY_SECONDS = 1.0  # deadlines are minutes apart: a hook looks for timed-out halts at most this often
ARCHIVE_KEY = "halts_last_archive_at"  # in leash_meta
_ORDER = {name: place for place, (name, *_) in enumerate(DEFAULT_CONDITIONS)}
_ID_PREFIX = re.compile(r"[0-9a-f-]+")


class PgHalts:
    """``HaltStore`` over the database (see the module's docstring)."""

    def __init__(self, db: Database, log: PgAckLog, home: str, host: str):
        self.db, self.log, self.home, self.host = db, log, home, host
        self._config_cache: tuple[float, dict[str, dict]] | None = None
        self._defaults_stored = False
        self._archived_at: float | None = None
        self._swept_at: float | None = None

    # ------------------------------------------------------------ units
    def unit(self, *, now: float | None = None) -> UnitScope:
        return UnitScope(self, now_seconds(now))

    def reading(self, *, now: float | None = None) -> UnitScope:
        """A unit like any other: the pool keeps its connections between units."""
        return UnitScope(self, now_seconds(now))

    def state(self, session_id: str, *, now: float | None = None) -> str:
        with self.unit(now=now) as unit:
            return unit.state(session_id)

    def listing(self, query: HaltQuery, *, now: float | None = None) -> HaltListing:
        with self.unit(now=now) as unit:
            return unit.listing_of(query)

    # ------------------------------------------------------------ the decision (core.policy.halts.decision)
    def check(self, data: dict, *, record: bool = True, record_high: bool | None = None,
              now: float | None = None) -> CheckResult:
        moment = now_seconds(now)
        ctx = decision.check_input(data)  # validated before the store is touched
        try:
            with self.unit(now=moment) as unit:
                return decision.check(PgHaltRows(self, unit, moment), ctx, record=record, record_high=record_high,
                                      now=moment)
        except HaltStoreUnavailable as exc:  # opening or closing the unit (the check answers its own failures)
            return decision.fail_safe(PgHaltRows(self, None, moment), ctx.session_id,
                                      f"database unavailable ({exc})", now=moment)

    def record(self, data: dict, *, now: float | None = None) -> RecordedHalt:
        decision.validate_record(data)  # before the store is touched
        moment = now_seconds(now)
        with reachable():
            self.housekeep(now=moment)
            return RecordedHalt.of(decision.record(PgHaltRows(self, None, moment), data, now=moment))

    def acknowledge(self, halt_id: str, session_id: str, resolution: str, *, notes: str | None = None,
                    caution: bool = False, source: str | None = None, now: float | None = None) -> AcknowledgedHalt:
        data = decision.acknowledge_input(halt_id, session_id, resolution, notes=notes, caution=caution)
        decision.acknowledge_request(data)  # before the store is touched
        moment = now_seconds(now)
        with reachable():
            self.housekeep(now=moment)
            return AcknowledgedHalt.of(decision.acknowledge(PgHaltRows(self, None, moment), data, by=source,
                                                           now=moment))

    def record_reads(self, session_id: str, paths: list[str], *, now: float | None = None) -> None:
        stamp = at(now_seconds(now))
        with reachable(), self.db.transaction() as conn:
            conn.execute("INSERT INTO tracked_sessions (session_id, since) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (session_id, stamp))
            if paths:
                conn.execute("INSERT INTO files_read (session_id, path, read_at) SELECT %s, path, %s"
                             " FROM unnest(%s::text[]) AS path ON CONFLICT (session_id, path)"
                             " DO UPDATE SET read_at = EXCLUDED.read_at",
                             (session_id, stamp, list(dict.fromkeys(paths))))

    def record_attempt(self, session_id: str, task_id: str, *, error: str | None, now: float | None = None) -> int:
        stamp = at(now_seconds(now))
        with reachable(), self.db.transaction() as conn:
            conn.execute("INSERT INTO attempts (session_id, task_id, count, recent_errors, updated_at)"
                         " VALUES (%s, %s, 0, '[]', %s) ON CONFLICT DO NOTHING", (session_id, task_id, stamp))
            row = conn.execute("SELECT count, recent_errors FROM attempts WHERE session_id = %s AND task_id = %s"
                               " FOR UPDATE", (session_id, task_id)).fetchone()
            count, errors = next_attempts(row[0], list(row[1]), error=error)
            conn.execute("UPDATE attempts SET count = %s, last_error = %s, recent_errors = %s, updated_at = %s"
                         " WHERE session_id = %s AND task_id = %s",
                         (count, errors[-1] if errors else None, as_json(errors), stamp, session_id, task_id))
        return count

    # ------------------------------------------------------------ config
    def config(self) -> list[HaltConditionConfig]:
        with reachable():
            self._config_cache = None
            rows = sorted(self._config().values(), key=lambda row: (_ORDER.get(row["condition_name"], len(_ORDER)),
                                                                   row["condition_name"]))
        return [HaltConditionConfig.of(row) for row in rows]

    def configure(self, data: dict, *, now: float | None = None) -> HaltConfigChange:
        changes = decision.config_request(data, known=CONDITION_NAMES)
        stamp = at(now_seconds(now))
        with reachable():
            self._store_defaults(now_seconds(now))
            with self.db.transaction() as conn:
                row = one(conn.execute("SELECT * FROM halt_conditions_config WHERE condition_name = %s FOR UPDATE",
                                       (data["condition_name"],)))
                if row is None:
                    raise HaltRefused(f"no condition {data['condition_name']!r} (leash halts config lists them)")
                current, answer = decision.config_answer(_row_config(_as_stored(row)), changes)
                if answer["updated"]:
                    conn.execute("UPDATE halt_conditions_config SET enabled = %s, severity = %s, threshold = %s,"
                                 " auto_escalate = %s, escalate_after_minutes = %s, updated_at = %s"
                                 " WHERE condition_name = %s",
                                 (current["enabled"], current["severity"], as_json(current["threshold"]),
                                  current["auto_escalate"], current["escalate_after_minutes"], stamp,
                                  data["condition_name"]))
                    notify(conn, "halts", "")
        self._config_cache = None
        return HaltConfigChange.of(answer)

    def _config(self) -> dict[str, dict]:
        """Condition name -> its config as the engine reads it (cached for ``CONFIG_CACHE_SECONDS``)."""
        cached = self._config_cache
        if cached is not None and time.monotonic() - cached[0] < CONFIG_CACHE_SECONDS:
            return cached[1]
        self._store_defaults(now_seconds())
        with self.db.session() as conn:
            rows = dicts(conn.execute("SELECT * FROM halt_conditions_config"))
        config = {row["condition_name"]: _row_config(_as_stored(row)) for row in rows}
        self._config_cache = (time.monotonic(), config)
        return config

    def _store_defaults(self, now: float) -> None:
        """Every default condition's row, once per process (rows already there are kept)."""
        if self._defaults_stored:
            return
        stored = {name for (name,) in self.db.rows("SELECT condition_name FROM halt_conditions_config")}
        missing = [row for row in DEFAULT_CONDITIONS if row[0] not in stored]
        if missing:
            with self.db.transaction() as conn:
                for name, halt_type, severity, threshold in missing:
                    conn.execute("INSERT INTO halt_conditions_config (id, condition_name, halt_type, severity,"
                                 " threshold, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                                 " ON CONFLICT (condition_name) DO NOTHING",
                                 (new_id(), name, halt_type, severity, as_json(threshold), at(now), at(now)))
        self._defaults_stored = True

    # ------------------------------------------------------------ finding
    def find(self, halt_id: str) -> HaltEventRecord | None:
        """One halt (every column, as ``halts.db`` holds it) by id or an unambiguous prefix."""
        with reachable(), self.db.session() as conn:
            row = self._halt(conn, halt_id)
            if row is None and len(halt_id) >= FIND_PREFIX_MIN and _ID_PREFIX.fullmatch(halt_id.lower()):
                found = dicts(conn.execute("SELECT * FROM halt_events WHERE id::text LIKE %s LIMIT 2",
                                           (halt_id.lower() + "%",)))
                row = found[0] if len(found) == 1 else None
        return HaltEventRecord.of(_as_stored(row)) if row else None

    def _halt(self, conn: Any, halt_id: str, *, lock: bool = False) -> dict | None:
        exact = as_uuid(halt_id)
        if exact is None:
            return None
        return one(conn.execute("SELECT * FROM halt_events WHERE id = %s" + (" FOR UPDATE" if lock else ""),
                                (exact,)))

    # ------------------------------------------------------------ housekeeping
    def housekeep(self, *, now: float) -> None:
        """What every opener of the file store does: old settled halts archived
        (at most daily), unacknowledged halts past their deadline timed out; and
        the default condition rows stored, once per process."""
        self._store_defaults(now)
        self._archive(now)
        if self._swept_at is None or not 0 <= now - self._swept_at < SWEEP_EVERY_SECONDS:
            self._sweep_timeouts(now)

    def _sweep_timeouts(self, now: float) -> int:
        """Unacknowledged halts past ``escalate_at`` become ``timeout`` (escalated), each with its line."""
        self._swept_at = now
        due = ("acknowledged = false AND resolution IS NULL AND escalate_at IS NOT NULL AND escalate_at <= %s")
        if not self.db.rows(f"SELECT 1 FROM halt_events WHERE {due} LIMIT 1", (at(now),)):
            return 0
        with self._writing() as conn:
            rows = dicts(conn.execute(f"UPDATE halt_events SET resolution = 'timeout', updated_at = %s WHERE {due}"
                                      " RETURNING id, session_id, severity::text, condition_name, halt_type::text",
                                      (at(now), at(now))))
            for session_id in sorted({row["session_id"] for row in rows}):
                self._refresh(conn, session_id, now)
                notify(conn, "halts", session_id)
            for row in rows:
                self._log(conn, "halt_timeout", row, source="leash", reason=TIMEOUT_REASON, now=now)
        return len(rows)

    def _archive(self, now: float, *, force: bool = False) -> int:
        """Settled halts older than ``ARCHIVE_AFTER_DAYS`` moved to the archive (``core.halts.store``'s rule)."""
        if not force and self._archived_at is not None and 0 <= now - self._archived_at < ARCHIVE_EVERY_SECONDS:
            return 0
        last = self.db.rows("SELECT value FROM leash_meta WHERE key = %s", (ARCHIVE_KEY,))
        if not force and last and 0 <= now - float(last[0][0]) < ARCHIVE_EVERY_SECONDS:
            self._archived_at = float(last[0][0])
            return 0
        settled = "triggered_at < %s AND acknowledged = true AND resolution IN ('resolved', 'dismissed')"
        with self.db.transaction() as conn:
            moved = conn.execute(f"WITH moved AS (DELETE FROM halt_events WHERE {settled} RETURNING *)"
                                 " INSERT INTO halt_events_archive SELECT * FROM moved",
                                 (at(now - ARCHIVE_AFTER_DAYS * 86_400),)).rowcount
            conn.execute("INSERT INTO leash_meta (key, value) VALUES (%s, %s) ON CONFLICT (key)"
                         " DO UPDATE SET value = EXCLUDED.value", (ARCHIVE_KEY, repr(now)))
        self._archived_at = now
        return moved

    # ------------------------------------------------------------ helpers
    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """One write transaction holding the ack log's chain lock."""
        with self.db.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (CHAIN_LOCK,))
            yield conn

    def _refresh(self, conn: Any, session_id: str, now: float) -> str:
        """Store the session's state as its halts give it (``core.state.halts.store.state_sql``); returns it."""
        state = state_of(conn, session_id)
        conn.execute("INSERT INTO session_states (session_id, state, updated_at) VALUES (%s, %s, %s)"
                     " ON CONFLICT (session_id) DO UPDATE SET state = EXCLUDED.state, updated_at = EXCLUDED.updated_at"
                     " WHERE session_states.state <> EXCLUDED.state", (session_id, state, at(now)))
        return state

    def _log(self, conn: Any, event: str, row: Any, *, source: str, reason: str, now: float, **extra: Any) -> None:
        """The halt's ack-log line in the open write (the file backend's ``core.halts.ledger`` keys)."""
        self.log.append_line(event, source=source, session_id=row["session_id"], reason=mask(reason or ""), now=now,
                             **ledger.line_fields(row), **extra)



def _as_stored(row: dict) -> dict:
    """A row as ``halts.db`` holds it: flags as 0/1, JSON columns as text."""
    stored = dict(row)
    for key in ("acknowledged", "auto_recorded", "enabled"):
        if isinstance(stored.get(key), bool):
            stored[key] = int(stored[key])
    for key in ("context", "threshold"):
        if key in stored and stored[key] is not None:
            stored[key] = json.dumps(stored[key])
    return stored

