"""What the console bench measures with: memory, the UI loop's stalls, and
the time each view and each refresh takes in a running console.

``Instruments(app)`` wraps the app's ``apply_view``, the fleet view its worker
runs and the dashboard's timers, timing each and changing nothing else;
``Heartbeat`` is a task in the UI event loop whose late wake-ups are the
loop's stalls; ``print_profile`` prints where a profiled run spent its time,
the event loop's own frames left out.

Used by ``console.py``; not a bench of its own.
"""
from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import resource
import statistics
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEARTBEAT_SECONDS = 0.002


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
            "textual" + os.sep + "app.py:", "bench" + os.sep + "console", "_contextvars", "select.epoll",
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
