"""Notifications: from a halt recorded to the webhook's POST received, through
a real ``leash daemon`` (p50, p99 and max over several runs).

A webhook route points at an HTTP server on 127.0.0.1 in this process (the
tests' ``support.notify.Inbox``); its ``rate_per_minute`` is raised so the rate
limit, which this does not measure, never holds a message back. Each run
records one critical halt through the file backend, in this process, and waits
for its POST: the clock starts just before the record and stops when the server
has read the request, so it covers the halts.db write, the change feed
noticing it, the notifier's reading and the delivery.

Prints figures only; the home lives in a temporary directory removed at the
end, and the daemon started here is stopped. ``--smoke``: 2 runs, no gap: it
shows the bench works, its figures mean little.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.daemon import daemon_process, stop  # noqa: E402  (the helpers the tests use)
from tests.support.notify import Inbox, write_routes  # noqa: E402

RUNS = 50
ARRIVES_WITHIN_SECONDS = 10.0
GAP_SECONDS = 0.2  # between runs: each halt is a burst of its own for the change feed
RATE_PER_MINUTE = 10_000


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(runs: int, *, gap: float = GAP_SECONDS) -> list[float]:
    from leash.core.store.files import FileBackend

    base = tempfile.mkdtemp(prefix="leash-bench-notify-")
    inbox = Inbox()
    proc = None
    try:
        home = Path(base) / "home"
        write_routes(home, [{"kind": "webhook", "url": inbox.url, "rate_per_minute": RATE_PER_MINUTE}])
        os.environ["LEASH_HOME"] = str(home)
        proc = daemon_process(home, "--no-kennel")
        backend = FileBackend(home)
        took = []
        for run in range(runs):
            started = time.monotonic()
            backend.halts.record({"session_token": f"bench-{run}", "halt_type": "security", "severity": "critical",
                                  "description": f"bench halt {run}"})
            posts = inbox.wait_for(run + 1, timeout=ARRIVES_WITHIN_SECONDS)
            if len(posts) <= run:
                raise SystemExit(f"run {run}: no POST within {ARRIVES_WITHIN_SECONDS:g} s")
            took.append(posts[run].at - started)
            time.sleep(gap)
        return took
    finally:
        if proc is not None:
            stop(proc)
        inbox.close()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--smoke", action="store_true", help="2 runs, no gap (figures mean little)")
    args = parser.parse_args()
    took = measure(2, gap=0.0) if args.smoke else measure(args.runs)
    ms = [t * 1000 for t in took]
    print(f"halt recorded -> webhook POST received, {len(ms)} runs (target: under 1 s)")
    print(f"  p50 {statistics.median(ms):.0f} ms   p99 {percentile(ms, 0.99):.0f} ms   max {max(ms):.0f} ms   "
          f"min {min(ms):.0f} ms")


if __name__ == "__main__":
    main()
