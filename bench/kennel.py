"""The kennel under load: 200 warrants against 200 tmux sessions.

A private tmux server (socket in a temp dir) runs SESSIONS sessions, each a
small shell loop that answers every health check with ALIVE at once; with
``--silent N`` the first N of them run ``cat > /dev/null`` instead (they never
answer and are executed after three gates). One warrant is filed per session,
then the kennel works them with DOGS dogs, timeouts 0.5 s each and a 0.05 s
poll (all settable).

How it is measured: the kennel runs as a subprocess (this file with
``--child``), exactly as ``leash kennel --until-idle`` would run it, with one
addition: in that process the tmux server's ``cmd`` is wrapped to count the
tmux processes started and every tmux command they carry, by name
(capture-pane, display-message, send-keys, ...; one process may run several,
joined by ``;``). The
parent reads the kennel's CPU time (the kennel process plus the tmux clients
it spawned and reaped) with ``resource.getrusage(RUSAGE_CHILDREN)``, and the
tmux server's own CPU from ``/proc/<pid>/stat``.

Figures printed (no assertions):

  * total wall time of the run against the ideal, ``warrants / dogs x
    per-warrant time``, where per-warrant time is the median dog duration
    (completed_at - started_at) of the answering targets and the sum of the
    timeouts for silent ones; the ratio (target: within 1.3x);
  * CPU seconds per interrogation (per warrant and per health check sent);
  * tmux processes per warrant, tmux commands and capture-pane calls per second;
  * the idle kennel's CPU: ``leash kennel`` with nothing to do, measured over
    ~3 s after start-up (target: under 1 %).

The tmux server is killed by its socket at the end, also on error or Ctrl-C.
``--smoke``: 4 sessions (one silent), 2 dogs, timeouts of 0.2 s, 0.5 s idle:
it shows the bench works, its figures mean nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leash.core.base.clock import parse_iso  # noqa: E402

ANSWERING = 'while IFS= read -r line; do case "$line" in *"HEALTH CHECK"*) echo ALIVE;; esac; done'
SILENT = "cat > /dev/null"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ the kennel process
def child(home: str, socket: str, result_path: str) -> None:
    """Run the kennel until idle, counting tmux commands; write the figures."""
    import asyncio

    from leash.core.base.tmux import Tmux
    from leash.core.warrants.kennel import Kennel

    tmux = Tmux(socket)
    commands: Counter[str] = Counter()
    lock = threading.Lock()
    real_cmd = tmux.server.cmd

    def counting_cmd(name, *args, **kwargs):
        # one process may carry several commands, joined by ";"
        names = [name] + [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == ";"]
        with lock:
            commands["processes"] += 1
            commands.update(names)
        return real_cmd(name, *args, **kwargs)

    tmux.server.cmd = counting_cmd
    started = time.monotonic()
    finished = asyncio.run(Kennel(home, tmux=tmux, until_idle=True).run())
    wall = time.monotonic() - started
    me, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    Path(result_path).write_text(json.dumps({
        "wall": wall, "finished": len(finished), "commands": dict(commands),
        "self_cpu": me.ru_utime + me.ru_stime, "tmux_client_cpu": reaped.ru_utime + reaped.ru_stime}))


# ------------------------------------------------------------------ helpers
def process_cpu(pid: int) -> float:
    """utime + stime of a live process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tmux_cmd(socket: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", "-S", socket, *args], capture_output=True, text=True, check=False)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def idle_cpu(home: str, socket: str, seconds: float) -> tuple[float, float]:
    """% CPU of `leash kennel` with nothing to do: (after start-up, whole run)."""
    env = dict(os.environ, LEASH_HOME=home, LEASH_TMUX_SOCKET=socket)
    proc = subprocess.Popen([sys.executable, "-m", "leash.console.cli", "kennel"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        launched = time.monotonic()
        time.sleep(1.0)  # imports and the first heartbeat
        cpu0, t0 = process_cpu(proc.pid), time.monotonic()
        time.sleep(seconds)
        cpu1, t1 = process_cpu(proc.pid), time.monotonic()
        steady = 100 * (cpu1 - cpu0) / (t1 - t0)
        whole = 100 * cpu1 / (t1 - launched)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return steady, whole


# ------------------------------------------------------------------ the run
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200, help="sessions, one warrant each (200)")
    parser.add_argument("--silent", type=int, default=0, help="how many of them never answer (0)")
    parser.add_argument("--dogs", type=int, default=5)
    parser.add_argument("--timeouts", default="0.5,0.5,0.5", help="seconds per attempt, comma-separated")
    parser.add_argument("--poll", type=float, default=0.05, help="poll_seconds")
    parser.add_argument("--idle-seconds", type=float, default=3.0)
    parser.add_argument("--child", nargs=3, metavar=("HOME", "SOCKET", "RESULT"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="4 sessions, 2 dogs, short timeouts")
    args = parser.parse_args()
    if args.smoke:
        args.sessions, args.silent, args.dogs, args.timeouts, args.idle_seconds = 4, 1, 2, "0.2,0.2,0.2", 0.5
    if args.child:
        child(*args.child)
        return 0
    if shutil.which("tmux") is None:
        print("tmux is not installed")
        return 1

    timeouts = [float(t) for t in args.timeouts.split(",")]
    scratch = tempfile.mkdtemp(prefix="leash-bench-kennel-")
    socket = os.path.join(scratch, "tmux.sock")
    home = os.path.join(scratch, "home")
    os.makedirs(home, mode=0o700)
    Path(home, "config.toml").write_text(
        f"[warrants]\ndogs = {args.dogs}\ntimeouts = [{', '.join(f'{t:g}' for t in timeouts)}]\n"
        f"poll_seconds = {args.poll:g}\n\n[tmux]\nsocket = \"{socket}\"\n")
    kennel_proc = None
    try:
        from leash.core.base.tmux import Tmux
        from leash.core.state.warrants import WarrantQueue

        tmux = Tmux(socket)
        names = [f"agent-{n:03d}" for n in range(args.sessions)]
        silent = set(names[:args.silent])
        t0 = time.monotonic()
        for name in names:
            tmux.new_session(name, SILENT if name in silent else ANSWERING, width=100, height=20)
        server_pid = int(tmux_cmd(socket, "display-message", "-p", "#{pid}").stdout.strip())
        print(f"{args.sessions} sessions ({len(silent)} silent) on a private tmux server in "
              f"{time.monotonic() - t0:.1f} s")

        queue = WarrantQueue(home)
        t0 = time.monotonic()
        ids = {queue.file(name, reason="bench", requester="bench")[0]["id"]: name for name in names}
        print(f"{len(ids)} warrants filed in {time.monotonic() - t0:.2f} s")

        result_path = os.path.join(scratch, "child.json")
        env = dict(os.environ, LEASH_HOME=home, LEASH_TMUX_SOCKET=socket)
        server_cpu0, cpu0 = process_cpu(server_pid), children_cpu()
        launched = time.monotonic()
        kennel_proc = subprocess.Popen([sys.executable, __file__, "--child", home, socket, result_path],
                                       cwd=ROOT, env=env)
        kennel_proc.wait()
        process_wall = time.monotonic() - launched
        kennel_cpu, server_cpu = children_cpu() - cpu0, process_cpu(server_pid) - server_cpu0
        if kennel_proc.returncode != 0:
            print(f"the kennel exited {kennel_proc.returncode}")
            return 1
        figures = json.loads(Path(result_path).read_text())

        completed = queue.completed()
        outcomes = Counter(c["outcome"] for c in completed)
        durations = {c["id"]: parse_iso(c["completed_at"]) - parse_iso(c["started_at"]) for c in completed}
        answering_durations = [d for i, d in durations.items() if ids.get(i) not in silent]
        silent_durations = [d for i, d in durations.items() if ids.get(i) in silent]
        per_answering = statistics.median(answering_durations) if answering_durations else 0.0
        per_silent = sum(timeouts)
        ideal = ((args.sessions - len(silent)) * per_answering + len(silent) * per_silent) / args.dogs
        wall = figures["wall"]
        processes = figures["commands"].pop("processes", 0)
        checks = figures["commands"].get("send-keys", 0) // 2
        captures = figures["commands"].get("capture-pane", 0)
        total_commands = sum(figures["commands"].values())

        print()
        print(f"outcomes: {dict(outcomes)}  ({len(completed)} of {len(ids)} finished)")
        print(f"dogs: {args.dogs}   timeouts: {timeouts}   poll: {args.poll:g} s")
        if answering_durations:
            print(f"dog duration, answering: median {per_answering * 1000:.0f} ms, "
                  f"p90 {sorted(answering_durations)[int(0.9 * (len(answering_durations) - 1))] * 1000:.0f} ms, "
                  f"max {max(answering_durations) * 1000:.0f} ms")
        if silent_durations:
            print(f"dog duration, silent: median {statistics.median(silent_durations):.2f} s "
                  f"(gates alone: {per_silent:g} s)")
        print(f"wall time: {wall:.2f} s in the kennel's run ({process_wall:.2f} s with interpreter start-up)")
        print(f"ideal:     {ideal:.2f} s  (warrants / dogs x per-warrant time: "
              f"{args.sessions - len(silent)} x {per_answering * 1000:.0f} ms"
              + (f" + {len(silent)} x {per_silent:g} s" if silent else "") + f", / {args.dogs})")
        print(f"ratio:     {wall / ideal:.2f}x  (target <= 1.3x)" if ideal else "ratio: n/a")
        print()
        print(f"kennel CPU: {kennel_cpu:.2f} s (the process {figures['self_cpu']:.2f} s + its tmux clients "
              f"{figures['tmux_client_cpu']:.2f} s); tmux server {server_cpu:.2f} s")
        print(f"  per warrant:      {1000 * kennel_cpu / len(ids):.1f} ms kennel, "
              f"{1000 * server_cpu / len(ids):.1f} ms tmux server")
        if checks:
            print(f"  per health check: {1000 * kennel_cpu / checks:.1f} ms kennel ({checks} health checks sent)")
        print(f"tmux processes: {processes} ({processes / wall:.0f}/s, {processes / len(ids):.1f} per warrant)")
        print(f"tmux commands: {total_commands} ({total_commands / wall:.0f}/s): "
              + ", ".join(f"{k} {v}" for k, v in sorted(figures["commands"].items(), key=lambda kv: -kv[1])))
        print(f"capture-pane: {captures} calls, {captures / wall:.0f}/s")
        print()
        steady, whole = idle_cpu(home, socket, args.idle_seconds)
        print(f"idle kennel (`leash kennel`, nothing to do, {args.idle_seconds:g} s): {steady:.2f} % CPU after "
              f"start-up (target < 1 %); {whole:.1f} % including start-up")
        return 0
    finally:
        if kennel_proc is not None and kennel_proc.poll() is None:
            kennel_proc.kill()
            kennel_proc.wait()
        tmux_cmd(socket, "kill-server")
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
