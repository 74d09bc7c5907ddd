"""Death warrants on a healthy interactive Claude Code: N in a row.

For each Claude Code version (default: the pinned one and ``latest``, as
``make e2e`` installs them), one interactive TUI runs in a private tmux server
against the loopback stand-in of the Messages API, whose model answers
``ALIVE``. Then N warrants are filed on it one after another and worked by
``leash kennel --until-idle``. Printed per warrant: the outcome, the attempt,
the Enters the check took, the seconds from filing to the verdict, and whether
the TUI's input line was left empty (and an operator's draft, typed before
every other warrant, put back). Figures only; nothing is asserted.

    .venv/bin/python bench/warrant_delivery.py [--runs 10] [--versions 2.1.197 latest]

Needs npm and its registry the first time (as ``make e2e``); says so and
exits 0 when Claude Code cannot be had. ``--smoke``: one warrant on the pinned
version (or on those ``--versions`` names): it shows the bench works, its
figures mean little; ``make e2e`` runs it on each Claude Code it tests
(``tests/e2e/test_warrant_delivery_bench.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.e2e import harness  # noqa: E402
from tests.support.e2e.standin import text  # noqa: E402
from tests.support.e2e.tui import Fleet  # noqa: E402

DRAFT = "half a prompt the operator was typing"


def warrant_once(fleet: Fleet, agent, n: int, *, draft: bool) -> dict:
    if draft:
        agent.type(DRAFT)
        agent.wait_for(lambda screen: DRAFT in (agent.input_text() or ""), 10)
    started = time.monotonic()
    fleet.leash("warrant", "file", agent.name, "--reason", f"bench {n}")
    fleet.leash("kennel", "--until-idle", timeout=600)
    took = time.monotonic() - started
    finished = json.loads(fleet.leash("warrant", "list", "--json").stdout)["completed"]
    done = max(finished, key=lambda w: w.get("completed_at", ""))
    left = (agent.input_text() or "").strip()
    if draft:
        agent.keys("C-u")  # the draft is the operator's; cleared here so the next run starts alike
        agent.keys("C-u")
    return {"outcome": done.get("outcome"), "attempt": done.get("attempt"),
            "enters": (done.get("delivery") or {}).get("enters"), "seconds": took,
            "input": "as found" if left == (DRAFT if draft else "") else f"LEFT: {left[:40]!r}"}


def bench_version(version: str, runs: int) -> None:
    os.environ[harness.VERSION_ENV] = version
    try:
        claude, number = harness.ensure_claude()
    except harness.ClaudeUnavailable as exc:
        print(f"Claude Code {version}: unavailable ({exc})")
        return
    with tempfile.TemporaryDirectory(prefix="leash-bench-warrants-") as scratch:
        base = Path(scratch)
        home = base / "home"
        home.mkdir(mode=0o700)
        (home / "config.toml").write_text("[warrants]\ntimeouts = [30, 30, 30]\npoll_seconds = 0.2\n")
        with Fleet(claude, base, home) as fleet:
            (agent,) = fleet.start([[[text("ALIVE")]] * (runs + 2)])
            rows = [warrant_once(fleet, agent, n, draft=n % 2 == 1) for n in range(runs)]
    pardoned = sum(row["outcome"] == "pardoned" for row in rows)
    clean = sum(row["input"] == "as found" for row in rows)
    seconds = [row["seconds"] for row in rows]
    print(f"Claude Code {number}: {pardoned}/{runs} pardoned, input line as found {clean}/{runs}, "
          f"filing to verdict p50 {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s "
          f"(kennel start included)")
    for n, row in enumerate(rows, start=1):
        print(f"  {n:2d}. {row['outcome']:<10} attempt {row['attempt']}  enters {row['enters']}  "
              f"{row['seconds']:5.2f} s  input {row['input']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--versions", nargs="+", help="default: the pinned one and latest")
    parser.add_argument("--smoke", action="store_true", help="one warrant on the pinned version (or --versions)")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.versions = 1, args.versions or [harness.PINNED_VERSION]
    args.versions = args.versions or [harness.PINNED_VERSION, "latest"]
    for version in args.versions:
        bench_version(version, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
