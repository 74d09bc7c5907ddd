"""``leash serve`` as a process, WebSocket clients of it (aiohttp), and the
consoles it starts, watched in the process table (test_serve,
test_console_approvals)."""
from __future__ import annotations

import asyncio
import os
import re
import select
import signal
import subprocess
import time
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from .checkout import ROOT, leash_argv

LEAVE_SECONDS = 2.0          # a console outlives its client by at most this
DRAWN = b"Sessions"          # a panel title: the console has drawn its screen


# ---------------------------------------------------------------- the process table
def children_of(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def gone_within(pids, seconds: float) -> set[int]:
    """The pids still alive after ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while True:
        left = {pid for pid in pids if alive(pid)}
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.05)


async def console_started(server, known=frozenset(), seconds: float = 5.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        new = children_of(server.pid) - set(known)
        if new:
            return new.pop()
        await asyncio.sleep(0.02)
    raise AssertionError("the server started no console")


# ---------------------------------------------------------------- the server
class Served:
    def __init__(self, process: subprocess.Popen, line: str):
        self.process = process
        self.pid = process.pid
        self.line = line
        match = re.search(r"(http://127\.0\.0\.1:(\d+)/)\?token=(\S+)", line)
        assert match, line
        self.base, self.port, self.token = match.group(1), int(match.group(2)), match.group(3)
        self.origin = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/ws"

    def ws(self, session, *, token: bool = True, origin: str | None = "own", width=100, height=30):
        headers = {} if origin is None else {"Origin": self.origin if origin == "own" else origin}
        query = {"width": str(width), "height": str(height)}
        if token:
            query["token"] = self.token
        return session.ws_connect(self.ws_url, params=query, headers=headers)


def start_server(home, tmux_socket, *args: str) -> Served:
    """``leash serve --port 0 ARGS`` on ``home`` (made first: serve only reads, it never creates a home)."""
    Path(home).mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, LEASH_HOME=str(home), LEASH_TMUX_SOCKET=str(tmux_socket), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(leash_argv() + ["serve", "--port", "0", *args], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    ready, _, _ = select.select([process.stdout], [], [], 15)
    line = process.stdout.readline().decode() if ready else ""
    if not line:
        process.kill()
        process.wait()
        pytest.fail(f"leash serve did not start: {process.stderr.read().decode()}")
    return Served(process, line)


def stop_servers(started: list[Served], seen_children: set[int]) -> None:
    """SIGTERM each server; it and every console it ran must be gone soon after."""
    leftovers = set()
    for served in started:
        seen_children.update(children_of(served.pid))
        served.process.send_signal(signal.SIGTERM)
        try:
            served.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(served.pid, signal.SIGKILL)
            served.process.wait()
            leftovers.add(served.pid)
        served.process.stdout.close()
        served.process.stderr.close()
    deadline = time.monotonic() + LEAVE_SECONDS
    while any(alive(pid) for pid in seen_children) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in seen_children:
        if alive(pid):
            leftovers.add(pid)
            os.killpg(pid, signal.SIGKILL)
    assert not leftovers, f"processes outlived the server: {leftovers}"


def stop_and_read(served: Served) -> str:
    """SIGTERM the server; what it wrote after its first line, stdout and stderr."""
    served.process.send_signal(signal.SIGTERM)
    try:
        out, err = served.process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(served.pid, signal.SIGKILL)
        out, err = served.process.communicate()
    return (out + err).decode("utf-8", "replace")


@asynccontextmanager
async def client(**options):
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True), **options) as session:
        yield session


async def read_until(ws, wanted: bytes, seconds: float = 10.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted not in seen:
        message = await ws.receive(timeout=max(0.1, deadline - time.monotonic()))
        if message.type == aiohttp.WSMsgType.BINARY:
            seen += message.data
        elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            raise AssertionError(f"the console closed before drawing {wanted!r}")
    return seen
