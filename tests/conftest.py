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
    from console.cli import main

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
    return [sys.executable, "-m", "console.cli"]


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
