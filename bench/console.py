"""How fast the console paints, refreshes and follows the state home.

(1) Time to first paint: from constructing ``LeashApp`` to the first view
    applied (``app.view_data`` non-empty) under ``app.run_test(size=(160, 45))``
    on the small seeded home of the console tests (the first run in this
    process pays the imports of ``core.fleet.view``; a second, warm run is
    shown too). Target: under 1 s. The same figure for the big home below.
(2) A big home: 500 agent sessions in sessions.json (half of their tmux
    sessions in the tmux list the console is given), 10,000 pending halts in
    halts.db (mixed severities, some escalated), 100,000 ack-log lines with a
    valid hash chain, hands-off locks, warrants and restart-loop breakers,
    every cache in step with the log as its writers leave it (``acklog.head``,
    halts.db's record of its last halt line; stops.json and the locks are
    rebuilt from the log while seeding). It is seeded by a child process
    (``--seed-big HOME``) so this process's peak RSS is the console's own.
    The console runs twice on it, then a repair (c):
    (a) ``watch=False``, so nothing refreshes behind the bench's back:
      * RSS once the console shows the big home (peak ``VmHWM`` and
        current ``VmRSS``). Target: under 200 MB.
      * Frame time of a refresh: ``core.fleet.view`` runs in a worker thread as
        the console runs it, then ``app.apply_view(data)`` is timed on the UI
        thread (via ``app.call_later``). Also shown: the longest stall of the
        UI event loop (a 2 ms heartbeat task) from the apply until the app is
        idle again, which adds Textual's layout and render work; the stall
        while the worker computes the view (the GIL is shared, timers fire); and
        the ``tick_ages`` timer (every 5 s, on the UI thread). Refreshes as time
        passes (age cells move), and refreshes where a new critical halt lands
        on top of the halts panel (its order changes, so the table is
        rebuilt). Target: no refresh over 50 ms of UI-thread time.
    (b) ``watch=True`` (as ``leash console`` runs), in a child process
        (``--watch-run HOME``) so that its RSS is its own:
      * First paint and RSS again.
      * How often the console refreshes while nothing else touches the home,
        and which file events its watcher sees meanwhile.
      * Change-to-screen latency: a separate process runs
        ``python -m leash.console.cli stop NAME`` against the home; measured from
        the mtime of the stops.json it writes to the moment the sessions
        table's State cell of that row reads "stopped" (polled every 2 ms in
        the app's event loop). The watcher's debounce (150 ms, 50 ms step) is
        part of it. Target: median under 300 ms.
    (c) A repair, in a child process (``--repair-run HOME``): halts.db's record
        of the last halt line it reflects is cleared (as after restoring an
        old copy of it), so the first ``core.fleet.view`` rebuilds it from
        the ack log (a walk of the whole chain and a replay, both streamed).
        Its time (no target: a repair) and the process's peak RSS (target:
        under 200 MB; no reader holds the whole log).
(3) A summary of figure vs target and, for a missed target, where the time
    goes (cProfile, top 10 by cumulative time, event-loop plumbing left out).

Prints figures only; asserts nothing. Run: ``.venv/bin/python bench/console.py``.
``--smoke``: every part on a home of 40 sessions, 100 halts and 500 log lines,
a few refreshes and short waits, the small home's first paint once (not again
warm): it shows the bench works, its figures mean nothing. A part that fails
ends the bench with exit 1.
The state homes live in a temporary directory that is removed afterwards; no
tmux server is started (the tmux list is a fixed list).
"""
from __future__ import annotations

import asyncio
import cProfile
import gc
import json
import os
import pstats
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZE = (160, 45)
BIG_SESSIONS, BIG_HALTS, BIG_ACK_LINES, BIG_ESCALATED = 500, 10_000, 100_000, 100
REFRESHES, REORDER_REFRESHES, TRIALS = 20, 5, 10
FIRST_PAINT_TARGET_MS, RSS_TARGET_MB, FRAME_TARGET_MS, LATENCY_TARGET_MS = 1000.0, 200.0, 50.0, 300.0
HEARTBEAT_SECONDS = 0.002
SOURCE = "bench@console"
SETTLE_SECONDS, IDLE_SECONDS = 1.0, 3.0
PACE_SECONDS, TRIAL_GAP_SECONDS = 0.25, 0.3  # time passing between refreshes; the last trial's change settling
# --smoke, passed on to this file's child processes as BENCH_SMOKE=1.
SMOKE = "--smoke" in sys.argv[1:] or os.environ.get("BENCH_SMOKE") == "1"
if SMOKE:
    BIG_SESSIONS, BIG_HALTS, BIG_ACK_LINES, BIG_ESCALATED = 40, 100, 500, 5
    REFRESHES, REORDER_REFRESHES, TRIALS = 2, 1, 2
    SETTLE_SECONDS, IDLE_SECONDS = 0.2, 0.5
    PACE_SECONDS, TRIAL_GAP_SECONDS = 0.05, 0.1


# ------------------------------------------------------------------ helpers
def rss_mb() -> tuple[float, float]:
    """(peak, current) RSS in MB: VmHWM and VmRSS. (``ru_maxrss`` is not used: a
    child started by fork and exec inherits its parent's peak in it.)"""
    peak = current = float("nan")
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    current = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
    except OSError:
        pass
    if peak != peak:  # no /proc: the rusage figure, which is this process's alone when nothing forked it
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return peak, current


def ms(seconds: float) -> float:
    return seconds * 1000.0


def stats_line(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    return (f"median {statistics.median(samples):7.1f} ms  max {max(samples):7.1f} ms  "
            f"min {min(samples):7.1f} ms  (n={len(samples)})")


# Frames that only carry the event loop and Textual's message dispatch: their
# cumulative time is everything the loop ran, so they hide the real costs.
PLUMBING = ("asyncio" + os.sep, "textual" + os.sep + "_callback.py", "textual" + os.sep + "message_pump.py",
            "textual" + os.sep + "app.py:", "bench" + os.sep + "console.py", "_contextvars", "select.epoll",
            "threading.py", "concurrent" + os.sep, "selectors.py")


def _where(key: tuple) -> str:
    filename, line, function = key
    if filename == "~":
        return function
    return f"{filename.replace(str(ROOT) + os.sep, '').split('site-packages' + os.sep)[-1]}:{line}({function})"


def print_profile(label: str, profiler: cProfile.Profile) -> None:
    stats = pstats.Stats(profiler).stats  # {(file, line, function): (cc, nc, tt, ct, callers)}
    rows = [(_where(key), nc, tt, ct) for key, (cc, nc, tt, ct, callers) in stats.items()]
    rows = [r for r in rows if not any(p in r[0] for p in PLUMBING)]
    print(f"\n  where the time goes: {label}")
    print("    top 10 by cumulative time (event-loop plumbing left out; profiled, so slower than above):")
    print(f"    {'calls':>9} {'own s':>8} {'cum s':>8}  function")
    for where, nc, tt, ct in sorted(rows, key=lambda r: -r[3])[:10]:
        print(f"    {nc:>9} {tt:>8.3f} {ct:>8.3f}  {where}")
    print("    top 5 by own time:")
    for where, nc, tt, ct in sorted(rows, key=lambda r: -r[2])[:5]:
        print(f"    {nc:>9} {tt:>8.3f} {ct:>8.3f}  {where}")


class Heartbeat:
    """A task in the UI event loop that wakes every 2 ms; a late wake-up is a
    stall of the loop (UI-thread work, or waiting for the GIL)."""

    def __init__(self) -> None:
        self.beats: list[tuple[float, float]] = []  # (wake time, how late)
        self.task: asyncio.Task | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            now = time.perf_counter()
            self.beats.append((now, max(0.0, now - last - HEARTBEAT_SECONDS)))
            last = now

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def max_stall(self, start: float, end: float) -> float:
        """Longest late wake-up among beats due after start that woke by end + 50 ms."""
        late = [gap for at, gap in self.beats if start <= at <= end + 0.05 and at - gap >= start - 0.001]
        return max(late, default=0.0)


class Instruments:
    """Times every ``apply_view`` the app runs (on the instance) and every
    ``core.fleet.view`` its worker runs (on the module; ``refresh_view``
    imports it at call time). Nothing else is changed."""

    def __init__(self, app) -> None:
        import leash.core.views.fleet as fleet

        self.fleet = fleet
        self.real_view = fleet.view
        self.applies: list[tuple[float, float]] = []  # perf_counter (start, end)
        self.views: list[tuple[float, float]] = []  # finished runs
        self.view_starts: list[float] = []  # every run, as it starts
        self.ticks: list[tuple[str, float]] = []
        self.running = self.most_running = 0  # fleet.view runs at once
        lock = threading.Lock()
        original_apply = app.apply_view

        def apply_view(data: dict) -> None:
            start = time.perf_counter()
            original_apply(data)
            self.applies.append((start, time.perf_counter()))

        def view(*args, **kwargs):
            start = time.perf_counter()
            with lock:
                self.view_starts.append(start)
                self.running += 1
                self.most_running = max(self.most_running, self.running)
            try:
                return self.real_view(*args, **kwargs)
            finally:
                with lock:
                    self.running -= 1
                    self.views.append((start, time.perf_counter()))

        for name in ("tick_ages", "tick_countdown"):  # the dashboard's timers call its own
            original_tick = getattr(app.dashboard, name)

            def tick(original_tick=original_tick, name=name) -> None:
                start = time.perf_counter()
                original_tick()
                self.ticks.append((name, time.perf_counter() - start))

            setattr(app.dashboard, name, tick)
        app.apply_view = apply_view
        fleet.view = view

    def restore(self) -> None:
        self.fleet.view = self.real_view


# ------------------------------------------------------------------ homes
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
async def wait_first_paint(app, instruments: Instruments, pilot, started: float, constructed: float) -> dict:
    """Wait for the first applied view; timings relative to constructing the app."""
    while not app.view_data:
        await asyncio.sleep(0.002)
    apply_start, apply_end = instruments.applies[0]
    view_start, view_end = instruments.views[0]
    await pilot.pause()
    return {
        "construct_ms": ms(constructed - started), "first_paint_ms": ms(apply_end - started),
        "view_start_ms": ms(view_start - started), "view_ms": ms(view_end - view_start),
        "apply_ms": ms(apply_end - apply_start), "settled_ms": ms(time.perf_counter() - started),
        "rows": {name: len(app.panel(name).rows) for name in ("sessions", "halts", "acklog")},
    }


async def small_first_paint(home: str, tmux: list[dict], now: float) -> dict:
    from leash.console.tui.app import LeashApp

    started = time.perf_counter()
    app = LeashApp(home, list_tmux=lambda: tmux, run_kennel=False, watch=True, clock=lambda: now, source=SOURCE)
    constructed = time.perf_counter()
    instruments = Instruments(app)
    try:
        async with app.run_test(size=SIZE) as pilot:
            return await wait_first_paint(app, instruments, pilot, started, constructed)
    finally:
        instruments.restore()


def print_first_paint(label: str, r: dict) -> None:
    met = r["first_paint_ms"] < FIRST_PAINT_TARGET_MS
    print(f"  {label:<30} first view applied {r['first_paint_ms']:7.1f} ms "
          f"(target < {FIRST_PAINT_TARGET_MS:g} ms: {'met' if met else 'MISSED'})")
    print(f"  {'':<30} constructed in {r['construct_ms']:.1f} ms; fleet.view started at {r['view_start_ms']:.1f} ms "
          f"and took {r['view_ms']:.1f} ms; apply_view {r['apply_ms']:.1f} ms; app idle again at "
          f"{r['settled_ms']:.1f} ms; rows {r['rows']}")


# ------------------------------------------------------------------ (2a) the big home, watch=False
async def big_static_run(home: str, tmux: list[dict]) -> dict:
    from leash.console.tui.app import MAX_ROWS, LeashApp

    out: dict = {"max_rows": MAX_ROWS}
    heartbeat = Heartbeat()
    heartbeat.start()
    started = time.perf_counter()
    app = LeashApp(home, list_tmux=lambda: tmux, run_kennel=False, watch=False, clock=time.time, source=SOURCE)
    constructed = time.perf_counter()
    instruments = Instruments(app)
    real_view = instruments.real_view
    try:
        async with app.run_test(size=SIZE) as pilot:
            out["first"] = await wait_first_paint(app, instruments, pilot, started, constructed)
            out["first_stall_ms"] = ms(heartbeat.max_stall(started, time.perf_counter()))
            out["summary"] = app.view_data["summary"]
            await asyncio.sleep(SETTLE_SECONDS)
            gc.collect()
            out["rss"] = rss_mb()

            def applied_on_ui(data: dict, box: dict, profiler: cProfile.Profile | None = None) -> None:
                start = time.perf_counter()
                if profiler is not None:
                    profiler.enable()
                type(app).apply_view(app, data)
                if profiler is not None:
                    profiler.disable()
                box["apply"] = time.perf_counter() - start

            async def one_refresh(data: dict) -> dict:
                box: dict = {}
                mark = time.perf_counter()
                app.call_later(applied_on_ui, data, box)
                await pilot.pause()
                return {"apply_ms": ms(box["apply"]), "block_ms": ms(heartbeat.max_stall(mark, time.perf_counter()))}

            async def worker_view() -> tuple[dict, float, float]:
                mark = time.perf_counter()
                data = await asyncio.to_thread(real_view, app.home, tmux_sessions=tmux, now=time.time())
                end = time.perf_counter()
                return data, ms(end - mark), ms(heartbeat.max_stall(mark, end))

            def with_new_critical(data: dict, tag: str) -> dict:
                row = dict(data["halts"][0])
                row.update(halt_id=f"bench-{tag}", key=f"halt:bench-{tag}", severity="critical", age=0.5,
                           triggered_epoch=data["now"] - 0.5,
                           description="credentials would be exposed: a new critical halt")
                return {**data, "halts": [row] + data["halts"]}  # sorts first: critical, newest

            frames, reorder = [], []
            for _ in range(REFRESHES):
                await asyncio.sleep(PACE_SECONDS)  # time passes, so age cells move
                data, view_ms, gil_ms = await worker_view()
                frames.append({**await one_refresh(data), "view_ms": view_ms, "gil_ms": gil_ms})
            for i in range(REORDER_REFRESHES):
                data, view_ms, gil_ms = await worker_view()
                frames_row = await one_refresh(with_new_critical(data, f"new-{i}"))
                reorder.append({**frames_row, "view_ms": view_ms, "gil_ms": gil_ms})
            out["frames"], out["reorder"] = frames, reorder
            out["ticks"] = list(instruments.ticks)
            out["rss_after"] = rss_mb()

            # profiles, taken while the app is up; printed only for a missed target
            profiles: dict[str, cProfile.Profile] = {"apply": cProfile.Profile()}
            for _ in range(3):
                await asyncio.sleep(PACE_SECONDS)
                data = await asyncio.to_thread(real_view, app.home, tmux_sessions=tmux, now=time.time())
                app.call_later(applied_on_ui, data, {}, profiles["apply"])
                await pilot.pause()
            profiles["render"] = cProfile.Profile()
            for i in range(2):
                data = await asyncio.to_thread(real_view, app.home, tmux_sessions=tmux, now=time.time())
                profiles["render"].enable()
                app.call_later(applied_on_ui, with_new_critical(data, f"profile-{i}"), {})
                await pilot.pause()
                profiles["render"].disable()

            def profiled_view() -> cProfile.Profile:
                profiler = cProfile.Profile()
                profiler.enable()
                for _ in range(3):
                    real_view(app.home, tmux_sessions=tmux, now=time.time())
                profiler.disable()
                return profiler

            profiles["view"] = await asyncio.to_thread(profiled_view)
            out["profiles"] = profiles
    finally:
        heartbeat.stop()
        instruments.restore()
    return out


# ------------------------------------------------------------------ (2b) the big home, watch=True
def latency_targets(stopped) -> list[tuple[str, str]]:
    """(name to stop, sessions-table row key): tmux session names and the agent session ids inside them,
    in turn, whose row is not stopped yet (``stopped``: the names a stop covers; the seeded log stops
    some sessions). Only sessions in the tmux list: the row of an agent whose tmux session is gone reads
    "gone", stopped or not."""
    targets = []
    for n in range(20, BIG_SESSIONS, 6):  # even: in the tmux list
        if len(targets) == TRIALS:
            break
        if tmux_name(n) in stopped or session_id(n) in stopped:
            continue
        targets.append((tmux_name(n) if len(targets) % 2 == 0 else session_id(n), f"tmux:{tmux_name(n)}"))
    return targets


async def big_watch_run(home: str, tmux: list[dict], env: dict[str, str]) -> dict:
    from watchfiles import awatch

    from leash.console.tui.app import LeashApp

    out: dict = {}
    started = time.perf_counter()
    app = LeashApp(home, list_tmux=lambda: tmux, run_kennel=False, watch=True, clock=time.time, source=SOURCE)
    constructed = time.perf_counter()
    instruments = Instruments(app)
    try:
        async with app.run_test(size=SIZE) as pilot:
            out["first"] = await wait_first_paint(app, instruments, pilot, started, constructed)
            out["first_views"] = len(instruments.view_starts)
            out["rss"] = rss_mb()

            # idle: nothing but the console touches the home
            await asyncio.sleep(SETTLE_SECONDS)
            seen: dict[str, int] = {}
            stop = asyncio.Event()

            async def listen() -> None:
                async for changes in awatch(app.home, debounce=150, step=50, recursive=True, stop_event=stop):
                    for change, path in changes:
                        name = f"{change.name} {os.path.relpath(path, app.home)}"
                        seen[name] = seen.get(name, 0) + 1

            listener = asyncio.get_running_loop().create_task(listen())
            views_before, applies_before = len(instruments.views), len(instruments.applies)
            idle_start = time.perf_counter()
            await asyncio.sleep(IDLE_SECONDS)
            idle_seconds = time.perf_counter() - idle_start
            stop.set()
            await listener
            out["idle"] = {"seconds": idle_seconds, "views": len(instruments.views) - views_before,
                           "applies": len(instruments.applies) - applies_before, "events": seen,
                           "apply_ms": [ms(e - s) for s, e in instruments.applies[applies_before:]]}

            # change-to-screen latency
            table = app.panel("sessions").table
            stops_path = os.path.join(app.home, "stops.json")
            trials = []
            for name, key in latency_targets(set(app.backend.stops.current().sessions)):
                await asyncio.sleep(TRIAL_GAP_SECONDS)
                before = _shown_state(table, key)
                stopped_before = app.view_data["summary"]["stopped"]
                n_starts, n_applies = len(instruments.view_starts), len(instruments.applies)
                spawn_wall = time.time()
                process = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "leash.console.cli", "stop", name, "--reason", "bench: latency trial",
                    "--source", SOURCE, env=env, cwd=str(ROOT),
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                seen_wall = None
                while time.time() - spawn_wall < 15:
                    # The row reads "stopped"; or, a stopped session sorting after the hundreds that need a
                    # human (beyond the panel's rows), the summary bar counts one more stopped session.
                    if (_shown_state(table, key) == "stopped"
                            or app.view_data["summary"]["stopped"] > stopped_before):
                        seen_wall = time.time()
                        break
                    await asyncio.sleep(0.002)
                _, stderr = await process.communicate()
                await asyncio.sleep(0.1)
                trial = {"name": name, "before": before or "(unshown)", "shown": _shown_state(table, key) or
                         "summary", "code": process.returncode, "stderr": stderr.decode().strip()}
                if seen_wall is not None:
                    mtime = os.stat(stops_path).st_mtime_ns / 1e9
                    offset = time.time() - time.perf_counter()  # perf_counter -> wall clock
                    written = mtime - offset  # the write, on the perf_counter clock
                    finished = dict(instruments.views)
                    applies = [(s, e) for s, e in instruments.applies[n_applies:] if s + offset <= seen_wall]
                    after = [s for s in instruments.view_starts[n_starts:] if s >= written]
                    trial.update(latency_ms=ms(seen_wall - mtime), cli_ms=ms(seen_wall - spawn_wall),
                                 refreshes=len(applies),
                                 running=sum(1 for s in instruments.view_starts
                                             if s < written < finished.get(s, float("inf"))),
                                 to_view_ms=ms(after[0] - written) if after else None,
                                 apply_ms=ms(applies[-1][1] - applies[-1][0]) if applies else None)
                trials.append(trial)
            out["trials"] = trials
            out["most_running"] = instruments.most_running
            out["rss_after"] = rss_mb()
    finally:
        instruments.restore()
    return out


def _shown_state(table, key: str) -> str | None:
    """The State cell of a sessions-table row; None when the row is not among the rows shown."""
    from textual.widgets.data_table import CellDoesNotExist

    try:
        return table.get_cell(key, "state").plain
    except CellDoesNotExist:
        return None


# ------------------------------------------------------------------ (2c) a repair
def repair_run(home: str, tmux: list[dict]) -> dict:
    """halts.db made out of step with the log, then the first view (which rebuilds it) and a second."""
    from leash.core.base.clock import iso
    from leash.core.state.acklog import AckLog
    from leash.core.state.halts.ledger import set_head
    from leash.core.state.halts.store import open_store, write
    from leash.core.views.fleet import view

    connection = open_store(home, now_iso=iso(time.time()))
    with write(connection):
        set_head(connection, None)
    connection.close()
    rebuilt_before = len(AckLog(home).read(event="state_rebuilt").entries)
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    data = view(home, tmux_sessions=tmux, now=time.time())
    first = time.perf_counter() - started
    after = rss_mb()
    started = time.perf_counter()
    view(home, tmux_sessions=tmux, now=time.time())
    second = time.perf_counter() - started
    return {"first_ms": ms(first), "second_ms": ms(second), "rss_before": before, "rss": after,
            "rebuilt": len(AckLog(home).read(event="state_rebuilt").entries) - rebuilt_before,
            "problems": data["problems"], "halts": data["summary"]["halts"]}


# ------------------------------------------------------------------ report
def report_static(out: dict, tmux_count: int) -> None:
    print(f"\n  (a) watch=False; console given {tmux_count} tmux sessions; summary {out['summary']}")
    print_first_paint("big home", out["first"])
    print(f"  {'':<30} longest UI-loop stall during start-up {out['first_stall_ms']:.1f} ms")
    peak, current = out["rss"]
    print(f"  RSS with the big home on screen: peak (VmHWM) {peak:.1f} MB, current (VmRSS) {current:.1f} MB "
          f"(target < {RSS_TARGET_MB:g} MB: {'met' if max(peak, current) < RSS_TARGET_MB else 'MISSED'})")
    peak, current = out["rss_after"]
    print(f"  RSS after {len(out['frames']) + len(out['reorder'])} more refreshes: peak {peak:.1f} MB, "
          f"current {current:.1f} MB")
    frames, reorder = out["frames"], out["reorder"]
    print(f"\n  frame time of a refresh; {len(frames)} refreshes {PACE_SECONDS:g} s apart as time passes "
          f"(panels capped at {out['max_rows']} rows):")
    for label, key in (("apply_view on the UI thread", "apply_ms"), ("UI loop stall, apply + render", "block_ms"),
                       ("leash.core.views.fleet.view in a worker thread", "view_ms"),
                       ("UI loop stall while view runs (GIL, timers)", "gil_ms")):
        print(f"    {label:<44} {stats_line([f[key] for f in frames])}")
    print(f"  {len(reorder)} refreshes with a new critical halt on top (the halts table is rebuilt):")
    for label, key in (("apply_view on the UI thread", "apply_ms"), ("UI loop stall, apply + render", "block_ms")):
        print(f"    {label:<44} {stats_line([f[key] for f in reorder])}")
    for name in ("tick_ages", "tick_countdown"):
        ticks = [ms(t) for n, t in out["ticks"] if n == name]
        print(f"  {'timer ' + name + ' on the UI thread':<46} {stats_line(ticks)}")


def report_watch(out: dict) -> None:
    print("\n  (b) watch=True, in its own process")
    print_first_paint("big home", out["first"])
    print(f"  {'':<30} fleet.view runs started by the first paint: {out['first_views']}")
    idle = out["idle"]
    print(f"  idle for {idle['seconds']:.1f} s (no other process writes): {idle['views']} fleet.view runs, "
          f"{idle['applies']} views applied ({stats_line(idle['apply_ms'])} of apply_view)")
    events = ", ".join(f"{name} x{count}" for name, count in sorted(idle["events"].items())) or "none"
    print(f"    file events in the home meanwhile: {events}")
    trials = out["trials"]
    print(f"  change-to-screen latency, {len(trials)} trials "
          "(`python -m leash.console.cli stop NAME` in another process):")
    for t in trials:
        if "latency_ms" not in t:
            print(f"    {t['name']:<20} NOT SEEN within 15 s (exit {t['code']}: {t['stderr'][:120]})")
            continue
        to_view = f"{t['to_view_ms']:6.1f} ms" if t["to_view_ms"] is not None else "    none"
        apply = f"{t['apply_ms']:5.1f} ms" if t["apply_ms"] is not None else "-"
        print(f"    {t['name']:<20} {t['before']:>7} -> stopped {t['latency_ms']:7.1f} ms after the stops.json mtime "
              f"(seen in {'the row' if t['shown'] == 'stopped' else 'the summary'}) "
              f"(CLI spawn -> screen {t['cli_ms']:5.0f} ms); fleet.view runs already going at the write: "
              f"{t['running']}; first run started after it: {to_view}; {t['refreshes']} apply(s) until seen, "
              f"the one that showed it took {apply}")
    peak, current = out["rss_after"]
    print(f"  most fleet.view runs at once in this app: {out['most_running']} (refresh_view is exclusive, but a "
          f"cancelled thread worker runs to its end)")
    print(f"  RSS of this console's process: at first paint peak {out['rss'][0]:.1f} MB, "
          f"current {out['rss'][1]:.1f} MB; "
          f"at the end peak {peak:.1f} MB, current {current:.1f} MB (target < {RSS_TARGET_MB:g} MB: "
          f"{'met' if max(peak, current) < RSS_TARGET_MB else 'MISSED'})")


def report_repair(out: dict) -> None:
    print("\n  (c) halts.db out of step with the ack log (its head record cleared), in its own process")
    print(f"  first fleet.view (rebuilds halts.db from the log: {out['rebuilt']} state_rebuilt line(s)) "
          f"{out['first_ms']:.1f} ms (a repair: no target); the next view {out['second_ms']:.1f} ms; "
          f"pending halts {out['halts']}; problems {out['problems'] or 'none'}")
    print(f"  RSS of that process: before the view peak {out['rss_before'][0]:.1f} MB, current "
          f"{out['rss_before'][1]:.1f} MB; after it peak {out['rss'][0]:.1f} MB, current {out['rss'][1]:.1f} MB "
          f"(target < {RSS_TARGET_MB:g} MB: {'met' if max(out['rss']) < RSS_TARGET_MB else 'MISSED'})")


def summary(results: dict) -> None:
    static, watched = results["static"], results["watch"]
    frames, reorder, trials = static["frames"], static["reorder"], watched["trials"]
    latencies = [t["latency_ms"] for t in trials if "latency_ms" in t]
    ages = [ms(t) for n, t in static["ticks"] if n == "tick_ages"]
    rows = [
        ("first paint, small home (first run)", results["small_cold"]["first_paint_ms"], FIRST_PAINT_TARGET_MS, "ms"),
        ("first paint, big home (watch=False)", static["first"]["first_paint_ms"], FIRST_PAINT_TARGET_MS, "ms"),
        ("first paint, big home (watch=True)", watched["first"]["first_paint_ms"], FIRST_PAINT_TARGET_MS, "ms"),
        ("RSS, big home on screen: peak VmHWM", static["rss"][0], RSS_TARGET_MB, "MB"),
        ("RSS, big home on screen: VmRSS", static["rss"][1], RSS_TARGET_MB, "MB"),
        ("RSS peak, watch=True console after its run", watched["rss_after"][0], RSS_TARGET_MB, "MB"),
        ("RSS peak, a first view that rebuilds halts.db", results["repair"]["rss"][0], RSS_TARGET_MB, "MB"),
        ("apply_view max, time passing", max(f["apply_ms"] for f in frames), FRAME_TARGET_MS, "ms"),
        ("apply_view max, halts table rebuilt", max(f["apply_ms"] for f in reorder), FRAME_TARGET_MS, "ms"),
        ("UI stall max (apply+render), time passing", max(f["block_ms"] for f in frames), FRAME_TARGET_MS, "ms"),
        ("UI stall max (apply+render), halts rebuilt", max(f["block_ms"] for f in reorder), FRAME_TARGET_MS, "ms"),
        ("tick_ages max (5 s timer, UI thread)", max(ages) if ages else 0.0, FRAME_TARGET_MS, "ms"),
        ("change-to-screen latency, median",
         statistics.median(latencies) if latencies else float("inf"), LATENCY_TARGET_MS, "ms"),
    ]
    print("\n(3) summary")
    print(f"  {'figure':<46} {'value':>10}   {'target':>10}   verdict")
    missed = []
    for label, value, target, unit in rows:
        met = value < target
        if not met:
            missed.append(label)
        print(f"  {label:<46} {value:>7.1f} {unit}   < {target:>6g} {unit}   {'met' if met else 'MISSED'}")
    view_ms = [f["view_ms"] for f in frames]
    print(f"  {'apply_view median, time passing':<46} {statistics.median(f['apply_ms'] for f in frames):>7.1f} ms")
    print(f"  {'leash.core.views.fleet.view (worker) median / max':<46} {statistics.median(view_ms):>7.1f} ms   "
          f"max {max(view_ms):.1f} ms (no target; it is on the latency path)")
    if latencies:
        print(f"  {'change-to-screen latency max':<46} {max(latencies):>7.1f} ms"
              + (f"   ({len(trials) - len(latencies)} trial(s) never showed the stop)"
                 if len(latencies) < len(trials) else ""))
    idle = watched["idle"]
    print(f"  {'refreshes while idle (watch=True)':<46} {idle['views'] / idle['seconds']:>7.1f} /s   (should be 0)")
    if not missed:
        print("\n  every target met")
        return
    print("\n  targets missed: " + "; ".join(missed))
    profiles = static["profiles"]
    ui_missed = any(label.startswith(("apply_view", "UI stall", "tick_ages", "first paint")) for label in missed)
    if ui_missed:
        print_profile("apply_view alone, 3 refreshes as time passes (UI thread)", profiles["apply"])
        print_profile("UI thread from apply_view until idle, 2 refreshes with the halts table rebuilt "
                      "(apply + Textual layout/render)", profiles["render"])
    if any(label.startswith(("change-to-screen", "first paint")) for label in missed) or ui_missed:
        print_profile("leash.core.views.fleet.view in the worker thread, 3 calls on the big home", profiles["view"])


# ------------------------------------------------------------------ main
def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--seed-big":
        seed_big(sys.argv[2], float(os.environ["BENCH_NOW"]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--repair-run":  # its own process, so its RSS is its own
        print(json.dumps(repair_run(sys.argv[2], fake_tmux(float(os.environ["BENCH_NOW"])))))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--watch-run":  # its own process, so its RSS is its own
        import leash.console.tui.app  # noqa: F401

        out = asyncio.run(big_watch_run(sys.argv[2], fake_tmux(float(os.environ["BENCH_NOW"])), dict(os.environ)))
        print(json.dumps(out))
        return
    wall = time.perf_counter()
    import leash.console.tui.app  # noqa: F401  (module imports are not part of constructing the app)

    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="leash-bench-console-") as scratch:
        print(f"(1) time to first paint, run_test(size={SIZE}), headless")
        small = os.path.join(scratch, "small-home")
        tmux, now = seed_small(small)
        results["small_cold"] = asyncio.run(small_first_paint(small, tmux, now))
        print_first_paint("small home (first run)", results["small_cold"])
        if not SMOKE:  # the same run again, its caches warm: a figure only, which a smoke's means nothing
            results["small_warm"] = asyncio.run(small_first_paint(small, tmux, now))
            print_first_paint("small home (second run)", results["small_warm"])

        print("\n(2) the big home")
        big = os.path.join(scratch, "big-home")
        now = time.time()
        env = dict(os.environ, LEASH_HOME=big, BENCH_NOW=repr(now), BENCH_SMOKE="1" if SMOKE else "")
        for name in ("TMUX", "TMUX_PANE", "LEASH_ENTITY"):
            env.pop(name, None)
        seeded = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--seed-big", big], env=env,
                                cwd=str(ROOT), capture_output=True, text=True, timeout=120)
        sys.stdout.write(seeded.stdout)
        if seeded.returncode != 0:
            raise SystemExit(f"  seeding failed:\n{seeded.stderr}")
        peak, current = rss_mb()
        print(f"  this process before the big console: peak RSS {peak:.1f} MB, current {current:.1f} MB")
        tmux = fake_tmux(now)
        results["static"] = asyncio.run(big_static_run(big, tmux))
        report_static(results["static"], len(tmux))
        watched = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--watch-run", big], env=env,
                                 cwd=str(ROOT), capture_output=True, text=True, timeout=240)
        lines = watched.stdout.strip().splitlines()
        if watched.returncode != 0 or not lines or not lines[-1].startswith("{"):
            raise SystemExit(f"  the watch=True run failed:\n{watched.stdout[-2000:]}\n{watched.stderr[-4000:]}")
        results["watch"] = json.loads(lines[-1])
        report_watch(results["watch"])
        repaired = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--repair-run", big], env=env,
                                  cwd=str(ROOT), capture_output=True, text=True, timeout=240)
        lines = repaired.stdout.strip().splitlines()
        if repaired.returncode != 0 or not lines or not lines[-1].startswith("{"):
            raise SystemExit(f"  the repair run failed:\n{repaired.stdout[-2000:]}\n{repaired.stderr[-4000:]}")
        results["repair"] = json.loads(lines[-1])
        report_repair(results["repair"])
        summary(results)
    print(f"\n(bench wall time {time.perf_counter() - wall:.1f} s; temporary homes removed)")


if __name__ == "__main__":
    main()
