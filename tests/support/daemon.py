"""Helpers for the leashd tests: a daemon in-process or as a process, and a
raw client of its sockets."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from .checkout import ROOT, leash_argv


class LogLines:
    """The daemon's stderr lines, kept for asserting on."""

    def __init__(self):
        self.lines: list[str] = []
        self.mutex = threading.Lock()

    def write(self, text: str) -> int:
        with self.mutex:
            self.lines.extend(text.splitlines())
        return len(text)

    def flush(self) -> None:
        pass


def start_daemon(home: Path, **options):
    from leash.console.cli import dispatch
    from leash.console.cli.served import cli_verb
    from leash.core.daemon.service import Daemon

    options.setdefault("kennel", False)
    options.setdefault("log", LogLines())
    daemon = Daemon(home, operator_verbs={"cli": cli_verb(dispatch)}, **options)
    daemon.start()
    return daemon


def sockets(home: Path) -> tuple[str, str]:
    run = Path(home) / "run"
    return str(run / "agent.sock"), str(run / "operator.sock")


def connect(path: str, *, timeout: float = 10.0, retry_full_queue: bool = False) -> socket.socket:
    """A connection to ``path``; with ``retry_full_queue``, a listen queue
    that is full for a moment (EAGAIN) is tried again, as leash's hook client does."""
    from leash.core.wire.thinhook import connect as connect_unix

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _leftovers.pop(id(conn), None)  # an id of a socket gone before
    conn.settimeout(timeout)
    give_up = time.monotonic() + timeout
    while True:
        try:
            connect_unix(conn, path)
            return conn
        except BlockingIOError:
            if not retry_full_queue or time.monotonic() > give_up:
                conn.close()
                raise
            time.sleep(0.01)


def exchange(path: str, request, *, replies: int = 1, timeout: float = 10.0) -> list[dict]:
    """Send one request (a dict, or raw bytes as they are) and read ``replies`` lines."""
    with connect(path, timeout=timeout, retry_full_queue=True) as conn:
        data = request if isinstance(request, bytes) else json.dumps(request).encode() + b"\n"
        conn.sendall(data)
        return read_replies(conn, replies)


_leftovers: dict[int, bytes] = {}  # bytes read past the last reply, per open socket


def read_replies(conn: socket.socket, count: int) -> list[dict]:
    got: list[dict] = []
    buffer = _leftovers.pop(id(conn), b"")
    try:
        while len(got) < count:
            while b"\n" in buffer and len(got) < count:
                line, buffer = buffer.split(b"\n", 1)
                got.append(json.loads(line))
            if len(got) == count:
                break
            chunk = conn.recv(65536)
            if not chunk:
                break
            buffer += chunk
    finally:
        if buffer:
            _leftovers[id(conn)] = buffer
    return got


def still_waiting(conn: socket.socket) -> bool:
    """Whether the daemon has neither answered ``conn`` nor closed it yet (looked at without waiting)."""
    timeout = conn.gettimeout()
    conn.setblocking(False)
    try:
        conn.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        conn.settimeout(timeout)
    return False


def hook_request(event: str, payload: dict, env: dict | None = None) -> dict:
    return {"verb": "hook", "event": event, "payload": json.dumps(payload), "env": env or {}}


def daemon_process(home: Path, *args: str, env: dict | None = None, stderr=subprocess.PIPE) -> subprocess.Popen:
    """``leash daemon`` as a process; returns once both sockets answer."""
    merged = dict(os.environ, LEASH_HOME=str(home), **(env or {}))
    proc = subprocess.Popen(leash_argv() + ["daemon", *args], env=merged, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=stderr)
    _, operator = sockets(home)
    deadline = time.monotonic() + 20
    while True:
        try:
            if exchange(operator, {"verb": "ping"}, timeout=2)[0].get("ok"):
                return proc
        except (OSError, IndexError, ValueError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=20)
            said = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            stop(proc)
            raise AssertionError(f"leash daemon did not come up: {said}")
        time.sleep(0.05)


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()

