"""Many processes writing one home at once lose nothing and keep the chain whole.

Every worker is a real OS process. The workers wait on stdin until all of them
have started, then run their writes as fast as they can, so the flock-based
locking in ``core.statefile`` is what keeps stops.json, the hands-off registry
and the ack log consistent.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from leash.core.base.statefile import read_json
from leash.core.state.acklog import AckLog
from leash.core.state.handsoff import HandsOffRegistry
from leash.core.state.sessions import SessionRegistry
from leash.core.state.stop import STOPS_NAME

from ..support.checkout import ROOT, leash_argv

WORKER_TIMEOUT = 100

# Runs each (argv tail) of a JSON list as its own `leash` process, one after the
# other, once a line arrives on stdin. Prints the failures as JSON, exits 1 if any.
CLI_WORKER = r"""
import json, subprocess, sys
leash, root, commands = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
sys.stdin.readline()
failures = []
for args in commands:
    done = subprocess.run(leash + args, cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        failures.append({"args": args, "code": done.returncode, "err": done.stderr[-500:]})
print(json.dumps(failures))
sys.exit(1 if failures else 0)
"""

# Drives the core API directly from several threads of one process.
API_WORKER = r"""
import sys, threading
from leash.core.views.protocol import StopProtocol
home, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
protocol = StopProtocol(home)
sys.stdin.readline()
errors = []

def work(thread):
    try:
        for i in range(rounds):
            name = f"{tag}-t{thread}-{i}"
            protocol.acknowledge_stop(tag, f"api-{name}", "hammer")
            protocol.hands_off(f"ent-{name}", source=tag, hours=1)
            protocol.hands_off(f"gone-{name}", source=tag, hours=1)
            protocol.release(f"gone-{name}", source=tag)
            protocol.sessions.observe(f"api-{name}", cwd="/tmp", tool="Bash")
            protocol.full_stop(f"full-{name}", f"fent-{name}", "hammer", tag, hours=1)
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors)
sys.exit(1 if errors else 0)
"""


def run_workers(scripts: list[list[str]], home) -> None:
    """Start every worker, release them together, and fail on any worker failure."""
    env = dict(os.environ, LEASH_HOME=str(home))
    procs: list[subprocess.Popen] = []
    try:
        for argv in scripts:
            procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for proc in procs:  # all started: let them go at once
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        results = [proc.communicate(timeout=WORKER_TIMEOUT) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for number, (proc, (out, err)) in enumerate(zip(procs, results, strict=True)):
        assert proc.returncode == 0, f"worker {number} failed: {out.decode()[-2000:]} {err.decode()[-2000:]}"


def cli_worker(commands: list[list[str]]) -> list[str]:
    return [sys.executable, "-c", CLI_WORKER, json.dumps(leash_argv()), str(ROOT), json.dumps(commands)]


def assert_chain(home, expected_lines: int) -> list[dict]:
    """The log has exactly ``expected_lines`` intact, chained lines, seq 1..N."""
    raw = (home / "stop_ack_log.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    assert raw.count(b"\n") == expected_lines
    read = AckLog(home).read()
    assert read.torn_bytes == 0 and read.unreadable_lines == 0
    assert len(read.entries) == expected_lines
    report = AckLog(home).verify()
    assert report.ok, report
    assert report.lines == expected_lines
    seqs = [entry["seq"] for entry in read.entries]
    assert seqs == list(range(1, expected_lines + 1))
    assert not (home / "stop_ack_log.jsonl.torn").exists()
    return read.entries


@pytest.mark.timeout(120)
def test_eight_processes_of_cli_stops_lose_nothing(home):
    workers, per_worker = 8, 3  # eight racing processes; more rounds each add time, not races
    expected = {f"w{n}-s{i:02d}": f"w{n}" for n in range(workers) for i in range(per_worker)}
    scripts = [
        cli_worker([["stop", "--force", f"w{n}-s{i:02d}", "--reason", "r", "--source", f"w{n}"]
                    for i in range(per_worker)])
        for n in range(workers)
    ]
    run_workers(scripts, home)  # the home does not exist yet: the workers race to create it too

    total = workers * per_worker
    entries = assert_chain(home, total)
    assert {e["event"] for e in entries} == {"stop_ack"}
    assert {e["session_id"]: e["source"] for e in entries} == expected

    stops = read_json(home / STOPS_NAME)
    assert stops["fleet"] is None
    assert len(stops["sessions"]) == total
    assert {sid: record["source"] for sid, record in stops["sessions"].items()} == expected
    assert not list(home.glob(".tmp-*")), "a temp file was left behind"


@pytest.mark.timeout(120)
def test_concurrent_locks_and_stops_lose_nothing(home):
    workers, rounds = 4, 2
    scripts = []
    for n in range(workers):
        commands = []
        for i in range(rounds):
            commands.append(["hands-off", f"ent-{n}-{i}", "--hours", "2", "--source", f"w{n}"])
            commands.append(["stop", "--force", f"mix-{n}-{i}", "--reason", "r", "--source", f"w{n}"])
            # a full stop takes the stops, hands-off and sessions locks together
            commands.append(["stop", "--force", f"full-{n}-{i}", "--entity", f"fent-{n}-{i}", "--source", f"w{n}"])
        scripts.append(cli_worker(commands))
    run_workers(scripts, home)

    pairs = [(n, i) for n in range(workers) for i in range(rounds)]
    # hands-off: 1 line; stop: 1 line; full stop: stop_ack + hands_off
    entries = assert_chain(home, 4 * len(pairs))
    assert Counter(e["event"] for e in entries) == {"stop_ack": 2 * len(pairs), "hands_off": 2 * len(pairs)}

    active = HandsOffRegistry(home).active()
    wanted_locks = {f"ent-{n}-{i}" for n, i in pairs} | {f"fent-{n}-{i}" for n, i in pairs}
    assert set(active) == wanted_locks
    for n, i in pairs:
        assert active[f"fent-{n}-{i}"]["session_id"] == f"full-{n}-{i}"

    stops = read_json(home / STOPS_NAME)
    assert set(stops["sessions"]) == {f"mix-{n}-{i}" for n, i in pairs} | {f"full-{n}-{i}" for n, i in pairs}

    seen = SessionRegistry(home).all()
    assert {sid: record["entity"] for sid, record in seen.items()} == {
        f"full-{n}-{i}": f"fent-{n}-{i}" for n, i in pairs}


@pytest.mark.timeout(120)
def test_processes_and_threads_on_the_core_api_lose_nothing(home):
    workers, rounds, threads = 4, 8, 2
    scripts = [[sys.executable, "-c", API_WORKER, str(home), f"p{n}", str(rounds)] for n in range(workers)]
    run_workers(scripts, home)

    names = [f"p{n}-t{t}-{i}" for n in range(workers) for t in range(threads) for i in range(rounds)]
    # stop, hands-off, hands-off, release, full stop (stop_ack + hands_off); observe is not logged
    entries = assert_chain(home, 6 * len(names))
    assert Counter(e["event"] for e in entries) == {
        "stop_ack": 2 * len(names), "hands_off": 3 * len(names), "release": len(names)}

    stops = read_json(home / STOPS_NAME)
    assert set(stops["sessions"]) == {f"api-{x}" for x in names} | {f"full-{x}" for x in names}
    assert set(HandsOffRegistry(home).active()) == {f"ent-{x}" for x in names} | {f"fent-{x}" for x in names}
    seen = SessionRegistry(home).all()
    assert set(seen) == {f"api-{x}" for x in names} | {f"full-{x}" for x in names}
    assert all(seen[f"full-{x}"]["entity"] == f"fent-{x}" for x in names)
    assert all(seen[f"api-{x}"]["last_tool"] == "Bash" for x in names)
