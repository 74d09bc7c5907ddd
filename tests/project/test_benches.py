"""Every bench in bench/ runs, in its smallest form (``--smoke``).

A bench is run as ``make bench`` runs it: a process of its own, from the
checkout, with a temporary directory of this test's as its TMPDIR (what it
leaves there fails the test). It must exit 0, print no traceback, and print
the lines that show each of its parts ran; the figures themselves mean
nothing at this size. The benches that need tmux or PostgreSQL start them as
the tests do (a private tmux server, ``tests/support/postgres.py``'s
throwaway server) and are skipped with one line when they are not installed.
Each bench is a test item of its own, so ``make test``'s workers share them
out. Two are left to ``make e2e`` (``RUN_BY_MAKE_E2E`` says why): the fleet
soak, and the one that drives the real Claude Code. The smallest forms that
cost ``make test`` more than ~1.5 s of CPU each are marked ``heavy``: ``make
e2e`` runs them (``pytest --heavy``), the reason on each saying what it costs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ..support.checkout import ROOT
from ..support.postgres import binaries

BENCH = ROOT / "bench"
RUN_SECONDS = 90          # a hung bench, not a slow one
TMUX = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
POSTGRES = pytest.mark.skipif(binaries() is None, reason="PostgreSQL is not installed (initdb, pg_ctl)")
# What a bench's environment must not inherit from the test run or the operator's shell.
UNSET = ("LEASH_HOME", "LEASH_SOCKET", "LEASH_OPERATOR_SOCKET", "LEASH_TMUX_SOCKET", "LEASH_STORE_URL", "LEASH_HOST",
         "LEASH_ENTITY", "TMUX", "TMUX_PANE", "CLAUDE_PROJECT_DIR")


# bench file, its arguments, lines its output must hold (one per part)
BENCHES = [
    pytest.param("gate_check.py", ["--smoke"], ["cold first check", "(c) stopped session", "(e) Gate.check"],
                 id="gate_check"),
    pytest.param("halts.py", ["--smoke"], ["(1) check_halt_conditions", "(2) get_session_halts",
                                           "(3) check_halt_conditions on 64 KiB", "(4) targets missed"], id="halts"),
    pytest.param("secret_rules.py", ["--smoke"], ["fresh process:", "adversarial 64 KiB token   whole halt check"],
                 id="secret_rules"),
    pytest.param("policy_audit.py", [], ["path-lock probes:", "tampering:"], id="policy_audit"),
    pytest.param("budget.py", ["--smoke"], ["(1) first read of", "(2) incremental read after a 10 KB append",
                                            "(3) leashd's hook with metering on"],
                 id="budget"),
    pytest.param("notify.py", ["--smoke"], ["webhook POST received, 2 runs", "p50"], id="notify"),
    pytest.param("slowloris.py", ["--smoke"], ["hooks, nothing stalled", "hooks, 10 stalled connections"],
                 id="slowloris"),
    pytest.param("approvals.py", ["--smoke"], ["operator socket  n=1", "cli              n=1", "ntfy tap",
                                               "one approval waiting"], id="approvals",
                 marks=pytest.mark.heavy('its smallest form is ~2 s of CPU: '
                                         'leashd, the operator socket, the CLI and an ntfy stand-in')),
    pytest.param("daemon.py", ["--smoke"], ["daemon-side Read", "parallel hooks with leashd",
                                            "parallel hooks without leashd"], id="daemon",
                 marks=pytest.mark.heavy('its smallest form is ~2.5 s of CPU: '
                                         'leashd in process, then 2 clients of hook processes')),
    pytest.param("hook_latency.py", ["--smoke"], ["== with a leash daemon", "Bash, 64 KiB command",
                                                  "HTTP hook, kept alive", "Bash, after 1k past",
                                                  "UI/driver packages imported: none"],
                 id="hook_latency",
                 marks=pytest.mark.heavy('its smallest form is ~2.6 s of CPU: '
                                         'hook processes by the dozen, with leashd and without')),
    pytest.param("console.py", ["--smoke"], ["(1) time to first paint", "(2) the big home", "(bench wall time"],
                 id="console",
                 marks=pytest.mark.heavy('its smallest form is ~3 s of CPU: '
                                         'the console started again and again on a seeded and a big home')),
    pytest.param("log_tamper_audit.py", ["--smoke"], ["file log, no key", "undetected ack-log tampering"],
                 id="log_tamper_audit",
                 marks=pytest.mark.heavy('its smallest form is ~1.5 s of CPU: '
                                         'the file log and the PostgreSQL log tampered with')),
    pytest.param("kennel.py", ["--smoke"], ["outcomes:", "idle kennel"], id="kennel", marks=TMUX),
    pytest.param("interrupt.py", ["--smoke"], ["pane (Escape), with leashd", "headless (SIGINT), with leashd"],
                 id="interrupt", marks=TMUX),
    pytest.param("shared_store.py", ["--smoke"], ["stop on host a -> hook on host c denies",
                                                  "daemon-side on PostgreSQL Read", "PostgreSQL, leashd, Read",
                                                  "fleet: database CPU", "console on that fleet"],
                 id="shared_store", marks=[POSTGRES, pytest.mark.heavy(
                     "its smallest form is ~3 s of CPU and 7 s: PostgreSQL, three leashd hosts and a console")]),
]


# Benches run by ``make e2e`` instead, and why.
RUN_BY_MAKE_E2E = {
    "soak.py": "its smallest form is 26 s of timeline and 30-45 s of a worker; make e2e runs it for 3 minutes",
    "warrant_delivery.py": "it drives a real interactive Claude Code, which make e2e installs "
                           "(tests/e2e/test_warrant_delivery_bench.py)",
}


def test_every_bench_is_run_here():
    """A bench is a script (it has a ``__main__`` block); the modules a bench
    imports (bench/soak_*.py) are not run on their own."""
    listed = {param.values[0] for param in BENCHES}
    assert not listed & set(RUN_BY_MAKE_E2E)
    scripts = {path.name for path in BENCH.glob("*.py") if '__name__ == "__main__"' in path.read_text()}
    assert listed | set(RUN_BY_MAKE_E2E) == scripts


@pytest.fixture
def scratch(tmp_path):
    """The bench's TMPDIR: directly in the run's temporary folder and open to
    be passed through, as a PostgreSQL server run as its own user (when the
    tests run as root) must reach its data folder in it; and short, as Unix
    socket paths in it are."""
    path = Path(tempfile.mkdtemp(prefix="bench-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize(("script", "args", "wanted"), BENCHES)
def test_bench_runs_in_its_smallest_form(script, args, wanted, scratch, tmp_path):
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env.update(TMPDIR=str(scratch), TMUX_TMPDIR=str(tmp_path), PYTHONUNBUFFERED="1")
    try:
        done = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=RUN_SECONDS, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script} ran over {RUN_SECONDS} s:\n{exc.stdout}\n{exc.stderr}")
    said = f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    assert "Traceback" not in done.stderr, said
    for line in wanted:
        assert line in done.stdout, f"{line!r} not printed:\n{said}"
    assert [path.name for path in scratch.iterdir()] == [], f"{script} left files behind"
