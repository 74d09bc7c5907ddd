"""Approvals through leashd: from an operator's answer to the agent's hook
returning, and what a waiting approval costs leashd.

A ``leash daemon`` process runs on a throwaway home. Each run sends a
PermissionRequest hook request to its agent socket (the thin client's
request, from a thread here) and waits until the approval is listed; then the
clock starts and the operator answers it, either

* ``operator socket``: one ``store`` call (``RemoteBackend.approvals.answer``,
  what the console does), or
* ``cli``: ``leash approvals allow ID`` as a process (its interpreter's start
  included, as an operator typing it pays), or
* ``ntfy tap``: Allow tapped on the approval's ntfy notification (a loopback
  stand-in of ntfy's API): the token POSTed to the reply topic, read by
  leashd's subscription to it,

and the clock stops when the hook's reply arrives. Then one approval is left
waiting for ``--idle`` seconds and leashd's CPU time over them is read from
``/proc/PID/stat`` (a waiter sleeps in ``select``: it should cost nothing),
beside the same time with nothing waiting (leashd's own timers).

Prints figures only; the home lives in a temporary directory removed at the
end, and the daemon is stopped. ``--smoke``: one run of each, 0.2 s waits: it
shows the bench works, its figures mean nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 40
IDLE_SECONDS = 5.0
POLL_SECONDS = 0.002
WITHIN_SECONDS = 20
ALERTS, REPLIES = "bench-alerts", "bench-replies"
PAYLOAD = {"session_id": "bench", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
           "tool_input": {"command": "git push origin main"}, "cwd": "/", "permission_mode": "default"}


def leash_argv() -> list[str]:
    script = Path(sys.executable).with_name("leash")
    return [str(script)] if script.exists() else [sys.executable, "-m", "leash.console.cli"]


def until(check, seconds: float = WITHIN_SECONDS):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(POLL_SECONDS)
    raise SystemExit("bench: timed out")


def ask(agent_socket: str, done: dict) -> None:
    """The thin client's one request and one reply; ``done["at"]`` when the reply came."""
    request = {"verb": "hook", "event": "permission-request", "payload": json.dumps(PAYLOAD), "env": {}}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(agent_socket)
        conn.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    done["at"] = time.perf_counter()
    done["reply"] = json.loads(data)


def waiting_one(remote):
    found = until(lambda: remote.approvals.pending())
    return found[0].id


def one_run(remote, agent_socket: str, answer) -> float:
    done: dict = {}
    thread = threading.Thread(target=ask, args=(agent_socket, done))
    thread.start()
    approval_id = waiting_one(remote)
    started = time.perf_counter()
    answer(approval_id)
    thread.join(timeout=WITHIN_SECONDS)
    if "allow" not in done.get("reply", {}).get("stdout", ""):
        raise SystemExit(f"bench: unexpected reply {done.get('reply')!r}")
    return (done["at"] - started) * 1000


def tap_run(remote, agent_socket: str, ntfy) -> float:
    """One approval answered from the phone: its notification arrives with its
    buttons, then the clock runs from the tap (the stand-in POSTs Allow's token
    to the reply topic) to the hook's reply (through leashd's reply stream)."""
    done: dict = {}
    thread = threading.Thread(target=ask, args=(agent_socket, done))
    thread.start()
    approval_id = waiting_one(remote)

    def allow_button():
        for message in ntfy.on(ALERTS):
            for action in message["actions"]:
                if action["label"] == "Allow" and action.get("body", "").startswith(approval_id):
                    return action
        return None

    button = until(allow_button)
    started = time.perf_counter()
    ntfy.tap(button)
    thread.join(timeout=WITHIN_SECONDS)
    if "allow" not in done.get("reply", {}).get("stdout", ""):
        raise SystemExit(f"bench: unexpected reply {done.get('reply')!r}")
    return (done["at"] - started) * 1000


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def figures(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    print(f"{name:<16} n={len(samples):<3} p50 {statistics.median(samples):7.1f} ms   p99 {p99:7.1f} ms   "
          f"max {max(samples):7.1f} ms")


def start_daemon(env: dict, home: Path) -> subprocess.Popen:
    daemon = subprocess.Popen(leash_argv() + ["daemon", "--no-kennel"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    until(lambda: (home / "run" / "operator.sock").exists() and (home / "run" / "agent.sock").exists())
    return daemon


def stop_daemon(daemon: subprocess.Popen) -> None:
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(timeout=20)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


def across_hosts(runs: int) -> None:
    """An approval asked on host c, answered through host a's leashd, both on
    one PostgreSQL store (the throwaway server the tests use): the answer
    reaches c's waiting hook through the store's change feed."""
    from leash.core.store.remote import RemoteBackend
    from tests.support.postgres import Cluster

    try:
        cluster = Cluster()
    except Exception as exc:  # noqa: BLE001 - no PostgreSQL here: say so, as the other benches do
        print(f"across hosts: skipped (no PostgreSQL: {exc})")
        return
    base = Path(tempfile.mkdtemp(prefix="leash-bench-approvals-hosts-"))
    daemons = []
    try:
        url = cluster.url(cluster.fresh_schema())
        homes = {}
        for host in ("a", "c"):
            home = homes[host] = base / f"home-{host}"
            home.mkdir(mode=0o700)
            env = dict(os.environ, LEASH_HOME=str(home), LEASH_STORE_URL=url, LEASH_HOST=host)
            env.pop("LEASH_OPERATOR_SOCKET", None)
            daemons.append(start_daemon(env, home))
        remote_a = RemoteBackend(str(homes["a"] / "run" / "operator.sock"))
        agent_c = str(homes["c"] / "run" / "agent.sock")

        def by_host_a(approval_id: str) -> None:
            remote_a.approvals.answer(approval_id, allow=True, by="bench", via="console")

        one_run(remote_a, agent_c, by_host_a)
        print(f"answer on host a -> hook reply on host c ({runs} runs; PostgreSQL store; target p99 250 ms)")
        figures("across hosts", [one_run(remote_a, agent_c, by_host_a) for _ in range(runs)])
    finally:
        for daemon in daemons:
            stop_daemon(daemon)
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--idle", type=float, default=IDLE_SECONDS,
                        help="seconds one approval waits for the CPU figure")
    parser.add_argument("--smoke", action="store_true", help="one run each, short waits (figures mean nothing)")
    options = parser.parse_args()
    if options.smoke:
        options.runs, options.idle = 1, 0.2
    sys.path.insert(0, str(ROOT))
    across_hosts(options.runs)
    from leash.core.store.remote import RemoteBackend
    from tests.support.ntfy import Ntfy

    base = Path(tempfile.mkdtemp(prefix="leash-bench-approvals-"))
    home = base / "home"
    home.mkdir(mode=0o700)
    ntfy = Ntfy()  # the phone's server: a loopback stand-in of ntfy's API
    (home / "config.toml").write_text(f'[[notify.route]]\nkind = "ntfy"\nurl = "{ntfy.url}/{ALERTS}"\n'
                                      f'reply_topic = "{REPLIES}"\nevents = ["approval"]\nrate_per_minute = 1000\n')
    os.chmod(home / "config.toml", 0o600)
    env = dict(os.environ, LEASH_HOME=str(home))
    env.pop("LEASH_OPERATOR_SOCKET", None)
    daemon = subprocess.Popen(leash_argv() + ["daemon", "--no-kennel"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        agent_socket, operator_socket = str(home / "run" / "agent.sock"), str(home / "run" / "operator.sock")
        until(lambda: os.path.exists(operator_socket) and os.path.exists(agent_socket))
        remote = RemoteBackend(operator_socket)

        def by_socket(approval_id: str) -> None:
            remote.approvals.answer(approval_id, allow=True, by="bench", via="console")

        def by_cli(approval_id: str) -> None:
            subprocess.run(leash_argv() + ["approvals", "allow", approval_id], env=env, check=True,
                           stdout=subprocess.DEVNULL)

        one_run(remote, agent_socket, by_socket)  # warm: the first call imports what the rest reuse
        print(f"answer -> hook reply through leashd ({options.runs} runs each; file store on one host)")
        figures("operator socket", [one_run(remote, agent_socket, by_socket) for _ in range(options.runs)])
        figures("cli", [one_run(remote, agent_socket, by_cli) for _ in range(max(1, options.runs // 2))])
        figures("ntfy tap", [tap_run(remote, agent_socket, ntfy) for _ in range(max(1, options.runs // 2))])

        before = cpu_seconds(daemon.pid)
        time.sleep(options.idle)
        idle = cpu_seconds(daemon.pid) - before
        print(f"nothing waiting {options.idle:g} s: leashd used {idle * 1000:.0f} ms of CPU (its own timers)")
        done: dict = {}
        thread = threading.Thread(target=ask, args=(agent_socket, done), daemon=True)
        thread.start()
        approval_id = waiting_one(remote)
        time.sleep(0.5)  # the request's own work is over: what follows is the waiting alone
        before = cpu_seconds(daemon.pid)
        time.sleep(options.idle)
        spent = cpu_seconds(daemon.pid) - before
        print(f"one approval waiting {options.idle:g} s: leashd used {spent * 1000:.0f} ms of CPU "
              f"({spent / options.idle * 100:.2f} % of a core)")
        by_socket(approval_id)
        thread.join(timeout=WITHIN_SECONDS)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        ntfy.close()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
