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
Its parts beside it: ``consolehome.py`` (the homes), ``consolemeasure.py``
(the instruments) and ``consolereport.py`` (what it prints).
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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # its parts beside it

from consolehome import (  # noqa: E402
    BIG_SESSIONS,
    SMOKE,
    SOURCE,
    fake_tmux,
    seed_big,
    seed_small,
    session_id,
    tmux_name,
)
from consolemeasure import Heartbeat, Instruments, ms, rss_mb  # noqa: E402
from consolereport import print_first_paint, report_repair, report_static, report_watch, summary  # noqa: E402

SIZE = (160, 45)
REFRESHES, REORDER_REFRESHES, TRIALS = 20, 5, 10
SETTLE_SECONDS, IDLE_SECONDS = 1.0, 3.0
PACE_SECONDS, TRIAL_GAP_SECONDS = 0.25, 0.3  # time passing between refreshes; the last trial's change settling
if SMOKE:
    REFRESHES, REORDER_REFRESHES, TRIALS = 2, 1, 2
    SETTLE_SECONDS, IDLE_SECONDS = 0.2, 0.5
    PACE_SECONDS, TRIAL_GAP_SECONDS = 0.05, 0.1


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
        report_static(results["static"], len(tmux), pace=PACE_SECONDS)
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
