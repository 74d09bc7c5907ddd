"""In-process latency of Gate.check against a crowded home.

Writes 1,000 stopped sessions into stops.json and 1,000 hands-off locks (950
names, 50 ``path:`` globs) into hands_off_registry.json of a fresh temp home,
builds one Gate, and times single ``Gate.check`` calls with
``time.perf_counter_ns``:

  (a) an unstopped session, no tool;
  (b) an unstopped session editing a file that no lock covers;
  (c) a stopped session;
  (d) case (a) again after 1,000 sessions have been written to sessions.json
      (every hook call registers its session there, so a busy home has many).

Each case is warmed up, then called CALLS times; median and p99 are printed in
microseconds against the target (median < 50 us). The first, cold check, which
parses and indexes the files, is timed on its own.

``--smoke``: 200 calls per case, 20 warm-up: it shows the bench works, its
figures mean little.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leash.core.base.clock import iso  # noqa: E402
from leash.core.base.home import ensure_home  # noqa: E402
from leash.core.base.statefile import write_json  # noqa: E402
from leash.core.hook.gate import Gate  # noqa: E402
from leash.core.state.handsoff import REGISTRY_NAME  # noqa: E402
from leash.core.state.sessions import SESSIONS_NAME  # noqa: E402
from leash.core.state.stop import STOPS_NAME  # noqa: E402

STOPS = 1000
NAME_LOCKS = 950
PATH_LOCKS = 50
SESSIONS = 1000
CALLS = 20000
WARMUP = 2000
TARGET_US = 50.0
PROJECT = "/work/project"
PATH_PATTERNS = (
    "vendor/lib{i}/**",
    "**/secrets-{i}.env",
    "/etc/app{i}/*.conf",
    "src/generated{i}/*.py",
    "infra/stack{i}/**/*.tf",
)


def populate(home: str, now: float) -> None:
    stopped_at = iso(now - 600)
    locked_at, expires_at = iso(now - 600), iso(now + 24 * 3600)
    sessions = {
        f"stopped-{n:04d}": {"stopped_at": stopped_at, "source": "bench@host", "reason": f"bench stop {n}"}
        for n in range(STOPS)
    }
    write_json(Path(home) / STOPS_NAME, {"sessions": sessions, "fleet": None})

    def lock(n: int) -> dict[str, str]:
        return {"locked_at": locked_at, "expires_at": expires_at, "reason": f"bench lock {n}",
                "source": "bench@host", "session_id": ""}

    registry = {f"agent-{n:04d}": lock(n) for n in range(NAME_LOCKS)}
    for n in range(PATH_LOCKS):
        pattern = PATH_PATTERNS[n % len(PATH_PATTERNS)].format(i=n)
        registry[f"path:{pattern}"] = lock(NAME_LOCKS + n)
    write_json(Path(home) / REGISTRY_NAME, registry)


def populate_sessions(home: str, now: float) -> None:
    seen = iso(now)
    write_json(Path(home) / SESSIONS_NAME, {
        f"seen-{n:04d}": {"tmux_session": f"agent-tmux-{n}", "tmux_pane": f"%{n}", "entity": "",
                          "cwd": PROJECT, "last_seen": seen, "last_tool": "Bash"}
        for n in range(SESSIONS)
    })


def measure(call) -> tuple[float, float]:
    """(median, p99) of single calls, in microseconds."""
    clock = time.perf_counter_ns
    for _ in range(WARMUP):
        call()
    samples = []
    append = samples.append
    for _ in range(CALLS):
        start = clock()
        call()
        append(clock() - start)
    samples.sort()
    return statistics.median(samples) / 1000, samples[int(len(samples) * 0.99) - 1] / 1000


def report(label: str, call, expect_allow: bool, target: float | None = TARGET_US) -> None:
    verdict = call()
    if verdict.allow != expect_allow:
        raise SystemExit(f"{label}: unexpected verdict {verdict!r}")
    median, p99 = measure(call)
    mark = "" if target is None else ("  [ok]" if median < target else "  [MISSED]")
    print(f"{label:<44} median {median:7.1f} us   p99 {p99:7.1f} us{mark}")


def main() -> None:
    global CALLS, WARMUP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="each case in its smallest form (figures mean little)")
    if parser.parse_args().smoke:
        CALLS, WARMUP = 200, 20
    # Modules the gate imports on first use, so the cold figure is parsing only.
    import leash.core.base.globs  # noqa: F401
    import leash.core.policy.toolcall  # noqa: F401

    with tempfile.TemporaryDirectory() as parent:
        home = ensure_home(Path(parent) / "home")
        now = time.time()
        populate(home, now)
        gate = Gate(home)
        edit = {"file_path": f"{PROJECT}/src/app/main.py", "old_string": "a", "new_string": "b"}

        start = time.perf_counter_ns()
        cold = gate.check("running-session", "Edit", edit, cwd=PROJECT)
        cold_us = (time.perf_counter_ns() - start) / 1000
        assert cold.allow, cold

        print(f"home: {STOPS} stopped sessions, {NAME_LOCKS + PATH_LOCKS} hands-off locks "
              f"({NAME_LOCKS} names, {PATH_LOCKS} path globs); {CALLS} calls per case after {WARMUP} warm-up")
        print(f"{'cold first check (parses stops + registry)':<44} {cold_us / 1000:7.2f} ms")
        stops_and_locks = gate.check_stops_and_locks
        print("the stop protocol's part of the gate (stops, tmux names, hands-off, path locks):")
        report("(a) unstopped session, no tool", lambda: stops_and_locks("running-session"), True)
        report("(b) unstopped session, Edit outside locks",
               lambda: stops_and_locks("running-session", "Edit", edit, cwd=PROJECT), True)
        report("(c) stopped session", lambda: stops_and_locks("stopped-0500"), False)

        populate_sessions(home, now)
        start = time.perf_counter_ns()
        gate.check("running-session")
        print(f"{'cold check after writing sessions.json':<44} {(time.perf_counter_ns() - start) / 1e6:7.2f} ms")
        report(f"(d) as (a), {SESSIONS} sessions in sessions.json", lambda: stops_and_locks("running-session"),
               True)
        print(f"target: median < {TARGET_US:g} us")
        print("the whole gate, halt conditions included (their own target, < 1 ms, is in bench/halts.py):")
        report("(e) Gate.check, Edit outside locks", lambda: gate.check("running-session", "Edit", edit, cwd=PROJECT),
               True, target=None)


if __name__ == "__main__":
    main()
