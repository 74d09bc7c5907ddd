"""The kept halts.db connection's answers (``core.halts.kept``) see every change
made behind their back: a halt recorded by another backend or process, a write
through the kept connection itself, the clock passing a deadline, a halt line
appended to the ack log without its database write, halts.db deleted."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

from leash.core.state.acklog import AckLog
from leash.core.state.halts.api import acknowledge_halt, record_halt, update_halt_config
from leash.core.store.files import FileBackend

T0 = 1_800_000_000.0


def halt(session: str = "s", **extra) -> dict:
    return {"session_token": session, "halt_type": "execution", "severity": "high", "description": "d", **extra}


def state(backend: FileBackend, session: str = "s", *, now: float = T0) -> str:
    with backend.halts.unit(now=now) as unit:
        return unit.state(session)


def kept(home) -> FileBackend:
    """A backend like leashd's: one kept connection, warm answers."""
    return FileBackend(str(home), keep_connections=True)


def test_a_halt_recorded_by_another_backend_is_seen(home):
    record_halt(halt(session="other"), home=home, now=T0)
    daemon = kept(home)
    assert state(daemon) == "active"
    assert state(daemon) == "active"  # answered from the kept view
    record_halt(halt(), home=home, now=T0 + 1)  # its own connection: data_version moves
    assert state(daemon) == "halted"


def test_a_halt_recorded_by_another_process_is_seen(home):
    record_halt(halt(session="other"), home=home, now=T0)
    daemon = kept(home)
    assert state(daemon) == "active"
    code = ("import sys; from leash.core.state.halts.api import record_halt; "
            "record_halt({'session_token': 's', 'halt_type': 'execution', 'severity': 'high', "
            "'description': 'd'}, home=sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(home)], check=True, timeout=60)
    assert state(daemon) == "halted"


def test_an_acknowledgement_by_another_backend_is_seen(home):
    halt_id = record_halt(halt(), home=home, now=T0)["halt_id"]
    daemon = kept(home)
    assert state(daemon) == "halted"
    acknowledge_halt({"halt_id": halt_id, "session_token": "s", "resolution": "resolved"}, home=home, now=T0 + 1)
    assert state(daemon) == "active"


def test_a_write_through_the_kept_connection_is_seen(home):
    record_halt(halt(session="other"), home=home, now=T0)
    daemon = kept(home)
    with daemon.halts.unit(now=T0) as unit:
        assert unit.state("s") == "active"
        result = unit.check({"session_token": "s", "current_context": {"commands": ["rm -rf /"]}})
        assert result.should_halt and any(r.auto_recorded for r in result.reasons)
        assert unit.state("s") == "halted"  # recorded over this very connection: total_changes moved
    assert state(daemon) == "halted"


def test_the_timeout_sweep_follows_the_injected_clock(home):
    update_halt_config({"condition_name": "three_strikes", "escalate_after_minutes": 10}, home=home, now=T0)
    record_halt(halt(condition_name="three_strikes"), home=home, now=T0)
    daemon = kept(home)
    assert state(daemon, now=T0 + 599) == "halted"
    assert state(daemon, now=T0 + 599) == "halted"  # the kept deadline is not due yet
    assert state(daemon, now=T0 + 601) == "paused"  # nothing was written: only the clock moved
    assert [line["event"] for line in AckLog(home).read().entries].count("halt_timeout") == 1


def test_a_halt_line_appended_without_its_database_write_is_seen(home):
    halt_id = record_halt(halt(), home=home, now=T0)["halt_id"]
    daemon = kept(home)
    assert state(daemon) == "halted"
    # The log is the truth: an acknowledgement line whose database write never happened.
    AckLog(home).append("halt_ack", source="ops", session_id="s", reason="by hand", now=T0 + 1, halt_id=halt_id,
                        severity="high", condition="execution")
    assert state(daemon) == "active"  # the log's head moved: rebuilt from the log


def test_an_edit_of_the_database_behind_sqlite_s_back_is_seen(home):
    halt_id = record_halt(halt(), home=home, now=T0)["halt_id"]
    daemon = kept(home)
    assert state(daemon) == "halted"
    with sqlite3.connect(os.path.join(home, "halts.db")) as other:  # a writer that keeps the recorded head
        other.execute("UPDATE halt_events SET acknowledged = 1, resolution = 'resolved' WHERE id = ?", (halt_id,))
    assert state(daemon) == "active"  # read again (and doctor, not the gate, compares it with the log)


def test_a_deleted_database_is_rebuilt_from_the_log(home):
    record_halt(halt(), home=home, now=T0)
    daemon = kept(home)
    assert state(daemon) == "halted"
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(os.path.join(home, "halts.db" + suffix))
        except FileNotFoundError:
            pass
    assert state(daemon) == "halted"


def test_files_read_and_attempts_follow_the_post_tool_use_hook(home):
    record_halt(halt(session="other"), home=home, now=T0)
    daemon = kept(home)
    with daemon.halts.unit(now=T0) as unit:
        assert unit.files_read("s") is None
    daemon.halts.record_reads("s", ["/w/a.py"], now=T0 + 1)
    with daemon.halts.unit(now=T0 + 2) as unit:
        assert unit.files_read("s") == ["/w/a.py"]
    daemon.halts.record_reads("s", ["/w/b.py"], now=T0 + 3)
    with daemon.halts.unit(now=T0 + 4) as unit:
        assert sorted(unit.files_read("s")) == ["/w/a.py", "/w/b.py"]
