"""Shared fixtures: every test gets its own state home and, where tmux is used,
its own tmux server on a private socket that is killed afterwards."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The end-to-end suite runs the real Claude Code CLI; `make e2e` runs it on its own.
collect_ignore = ["e2e"]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh LEASH_HOME for this test (also exported to child processes)."""
    path = tmp_path / "leash-home"
    monkeypatch.setenv("LEASH_HOME", str(path))
    monkeypatch.delenv("TMUX_PANE", raising=False)
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("LEASH_ENTITY", raising=False)
    return path


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"CliResult(code={self.code}, out={self.out!r}, err={self.err!r})"


@pytest.fixture
def cli(home):
    """Run ``leash ARGS`` in-process; returns code, stdout and stderr."""
    from leash.console.cli import main

    def run(*args: str, stdin: bytes | None = None) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        old_stdin = sys.stdin
        if stdin is not None:
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        try:
            with redirect_stdout(out), redirect_stderr(err):
                code = main(list(args))
        finally:
            sys.stdin = old_stdin
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


def leash_argv() -> list[str]:
    return [sys.executable, "-m", "leash.console.cli"]


@pytest.fixture
def leash_proc(home):
    """Run ``leash ARGS`` as a real process (stdin bytes, env overrides)."""

    def run(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None, timeout: float = 30):
        merged = dict(os.environ, **(env or {}))
        done = subprocess.run(leash_argv() + list(args), input=stdin, capture_output=True, env=merged,
                              cwd=ROOT, timeout=timeout)
        return CliResult(done.returncode, done.stdout.decode(), done.stderr.decode())

    return run


@pytest.fixture
def tmux_socket(tmp_path):
    """A private tmux server's socket path; the server is killed afterwards."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    socket = tmp_path / "tmux.sock"
    yield socket
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)


# ---------------------------------------------------------------- the console
CONSOLE_NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
CONSOLE_TMUX = [
    {"name": "agent-answers", "created": int(CONSOLE_NOW - 3600), "attached": False,
     "panes": [{"id": "%0", "pid": 101, "command": "python3", "active": True}]},
    {"name": "agent-chatty", "created": int(CONSOLE_NOW - 3000), "attached": False,
     "panes": [{"id": "%1", "pid": 102, "command": "python3", "active": True}]},
    {"name": "agent-silent", "created": int(CONSOLE_NOW - 2400), "attached": False,
     "panes": [{"id": "%2", "pid": 103, "command": "cat", "active": True}]},
]


def seed_console_fleet(home) -> None:
    """The demo's fleet at a fixed time, with one warrant mid-interrogation."""
    from leash.console.demo import seed_fleet, seed_warrant
    from leash.core.clock import iso
    from leash.core.statefile import write_json
    from leash.core.warrants import WarrantQueue

    seed_fleet(home, now=CONSOLE_NOW)
    seed_warrant(home, now=CONSOLE_NOW - 10)
    queue = WarrantQueue(home)
    state, fd = queue.claim_next(owner={"pid": 0, "host": "test"}, now=CONSOLE_NOW - 8)
    state.update(state="interrogating", attempt=1, last_message_at=iso(CONSOLE_NOW - 5),
                 next_timeout=iso(CONSOLE_NOW + 15), baseline=0)
    write_json(queue.active_path(state["id"]), state)
    queue.release(state["id"], fd)


@pytest.fixture
def console_app(home):
    """A console on a seeded home with a fixed clock, a fixed tmux list, no
    watcher thread of its own choosing and no kennel."""
    from leash.console.app import LeashApp

    seed_console_fleet(home)

    def make(**options):
        options.setdefault("list_tmux", lambda: CONSOLE_TMUX)
        options.setdefault("run_kennel", False)
        options.setdefault("watch", False)
        options.setdefault("clock", lambda: CONSOLE_NOW)
        options.setdefault("source", "ops@test")
        return LeashApp(home, **options)

    return make
