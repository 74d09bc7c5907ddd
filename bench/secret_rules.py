"""Cost of finding and masking secrets, and of the whole halt check, by input size.

Cases: a typical 200-byte Bash command; a 1 MiB command of ordinary shell
(plain); a 1 MiB command that is one token made of every rule keyword repeated
(adversarial: every rule runs in every window). For each: ``find_secrets`` +
``mask`` (what the hook and the stores do) and ``check_halt_conditions`` on the
command (``record=False``, so every call does the same work). Also the one-off
costs a fresh hook process pays: loading the rule data and building the index.
Target: the whole check on 1 MiB under 100 ms. CPU time (``process_time``) is
printed beside wall time, as other work on the machine inflates the latter.

Prints figures only; asserts nothing. Run: ``.venv/bin/python bench/secret_rules.py``.
``--smoke``: 64 KiB instead of 1 MiB, a few calls each: it shows the bench
works, its figures mean nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MIB = 1 << 20
SIZE = MIB            # of the big cases (--smoke: 64 KiB)
TYPICAL_RUNS, BIG_RUNS = 200, 5
TARGET_MS = 100.0
TYPICAL = "git status --short && pytest -q tests/test_app.py -k 'login or logout' && git diff --stat HEAD~1 -- src/"
PLAIN_LINE = "cd /srv/app && make -j4 build && ls -la dist/ | grep -v '.map$' && echo \"step $i done\" >> build.log\n"


def timed(call, runs: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms) over ``runs`` calls after one warm-up."""
    call()
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def cases() -> dict[str, str]:
    from leash.core.base import gitleaks_rules

    keywords = "".join(sorted({k for rule in gitleaks_rules.RULES for k in rule[4]}))
    size = f"{SIZE // MIB} MiB" if SIZE >= MIB else f"{SIZE // 1024} KiB"
    return {
        "typical 200 B command": TYPICAL[:200],
        f"plain {size} command": (PLAIN_LINE * (SIZE // len(PLAIN_LINE) + 1))[:SIZE],
        f"adversarial {size} token": (keywords * (SIZE // len(keywords) + 1))[:SIZE],
    }


def first_use() -> None:
    """What a fresh process pays before its first scan."""
    import subprocess

    code = ("import time, leash.core.state.halts; t=time.process_time(); import leash.core.base.gitleaks_rules; "
            "a=time.process_time(); from leash.core.base import secrets; secrets.ruleset(); b=time.process_time(); "
            "secrets.find_secrets(%r); c=time.process_time(); "
            "print(f'{(a-t)*1000:.2f} {(b-a)*1000:.2f} {(c-b)*1000:.2f}')" % TYPICAL)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}).stdout.split()
    if len(out) == 3:
        print(f"  fresh process: load rule data {out[0]} ms, build index {out[1]} ms, "
              f"first typical scan {out[2]} ms (CPU)")


def profile_top(call, count: int = 6) -> None:
    """The functions that took the most time in one call (cumulative)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(call)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(count)
    lines = [line for line in out.getvalue().splitlines() if "/" in line or "{" in line][:count]
    for line in lines:
        print("      " + line.strip())


def main() -> None:
    global SIZE, TYPICAL_RUNS, BIG_RUNS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="each case in its smallest form (figures mean nothing)")
    if parser.parse_args().smoke:
        SIZE, TYPICAL_RUNS, BIG_RUNS = 64 * 1024, 5, 1
    from leash.core.base import secrets
    from leash.core.state.halts.api import check_halt_conditions

    print(f"secrets: {secrets.rule_count()} rules (gitleaks {secrets.ruleset().version} + leash's own); "
          f"window {secrets.WINDOW}, overlap {secrets.OVERLAP}")
    first_use()
    with tempfile.TemporaryDirectory(prefix="leash-bench-") as home:
        for label, text in cases().items():
            runs = TYPICAL_RUNS if len(text) < 10_000 else BIG_RUNS

            def scan_and_mask(text=text):
                fresh = (" " + text)[1:]  # a new string: the last scan is remembered by identity
                secrets.find_secrets(fresh)
                secrets.mask(fresh)

            def whole_check(text=text):
                check_halt_conditions({"session_token": "bench", "current_context": {
                    "operation": "run", "commands": [(" " + text)[1:]]}}, home=home, record=False, record_high=False)

            wall, cpu = timed(scan_and_mask, runs)
            print(f"  {label:<26} find + mask       {wall:8.2f} ms wall {cpu:8.2f} ms CPU")
            wall, cpu = timed(whole_check, runs)
            met = "met" if cpu < TARGET_MS else "MISSED"
            verdict = "" if len(text) < MIB else f"  (target < {TARGET_MS:g} ms: {met})"
            print(f"  {label:<26} whole halt check  {wall:8.2f} ms wall {cpu:8.2f} ms CPU{verdict}")
            if len(text) >= SIZE:
                profile_top(whole_check)


if __name__ == "__main__":
    main()
