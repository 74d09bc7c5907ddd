"""Who may do what in the shared store: the schema's owner and leash's runtime role.

The owner role (``[store] owner_url``, ``LEASH_STORE_OWNER_URL``) creates and
migrates the schema, copies a home in (``leash store copy``) and mends it
(``leash doctor --repair``); it owns every table. The runtime role (``[store]
url``: what leashd and every command connect as) gets only what its writes
need (``RUNTIME_GRANTS``), and on the ack log only INSERT and SELECT: no
UPDATE, DELETE or TRUNCATE, and, not being the table's owner, no ALTER TABLE,
so its credentials can neither switch the log's append-only trigger off nor
remove a line. With one role for both (no owner_url, or the same user),
``leash doctor`` warns that the runtime role can do all of that.

Failure: a grant the owner cannot make raises (the caller says so as one
line); the checks never raise: each is a ``Finding``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from leash.core.base.finding import Finding

if TYPE_CHECKING:
    from leash.core.store.pgschema import Connection

ACKLOG_TABLE = "acklog"
APPEND_ONLY_TRIGGER = "acklog_append_only"
READ_WRITE = ("SELECT", "INSERT", "UPDATE", "DELETE")
# Every table of the schema and what the runtime role may do to it (a new table
# needs its line: tests/store/test_postgres_roles.py holds the schema to this map).
RUNTIME_GRANTS: dict[str, tuple[str, ...]] = {
    ACKLOG_TABLE: ("SELECT", "INSERT"),
    "leash_meta": ("SELECT", "INSERT", "UPDATE"),  # the archive's last run is kept there
    "log_state": ("SELECT", "INSERT", "UPDATE"),
    "halt_events_archive": ("SELECT", "INSERT"),
    "halt_conditions_config": ("SELECT", "INSERT", "UPDATE"),
    **{table: READ_WRITE for table in ("sessions", "halt_events", "session_states", "attempts", "files_read",
                                       "tracked_sessions", "warrants", "kennels", "breakers", "replies",
                                       "budget_spend", "budget_counters", "budget_meters", "budget_windows")},
}
FORBIDDEN_ON_ACKLOG = ("UPDATE", "DELETE", "TRUNCATE")


def runtime_user(conn: Connection) -> str:
    return conn.execute("SELECT current_user").fetchone()[0]


def quoted(name: str) -> str:
    """``name`` as an SQL identifier (a role or schema name is never spliced in raw)."""
    return '"' + name.replace('"', '""') + '"'


def grant_runtime(conn: Connection, role: str) -> None:
    """Give ``role`` what ``RUNTIME_GRANTS`` names and nothing more on the ack
    log (run as the owner, in the caller's transaction)."""
    who = quoted(role)
    schema = quoted(conn.execute("SELECT current_schema()").fetchone()[0])
    conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {who}")
    conn.execute(f"REVOKE ALL ON {ACKLOG_TABLE} FROM {who}")
    for table, privileges in RUNTIME_GRANTS.items():
        conn.execute(f"GRANT {', '.join(privileges)} ON {quoted(table)} TO {who}")
    conn.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {who}")


def missing_grants(conn: Connection, role: str) -> list[str]:
    """``table privilege`` pairs of ``RUNTIME_GRANTS`` that ``role`` lacks (one query)."""
    pairs = [(table, privilege) for table, privileges in RUNTIME_GRANTS.items() for privilege in privileges]
    rows = conn.execute("SELECT t, p FROM unnest(%s::text[], %s::text[]) AS g(t, p) "
                        "WHERE NOT has_table_privilege(%s, t, p)",
                        ([t for t, _ in pairs], [p for _, p in pairs], role)).fetchall()
    return [f"{table} {privilege}" for table, privilege in rows]


def excess_on_log(conn: Connection, role: str) -> list[str]:
    """What ``role`` may do to the ack log that it should not."""
    rows = conn.execute("SELECT p FROM unnest(%s::text[]) AS g(p) WHERE has_table_privilege(%s, %s, p)",
                        (list(FORBIDDEN_ON_ACKLOG), role, ACKLOG_TABLE)).fetchall()
    return [privilege for (privilege,) in rows]


def can_alter_log(conn: Connection, role: str) -> str:
    """Why ``role`` can ALTER the ack log's table ("" when it cannot): its owner, a member of it, a superuser."""
    owner, superuser, member = conn.execute(
        "SELECT pg_get_userbyid(c.relowner), r.rolsuper, pg_has_role(%s, c.relowner, 'MEMBER') "
        "FROM pg_class c, pg_roles r WHERE c.oid = %s::regclass AND r.rolname = %s",
        (role, ACKLOG_TABLE, role)).fetchone()
    if superuser:
        return f"{role} is a superuser"
    if owner == role:
        return f"{role} owns the ack-log table"
    if member:
        return f"{role} is a member of the table's owner {owner}"
    return ""


def trigger_state(conn: Connection) -> str:
    """"on", "off" or "missing": the ack log's append-only trigger."""
    row = conn.execute("SELECT tgenabled FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = %s",
                       (ACKLOG_TABLE, APPEND_ONLY_TRIGGER)).fetchone()
    if row is None:
        return "missing"
    return "off" if row[0] == "D" else "on"


class Facts:
    """What the runtime role (the connection's user) can do, and the trigger's state."""

    def __init__(self, conn: Connection):
        self.role = runtime_user(conn)
        self.trigger = trigger_state(conn)
        self.alter = can_alter_log(conn, self.role)
        self.lacking = missing_grants(conn, self.role)
        self.excess = excess_on_log(conn, self.role)

    def mendable(self, *, owner: bool) -> bool:
        """Whether ``mend`` has something to do (grants need an owner of its own)."""
        return self.trigger == "off" or (owner and bool(self.lacking or self.excess))


def mend(conn: Connection, facts: Facts) -> list[str]:
    """Switch the trigger on and grant the runtime role what it needs, as the
    owner, in the caller's transaction; what was done, one line each."""
    done = []
    if facts.trigger == "off":
        conn.execute(f"ALTER TABLE {ACKLOG_TABLE} ENABLE TRIGGER {APPEND_ONLY_TRIGGER}")
        done.append("the ack log's append-only trigger was off; switched on again")
    if runtime_user(conn) != facts.role and (facts.lacking or facts.excess):
        grant_runtime(conn, facts.role)
        done.append(f"granted the runtime role {facts.role} what it needs, and on the ack log only insert and "
                    "select")
    return done


def findings(facts: Facts) -> Iterator[Finding]:
    """What ``leash doctor`` says of the roles."""
    if facts.trigger != "on":
        yield Finding("fail", "store", f"the ack log's append-only trigger is {facts.trigger}: its rows can be "
                                       "changed and deleted (leash doctor --repair switches it on)")
    if facts.alter:
        yield Finding("warn", "store", f"{facts.alter}: the runtime role can switch the log's trigger off and delete "
                                       "its lines — set [store] owner_url (or LEASH_STORE_OWNER_URL) to a role of "
                                       "its own that owns the schema; leash then grants this one only what it needs")
    elif facts.excess:
        yield Finding("fail", "store", f"the runtime role {facts.role} may {', '.join(facts.excess)} the ack log "
                                       "(leash doctor --repair with the owner's url revokes it)")
    if facts.lacking:
        yield Finding("fail", "store", f"the runtime role {facts.role} lacks {', '.join(facts.lacking[:4])}"
                                       f"{' ...' if len(facts.lacking) > 4 else ''} (leash doctor --repair with "
                                       "the owner's url grants it)")
    if not (facts.alter or facts.excess or facts.lacking) and facts.trigger == "on":
        yield Finding("ok", "store", f"the runtime role {facts.role} may only insert and select the ack log")
