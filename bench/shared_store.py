"""The shared PostgreSQL store: stops across hosts, leashd's time per hook on
it, and a fleet of 1,000 sessions on 10 hosts.

A throwaway PostgreSQL (initdb/pg_ctl in a temporary directory, a Unix socket,
pg_stat_statements loaded) serves every part.

1. Stop propagation: two leashd processes, hosts a and c, on one database;
   `leash stop` through a's operator socket, then c's hook (its agent socket,
   as the thin client asks) until it denies; p50/p99 over 200 stops (target:
   p99 under 100 ms on loopback).
2. leashd's own time per hook on the shared store (a decoded request to its
   reply: Bash, Edit, Read), as bench/daemon.py measures it on files. The
   whole-process hook time is bench/hook_latency.py's (`--store postgres`).
3. A fleet: 1,000 sessions on 10 hosts (10 mirrored backends in this
   process), each session 2 tool calls a second for `--seconds`: calls
   answered per second, database CPU and statements per call
   (pg_stat_statements), then the console's first paint and a change made on
   another host to the screen on that fleet.

``--smoke`` runs every part in its smallest form (3 stops, a few calls, a
fleet of 2 hosts of 5 sessions for half a second, the checkout's own
interpreter for the hook): it shows the bench works, its figures mean nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/ holds scripts named like standard modules (secrets.py): not on the path first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from tests.support.postgres import Cluster  # noqa: E402  (the throwaway server the tests use)

STOPS = 200
DAEMON_CALLS, DAEMON_WARMUP = 1000, 100


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def start_daemon(home: str, env: dict) -> subprocess.Popen:
    from leash.core.wire.operator import DaemonUnreachable, request

    proc = subprocess.Popen([sys.executable, "-m", "leash.console.cli", "daemon", "--no-kennel"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if request(os.path.join(home, "run", "operator.sock"), {"verb": "ping"}, timeout=2).get("ok"):
                return proc
        except DaemonUnreachable:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("leash daemon did not come up")


def cli(operator: str, *argv: str) -> int:
    import socket

    from leash.core.wire.operator import request  # noqa: F401  (same socket helpers)
    from leash.core.wire.thinhook import connect

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        connect(conn, operator)
        conn.sendall(json.dumps({"verb": "cli", "argv": list(argv), "tty": False}).encode() + b"\n")
        with conn.makefile("rb") as replies:
            for line in replies:
                reply = json.loads(line)
                if "exit" in reply:
                    return int(reply["exit"])
    raise SystemExit("the daemon closed the connection")


ASK_SECONDS = 5.0  # a reply later than this is a failure of the bench, not a figure


def denies(agent: str, request: bytes, home: str) -> bool:
    """Does the daemon behind ``agent`` (of ``home``) deny, as the thin hook asks it?"""
    from leash.core.wire.thinhook import ask

    reply = ask(agent, request, home=home, deadline=time.monotonic() + ASK_SECONDS)
    return '"deny"' in reply.get("stdout", "")


def propagation(cluster: Cluster, root: str) -> None:
    from leash.core.wire.thinhook import hook_request

    url = cluster.url(cluster.fresh_schema())
    homes, procs = {}, []
    try:
        for host in ("a", "c"):
            home = homes[host] = os.path.join(root, f"home-{host}")
            os.makedirs(home, mode=0o700)
            env = dict(os.environ, LEASH_HOME=home, LEASH_STORE_URL=url, LEASH_HOST=host)
            env.pop("LEASH_OPERATOR_SOCKET", None)
            procs.append(start_daemon(home, env))
        operator = os.path.join(homes["a"], "run", "operator.sock")
        agent = os.path.join(homes["c"], "run", "agent.sock")
        payload = json.dumps({"session_id": "claude-c", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                              "tool_input": {"command": "ls"}, "cwd": "/"}).encode()
        request = hook_request("pre-tool-use", payload, None, env={})
        asked = homes["c"]
        assert not denies(agent, request, asked), "c's hook denies before any stop"
        delays, polls = [], 0
        for n in range(STOPS):
            assert cli(operator, "stop", "claude-c", "--reason", f"bench {n}") == 0
            started = time.perf_counter()
            while not denies(agent, request, asked):
                polls += 1
                if time.perf_counter() - started > 10:
                    raise SystemExit("c never denied")
            delays.append(time.perf_counter() - started)
            assert cli(operator, "resume", "claude-c") == 0
            deadline = time.perf_counter() + 10
            while denies(agent, request, asked):
                if time.perf_counter() > deadline:
                    raise SystemExit("c never allowed again")
        print(f"stop on host a -> hook on host c denies: p50 {statistics.median(delays) * 1000:5.1f} ms, "
              f"p99 {percentile(delays, 0.99) * 1000:5.1f} ms, max {max(delays) * 1000:5.1f} ms "
              f"({STOPS} stops; target p99 under 100 ms)")
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)


def daemon_side(cluster: Cluster, root: str) -> None:
    sys.path.append(str(ROOT / "bench"))
    import daemon as file_bench  # the same cases as on files

    from leash.core.daemon.peers import Peer
    from leash.core.daemon.service import Daemon
    from leash.core.wire.thinhook import forwarded_env

    url = cluster.url(cluster.fresh_schema())
    home = os.path.join(root, "home-side")
    os.makedirs(home, mode=0o700)
    os.environ["LEASH_STORE_URL"], os.environ["LEASH_HOST"] = url, "a"
    try:
        from leash.core.store.select import backend_for

        seeding = backend_for(home)
        seeding.stops.stop("someone-else", source="bench", reason="bench")
        seeding.close()
        daemon = Daemon(home, kennel=False, log=open(os.devnull, "w"))
        daemon.start()
        me = Peer(os.getpid(), os.getuid(), os.getgid())
        try:
            for label, call in file_bench.CASES.items():
                payload = json.dumps({"session_id": "bench", "hook_event_name": "PreToolUse", "cwd": root, **call})
                request = {"verb": "hook", "event": "pre-tool-use", "payload": payload,
                           "env": forwarded_env(os.environ)}
                for _ in range(DAEMON_WARMUP):
                    daemon._hook(request, me)
                times = []
                for _ in range(DAEMON_CALLS):
                    start = time.perf_counter()
                    daemon._hook(request, me)
                    times.append(time.perf_counter() - start)
                print(f"daemon-side on PostgreSQL {label:<4} median {statistics.median(times) * 1e6:5.0f} us, "
                      f"p99 {percentile(times, 0.99) * 1e6:6.0f} us ({DAEMON_CALLS:,} calls)")
        finally:
            daemon.close()
    finally:
        os.environ.pop("LEASH_STORE_URL", None)
        os.environ.pop("LEASH_HOST", None)


def hook_process(cluster: Cluster, root: str, *, smoke: bool) -> None:
    """The hook `leash install` wires, as a whole process, with leashd on the
    shared store, against `python -c pass` (hook_latency.py's measure)."""
    sys.path.append(str(ROOT / "bench"))
    import hook_latency

    url = cluster.url(cluster.fresh_schema())
    if smoke:
        hook_latency.RUNS = 1
    else:
        hook_latency.PYTHON = hook_latency.installed_from_wheel(os.path.join(root, "wheel"))
    hook_latency.TARGET = 1.5
    home = os.path.join(root, "home-hook")
    os.makedirs(home, mode=0o700)
    env = dict(os.environ, LEASH_HOME=home, LEASH_STORE_URL=url, LEASH_HOST="a")
    env.pop("TMUX_PANE", None)
    proc = hook_latency.start_daemon(env, home)
    try:
        hook = hook_latency.installed_hook() + ["hook", "pre-tool-use"]
        for label, call in (("Bash", {"tool_name": "Bash", "tool_input": {"command": "ls src/ | grep -c py"}}),
                            ("Edit", {"tool_name": "Edit", "tool_input": {"file_path": "app.py", "old_string": "a",
                                                                          "new_string": "b"}}),
                            ("Read", {"tool_name": "Read", "tool_input": {"file_path": "app.py"}})):
            payload = json.dumps({"session_id": "bench", "hook_event_name": "PreToolUse", "cwd": root,
                                  **call}).encode()
            hook_latency.measure(f"PostgreSQL, leashd, {label}", hook, payload, env)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


FLEET_HOSTS = 10
SESSIONS_PER_HOST = 100
CALLS_PER_SESSION_PER_SECOND = 2.0
FLEET_WORKERS = 8  # threads answering the hosts' hooks, as leashd's connection threads would


def postgres_cpu_seconds(cluster: Cluster) -> float:
    """utime + stime of the server's processes (the postmaster and its children)."""
    ticks = os.sysconf("SC_CLK_TCK")
    with open(os.path.join(cluster.data, "postmaster.pid")) as handle:
        postmaster = int(handle.readline())
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(entry) == postmaster or int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def statements(url: str) -> int:
    from leash.core.store.pg import connect

    with connect(url) as conn:
        return int(conn.execute("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements").fetchone()[0])


def fleet(cluster: Cluster, root: str, *, seconds: float) -> None:
    """1,000 sessions on 10 hosts, 2 tool calls a second each (as many as this
    machine answers), then the console on that fleet."""
    from leash.core.hook.hooks import pre_tool_use
    from leash.core.store.pg import connect
    from leash.core.store.postgres import PostgresBackend

    url = cluster.url()
    with connect(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    backends = []
    for n in range(FLEET_HOSTS):
        home = os.path.join(root, f"fleet-{n}")
        os.makedirs(home, mode=0o700)
        backends.append(PostgresBackend(url, home=home, host=f"h{n}", mirrored=True))
    calls = [(backend, json.dumps({"session_id": f"h{n}-s{i}", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                                   "tool_input": {"command": f"ls src/{i}"}, "cwd": "/"}).encode())
             for n, backend in enumerate(backends) for i in range(SESSIONS_PER_HOST)]
    for backend, payload in calls:  # every session registered, as its first hook does
        pre_tool_use(payload, home=backend.home, backend=backend, env={})
    backends[0].stops.stop("somewhere-else", source="bench", reason="bench")
    wanted_rate = len(calls) * CALLS_PER_SESSION_PER_SECOND
    answered, latencies, mutex = [0], [], threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(k: int) -> None:
        mine, n = [], k
        interval = FLEET_WORKERS / wanted_rate
        next_at = time.monotonic()
        while time.monotonic() < deadline:
            backend, payload = calls[n % len(calls)]
            start = time.perf_counter()
            pre_tool_use(payload, home=backend.home, backend=backend, env={})
            mine.append(time.perf_counter() - start)
            n += FLEET_WORKERS
            next_at += interval
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        with mutex:
            answered[0] += len(mine)
            latencies.extend(mine)

    cpu_before, statements_before, started = postgres_cpu_seconds(cluster), statements(url), time.monotonic()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(FLEET_WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    cpu = postgres_cpu_seconds(cluster) - cpu_before
    queries = statements(url) - statements_before
    print(f"fleet: {len(calls)} sessions on {FLEET_HOSTS} hosts, {CALLS_PER_SESSION_PER_SECOND:g} calls/s each "
          f"wanted ({wanted_rate:.0f}/s): {answered[0] / elapsed:6.1f} calls/s answered on {os.cpu_count()} cores, "
          f"p50 {statistics.median(latencies) * 1000:5.2f} ms, p99 {percentile(latencies, 0.99) * 1000:5.2f} ms")
    print(f"fleet: database CPU {cpu / elapsed * 100:5.1f} % of a core, {cpu / answered[0] * 1e6:6.0f} us and "
          f"{queries / answered[0]:4.1f} statements per call ({queries} statements, pg_stat_statements)")
    import asyncio

    first, change = asyncio.run(console_on_fleet(backends, root))
    print(f"console on that fleet: first paint {first * 1000:6.0f} ms, a stop on another host to the screen "
          f"{change * 1000:6.0f} ms (targets: under 1 s, under 300 ms)")
    for backend in backends:
        backend.close()


async def console_on_fleet(backends: list, root: str) -> tuple[float, float]:
    import asyncio

    from leash.console.tui.app import LeashApp
    from leash.core.store.postgres import PostgresBackend

    own = PostgresBackend(backends[0].url, home=backends[0].home, host="h0")
    started = time.perf_counter()
    app = LeashApp(own.home, backend=own, run_kennel=False, watch=True, list_tmux=lambda: [], source="bench@h0")
    try:
        async with app.run_test(size=(160, 45)):
            while not app.view_data:
                await asyncio.sleep(0.002)
            first = time.perf_counter() - started
            await asyncio.sleep(1.0)  # the live view is listening
            target = "h0-s5"  # a session the first screenful shows (the view holds 300 rows per list)
            filed = time.perf_counter()
            other = backends[-1]  # another host than the console's
            await asyncio.to_thread(other.stops.stop, target, source=f"bench@{other.host}", reason="bench")
            while not any(row["name"] == target and row["state"] == "stopped"
                          for row in app.view_data["sessions"]):
                await asyncio.sleep(0.002)
            return first, time.perf_counter() - filed
    finally:
        own.close()


def smallest(args) -> None:
    """``--smoke``: each part once, as small as it goes."""
    global STOPS, DAEMON_CALLS, DAEMON_WARMUP, FLEET_HOSTS, SESSIONS_PER_HOST
    STOPS, DAEMON_CALLS, DAEMON_WARMUP, FLEET_HOSTS, SESSIONS_PER_HOST = 3, 10, 2, 2, 5
    args.seconds = min(args.seconds, 0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="propagation,daemon,hook,fleet", help="propagation,daemon,hook,fleet")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--smoke", action="store_true", help="every part in its smallest form (figures mean nothing)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if args.smoke:
        smallest(args)
    sys.stdout.reconfigure(line_buffering=True)
    cluster = Cluster(settings="-c shared_preload_libraries=pg_stat_statements -c max_connections=200")
    try:
        with tempfile.TemporaryDirectory(prefix="leash-bench-") as root:
            if "propagation" in parts:
                propagation(cluster, root)
            if "daemon" in parts:
                daemon_side(cluster, root)
            if "hook" in parts:
                hook_process(cluster, root, smoke=args.smoke)
            if "fleet" in parts:
                fleet(cluster, root, seconds=args.seconds)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
