"""In-process latency of the halt engine.

(1) ``check_halt_conditions`` for one typical tool call, with the input the
    pre-tool-use hook builds (``core.halts.hookcontext.check_input``), against
    a home whose halts.db is in use (other sessions hold halts, the session's
    reads and failures are recorded). ``record=False``, so nothing is stored
    and every call does the same work. Measured as the gate calls it (one open
    connection, ``connection=``) and on its own (it opens halts.db itself, as
    ``leash halts check`` does). Cases: a Bash command and an Edit of an
    existing file. Target: median under 1 ms.
(2) ``get_session_halts`` of the pending halts of one session in a halts.db
    holding 100,000 events (1,000 sessions, mostly acknowledged; 20 pending
    for the measured session). Target: median under 5 ms. Prints the
    ``EXPLAIN QUERY PLAN`` of each query the call runs.
(3) ``check_halt_conditions`` on 1 MiB commands of several shapes (one long
    argument, many words, many commands, pipelines, quoted code, nested
    substitutions, unbalanced quotes, a here-document, one long path,
    one long word): the whole check, the shell reader alone, and the rules
    without ``secrets_exposure`` (whose patterns have their own bounds).
    Target: median under 100 ms per check.
(4) When a target is missed, the top 10 functions by cumulative time
    (cProfile) for that case.

Prints figures only; asserts nothing. Run: ``.venv/bin/python bench/halts.py``.
``--smoke``: every part in its smallest form (a few calls, 2,000 events,
64 KiB commands): it shows the bench works, its figures mean nothing.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leash.core.base.clock import iso  # noqa: E402
from leash.core.policy.halts.hookcontext import check_input  # noqa: E402
from leash.core.state.halts import api  # noqa: E402
from leash.core.state.halts.store import EVENT_FIELDS, new_id, open_store, write  # noqa: E402

CHECK_CALLS, CHECK_WARMUP, CHECK_TARGET_MS = 2000, 200, 1.0
LIST_CALLS, LIST_WARMUP, LIST_TARGET_MS = 200, 20, 5.0
EVENTS, SESSIONS, PENDING = 100_000, 1_000, 20
SESSION = "bench-session"
BASH = {"command": "git status --short && pytest -q tests/test_app.py -k 'login or logout'"}
APP_SOURCE = '''"""A small module the bench edits."""
import os


def load(path):
    with open(path) as handle:
        return handle.read()


class Settings:
    def __init__(self, root):
        self.root = root
'''


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(call, calls: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def report(label: str, samples: list[float], target_ms: float) -> bool:
    median, p99 = statistics.median(samples), percentile(samples, 0.99)
    met = median < target_ms
    print(f"  {label:<44} median {median:7.3f} ms  p99 {p99:7.3f} ms  "
          f"(target median < {target_ms:g} ms: {'met' if met else 'MISSED'}; {len(samples)} calls)")
    return met


def profile(label: str, call, calls: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(10)
    print(f"\n  where the time goes: {label} ({calls} calls, top 10 by cumulative time)")
    for line in out.getvalue().splitlines():
        if line.strip() and "Ordered by" not in line:
            print("    " + line.strip())


# ------------------------------------------------------------------ (1) check_halt_conditions
def busy_home(home: str, project: str) -> None:
    """halts.db in use: halts of other sessions, this session's reads and failures."""
    for n in range(50):
        api.record_halt({"session_token": f"other-{n % 10}", "halt_type": "execution", "severity": "medium",
                         "description": f"an earlier halt {n}", "condition_name": "repeated_errors"}, home=home)
    api.record_files_read(home, SESSION, [os.path.join(project, "app.py"), os.path.join(project, "README.md")])
    for n in range(2):
        api.record_attempt(home, SESSION, f"bash: make build-{n}", error="make: *** [build] Error 2")


def bench_check(home: str, project: str) -> list[tuple[str, object, float]]:
    busy_home(home, project)
    env: dict[str, str] = {}
    edit = {"file_path": os.path.join(project, "app.py"), "old_string": "return handle.read()",
            "new_string": "return handle.read().strip()"}
    missed = []
    print("(1) check_halt_conditions for one tool call, record=False "
          f"(halts.db present: {os.path.getsize(os.path.join(home, 'halts.db')):,} bytes)")
    with api.connected(home) as connection:
        reads = api.files_read(home, SESSION, connection=connection)
        cases = {
            "Bash": check_input(SESSION, "Bash", BASH, cwd=project, env=env, files_read=None),
            "Edit": check_input(SESSION, "Edit", edit, cwd=project, env=env, files_read=reads),
        }
        for name, data in cases.items():
            result = api.check_halt_conditions(data, home=home, record=False, connection=connection)
            fired = ", ".join(r["condition_name"] for r in result["halt_reasons"]) or "nothing"
            print(f"  {name} call fires: {fired}")

            def shared(data=data):
                api.check_halt_conditions(data, home=home, record=False, connection=connection)

            if not report(f"{name}, shared connection (as the gate)", timed(shared, CHECK_CALLS, CHECK_WARMUP),
                          CHECK_TARGET_MS):
                missed.append((f"{name}, shared connection", shared, CHECK_TARGET_MS))
    for name, data in cases.items():
        def alone(data=data):
            api.check_halt_conditions(data, home=home, record=False)

        if not report(f"{name}, opens halts.db itself", timed(alone, CHECK_CALLS // 4, CHECK_WARMUP // 4),
                      CHECK_TARGET_MS):
            missed.append((f"{name}, opens halts.db itself", alone, CHECK_TARGET_MS))
    return missed


# ------------------------------------------------------------------ (2) get_session_halts over 100,000 events
def fill(home: str, now: float) -> None:
    """100,000 events in the real schema, one executemany in one transaction."""
    connection = open_store(home)
    per_session = EVENTS // SESSIONS
    rows = []
    for s in range(SESSIONS):
        session = SESSION if s == 0 else f"session-{s:04d}"
        pending = PENDING if s == 0 else (2 if s % 10 == 0 else 0)
        for k in range(per_session):
            at = iso(now - (s * per_session + k) * 7.0)
            unacked = k < pending
            values = {
                "id": new_id(), "session_id": session, "task_id": f"task-{k % 7}",
                "halt_type": ("execution", "code_safety", "scope", "security")[k % 4],
                "severity": ("medium", "high", "critical", "low")[k % 4],
                "description": f"bench halt {k} of {session}", "context": '{"commands": ["make build"]}',
                "triggered_at": at, "acknowledged": 0 if unacked else 1,
                "acknowledged_at": None if unacked else at, "acknowledged_by": None if unacked else "bench",
                "resolution": None if unacked else ("resolved", "dismissed")[k % 2], "resolution_notes": None,
                "attempt_count": None, "previous_error": None, "created_at": at, "updated_at": at,
                "condition_name": "three_strikes", "escalate_at": None, "auto_recorded": 1,
            }
            rows.append(tuple(values[f] for f in EVENT_FIELDS))
    columns = ", ".join(EVENT_FIELDS)
    marks = ", ".join("?" for _ in EVENT_FIELDS)
    start = time.perf_counter()
    with write(connection):
        connection.executemany(f"INSERT INTO halt_events ({columns}) VALUES ({marks})", rows)
        connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_archive_at', ?)", (repr(now),))
    connection.close()
    print(f"  inserted {len(rows):,} events over {SESSIONS:,} sessions in {time.perf_counter() - start:.2f} s "
          f"({PENDING} pending for {SESSION!r})")


def explain(home: str) -> None:
    """The plans of the three queries get_session_halts runs for pending=True."""
    where = "1 = 1 AND session_id = ? AND (acknowledged = 0 OR resolution = 'escalated')"
    queries = {
        "count": f"SELECT count(*) FROM halt_events WHERE {where}",
        "rows": f"SELECT * FROM halt_events WHERE {where} ORDER BY CASE severity WHEN 'critical' THEN 0"
                " WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, triggered_at, id LIMIT ? OFFSET ?",
        "unacknowledged": "SELECT count(*) FROM halt_events WHERE 1 = 1 AND session_id = ? AND acknowledged = 0",
    }
    connection = open_store(home, create=False)
    try:
        print("  EXPLAIN QUERY PLAN of the queries behind get_session_halts(pending=True):")
        for name, sql in queries.items():
            params = (SESSION, 50, 0) if name == "rows" else (SESSION,)
            plan = [row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + sql, params)]
            partial = any("idx_halt_events_session_unack" in step for step in plan)
            print(f"    {name:<15} {' | '.join(plan)}"
                  f"{'   <- partial index idx_halt_events_session_unack' if partial else ''}")
    finally:
        connection.close()


def bench_list(home: str) -> list[tuple[str, object, float]]:
    print(f"\n(2) get_session_halts(pending) for one session among {EVENTS:,} stored events")
    now = time.time()
    fill(home, now)
    explain(home)
    query = {"session_token": SESSION, "pending": True}
    result = api.get_session_halts(query, home=home)
    print(f"  answer: total_count {result['total_count']}, {len(result['halts'])} halts, "
          f"unacknowledged_count {result['unacknowledged_count']}")

    def listing():
        api.get_session_halts(query, home=home)

    missed = []
    if not report("get_session_halts(pending=True)", timed(listing, LIST_CALLS, LIST_WARMUP), LIST_TARGET_MS):
        missed.append(("get_session_halts(pending=True)", listing, LIST_TARGET_MS))
    return missed


# ------------------------------------------------------------------ (3) 1 MiB commands
MIB = 1 << 20
HUGE_CALLS, HUGE_TARGET_MS = 3, 100.0
PROFILED_CALLS, PROFILED_HUGE_CALLS = 200, 2


def huge_shapes(size: int) -> dict[str, str]:
    """Commands of about ``size`` bytes, by shape."""
    return {
        "one long argument": "echo " + "a" * size,
        "many words": "echo " + "ab " * (size // 3),
        "many commands": "ls; " * (size // 4),
        "pipelines": "cat x | grep y | " * (size // 17),
        "quoted code": "python3 -c '" + "x = 1; " * (size // 7) + "'",
        "nested substitutions": "echo " + "$(" * 5000 + "x" + ")" * 5000 + " " + "b" * size,
        "unbalanced quotes": 'echo "' + "'$(`" * (size // 4),
        "here-document": "cat <<'EOF' > notes.md\n" + "line of text\n" * (size // 13) + "EOF\n",
        "one long path": "rm " + "a/" * (size // 2),
        "one long word": "f" * size + " ()",
    }


HUGE_SIZE = MIB


def bench_huge(project: str) -> list[tuple[str, object, float]]:
    from leash.core.policy.halts import engine
    from leash.core.policy.halts.context import CheckContext
    from leash.core.policy.toolcall import read_commands

    print(f"\n(3) check_halt_conditions on {HUGE_SIZE // 1024:,} KiB commands (median of {HUGE_CALLS}; no halts.db, "
          "record=False)")
    print(f"  {'shape':<22} {'check':>9} {'reader':>9} {'w/o secrets':>12}  outcome")
    config = api.default_config()
    no_secrets = {name: dict(row, enabled=name != "secrets_exposure") for name, row in config.items()}
    missed = []
    # A home that lives as long as the scratch folder: a missed target is profiled after this loop.
    home = os.path.join(os.path.dirname(project), "home-huge")
    os.makedirs(home, exist_ok=True)
    for name, command in huge_shapes(HUGE_SIZE).items():
        data = {"session_token": SESSION, "current_context": {"commands": [command], "cwd": project,
                                                              "leash_home": home}}

        def whole(data=data):
            return api.check_halt_conditions(data, home=home, record=False)

        def reader(command=command):
            return read_commands([command], cwd=project, env={}, home=home)

        def without_secrets(data=data):
            return engine.evaluate(CheckContext(data), no_secrets)

        times = [statistics.median(timed(f, HUGE_CALLS, 1)) for f in (whole, reader, without_secrets)]
        result, call = whole(), reader()
        fired = ", ".join(r["condition_name"] for r in result["halt_reasons"]) or "nothing fires"
        cut = f"; reader stopped: {call.incomplete}" if call.incomplete else ""
        print(f"  {name:<22} {times[0]:7.1f}ms {times[1]:7.1f}ms {times[2]:10.1f}ms  {fired}{cut}")
        if times[0] >= HUGE_TARGET_MS:
            missed.append((f"{HUGE_SIZE // 1024:,} KiB: {name}", whole, HUGE_TARGET_MS))
    return missed


def main() -> None:
    global CHECK_CALLS, CHECK_WARMUP, LIST_CALLS, LIST_WARMUP, EVENTS, SESSIONS, HUGE_CALLS, HUGE_SIZE
    global PROFILED_CALLS, PROFILED_HUGE_CALLS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="every part in its smallest form (figures mean nothing)")
    if parser.parse_args().smoke:
        CHECK_CALLS, CHECK_WARMUP, LIST_CALLS, LIST_WARMUP, EVENTS, SESSIONS = 20, 4, 5, 1, 2_000, 20
        HUGE_CALLS, HUGE_SIZE, PROFILED_CALLS, PROFILED_HUGE_CALLS = 1, 64 * 1024, 2, 1
    with tempfile.TemporaryDirectory() as scratch:
        project = os.path.join(scratch, "project")
        os.makedirs(project)
        Path(project, "app.py").write_text(APP_SOURCE)
        Path(project, "README.md").write_text("# bench project\n")
        missed = bench_check(os.path.join(scratch, "home-check"), project)
        missed += bench_list(os.path.join(scratch, "home-list"))
        missed += bench_huge(project)
        print("\n(4) targets missed: " + (", ".join(label for label, _, _ in missed) if missed else "none"))
        for label, call, _ in missed:
            profile(label, call, PROFILED_HUGE_CALLS if " KiB: " in label else PROFILED_CALLS)
    print("\nwhole-hook latency: bench/hook_latency.py")


if __name__ == "__main__":
    main()
