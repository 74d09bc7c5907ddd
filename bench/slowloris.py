"""leashd under a slowloris: do stalled connections slow other agents' calls?

A daemon runs in this process on a fresh home (in a temporary directory,
removed afterwards). First, 40 hook requests one after another on the agent
socket (a fresh connection each, as the thin hook makes): their latency.
Then 300 connections (``--stalled``) each send the start of a request line and
stall; while they hang, the same 40 requests again (each given at most 15 s).
Printed: p50, p99 and the worst latency of both runs, and how many requests
failed. Loopback Unix socket only; the whole run is bounded (under a minute).
``--smoke``: 3 calls each, 10 stalled connections: it shows the bench works,
its figures mean little.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time

CALLS = 40
STALLED = 300
CALL_TIMEOUT_SECONDS = 15.0
CONNECT_SECONDS = 5.0  # to open the stalled connections (a full backlog makes some wait)
PARTIAL_LINE = b'{"verb": "hook", "event": "pre-tool-use", "payload": "{\\"session_id'


def request_line() -> bytes:
    payload = json.dumps({"session_id": "bench", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "git status"}, "cwd": "/"})
    return json.dumps({"verb": "hook", "event": "pre-tool-use", "payload": payload, "env": {}}).encode() + b"\n"


def one_call(path: str, line: bytes) -> float | None:
    """Seconds from connect to the reply; None when it failed or took too long."""
    from leash.core.wire.thinhook import connect

    start = time.perf_counter()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(CALL_TIMEOUT_SECONDS)
            while True:  # a full listen backlog answers EAGAIN: wait for room, as a blocking client would
                try:
                    connect(conn, path)
                    break
                except BlockingIOError:
                    if time.perf_counter() - start > CALL_TIMEOUT_SECONDS:
                        return None
                    time.sleep(0.01)
            conn.sendall(line)
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                reply += chunk
    except OSError:
        return None
    return time.perf_counter() - start if b'"code"' in reply else None


def run(path: str, label: str) -> None:
    line = request_line()
    times, failed = [], 0
    for _ in range(CALLS):
        took = one_call(path, line)
        if took is None:
            failed += 1
        else:
            times.append(took)
    if not times:
        print(f"{label}: every call failed ({failed})")
        return
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(f"{label}: p50 {statistics.median(times) * 1000:8.1f} ms, p99 {p99 * 1000:8.1f} ms, "
          f"worst {ordered[-1] * 1000:8.1f} ms, failed {failed} of {CALLS}")


def stall(path: str, count: int) -> list[socket.socket]:
    from leash.core.wire.thinhook import connect

    stalled: list[socket.socket] = []
    give_up = time.monotonic() + CONNECT_SECONDS
    while len(stalled) < count and time.monotonic() < give_up:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.setblocking(False)
        try:
            connect(conn, path)
        except BlockingIOError:  # the listen backlog is full: try again in a moment
            conn.close()
            time.sleep(0.005)
            continue
        try:
            conn.send(PARTIAL_LINE)
        except OSError:
            pass
        stalled.append(conn)
    return stalled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stalled", type=int, default=STALLED, help="stalled connections (at most 2,000)")
    parser.add_argument("--smoke", action="store_true", help="3 calls, 10 stalled (figures mean little)")
    args = parser.parse_args()
    if args.smoke:
        global CALLS
        CALLS, args.stalled = 3, 10
    count = max(0, min(args.stalled, 2000))
    here = os.path.dirname(os.path.abspath(__file__))
    # This folder has scripts named like standard modules (secrets.py), which leash imports.
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    from leash.core.daemon.service import Daemon

    root = tempfile.mkdtemp(prefix="leash-slowloris-")
    try:
        daemon = Daemon(os.path.join(root, "home"), kennel=False, log=open(os.devnull, "w"))
        daemon.start()
        try:
            run(daemon.agent_path, "hooks, nothing stalled            ")
            stalled = stall(daemon.agent_path, count)
            started = time.monotonic()
            run(daemon.agent_path, f"hooks, {len(stalled)} stalled connections")
            print(f"(the stalled run took {time.monotonic() - started:.1f} s; the daemon's line deadline is "
                  f"{daemon.line_deadline:g} s)")
            for conn in stalled:
                conn.close()
        finally:
            daemon.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
