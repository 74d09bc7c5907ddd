"""Whole-process latency of the hooks `leash install` writes, against `python -c pass`.

The commands are read from the settings `leash install --project` wrote into a
project folder (the PreToolUse one: ``LEASH_APPROVAL_WAIT=300 PYTHON -S -P
.../hookentry.py --deadline 315 --home H hook pre-tool-use || exit 2``) and run as
Claude Code runs them: ``sh -c COMMAND`` from the project folder, the payload
on stdin. Each is run 20 times in turn with ``sh -c 'PYTHON -c pass'`` (the
same interpreter), and the medians of wall and CPU time (the children's
rusage) and their ratios are printed: with a leash daemon running (the hook is
its thin client; target at most 1.2x wall) and without one (the in-process
hook; target at most 2x). Twice: leash installed from its wheel in a fresh
virtualenv, as users run it, and from the editable install a checkout's
developer runs (its finder is imported at every start, by both sides).

Cases: a Bash call in a fresh home with a stopped session and a hands-off lock;
the same with halts.db in use (reads and a failure reported, 20 other
sessions' halts) and Bash, Edit and Read calls; every lifecycle hook on Claude
Code's real payloads; a 1 MiB command; a home with 100,000 past sessions
(without a daemon); through the `leash` console script; Claude Code's HTTP
hook (``leash install --transport http``: a POST to leashd, no process).

The breakdown: the thin PreToolUse call's wall time, stamp by stamp, from
``time.perf_counter_ns`` stamps the client and leashd write when
``LEASH_HOOK_TRACE`` names a file (``core.wire.thinhook``,
``core.daemon.hookverb``): process start to leash's first line, imports, stdin,
the connect, the client's check of the lock holder, leashd's peer
credentials, its judgement, the reply, the process's exit. A leash from before
the stamps says it has none.

``--checkout DIR``: measure the leash of another checkout (a worktree of an
older commit), wheel and editable install alike. ``--before DIR``: that
checkout's hook and this one's side by side, Bash, Edit and Read in a home
with halts.db in use, with and without leashd, each call of one followed by
the other's (and each one's `python -c pass`), so that both meet the same
load: the before and after of a change on a busy machine. Its parts beside it:
``hookinstalls.py`` (the two installs and their daemon) and
``hookbreakdown.py`` (the stamps and the imports). ``--smoke``: one run of each
case, the checkout's own interpreter only (no wheel), 1 halt, a 64 KiB command
and 1,000 past sessions: it shows the bench works, its figures mean nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its parts beside it, however it is imported

from hookbreakdown import breakdown, imports  # noqa: E402
from hookinstalls import (  # noqa: E402
    CLI,
    INSTALLS,
    MARK,
    ROOT,
    Leash,
    _daemon,
    agent_env,
    commit_of,
    daemon_of,
    free_port,
    from_wheel,
    stop_daemon,
)

RUNS = 20
OTHER_HALTS, PAST_SESSIONS, BIG_COMMAND, LIFECYCLE_CASES, SMOKE = 20, 100_000, 1 << 20, None, False


def timed(command: str, stdin: bytes, env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall, CPU) seconds of ``sh -c command``, its children's CPU included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(["sh", "-c", command], input=stdin, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


class Run:
    """One home, one project, one leash (with or without its daemon)."""

    def __init__(self, leash: Leash, home: str, project: str, *, target: float):
        self.leash, self.home, self.project, self.target = leash, home, project, target
        self.env = agent_env(project)

    def measure(self, label: str, command: str, payload: bytes) -> None:
        bare = f"{shlex.quote(self.leash.python)} -c pass"
        if not SMOKE:
            timed(command, payload, self.env, self.project)  # a session's first call registers it
        hook, base = [], []
        for _ in range(RUNS):
            hook.append(timed(command, payload, self.env, self.project))
            base.append(timed(bare, b"", self.env, self.project))
        wall, cpu = (statistics.median(t[0] for t in hook) * 1000, statistics.median(t[1] for t in hook) * 1000)
        bwall, bcpu = (statistics.median(t[0] for t in base) * 1000, statistics.median(t[1] for t in base) * 1000)
        print(f"{label:<26} hook {wall:5.1f} ms (cpu {cpu:5.1f}), python -c pass {bwall:5.1f} ms (cpu {bcpu:5.1f}): "
              f"{wall / bwall:4.2f}x wall, {cpu / max(bcpu, 1e-9):4.2f}x cpu  (target <= {self.target:g}x, "
              f"{RUNS} pairs)")

    def call(self, tool: str, tool_input: dict, session: str = "bench-session") -> bytes:
        return json.dumps({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": tool,
                           "tool_input": tool_input, "cwd": self.project}).encode()


def main() -> None:
    global RUNS, OTHER_HALTS, PAST_SESSIONS, BIG_COMMAND, LIFECYCLE_CASES, SMOKE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one run each, no wheel (figures mean nothing)")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the leash checkout to measure")
    parser.add_argument("--before", type=Path, help="an older checkout: its hook and this one's side by side")
    args = parser.parse_args()
    SMOKE = args.smoke
    if SMOKE:
        RUNS, OTHER_HALTS, PAST_SESSIONS, BIG_COMMAND, LIFECYCLE_CASES = 1, 1, 1_000, 64 * 1024, 1
    if args.before is not None:
        compare(args.before.resolve())
        return
    checkout = args.checkout.resolve()
    print(f"leash of {checkout} (commit {commit_of(checkout)})")
    with tempfile.TemporaryDirectory() as build:
        for label, make in INSTALLS[SMOKE]:
            where = tempfile.mkdtemp(dir=build)
            leash = Leash(make(checkout, where), label)
            print(f"\n#### leash installed {'from its wheel in a fresh venv' if label == 'wheel' else 'editable'}"
                  f" ({leash.python}); `python -c pass` is that interpreter")
            print("\n== with a leash daemon: the hook is a thin client of its agent socket")
            run_all(leash, daemon=True)
            print("\n== without a daemon: the in-process hook")
            run_all(leash, daemon=False)


def run_all(leash: Leash, *, daemon: bool) -> None:
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as project:
        os.chmod(home, 0o700)
        port = free_port() if daemon else 0
        if port:  # Claude Code's HTTP hooks: leashd's loopback listener
            Path(home, "config.toml").write_text(f"[daemon]\nhttp_port = {port}\n")
            os.chmod(Path(home, "config.toml"), 0o600)
        leash.install(home, project)
        run = Run(leash, home, project, target=1.2 if daemon else 2.0)
        proc = daemon_of(leash, home) if daemon else None
        try:
            run_cases(run, daemon=daemon)
            if port:
                measure_http(port, home)
        finally:
            if proc is not None:
                stop_daemon(proc)
        if daemon:
            breakdown(run, calls=RUNS)


def run_cases(run: Run, *, daemon: bool) -> None:
    leash = run.leash
    stop_and_lock(run)
    pre = leash.hooks["PreToolUse"]
    bash = run.call("Bash", {"command": "ls src/ | grep -c py"})
    run.measure("Bash, no halts.db", pre, bash)
    if not SMOKE:  # the same command with the console script in place of the interpreter on the hook entry
        words = shlex.split(pre.replace(MARK, "").split("||")[0])
        at, entry = words.index(leash.python), next(n for n, w in enumerate(words) if w.endswith("hookentry.py"))
        through_script = pre.replace(shlex.join(words[at:entry + 1]), shlex.quote(leash.console_script()))
        run.measure("  (as `leash hook`)", through_script, bash)
    source = reads_and_halts(run)
    for label, call in calls(run, source):
        run.measure(f"{label}, halts.db in use", pre, call)
    measure_lifecycle(run)
    size = f"{BIG_COMMAND >> 20} MiB" if BIG_COMMAND >= 1 << 20 else f"{BIG_COMMAND >> 10} KiB"
    run.measure(f"Bash, {size} command", pre, run.call("Bash", {"command": "echo " + "x" * BIG_COMMAND}))
    if not daemon:
        measure_past_sessions(run, bash)
    imports(run, bash)


def stop_and_lock(run: Run) -> None:
    """A stop on a session not seen, and a path lock (every call's paths are read against it)."""
    from leash.core.views.protocol import StopProtocol

    StopProtocol(run.home).acknowledge_stop("bench", "someone-else", "bench")
    subprocess.run(run.leash.cli("hands-off", "path:vendor/**"), env=dict(os.environ, LEASH_HOME=run.home),
                   check=True, stdout=subprocess.DEVNULL)


def reads_and_halts(run: Run) -> Path:
    """halts.db in use: the PostToolUse hooks report a read and a failure, and
    ``OTHER_HALTS`` other sessions hold halts; returns the file read."""
    source = Path(run.project) / "app.py"
    source.write_text("def main():\n    return 1\n")
    for event in ({"tool_name": "Read", "tool_input": {"file_path": str(source)}, "hook_event_name": "PostToolUse"},
                  {"tool_name": "Bash", "hook_event_name": "PostToolUseFailure", "error": "exit 1",
                   "tool_input": {"command": "make lint"}}):
        subprocess.run(["sh", "-c", run.leash.hooks[event["hook_event_name"]]], cwd=run.project, env=run.env,
                       input=json.dumps({"session_id": "bench-session", "cwd": run.project, **event}).encode(),
                       check=True)
    for n in range(OTHER_HALTS):
        subprocess.run(run.leash.cli("halts", "record", "--session", f"other-{n}", "--type", "scope", "--severity",
                                     "medium", "--description", "bench"), env=dict(os.environ, LEASH_HOME=run.home),
                       check=True, stdout=subprocess.DEVNULL)
    return source


def calls(run: Run, source: Path) -> list[tuple[str, bytes]]:
    return [("Bash", run.call("Bash", {"command": "ls src/ | grep -c py"})),
            ("Edit", run.call("Edit", {"file_path": str(source), "old_string": "return 1", "new_string": "return 2"})),
            ("Read", run.call("Read", {"file_path": str(source)}))]


# ------------------------------------------------------------------ --before: two leashes side by side
@contextlib.contextmanager
def seeded(leash: Leash, *, daemon: bool):
    """A home and project of its own for ``leash``, wired, with a stop, a path
    lock, reads, a failure and other sessions' halts; its leashd running."""
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as project:
        os.chmod(home, 0o700)
        leash.install(home, project)
        run = Run(leash, home, project, target=1.2 if daemon else 2.0)
        proc = daemon_of(leash, home) if daemon else None
        try:
            stop_and_lock(run)
            yield run, reads_and_halts(run)
        finally:
            if proc is not None:
                stop_daemon(proc)


def compare(before: Path) -> None:
    """The hook `leash install` writes, the leash of ``before`` and this
    checkout's side by side, each call of one followed by the other's and
    each one's `python -c pass`, so both meet the same load."""
    print(f"before: {before} (commit {commit_of(before)}); after: {ROOT} (commit {commit_of(ROOT)})")
    with tempfile.TemporaryDirectory() as build:
        for label, make in INSTALLS[SMOKE]:
            pair = [Leash(make(checkout, tempfile.mkdtemp(dir=build)), label) for checkout in (before, ROOT)]
            for daemon in (True, False):
                print(f"\n== {label} install, {'through leashd' if daemon else 'no leashd (in process)'}: "
                      f"wall ms (cpu ms), ratio to python -c pass, {RUNS} rounds")
                with seeded(pair[0], daemon=daemon) as (old, source), seeded(pair[1], daemon=daemon) as (new, _):
                    for (tool, old_call), (_, new_call) in zip(calls(old, source), calls(new, source), strict=True):
                        side_by_side(tool, [(old, old_call), (new, new_call)])


def side_by_side(label: str, runs: list[tuple[Run, bytes]]) -> None:
    times: list[list[tuple[float, float]]] = [[] for _ in range(2 * len(runs))]
    for run, payload in runs:
        timed(run.leash.hooks["PreToolUse"], payload, run.env, run.project)  # registers the session
    for _ in range(RUNS):
        for n, (run, payload) in enumerate(runs):
            times[2 * n].append(timed(run.leash.hooks["PreToolUse"], payload, run.env, run.project))
            times[2 * n + 1].append(timed(f"{shlex.quote(run.leash.python)} -c pass", b"", run.env, run.project))
    shown = []
    for name, hook, bare in zip(("before", "after"), times[::2], times[1::2], strict=True):
        wall, cpu = (statistics.median(t[i] for t in hook) * 1000 for i in (0, 1))
        bwall, bcpu = (statistics.median(t[i] for t in bare) * 1000 for i in (0, 1))
        shown.append(f"{name} {wall:5.1f} ({cpu:4.1f}) {wall / bwall:4.2f}x wall {cpu / max(bcpu, 1e-9):4.2f}x cpu")
    print(f"{label:<5} " + "  |  ".join(shown))


HTTP_CALLS = 500


def measure_http(port: int, home: str) -> None:
    """PreToolUse as Claude Code's HTTP hook makes it: a POST to leashd's
    listener, no process started; on one kept-alive connection, and on a new
    connection each call."""
    import http.client

    payload = json.dumps({"session_id": "bench-http", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls src/ | grep -c py"}, "cwd": home}).encode()
    headers = {"Content-Type": "application/json", "X-Leash-Env-HOME": home}
    calls = 3 if SMOKE else HTTP_CALLS

    def one(conn) -> float:
        started = time.perf_counter()
        conn.request("POST", "/leash-hook/pre-tool-use", body=payload, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"HTTP hook answered {response.status}")
        return time.perf_counter() - started

    kept = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    one(kept)  # the session's first call teaches leashd its agent
    alive = [one(kept) for _ in range(calls)]
    kept.close()
    fresh = []
    for _ in range(calls):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        fresh.append(one(conn))
        conn.close()
    for label, times in (("HTTP hook, kept alive", alive), ("HTTP hook, new connection", fresh)):
        ordered = sorted(times)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        print(f"{label:<26} PreToolUse round trip p50 {statistics.median(times) * 1000:5.2f} ms, "
              f"p99 {p99 * 1000:5.2f} ms over {len(times)} calls, no process started (target p50 <= 2 ms)")


def measure_lifecycle(run: Run) -> None:
    """Each lifecycle hook on Claude Code's real payloads (tests/fixtures/claude_code)."""
    fixtures = ROOT / "tests" / "fixtures" / "claude_code"
    events = ["SessionStart", "UserPromptSubmit", "PostToolBatch", "Notification", "PermissionRequest",
              "ConfigChange", "PostToolUseFailure", "SessionEnd"]
    for event in [e for e in events if e in run.leash.hooks][:LIFECYCLE_CASES]:
        data = json.loads((fixtures / f"{event}.json").read_text())
        data["session_id"] = "bench-session"
        label = event
        if event == "PermissionRequest":  # through leashd a free session's dialog waits for an operator
            data["session_id"], label = "someone-else", f"{event} (stopped)"
        run.measure(label, run.leash.hooks[event], json.dumps(data).encode())


def measure_past_sessions(run: Run, payload: bytes) -> None:
    """A home whose sessions.json holds 100,000 sessions (``PAST_SESSIONS``) last seen weeks ago:
    the first write forgets them, and every later call reads a small file."""
    from leash.core.base.clock import iso

    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as project:
        old = iso(time.time() - 30 * 86400)
        past = {f"past-{n}": {"tmux_session": "", "tmux_session_id": "", "tmux_pane": "", "entity": "",
                              "cwd": "/", "last_seen": old, "last_tool": "Bash"} for n in range(PAST_SESSIONS)}
        Path(home, "sessions.json").write_text(json.dumps(past))
        os.chmod(home, 0o700)
        leash = Leash(run.leash.python, run.leash.label)
        leash.install(home, project)
        other = Run(leash, home, project, target=run.target)
        first = timed(leash.hooks["PreToolUse"], payload, other.env, project)[0]
        print(f"{PAST_SESSIONS:,} past sessions: first call {first * 1000:.0f} ms (forgets them); "
              f"sessions.json now {Path(home, 'sessions.json').stat().st_size} bytes")
        other.measure(f"Bash, after {PAST_SESSIONS // 1000}k past", leash.hooks["PreToolUse"], payload)


# ------------------------------------------------------------------ what bench/daemon.py and shared_store.py use
PYTHON = sys.executable  # they set it to a wheel's interpreter (installed_from_wheel)
TARGET = 1.2


def installed_from_wheel(where: str) -> str:
    return from_wheel(ROOT, where)


def installed_hook() -> list[str]:
    """What `leash install` writes before `hook EVENT` for ``PYTHON``: the interpreter on the hook entry."""
    out = subprocess.run([PYTHON, "-c", "import json; from leash.core.hook.install import hook_runner; "
                                        "print(json.dumps(hook_runner()))"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def start_daemon(env: dict[str, str], home: str) -> subprocess.Popen:
    return _daemon([PYTHON, "-c", CLI, "daemon", "--no-kennel"], env, home)


def measure(label: str, hook: list[str], payload: bytes, env: dict[str, str]) -> None:
    """``hook`` (words) against ``PYTHON -c pass``, as ``Run.measure`` does."""
    run = Run(Leash(PYTHON, "given"), env.get("LEASH_HOME", ""), os.getcwd(), target=TARGET)
    run.env = env
    run.measure(label, shlex.join(hook), payload)


if __name__ == "__main__":
    main()
