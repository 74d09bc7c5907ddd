"""Agents in tmux panes and kennels that judge them, for the death-warrant
tests (test_warrants, test_warrant_safety, test_daemon_kennel, test_multihost).

Agents are small Python scripts (or ``cat``) started in panes:

* silent: ``cat > /dev/null`` (the tty still echoes the message into the pane,
  so the pane shows the word ALIVE inside the echoed text, which must never count);
* answering: prints ALIVE on a line of its own for every health check it reads,
  optionally only from the Nth health check on (a late answer);
* busy: keeps printing and never answers (busy-answering: also answers);
* chatty: answers amid a burst of output, with the pane's history full;
* answers-once-then-hangs: answers one health check, then turns echo off and
  never reads again, like a full-screen agent that froze.

A kennel runs in-process (``run_kennel``), in a thread (``KennelThread``) or
as a ``leash kennel`` process (``kennel_process``).
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections import Counter

from leash.core.base.statefile import StateCorrupt, read_json
from leash.core.base.tmux import Tmux
from leash.core.state.acklog import AckLog
from leash.core.state.warrants import WarrantQueue
from leash.core.warrants.kennel import Kennel

from .checkout import ROOT, leash_argv
from .waiting import wait_for

FAST = [0.3, 0.3, 0.3]
# The gate closes as soon as the answer is seen, so a long first (or second)
# gate costs nothing when the agent answers, and keeps a loaded machine from
# turning a prompt answer into a missed one.
ANSWER_AT_1 = [5.0, 0.3, 0.3]
ANSWER_AT_2 = [0.3, 5.0, 0.3]
POLL = 0.05
HEALTH_CHECK = "[DOG] HEALTH CHECK"

ANSWERING = """\
import sys
late = int(sys.argv[1])
seen = 0
print("ready", flush=True)
for line in sys.stdin:
    if "HEALTH CHECK" in line:
        seen += 1
        if seen >= late:
            print("ALIVE", flush=True)
"""

BUSY = """\
import itertools, sys, threading, time
answer = sys.argv[1] == "answer"
print("ready", flush=True)

def listen():
    for line in sys.stdin:
        if answer and "HEALTH CHECK" in line:
            print("ALIVE", flush=True)

threading.Thread(target=listen, daemon=True).start()
for n in itertools.count():
    print(f"working {n}", flush=True)
    time.sleep(0.02)
"""

# Answers the first health check, then hangs: terminal echo off, no more reads.
HANGS = """\
import sys, termios, time
print("ready", flush=True)
for line in sys.stdin:
    if "HEALTH CHECK" in line:
        print("ALIVE", flush=True)
        break
attrs = termios.tcgetattr(0)
attrs[3] &= ~termios.ECHO
termios.tcsetattr(0, termios.TCSANOW, attrs)
print("hung", flush=True)
time.sleep(3600)
"""

# Fills the pane's history first, then answers a health check with a burst of
# log lines, ALIVE on its own line, and a few more lines, all in one write.
CHATTY = """\
import sys
boot = int(sys.argv[1])
sys.stdout.write("".join(f"boot line {i}\\n" for i in range(boot)) + "ready\\n")
sys.stdout.flush()
for line in sys.stdin:
    if "HEALTH CHECK" in line:
        out = [f"log {i}" for i in range(30)] + ["ALIVE"] + [f"after {i}" for i in range(5)]
        sys.stdout.write("\\n".join(out) + "\\n")
        sys.stdout.flush()
"""


def start_agent(tmux: Tmux, tmp_path, name: str, kind: str = "silent", *, late: int = 1, boot: int = 0,
                width: int = 120) -> None:
    """An agent of ``kind`` (see above) in a new session ``name``, once it has printed ``ready``."""
    if kind == "silent":
        command = "echo ready; exec cat > /dev/null"
    else:
        source, arg = {"answering": (ANSWERING, late), "busy": (BUSY, "quiet"), "busy-answering": (BUSY, "answer"),
                       "chatty": (CHATTY, boot), "answers-once-then-hangs": (HANGS, "")}[kind]
        script = tmp_path / f"agent_{kind}.py"
        script.write_text(source)
        command = f"{sys.executable} {script} {arg}"
    tmux.new_session(name, command, width=width)
    wait_for(lambda: any("ready" in line for line in tmux.capture(name)), what=f"{name} to start")


def kennel(home, tmux, *, timeouts=FAST, **options) -> Kennel:
    """A kennel on ``home`` that stops once idle, with short gates and polls."""
    return Kennel(home, tmux=tmux, timeouts=timeouts, poll_seconds=POLL, until_idle=True, **options)


def run_kennel(home, tmux, **options) -> dict[str, dict]:
    """A kennel run in this thread until idle: each finished dog's record, by target."""
    finished = asyncio.run(kennel(home, tmux, **options).run())
    return {state["warrant"]["target"]: state for state in finished}


class KennelThread(threading.Thread):
    """An in-process kennel in a background thread (until idle)."""

    def __init__(self, home, tmux, **options):
        super().__init__(daemon=True)
        self.kennel = kennel(home, tmux, **options)
        self.finished: list[dict] | None = None

    def run(self):
        self.finished = asyncio.run(self.kennel.run())


def active_state(queue: WarrantQueue, warrant_id: str) -> dict | None:
    """The working dog's record of ``warrant_id`` as it is now, or None."""
    try:
        data = read_json(queue.active_path(warrant_id), None)
    except (StateCorrupt, OSError):  # caught between the dog's writes
        return None
    return data if isinstance(data, dict) else None


def health_checks(lines) -> int:
    """How many health checks a pane's lines (or text) show."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    return sum(1 for line in lines if HEALTH_CHECK in line)


def events_for(home, warrant_id: str) -> Counter:
    """The ack log's events of one warrant, counted."""
    return Counter(e["event"] for e in AckLog(home).read().entries if e.get("warrant_id") == warrant_id)


def write_config(home, timeouts, *, dogs: int | None = None) -> None:
    """``config.toml`` with these ``[warrants]`` gates (and ``dogs``), polled every ``POLL``."""
    home.mkdir(parents=True, exist_ok=True)
    text = f"[warrants]\ntimeouts = [{', '.join(str(t) for t in timeouts)}]\npoll_seconds = {POLL}\n"
    if dogs is not None:
        text += f"dogs = {dogs}\n"
    (home / "config.toml").write_text(text)


def kennel_process(home, tmux_socket, *args: str, **popen) -> subprocess.Popen:
    """``leash kennel ARGS`` as a process on ``home`` and the private tmux server."""
    env = dict(os.environ, LEASH_HOME=str(home), LEASH_TMUX_SOCKET=str(tmux_socket))
    return subprocess.Popen(leash_argv() + ["kennel", *args], cwd=ROOT, env=env, **popen)


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def goes_idle(proc: subprocess.Popen, timeout: float = 4.0) -> bool:
    """Whether a `leash kennel --until-idle` process exits by itself in time."""
    try:
        proc.communicate(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        return False
    finally:
        stop_process(proc)
