"""``leash stop SESSION --interrupt``: from the operator's command to the call in
flight being cancelled, over several runs (p50 and max).

Two kinds of session, each with and without leashd running:

* pane: an interactive stand-in for Claude Code in a tmux pane of a private
  server; it has run leash's PreToolUse hook as Claude Code does (through
  ``sh -c``) and then waits on its terminal. Cancelled = the Escape that leash
  pressed has reached it.
* headless: a ``claude -p`` stand-in whose hook ran the same way and whose
  "tool" is ``sleep 60``. Cancelled = SIGINT arrived, the tool was killed and
  the stand-in has exited.

With ``--claude``, also the real thing: a headless ``claude -p`` (the version
the end-to-end harness installs, ``LEASH_E2E_CLAUDE_VERSION``) against the
loopback stand-in of the Messages API, its scripted Bash call
``(sleep 60); echo done > marker``; cancelled = ``claude`` has exited.

The clock starts when the ``leash`` process is started (the operator pressing
Enter) and stops when the stand-in shows the cancellation, so it includes
leash's own start-up, the stop being filed, and, with leashd, the command's
trip through the operator socket. The stand-ins are ``tests/support/interrupt.py``'s.
Prints figures only; everything lives in a temporary directory removed at
the end, and the tmux server and every process started here are ended.
``--smoke``: one run of each case: it shows the bench works, its figures mean
little.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import interrupt as standins  # noqa: E402  (the stand-ins the tests use)

RUNS = 10
POLL_SECONDS = 0.001
CANCEL_WITHIN_SECONDS = 20
CALL_SETTLE_SECONDS = 0.5  # from the hook's answer to the call's process running
DAEMON_STARTS_WITHIN_SECONDS = 20


def leash_argv() -> list[str]:
    script = Path(sys.executable).with_name("leash")
    return [str(script)] if script.exists() else [sys.executable, "-m", "leash.console.cli"]


def until(check, seconds: float = CANCEL_WITHIN_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(POLL_SECONDS)
    return False


def interrupt(home: Path, session_id: str, env: dict, cancelled) -> float | None:
    """Seconds from starting ``leash stop --interrupt`` to ``cancelled()``
    holding (None: it never did)."""
    began = time.monotonic()
    command = subprocess.Popen(leash_argv() + ["--home", str(home), "stop", session_id, "--interrupt"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    took = time.monotonic() - began if until(cancelled) else None
    command.wait(timeout=CANCEL_WITHIN_SECONDS)
    return took


def pane_run(base: Path, home: Path, socket: Path, env: dict, n: int) -> float | None:
    where, session_id = base / f"pane-{n}", f"bench-pane-{uuid.uuid4()}"
    standins.start_in_pane(socket, f"agent-{n}", where, home, session_id, exit_on_escape=True, live_seconds=30)
    standins.wait_ready(where)
    return interrupt(home, session_id, env, lambda: (where / "keys").exists())


def headless_run(base: Path, home: Path, env: dict, n: int) -> float | None:
    where, session_id = base / f"headless-{n}", f"bench-headless-{uuid.uuid4()}"
    proc = standins.start_headless(where, home, session_id, live_seconds=30, env=env)
    try:
        standins.wait_ready(where)
        return interrupt(home, session_id, env, lambda: proc.poll() is not None)
    finally:
        standins.stop(proc)


def start_daemon(home: Path, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(leash_argv() + ["--home", str(home), "daemon", "--no-kennel"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    if not until(lambda: (home / "run" / "operator.sock").exists(), DAEMON_STARTS_WITHIN_SECONDS):
        proc.kill()
        raise SystemExit("leash daemon did not start")
    return proc


def end_daemon(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def measure(base: Path, runs: int, daemon: bool) -> dict[str, list[float | None]]:
    base = base / ("with-leashd" if daemon else "without-leashd")  # each pass its own stand-ins' files
    base.mkdir()
    home, socket = base / "home", base / "tmux.sock"
    env = dict(os.environ, LEASH_HOME=str(home), LEASH_TMUX_SOCKET=str(socket))
    for name in ("LEASH_SOCKET", "LEASH_OPERATOR_SOCKET", "TMUX", "TMUX_PANE"):
        env.pop(name, None)
    home.mkdir(mode=0o700)
    running = start_daemon(home, env) if daemon else None
    saved = dict(os.environ)
    os.environ.update(env)  # the stand-ins' hooks and tmux server see this home and server
    try:
        return {"pane": [pane_run(base, home, socket, env, n) for n in range(runs)],
                "headless": [headless_run(base, home, env, n) for n in range(runs)]}
    finally:
        os.environ.clear()
        os.environ.update(saved)
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)
        if running is not None:
            end_daemon(running)


def claude_runs(base: Path, runs: int) -> list[float | None]:
    """The real headless Claude Code, interrupted mid-call ``runs`` times."""
    from tests.support.e2e.harness import ensure_claude, wire

    claude, _ = ensure_claude()
    base = base / "claude"
    home, project = base / "home", base / "project"
    project.mkdir(parents=True)
    home.mkdir(mode=0o700)
    wire(project)
    return [claude_run(claude, base, home, project) for _ in range(runs)]


def claude_run(claude: list[str], base: Path, home: Path, project: Path) -> float | None:
    from tests.support.e2e.harness import claude_env
    from tests.support.e2e.standin import StandInServer, bash, text

    session_id = str(uuid.uuid4())
    with StandInServer([[text("Waiting."), bash("(sleep 60); echo done > marker")], [text("done")]]) as standin:
        proc = subprocess.Popen(claude + ["-p", "wait", "--output-format", "json", "--session-id", session_id,
                                          "--permission-mode", "bypassPermissions"], cwd=project,
                                env=claude_env(base, standin.url, LEASH_HOME=str(home)), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            if not until(lambda: in_flight(home, session_id), CANCEL_WITHIN_SECONDS * 3):
                return None
            time.sleep(CALL_SETTLE_SECONDS)
            return interrupt(home, session_id, dict(os.environ, LEASH_HOME=str(home)), lambda: proc.poll() is not None)
        finally:
            standins.stop(proc)


def in_flight(home: Path, session_id: str) -> bool:
    """The session's PreToolUse hook has run and named its Claude Code."""
    import json

    try:
        record = json.loads((home / "sessions.json").read_text()).get(session_id) or {}
    except (OSError, ValueError):
        return False
    return bool(record.get("agent_process"))


def show(label: str, times: list[float | None]) -> None:
    done = [t * 1000 for t in times if t is not None]
    missed = len(times) - len(done)
    tail = f", {missed} not cancelled within {CANCEL_WITHIN_SECONDS} s" if missed else ""
    if not done:
        print(f"  {label:<36} no run was cancelled{tail}")
        return
    print(f"  {label:<36} p50 {statistics.median(done):7.1f} ms   max {max(done):7.1f} ms   ({len(done)} runs{tail})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs per case (default {RUNS})")
    parser.add_argument("--claude", action="store_true",
                        help="also a real headless claude -p (the end-to-end harness's install)")
    parser.add_argument("--smoke", action="store_true", help="one run of each case (figures mean little)")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    base = Path(tempfile.mkdtemp(prefix="leash-bench-interrupt-"))
    try:
        print(f"leash stop --interrupt: command start -> call cancelled, {args.runs} runs each")
        for daemon in (False, True):
            figures = measure(base, args.runs, daemon)
            where = "with leashd" if daemon else "without leashd"
            show(f"pane (Escape), {where}", figures["pane"])
            show(f"headless (SIGINT), {where}", figures["headless"])
        if args.claude:
            show("real claude -p (SIGINT)", claude_runs(base, args.runs))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
