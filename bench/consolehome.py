"""The homes the console bench paints: the console tests' small fleet, and
a big home (500 sessions, 10,000 pending halts, 100,000 ack-log lines) whose
every cache is in step with its log, as its writers leave it.

``--smoke`` (or ``BENCH_SMOKE=1`` in a child process of the bench) makes the
big home small: 40 sessions, 100 halts, 500 log lines.

Used by ``console.py``; not a bench of its own.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time

# --smoke, passed on to the bench's child processes as BENCH_SMOKE=1.
SMOKE = "--smoke" in sys.argv[1:] or os.environ.get("BENCH_SMOKE") == "1"
BIG_SESSIONS, BIG_HALTS, BIG_ACK_LINES, BIG_ESCALATED = (40, 100, 500, 5) if SMOKE else (500, 10_000, 100_000, 100)
SOURCE = "bench@console"


def seed_small(home: str) -> tuple[list[dict], float]:
    from tests.support.console import CONSOLE_NOW, CONSOLE_TMUX, seed_console_fleet

    seed_console_fleet(home)
    return CONSOLE_TMUX, CONSOLE_NOW


def session_id(n: int) -> str:
    return f"sess-{n:04d}-{(n * 2654435761) % 16**8:08x}"


def tmux_name(n: int) -> str:
    return f"agent-{n:03d}"


def fake_tmux(now: float) -> list[dict]:
    """The even sessions' tmux sessions; the odd ones are only known to the hooks."""
    return [{"name": tmux_name(n), "created": int(now - 7200 + n), "attached": n % 50 == 0,
             "panes": [{"id": f"%{n}", "pid": 10_000 + n, "command": "python3", "active": True}]}
            for n in range(0, BIG_SESSIONS, 2)]


def seed_big(home: str, now: float) -> None:
    """Write the big home (runs in a child process)."""
    from leash.core.base.clock import iso
    from leash.core.base.home import ensure_home
    from leash.core.base.statefile import write_json
    from leash.core.state import loopguard
    from leash.core.state.acklog import ACK_LOG_NAME, GENESIS_HASH, AckLog, chain_hash
    from leash.core.state.halts.ledger import set_head
    from leash.core.state.halts.store import DEFAULT_CONDITIONS, EVENT_FIELDS, new_id, open_store, write
    from leash.core.state.loghead import HALTS_STORE, HEAD_NAME, STORE_OF_EVENT
    from leash.core.state.sessions import SESSIONS_NAME
    from leash.core.state.warrants import WarrantQueue
    from leash.core.views.protocol import StopProtocol

    started = time.perf_counter()
    home = os.fspath(ensure_home(home))
    rng = random.Random(20_260_521)
    tools = ("Bash", "Edit", "Read", "Write", "Grep", "Glob", "WebFetch", "Task")
    entities = [f"svc-{n % 40:02d}" for n in range(BIG_SESSIONS)]

    sessions = {}
    for n in range(BIG_SESSIONS):
        sessions[session_id(n)] = {
            "tmux_session": tmux_name(n), "tmux_pane": f"%{n}", "entity": entities[n],
            "cwd": f"/work/{entities[n]}/checkout-{n}", "last_seen": iso(now - rng.uniform(5, 3600)),
            "last_tool": rng.choice(tools)}
    write_json(os.path.join(home, SESSIONS_NAME), sessions)
    t_sessions = time.perf_counter()

    by_severity: dict[str, list[tuple[str, str]]] = {}
    for name, halt_type, severity, _ in DEFAULT_CONDITIONS:
        by_severity.setdefault(severity, []).append((name, halt_type))
    severities = rng.choices(("critical", "high", "medium", "low"), weights=(5, 20, 40, 35), k=BIG_HALTS)
    rows, states = [], {}
    for k, severity in enumerate(severities):
        n = rng.randrange(BIG_SESSIONS)
        sid = session_id(n)
        condition, halt_type = rng.choice(by_severity.get(severity) or by_severity["medium"])
        at = iso(now - rng.uniform(30, 6 * 3600))
        escalated = k < BIG_ESCALATED
        values = {
            "id": new_id(), "session_id": sid, "task_id": f"bash: make test-{k % 13}", "halt_type": halt_type,
            "severity": severity,
            "description": f"{condition.replace('_', ' ')}: {halt_type} rule fired on {entities[n]} "
                           f"(tool call {k}) - review before the agent continues",
            "context": json.dumps({"commands": [f"make test-{k % 13}"], "files": [f"src/module_{k % 97}.py"]}),
            "triggered_at": at, "acknowledged": 1 if escalated else 0,
            "acknowledged_at": at if escalated else None, "acknowledged_by": "ops@bench" if escalated else None,
            "resolution": "escalated" if escalated else None, "resolution_notes": None,
            "attempt_count": 3 if condition == "three_strikes" else None, "previous_error": None,
            "created_at": at, "updated_at": at, "condition_name": condition, "escalate_at": None,
            "auto_recorded": 1,
        }
        rows.append(tuple(values[f] for f in EVENT_FIELDS))
        if escalated:
            states[sid] = "paused"
        elif severity in ("high", "critical") and states.get(sid) != "paused":
            states[sid] = "halted"
    columns, marks = ", ".join(EVENT_FIELDS), ", ".join("?" for _ in EVENT_FIELDS)
    connection = open_store(home, now_iso=iso(now))
    with write(connection):
        connection.executemany(f"INSERT INTO halt_events ({columns}) VALUES ({marks})", rows)
        connection.executemany("INSERT INTO session_states (session_id, state, updated_at) VALUES (?, ?, ?)",
                               [(sid, state, iso(now)) for sid, state in states.items()])
        connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_archive_at', ?)", (repr(now),))
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    t_halts = time.perf_counter()

    events = ("stop_ack", "resume", "hands_off", "release", "halt_ack", "halt_dismiss", "halt_escalate",
              "warrant_filed", "warrant_pardoned")
    prev, lines, stores = GENESIS_HASH, [], {}
    first = now - 30 * 86_400
    for seq in range(1, BIG_ACK_LINES + 1):
        event = events[seq % len(events)]
        record: dict[str, object] = {
            "timestamp": iso(first + seq * 25.0), "event": event, "source": f"ops{seq % 7}@host",
            "session_id": session_id(seq % BIG_SESSIONS), "reason": f"bench line {seq}: routine {event}"}
        if event.startswith("halt_"):
            record.update(halt_id=f"{seq:08x}-0000-4000-8000-000000000000", severity="high",
                          condition="three_strikes")
        record["seq"] = seq
        record["prev"] = prev
        record["hash"] = prev = chain_hash(prev, record)
        lines.append(json.dumps(record, ensure_ascii=True).encode("ascii") + b"\n")
        if event in STORE_OF_EVENT:
            stores[STORE_OF_EVENT[event]] = {"seq": seq, "hash": prev}
    with open(os.path.join(home, ACK_LOG_NAME), "wb") as handle:
        handle.write(b"".join(lines))
    del lines
    # What the writers leave beside the log: its head (the last line, the log's size, each store's last line),
    # and halts.db's record of the last halt line it reflects (halt lines are appended in its transactions).
    # Without them, the first reader would take the home for a tampered one (a log without its head) or
    # rebuild halts.db from the log: figure (2c) shows that repair on its own.
    write_json(os.path.join(home, HEAD_NAME), {"seq": BIG_ACK_LINES, "hash": prev,
                                               "size": os.path.getsize(os.path.join(home, ACK_LOG_NAME)),
                                               "stores": stores})
    connection = open_store(home, now_iso=iso(now))
    with write(connection):
        set_head(connection, stores.get(HALTS_STORE))
    connection.close()
    t_ack = time.perf_counter()

    protocol = StopProtocol(home)
    for n, entity in enumerate(("svc-03", "svc-17", "path:infra/prod/**", "path:db/migrations/**", "svc-29")):
        protocol.hands_off(entity, hours=4 + n, reason=f"freeze {n}: release in progress", source=SOURCE,
                           now=now - 600 + n)
    queue = WarrantQueue(home, protocol.acklog)
    for n in (4, 9, 14):
        queue.file(tmux_name(n) if n % 2 == 0 else session_id(n), reason="no output for 40 minutes",
                   requester=SOURCE, now=now - 60 + n)
    for name, boots in (("gateway", (50, 30, 10)), ("worker-pool", (40,)), ("scheduler", (55, 5))):
        for ago in boots:
            loopguard.record_restart_interrupted_boot(60, now=now - ago, name=name, home=home)
    for n in (1, 2):
        protocol.acknowledge_stop(SOURCE, session_id(n), "explicit halt: wrong repository", now=now - 900 + n)
    rebuilt = len(AckLog(home).read(event="state_rebuilt").entries)
    t_rest = time.perf_counter()
    chain = AckLog(home).verify()
    t_verify = time.perf_counter()
    size = os.path.getsize(os.path.join(home, ACK_LOG_NAME))
    print(f"  seeded the big home in {t_rest - started:.1f} s: sessions.json {t_sessions - started:.2f} s, "
          f"halts.db {t_halts - t_sessions:.2f} s, ack log {t_ack - t_halts:.2f} s, locks/warrants/breakers/stops "
          f"{t_rest - t_ack:.2f} s ({rebuilt} caches rebuilt from the log)")
    print(f"  {len(sessions)} sessions, {len(rows):,} pending halts ({BIG_ESCALATED} escalated; "
          + ", ".join(f"{s} {severities.count(s):,}" for s in ("critical", "high", "medium", "low"))
          + f"), {len(states)} sessions halted/paused in session_states")
    print(f"  ack log: {chain.lines:,} lines, {size / 1e6:.1f} MB, chain {'ok' if chain.ok else 'BROKEN'} "
          f"(verified in {t_verify - t_rest:.1f} s); "
          f"halts.db {os.path.getsize(os.path.join(home, 'halts.db')) / 1e6:.1f} MB")


# ------------------------------------------------------------------ (1) first paint
