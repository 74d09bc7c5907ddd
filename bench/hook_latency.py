"""Whole-process latency of `leash hook pre-tool-use` against `python -c pass`.

Runs both 20 times, interleaved, and prints the medians and their ratio, twice:
with a leash daemon running (the hook is its thin client; target at most 1.5x)
and without one (the in-process hook; target at most 3x); beside them, with the
daemon, Claude Code's HTTP hook (``leash install --transport http``): a POST
to leashd's loopback listener, no process, p50/p99 over 500 calls; for a Bash call in three homes: a fresh one with a
stopped session and a hands-off lock; the same with halts.db in use (the
PostToolUse hook has reported reads and failures, other sessions hold halts),
so the halt conditions run with their stored state; and an Edit of an existing
file in that home; every lifecycle hook on Claude Code's real payloads; a 1 MiB
command; and a home with 100,000 past sessions. leash runs installed from its
own wheel in a fresh virtualenv, as users run it. Also prints every non-stdlib
module the hook imports (there should be none besides leash), from `python -X importtime`.

``--smoke``: one run of each case (one lifecycle hook, no warm-up call, not
through the console script), with the checkout's own interpreter (no wheel),
1 halt, a 64 KiB command and 1,000 past sessions: it shows the bench works,
its figures mean nothing.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

RUNS = 20
OTHER_HALTS, PAST_SESSIONS, BIG_COMMAND, LIFECYCLE_CASES = 20, 100_000, 1 << 20, None
SMOKE = False
# The hook command is what `leash install` writes (the interpreter on leash's
# hook entry); `leash hook` through the console script is shown beside it.
ROOT = Path(__file__).resolve().parent.parent


PYTHON = sys.executable  # replaced by the installed wheel's interpreter in main()


def leash_command() -> list[str]:
    return [str(Path(PYTHON).parent / "leash")]


@functools.cache
def _hook_runner(python: str) -> tuple[str, ...]:
    out = subprocess.run([python, "-c", "import json; from leash.core.hook.install import hook_runner; "
                                        "print(json.dumps(hook_runner()))"], capture_output=True, text=True, check=True)
    return tuple(json.loads(out.stdout))


def installed_hook() -> list[str]:
    """What `leash install` writes before `hook EVENT`: the interpreter on the hook entry."""
    return list(_hook_runner(PYTHON))


def installed_from_wheel(where: str) -> str:
    """A fresh virtualenv holding leash as a user installs it: the built wheel.
    (The development venv's editable install imports a finder at every start,
    ~20 ms that no installed leash pays.) Dependencies come from this venv's
    site-packages as a plain path entry."""
    import sysconfig
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", where,
                    str(ROOT)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    venv = os.path.join(where, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    [wheel] = Path(where).glob("leash-*.whl")
    zipfile.ZipFile(wheel).extractall(purelib)
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([python, "-m", "compileall", "-q", purelib], stdout=subprocess.DEVNULL, check=False)
    script = Path(venv, "bin", "leash")  # what pip writes for the console script
    script.write_text(f"#!{python}\nimport re\nimport sys\nfrom leash.console.cli import main\n"
                      "if __name__ == '__main__':\n"
                      "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                      "    sys.exit(main())\n")
    script.chmod(0o755)
    return python


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


TARGET = 3.0  # set per mode in main()


def measure(label: str, hook: list[str], payload: bytes, env: dict[str, str]) -> None:
    bare = [PYTHON, "-c", "pass"]
    if not SMOKE:
        timed(hook, payload, env)  # registers the session, as a real agent's first call does
    hook_times, bare_times = [], []
    for _ in range(RUNS):
        hook_times.append(timed(hook, payload, env))
        bare_times.append(timed(bare, b"", env))
    hook_ms = statistics.median(hook_times) * 1000
    bare_ms = statistics.median(bare_times) * 1000
    print(f"{label:<24} hook median {hook_ms:6.1f} ms, python -c pass {bare_ms:5.1f} ms: "
          f"{hook_ms / bare_ms:4.2f}x  (target <= {TARGET:g}x, {RUNS} runs each)")


def main() -> None:
    global PYTHON, TARGET, RUNS, OTHER_HALTS, PAST_SESSIONS, BIG_COMMAND, LIFECYCLE_CASES, SMOKE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one run each, no wheel (figures mean nothing)")
    smoke = SMOKE = parser.parse_args().smoke
    if smoke:
        RUNS, OTHER_HALTS, PAST_SESSIONS, BIG_COMMAND, LIFECYCLE_CASES = 1, 1, 1_000, 64 * 1024, 1
    with tempfile.TemporaryDirectory() as build:
        if smoke:
            print("leash as this checkout's interpreter runs it (--smoke: no wheel)")
        else:
            PYTHON = installed_from_wheel(build)
            print("leash installed from its wheel in a fresh venv; `python -c pass` is that venv's interpreter")
        print("\n== with a leash daemon: the hook is a thin client of its agent socket")
        TARGET = 1.5
        run_all(daemon=True)
        print("\n== without a daemon: the in-process hook")
        TARGET = 3.0
        run_all(daemon=False)


def start_daemon(env: dict[str, str], home: str) -> subprocess.Popen:
    proc = subprocess.Popen(leash_command() + ["daemon", "--no-kennel"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(home, "run", "operator.sock")):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("leash daemon did not start")
        time.sleep(0.05)
    return proc


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_all(*, daemon: bool) -> None:
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, LEASH_HOME=home)
        env.pop("TMUX_PANE", None)
        leash = leash_command()
        os.chmod(home, 0o700)
        port = free_port() if daemon else 0
        if port:  # Claude Code's HTTP hooks: leashd's loopback listener
            Path(home, "config.toml").write_text(f"[daemon]\nhttp_port = {port}\n")
            os.chmod(Path(home, "config.toml"), 0o600)
        proc = start_daemon(env, home) if daemon else None
        try:
            run_cases(home, env, leash, daemon=daemon)
            if port:
                measure_http(port, home)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)


def run_cases(home: str, env: dict[str, str], leash: list[str], *, daemon: bool) -> None:
    if True:
        from leash.core.views.protocol import StopProtocol

        StopProtocol(home).acknowledge_stop("bench", "someone-else", "bench")  # a stop on a session not seen
        subprocess.run(leash + ["hands-off", "path:vendor/**"], env=env, check=True, stdout=subprocess.DEVNULL)
        payload = json.dumps({"session_id": "bench-session", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                              "tool_input": {"command": "ls src/ | grep -c py"}, "cwd": home}).encode()
        hook = installed_hook() + ["hook", "pre-tool-use"]  # what Claude Code runs
        measure("Bash, no halts.db", hook, payload, env)
        if not SMOKE:
            measure("  (as `leash hook`)", leash + ["hook", "pre-tool-use"], payload, env)

        source = Path(home) / "app.py"
        source.write_text("def main():\n    return 1\n")
        post = leash + ["hook", "post-tool-use"]
        for event in ({"tool_name": "Read", "tool_input": {"file_path": str(source)}},
                      {"tool_name": "Bash", "hook_event_name": "PostToolUseFailure", "error": "exit 1",
                       "tool_input": {"command": "make lint"}}):
            subprocess.run(post, input=json.dumps({"session_id": "bench-session", "cwd": home, **event}).encode(),
                           env=env, check=True)
        for n in range(OTHER_HALTS):
            subprocess.run(leash + ["halts", "record", "--session", f"other-{n}", "--type", "scope", "--severity",
                                    "medium", "--description", "bench"], env=env, check=True,
                           stdout=subprocess.DEVNULL)
        measure("Bash, halts.db in use", hook, payload, env)
        edit = json.dumps({"session_id": "bench-session", "hook_event_name": "PreToolUse", "tool_name": "Edit",
                           "tool_input": {"file_path": str(source), "old_string": "return 1",
                                          "new_string": "return 2"}, "cwd": home}).encode()
        measure("Edit, halts.db in use", hook, edit, env)

        measure_lifecycle(leash, env)

        big = json.dumps({"session_id": "bench-session", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "echo " + "x" * BIG_COMMAND}, "cwd": home}).encode()
        size = f"{BIG_COMMAND >> 20} MiB" if BIG_COMMAND >= 1 << 20 else f"{BIG_COMMAND >> 10} KiB"
        measure(f"Bash, {size} command", hook, big, env)
        if not daemon:  # a home of its own, with no daemon on it
            measure_past_sessions(leash, payload, env)

        trace = subprocess.run([PYTHON, "-X", "importtime", *installed_hook()[1:], "hook", "pre-tool-use"],
                               input=payload, env=env, capture_output=True, cwd=ROOT)
        stdlib = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
        names = [line.split("|")[-1].strip() for line in trace.stderr.decode().splitlines() if "|" in line]
        names = [n for n in names if n and n != "imported package"]
        heavy = sorted({n.split(".")[0] for n in names} & {"textual", "rich", "libtmux", "watchfiles", "psycopg"})
        ours = sorted({n for n in names if n.split(".")[0] == "leash"})
        third = sorted({n.split(".")[0] for n in names if _third_party(n.split(".")[0], stdlib)})
        print(f"modules imported by the hook: {len(names)}; leash's own: {', '.join(ours)}")
        print(f"UI/driver packages imported: {', '.join(heavy) or 'none'}")
        print(f"other third-party packages imported: {', '.join(third) or 'none'}")


HTTP_CALLS = 500


def measure_http(port: int, home: str) -> None:
    """PreToolUse as Claude Code's HTTP hook makes it (``leash install
    --transport http``): a POST to leashd's listener, no process started; on
    one kept-alive connection, and on a new connection each call."""
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


LIFECYCLE = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit",
             "post-tool-batch": "PostToolBatch", "notification": "Notification",
             "permission-request": "PermissionRequest", "config-change": "ConfigChange",
             "post-tool-use-failure": "PostToolUseFailure", "session-end": "SessionEnd"}


def measure_lifecycle(leash: list[str], env: dict[str, str]) -> None:
    """Each lifecycle hook on Claude Code's real payloads (tests/fixtures/claude_code)."""
    fixtures = ROOT / "tests" / "fixtures" / "claude_code"
    for verb, event in list(LIFECYCLE.items())[:LIFECYCLE_CASES]:
        data = json.loads((fixtures / f"{event}.json").read_text())
        data["session_id"] = "bench-session"
        label = event
        if verb == "permission-request":  # through leashd a free session's dialog waits for an operator (approvals)
            data["session_id"], label = "someone-else", f"{event} (stopped)"
        measure(label, installed_hook() + ["hook", verb], json.dumps(data).encode(), env)


def measure_past_sessions(leash: list[str], payload: bytes, env: dict[str, str]) -> None:
    """A home whose sessions.json holds 100,000 sessions (``PAST_SESSIONS``) last seen weeks ago:
    the first write forgets them, and every later call reads a small file."""
    from leash.core.base.clock import iso

    with tempfile.TemporaryDirectory() as home:
        old = iso(time.time() - 30 * 86400)
        past = {f"past-{n}": {"tmux_session": "", "tmux_session_id": "", "tmux_pane": "", "entity": "",
                              "cwd": "/", "last_seen": old, "last_tool": "Bash"} for n in range(PAST_SESSIONS)}
        Path(home, "sessions.json").write_text(json.dumps(past))
        os.chmod(home, 0o700)
        local = dict(env, LEASH_HOME=home)
        first = timed(leash + ["hook", "pre-tool-use"], payload, local)
        print(f"{PAST_SESSIONS:,} past sessions: first call {first * 1000:.0f} ms (forgets them); "
              f"sessions.json now {Path(home, 'sessions.json').stat().st_size} bytes")
        hook = installed_hook() + ["hook", "pre-tool-use"]
        measure(f"Bash, after {PAST_SESSIONS // 1000}k past", hook, payload, local)


def _third_party(top: str, stdlib: set[str]) -> bool:
    if top in sys.builtin_module_names or top == "leash" or top in sys.stdlib_module_names:
        return False
    return not top.startswith("_") and top not in ("sitecustomize", "usercustomize")


if __name__ == "__main__":
    main()
