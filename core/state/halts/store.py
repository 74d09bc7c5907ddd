"""``halts.db``: the halt engine's SQLite store.

Tables (the seed's two, with its columns, enum CHECKs and indexes, partial ones
included; plus leash's own):

* ``halt_events`` — the seed's columns, plus ``condition_name`` (which rule
  fired), ``escalate_at`` (when an unacknowledged halt times out, from the
  condition's ``escalate_after_minutes``) and ``auto_recorded``.
* ``halt_events_archive`` — settled events older than 90 days, same columns.
* ``halt_conditions_config`` — the seed's columns and default rows, plus rows
  for the five conditions the seed's tables list without a default row.
* ``session_states(session_id, state, updated_at)`` — active / halted / paused.
* ``attempts(session_id, task_id, count, last_error, recent_errors, updated_at)``
  — the three-strikes counter and recent errors per task.
* ``files_read(session_id, path, read_at)`` — what each session has read.
* ``tracked_sessions(session_id, since)`` — sessions whose PostToolUse hook
  reports to leash (only for them is "not read" evidence, not ignorance).
* ``meta(key, value)`` — housekeeping (last archive run).

Every connection sets WAL, ``busy_timeout`` and ``synchronous=FULL``; every
write runs in ``BEGIN IMMEDIATE`` so concurrent writers queue instead of
failing with "database is locked". Schema versions are ``PRAGMA user_version``
migrations, applied under the write lock so two first openers cannot race.

Failure: ``open_store`` raises ``HaltStoreUnavailable`` for a file that is not
a database (or any sqlite error); callers fail safe (the gate denies).
"""
from __future__ import annotations

import json
import os

# The halts' vocabulary is the decision's (``core.policy.halts.outcomes``): the schema checks it, and
# a pending halt of a blocking severity (the conditions' registry says which) holds its session.
from leash.core.policy.halts.conditions.registry import BLOCKING_SEVERITIES
from leash.core.policy.halts.outcomes import HALT_TYPES, SEVERITIES, HaltStoreUnavailable, new_id

TYPE_CHECKING = False  # ``typing`` is not imported on the hook path
if TYPE_CHECKING:  # imported in open_store, where it is needed: a hook with no halts.db never loads it
    import sqlite3

DB_NAME = "halts.db"
BUSY_TIMEOUT_MS = 30_000
ARCHIVE_AFTER_DAYS = 90
ARCHIVE_EVERY_SECONDS = 86_400  # archiving on open runs at most once a day

RESOLUTIONS = ("resolved", "escalated", "dismissed", "timeout")
SESSION_STATES = ("active", "halted", "paused")


def _enum(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


_EVENT_COLUMNS = f"""
    id               TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL,
    task_id          TEXT,
    halt_type        TEXT NOT NULL CHECK (halt_type IN ({_enum(HALT_TYPES)})),
    severity         TEXT NOT NULL CHECK (severity IN ({_enum(SEVERITIES)})),
    description      TEXT NOT NULL CHECK (length(description) BETWEEN 1 AND 4000),
    context          TEXT CHECK (context IS NULL OR json_valid(context)),
    triggered_at     TEXT NOT NULL,
    acknowledged     INTEGER NOT NULL DEFAULT 0 CHECK (acknowledged IN (0, 1)),
    acknowledged_at  TEXT,
    acknowledged_by  TEXT,
    resolution       TEXT CHECK (resolution IS NULL OR resolution IN ({_enum(RESOLUTIONS)})),
    resolution_notes TEXT,
    attempt_count    INTEGER,
    previous_error   TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    condition_name   TEXT,
    escalate_at      TEXT,
    auto_recorded    INTEGER NOT NULL DEFAULT 0 CHECK (auto_recorded IN (0, 1))
"""

EVENT_FIELDS = ("id", "session_id", "task_id", "halt_type", "severity", "description", "context",
                "triggered_at", "acknowledged", "acknowledged_at", "acknowledged_by", "resolution",
                "resolution_notes", "attempt_count", "previous_error", "created_at", "updated_at",
                "condition_name", "escalate_at", "auto_recorded")

# (condition_name, halt_type, severity, threshold): the seed's default rows
# first, then the five conditions its tables name without a default row.
DEFAULT_CONDITIONS: tuple[tuple[str, str, str, dict], ...] = (
    ("modifying_unread_code", "code_safety", "critical", {"requires_read": True}),
    ("breaking_changes", "code_safety", "high", {"requires_tests_pass": True}),
    ("no_rollback_plan", "code_safety", "high", {}),
    ("out_of_scope", "scope", "high", {}),
    ("ambiguous_requirements", "scope", "medium", {}),
    ("conflicting_instructions", "scope", "high", {}),
    ("unauthorized_production", "scope", "critical", {}),
    ("test_production_mix", "environment", "critical", {}),
    ("credential_confusion", "environment", "high", {}),
    ("three_strikes", "execution", "high", {"max_attempts": 3}),
    ("repeated_errors", "execution", "medium", {"similarity_threshold": 0.8}),
    ("cascading_failures", "execution", "high", {"max_chain_length": 3}),
    ("secrets_exposure", "security", "critical", {}),
    ("privilege_escalation", "security", "critical", {}),
    ("uncertainty_scale", "uncertainty", "high", {"threshold": 7}),
    ("unknown_dependencies", "code_safety", "medium", {}),
    ("shared_instances", "environment", "medium", {}),
    ("unknown_errors", "execution", "medium", {}),
    ("data_exposure", "security", "high", {}),
    ("unknown_commands", "security", "medium", {}),
    ("supervisor_tampering", "security", "critical",
     {"supervisor_names": ["leash", "leashd", "kennel", "leash.console.cli"]}),
    ("budget", "execution", "high", {}),  # a reached spend cap (core.hook.budgetgate records it)
)
CONDITION_NAMES = frozenset(name for name, *_ in DEFAULT_CONDITIONS)  # every condition with a config row

_MIGRATION_1 = f"""
CREATE TABLE halt_events ({_EVENT_COLUMNS});
CREATE INDEX idx_halt_events_session ON halt_events(session_id);
CREATE INDEX idx_halt_events_task ON halt_events(task_id);
CREATE INDEX idx_halt_events_type ON halt_events(halt_type);
CREATE INDEX idx_halt_events_severity ON halt_events(severity);
CREATE INDEX idx_halt_events_triggered ON halt_events(triggered_at);
CREATE INDEX idx_halt_events_acknowledged ON halt_events(acknowledged) WHERE acknowledged = 0;
CREATE INDEX idx_halt_events_session_unack ON halt_events(session_id, acknowledged) WHERE acknowledged = 0;
CREATE INDEX idx_halt_events_session_type ON halt_events(session_id, halt_type);
CREATE INDEX idx_halt_events_escalate ON halt_events(escalate_at)
    WHERE acknowledged = 0 AND resolution IS NULL AND escalate_at IS NOT NULL;
CREATE INDEX idx_halt_events_session_escalated ON halt_events(session_id)
    WHERE resolution IN ('escalated', 'timeout');

CREATE TABLE halt_events_archive ({_EVENT_COLUMNS});
CREATE INDEX idx_halt_events_archive_session ON halt_events_archive(session_id);

CREATE TABLE halt_conditions_config (
    id                     TEXT PRIMARY KEY,
    condition_name         TEXT NOT NULL UNIQUE,
    halt_type              TEXT NOT NULL CHECK (halt_type IN ({_enum(HALT_TYPES)})),
    enabled                INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    severity               TEXT NOT NULL CHECK (severity IN ({_enum(SEVERITIES)})),
    threshold              TEXT CHECK (threshold IS NULL OR json_valid(threshold)),
    auto_escalate          INTEGER NOT NULL DEFAULT 0 CHECK (auto_escalate IN (0, 1)),
    escalate_after_minutes INTEGER CHECK (escalate_after_minutes IS NULL OR escalate_after_minutes >= 0),
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL
);

CREATE TABLE session_states (
    session_id TEXT PRIMARY KEY,
    state      TEXT NOT NULL CHECK (state IN ({_enum(SESSION_STATES)})),
    updated_at TEXT NOT NULL
);

CREATE TABLE attempts (
    session_id    TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    count         INTEGER NOT NULL DEFAULT 0 CHECK (count >= 0),
    last_error    TEXT,
    recent_errors TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(recent_errors)),
    updated_at    TEXT NOT NULL,
    PRIMARY KEY (session_id, task_id)
);

CREATE TABLE files_read (
    session_id TEXT NOT NULL,
    path       TEXT NOT NULL,
    read_at    TEXT NOT NULL,
    PRIMARY KEY (session_id, path)
);

CREATE TABLE tracked_sessions (session_id TEXT PRIMARY KEY, since TEXT NOT NULL);

CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""

# Versions 2 and 3 add no table: they seed the rows of conditions added since
# (supervisor_tampering; budget).
MIGRATIONS = (_MIGRATION_1, "", "")


def db_path(home: str) -> str:
    return os.path.join(home, DB_NAME)


def exists(home: str) -> bool:
    return os.path.exists(db_path(home))


def open_store(home: str, *, create: bool = True, now_iso: str | None = None) -> sqlite3.Connection:
    """A connection with the schema in place; raises HaltStoreUnavailable."""
    import sqlite3  # here, not at the top: a hook with no halts.db never needs it

    path = db_path(home)
    try:
        if create and not os.path.exists(path):
            from leash.core.base.home import private_dir

            private_dir(home)
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        elif not os.path.exists(path):
            raise HaltStoreUnavailable(f"{path} does not exist")
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                     check_same_thread=False)
        connection.row_factory = sqlite3.Row
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = FULL")
        if connection.execute("PRAGMA user_version").fetchone()[0] < len(MIGRATIONS):
            _migrate(connection, now_iso)
        return connection
    except sqlite3.Error as exc:
        raise HaltStoreUnavailable(f"{path}: {exc}") from None
    except OSError as exc:
        raise HaltStoreUnavailable(f"{path}: {exc.strerror}") from None


def _migrate(connection: sqlite3.Connection, now_iso: str | None) -> None:
    from leash.core.base.clock import iso, now_seconds

    stamp = now_iso or iso(now_seconds())
    connection.execute("BEGIN IMMEDIATE")
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        for number, script in enumerate(MIGRATIONS, 1):
            if version < number:
                for statement in script.split(";"):
                    if statement.strip():
                        connection.execute(statement)
        _seed_defaults(connection, stamp)  # INSERT OR IGNORE: conditions added since an older version too
        connection.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    for suffix in ("-wal", "-shm"):
        try:
            os.chmod(connection.execute("PRAGMA database_list").fetchone()[2] + suffix, 0o600)
        except OSError:
            pass


def _seed_defaults(connection: sqlite3.Connection, stamp: str) -> None:
    for name, halt_type, severity, threshold in DEFAULT_CONDITIONS:
        connection.execute(
            "INSERT OR IGNORE INTO halt_conditions_config (id, condition_name, halt_type, enabled, severity,"
            " threshold, auto_escalate, escalate_after_minutes, created_at, updated_at)"
            " VALUES (?, ?, ?, 1, ?, ?, 0, NULL, ?, ?)",
            (new_id(), name, halt_type, severity, json.dumps(threshold), stamp, stamp))


class write:
    """``with write(connection):`` one ``BEGIN IMMEDIATE`` transaction."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection

    def __enter__(self) -> sqlite3.Connection:
        self.connection.execute("BEGIN IMMEDIATE")
        return self.connection

    def __exit__(self, kind, value, traceback) -> None:
        self.connection.execute("ROLLBACK" if kind else "COMMIT")


def archive_old_events(connection: sqlite3.Connection, *, now: float, force: bool = False) -> int:
    """Move settled events older than 90 days to the archive table.

    Events still holding a session (unacknowledged, escalated, timed out) stay.
    Without ``force`` this runs at most once a day and is a single indexed
    read otherwise. Returns how many events moved."""
    from leash.core.base.clock import iso

    if not force:
        row = connection.execute("SELECT value FROM meta WHERE key = 'last_archive_at'").fetchone()
        if row is not None and now - float(row[0]) < ARCHIVE_EVERY_SECONDS:
            return 0
    cutoff = iso(now - ARCHIVE_AFTER_DAYS * 86_400)
    settled = ("triggered_at < ? AND acknowledged = 1 AND resolution IN ('resolved', 'dismissed')")
    columns = ", ".join(EVENT_FIELDS)
    with write(connection):
        moved = connection.execute(
            f"INSERT INTO halt_events_archive ({columns}) SELECT {columns} FROM halt_events WHERE {settled}",
            (cutoff,)).rowcount
        connection.execute(f"DELETE FROM halt_events WHERE {settled}", (cutoff,))
        connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_archive_at', ?)", (repr(now),))
    return moved


# ------------------------------------------------------------------ a session's state, from its halts
def state_sql(*, mark: str, false: str) -> str:
    """The query of a session's state from its stored halts, for SQLite and
    PostgreSQL alike (``mark``: the parameter mark; ``false``: the literal),
    with the session id as both parameters: ``paused`` while one of its halts
    is escalated or timed out, ``halted`` while a pending halt of a blocking
    severity is unanswered, ``active`` otherwise."""
    blocking = ", ".join(f"'{severity}'" for severity in BLOCKING_SEVERITIES)
    return (f"SELECT CASE WHEN EXISTS (SELECT 1 FROM halt_events WHERE session_id = {mark}"
            " AND resolution IN ('escalated', 'timeout')) THEN 'paused'"
            f" WHEN EXISTS (SELECT 1 FROM halt_events WHERE session_id = {mark} AND acknowledged = {false}"
            f" AND resolution IS NULL AND severity IN ({blocking})) THEN 'halted' ELSE 'active' END")


STATE_SQL = state_sql(mark="?", false="0")


def state_of(connection: sqlite3.Connection, session_id: str) -> str:
    """``paused``, ``halted`` or ``active``, from the session's stored halts."""
    return str(connection.execute(STATE_SQL, (session_id, session_id)).fetchone()[0])


def refresh_state(connection: sqlite3.Connection, session_id: str, stamp: str) -> str:
    """Store the session's state as ``state_of`` gives it, inside the caller's
    write transaction (``session_states`` caches it); returns it."""
    state = state_of(connection, session_id)
    connection.execute(
        "INSERT INTO session_states (session_id, state, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(session_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at"
        " WHERE session_states.state != excluded.state", (session_id, state, stamp))
    return state
