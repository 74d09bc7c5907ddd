"""What the thin hook call spends its time on, and what the hook imports.

``breakdown`` runs the PreToolUse command with ``LEASH_HOOK_TRACE`` naming a
file, in the client's environment and in leashd's: each appends a line of
``time.perf_counter_ns`` stamps (``core.wire.thinhook``,
``core.daemon.hookverb``), on the same clock, and the stamps are laid out
from the moment ``sh -c`` was started (medians over the calls). A leash from
before the stamps says it has none. ``imports`` lists what the hook imports
(``python -X importtime``): leash's own modules, and any UI or driver
package that must not be there.

Used by ``hook_latency.py``; not a bench of its own.
"""
from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hookinstalls import MARK, daemon_of, stop_daemon

TRACE_ENV = "LEASH_HOOK_TRACE"
STAMPS_WRITTEN_SECONDS = 0.2  # leashd writes its stamps after the reply


def imports(run, payload: bytes) -> None:
    """Every module the PreToolUse hook imports (``python -X importtime``)."""
    words = shlex.split(run.leash.hooks["PreToolUse"].replace(MARK, "").split("||")[0])
    at = words.index(run.leash.python)
    trace = subprocess.run([words[at], "-X", "importtime", *words[at + 1:]], input=payload, env=run.env,
                           capture_output=True, cwd=run.project)
    names = [line.split("|")[-1].strip() for line in trace.stderr.decode().splitlines() if "|" in line]
    names = [n for n in names if n and n != "imported package"]
    heavy = sorted({n.split(".")[0] for n in names} & {"textual", "rich", "libtmux", "watchfiles", "psycopg"})
    ours = sorted({n for n in names if n.split(".")[0] == "leash"})
    third = sorted({n.split(".")[0] for n in names if _third_party(n.split(".")[0])})
    print(f"modules imported by the hook: {len(names)}; leash's own ({len(ours)}): {', '.join(ours)}")
    print(f"UI/driver packages imported: {', '.join(heavy) or 'none'}")
    print(f"other third-party packages imported: {', '.join(third) or 'none'}")


# ------------------------------------------------------------------ the breakdown
STEPS = {  # stamp -> what ended there
    "client entered": "process start: sh, python (and timeout, before --deadline), to leash's first line",
    "client imported": "leash's imports (hook entry, thin client)",
    "client read": "stdin read",
    "client connected": "connected to the agent socket",
    "daemon accepted": "leashd: the connection's thread started",
    "daemon peer": "leashd: the peer's credentials (SO_PEERCRED, its user)",
    "client vouched": "client: leashd vouched for (the lock's holder)",
    "client sent": "client: request sent",
    "daemon request": "leashd: request line read and parsed",
    "daemon learned": "leashd: the agent learnt (a session's first call only)",
    "daemon judged": "leashd: judged (gate, halt conditions, session record)",
    "client replied": "client: reply received (leashd logged and sent it)",
    "client written": "client: answer written",
    "end": "process exit (the interpreter's teardown, sh)",
}


def breakdown(run, *, calls: int) -> None:
    """The thin PreToolUse call, stamp by stamp (medians over the traced calls)."""
    trace = os.path.join(run.home, "trace.txt")
    proc = daemon_of(run.leash, run.home, **{TRACE_ENV: trace})
    env = dict(run.env, **{TRACE_ENV: trace})
    payload, command = run.call("Bash", {"command": "ls src/ | grep -c py"}), run.leash.hooks["PreToolUse"]
    spans = []
    try:
        for _ in range(max(calls, 3)):
            start = time.perf_counter_ns()
            subprocess.run(["sh", "-c", command], input=payload, env=env, cwd=run.project,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            spans.append((start, time.perf_counter_ns()))
        time.sleep(STAMPS_WRITTEN_SECONDS)
    finally:
        stop_daemon(proc)
    lines = Path(trace).read_text().splitlines() if os.path.exists(trace) else []
    clients = [line.split() for line in lines if line.startswith("client ")]
    daemons = {line.split()[1]: line.split()[2:] for line in lines if line.startswith("daemon ")}
    if len(clients) != len(spans):
        print(f"breakdown: {len(clients)} of {len(spans)} calls stamped (this leash does not trace its calls)")
        return
    offsets: dict[str, list[float]] = {}
    for (start, end), words in zip(spans, clients, strict=True):
        stamps = {f"client {k}": int(v) for k, v in zip(words[2::2], words[3::2], strict=False)}
        theirs = daemons.get(words[1], [])
        stamps.update({f"daemon {k}": int(v) for k, v in zip(theirs[::2], theirs[1::2], strict=False)})
        stamps["end"] = end
        for name, ns in stamps.items():
            offsets.setdefault(name, []).append((ns - start) / 1e6)
    print(f"breakdown of the thin PreToolUse call (Bash), medians over {len(spans)} traced calls, "
          "ms from `sh -c` started:")
    rows = sorted(((statistics.median(v), k) for k, v in offsets.items() if k in STEPS and len(v) == len(spans)))
    previous = 0.0
    for at, name in rows:
        print(f"  {at:6.2f}  (+{at - previous:5.2f})  {STEPS[name]}")
        previous = at


def _third_party(top: str) -> bool:
    if top in sys.builtin_module_names or top == "leash" or top in sys.stdlib_module_names:
        return False
    return not top.startswith("_") and top not in ("sitecustomize", "usercustomize")
