"""``leash kennel`` says at once that it runs: one line with its dogs, its
home and its host and how to stop it, flushed even into a pipe, before any
warrant is worked."""
from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess

from ..support.kennel import kennel_process, stop_process


def first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The process's first stdout line, or "" when none came in time."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return ""
    return proc.stdout.readline().decode()


def test_the_kennel_says_it_runs_and_how_to_stop_it(home, tmux_socket):
    os.makedirs(home, exist_ok=True)
    proc = kennel_process(home, tmux_socket, "--dogs", "2", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = first_line(proc, timeout=20)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""  # still running: said at the start
        assert line.startswith("kennel running: 2 dogs, ") and line.endswith("\n"), line
        assert f"home {home}," in line and f"host {socket.gethostname()};" in line
        assert "Ctrl-C or SIGTERM stops it" in line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        stop_process(proc)


def test_an_idle_kennel_says_when_it_ends(home, tmux_socket):
    os.makedirs(home, exist_ok=True)
    proc = kennel_process(home, tmux_socket, "--until-idle", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, _ = proc.communicate(timeout=30)
    finally:
        stop_process(proc)
    (line,) = out.decode().splitlines()
    assert line.startswith("kennel running: ") and "ends when no warrant is pending or active" in line
