"""Halt lifecycle lines in the ack log, and halts.db rebuilt from them.

Every change to a halt is an ack-log line, appended inside the database's write
transaction **before** it commits: ``halt_recorded`` (with the halt's type,
severity, condition, masked description, escalation), then ``halt_ack``,
``halt_dismiss``, ``halt_escalate`` or ``halt_timeout``. The ``meta`` table keeps
the ``{"seq", "hash"}`` of the last such line (``acklog_head``). A failed append
rolls the transaction back, so nothing changes without its line.

Every opener compares that head with the halts store's head in ``acklog.head``;
when they disagree (halts.db deleted, replaced by an older copy, or written
without its line) the halts are rebuilt by replaying the log: missing halts are
inserted again and every halt's acknowledgement is set to what the log says.
The gate reads a session's state from the halts themselves, never from the
derived ``session_states`` table, so editing that table lifts nothing.

Failure: an edit that keeps the recorded head (``UPDATE halt_events SET
acknowledged = 1``) is not seen by readers; ``leash doctor`` compares the
database with the replay (``differences``) and ``--repair`` restores the log's
truth. Halts moved to the archive stay there. Nothing is rebuilt from a log
that does not verify (a broken chain, a repeated key, a wrong or missing mac)
or that no longer holds the line the database names: ``HeadMismatch``, and
every reader holds its session.
"""
from __future__ import annotations

import json

from leash.core.state.loghead import HALTS_STORE, STORE_OF_EVENT, HeadMismatch, mark

HEAD_KEY = "acklog_head"
_RESOLUTION_OF_EVENT = {"halt_ack": "resolved", "halt_dismiss": "dismissed", "halt_escalate": "escalated",
                        "halt_timeout": "timeout"}


def append(connection, home: str, event: str, row, *, source: str, reason: str, now: float, **extra) -> dict:
    """Append one halt line inside the open write transaction and record it as
    the database's head; raises (rolling the transaction back) when it cannot."""
    from leash.core.state.acklog import AckLog

    line = AckLog(home).append(event, source=source, session_id=row["session_id"], reason=reason, now=now,
                               **line_fields(row), **extra)
    set_head(connection, mark(line))
    return line


def line_fields(row) -> dict:
    """The keys every halt line carries about its halt (``row``: a stored halt)."""
    return {"halt_id": row["id"], "severity": row["severity"], "condition": row["condition_name"] or row["halt_type"]}


def set_head(connection, head: dict | None) -> None:
    connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (HEAD_KEY, json.dumps(head)))


def recorded_head(connection) -> dict | None:
    row = connection.execute("SELECT value FROM meta WHERE key = ?", (HEAD_KEY,)).fetchone()
    try:
        return json.loads(row[0]) if row else None
    except (TypeError, ValueError):
        return None


_logs: dict = {}  # home -> its AckLog: the object only names files, so one serves every read


def log_head(home: str) -> dict | None:
    """The halts store's last line as ``acklog.head`` says (HeadMismatch when the log was cut)."""
    log = _logs.get(home)
    if log is None:
        from leash.core.state.acklog import AckLog

        log = _logs[home] = AckLog(home)
    return log.head.store_head(HALTS_STORE, log)


def in_step(connection, home: str) -> bool:
    return recorded_head(connection) == log_head(home)


def replay(home: str) -> tuple[dict[str, dict], dict | None]:
    """(each halt the log knows, by id, as the log leaves it; the last halt line)."""
    from leash.core.state.acklog import AckLog

    halts: dict[str, dict] = {}
    head = None
    for line in AckLog(home).lines():  # streamed: the halts grow, the log is not held
        event = line.get("event", "")
        if STORE_OF_EVENT.get(event) != HALTS_STORE or not isinstance(line.get("halt_id"), str):
            continue
        head = mark(line)
        halt = halts.setdefault(line["halt_id"], {"id": line["halt_id"], "session_id": line.get("session_id", ""),
                                                  "recorded": None, "acknowledged": 0, "resolution": None,
                                                  "acknowledged_at": None, "acknowledged_by": None})
        if event == "halt_recorded":
            halt["recorded"] = line
            halt["resolution"] = "escalated" if line.get("escalated") else halt["resolution"]
        elif event in ("halt_ack", "halt_dismiss"):
            halt.update(acknowledged=1, resolution=_RESOLUTION_OF_EVENT[event],
                        acknowledged_at=line.get("timestamp"), acknowledged_by=line.get("source"))
        elif not halt["acknowledged"]:
            halt["resolution"] = _RESOLUTION_OF_EVENT[event]
    return halts, head


def differences(connection, home: str) -> list[str]:
    """Where the database disagrees with the replay of the log, one line each."""
    halts, _ = replay(home)
    found = []
    for halt_id, halt in halts.items():
        row = connection.execute("SELECT acknowledged, resolution FROM halt_events WHERE id = ?",
                                 (halt_id,)).fetchone()
        if row is None:
            archived = connection.execute("SELECT 1 FROM halt_events_archive WHERE id = ?", (halt_id,)).fetchone()
            if not archived and halt["recorded"] is not None:
                found.append(f"halt {halt_id} is missing")
            continue
        if (row[0], row[1]) != (halt["acknowledged"], halt["resolution"]):
            found.append(f"halt {halt_id} is {row[1] or 'pending'} in halts.db, {halt['resolution'] or 'pending'} "
                         "in the ack log")
    return found


def rebuild(connection, home: str, *, now: float, problem: str, force: bool = False) -> int:
    """Bring the database to the log's truth in one write transaction; returns
    how many halts changed. Logs ``state_rebuilt``."""
    from leash.core.base.clock import iso
    from leash.core.state.acklog import AckLog
    from leash.core.state.halts.store import write

    stamp = iso(now)
    changed = 0
    with write(connection):  # no halt line is appended while we hold the write lock
        if in_step(connection, home) and not force:
            return 0  # another process brought it in step meanwhile
        halts, head = replay(home)
        expected = log_head(home)
        if head != expected:
            raise HeadMismatch(f"the ack log does not hold the halt line its head names (line "
                               f"{(expected or {}).get('seq')})")
        _refuse_unheld(connection, home)
        for halt in halts.values():
            changed += _restore(connection, halt, stamp)
        sessions = {h["session_id"] for h in halts.values()}
        for session_id in sessions:
            _refresh(connection, session_id, stamp)
        AckLog(home).append("state_rebuilt", source="leash", session_id="", now=now, file="halts.db",
                            reason=f"halts.db {problem}; {changed} halts restored from the ack log")
        set_head(connection, head)
    return changed


def _refuse_unheld(connection, home: str) -> None:
    """Raise when the log cannot be trusted to rebuild the database from: it
    lost the line the database names, or it does not verify."""
    from leash.core.state.acklog import AckLog

    log = AckLog(home)
    recorded = recorded_head(connection)
    if isinstance(recorded, dict) and isinstance(recorded.get("seq"), int) and recorded["seq"] > 0:
        held = ({"seq": line.get("seq"), "hash": line.get("hash")} for line in log.lines())
        if recorded not in held:
            raise HeadMismatch(f"halts.db names line {recorded['seq']}, which the ack log does not hold: the ack "
                               "log is shorter than its head or was rewritten")
    problem = log.chain_problem()
    if problem:
        raise HeadMismatch(f"halts.db cannot be rebuilt from a log that does not verify ({problem})")


def _restore(connection, halt: dict, stamp: str) -> int:
    if connection.execute("SELECT 1 FROM halt_events_archive WHERE id = ?", (halt["id"],)).fetchone():
        return 0
    row = connection.execute("SELECT acknowledged, resolution FROM halt_events WHERE id = ?",
                             (halt["id"],)).fetchone()
    if row is None:
        line = halt["recorded"]
        if line is None:
            return 0  # acknowledged on a line, recorded before halts were logged: nothing to restore from
        connection.execute(
            "INSERT INTO halt_events (id, session_id, task_id, halt_type, severity, description, context,"
            " triggered_at, acknowledged, acknowledged_at, acknowledged_by, resolution, created_at, updated_at,"
            " condition_name, escalate_at, auto_recorded)"
            " VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (halt["id"], halt["session_id"], line.get("task_id") or None, line.get("halt_type"), line.get("severity"),
             line.get("description") or line.get("reason") or "(restored from the ack log)", line.get("timestamp"),
             halt["acknowledged"], halt["acknowledged_at"], halt["acknowledged_by"], halt["resolution"],
             line.get("timestamp"), stamp, line.get("condition_name") or None, line.get("escalate_at") or None,
             1 if line.get("auto_recorded") else 0))
        return 1
    if (row[0], row[1]) == (halt["acknowledged"], halt["resolution"]):
        return 0
    connection.execute(
        "UPDATE halt_events SET acknowledged = ?, resolution = ?, acknowledged_at = ?, acknowledged_by = ?,"
        " updated_at = ? WHERE id = ?",
        (halt["acknowledged"], halt["resolution"], halt["acknowledged_at"], halt["acknowledged_by"], stamp,
         halt["id"]))
    return 1


def _refresh(connection, session_id: str, stamp: str) -> None:
    from leash.core.state.halts.store import refresh_state

    refresh_state(connection, session_id, stamp)

