"""Shared fixtures: every test gets its own state home and, where tmux is used,
its own tmux server on a private socket that is killed afterwards."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout, suppress
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The end-to-end suite runs the real Claude Code CLI; `make e2e` runs it on its own.
collect_ignore = ["e2e"]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """After a passing run, remove its base directory (every tmp_path, the
    workers' included), then its per-user parent and the ``pytest-current``
    link when no other run is using them (``rmdir`` removes only what is
    empty). A failing run keeps its directories to look into."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if exitstatus != 0 or hasattr(session.config, "workerinput") or factory is None:
        return
    basetemp = getattr(factory, "_basetemp", None)
    if basetemp is None or getattr(factory, "_given_basetemp", None) is not None:
        return
    _remove_tree(basetemp)
    parent = basetemp.parent
    current = parent / f"{basetemp.name.rsplit('-', 1)[0]}-current"
    if current.is_symlink() and not current.exists():
        with suppress(FileNotFoundError):
            current.unlink()
    with suppress(OSError):
        parent.rmdir()


def _remove_tree(path: Path) -> None:
    """``rmtree`` that also enters directories a test left without write or search permission."""
    def writable_then_retry(function, name, _exc):
        with suppress(OSError):
            os.chmod(os.path.dirname(name), 0o700)
            os.chmod(name, 0o700)
            function(name)

    shutil.rmtree(path, onerror=writable_then_retry)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh LEASH_HOME for this test (also exported to child processes)."""
    path = tmp_path / "leash-home"
    monkeypatch.setenv("LEASH_HOME", str(path))
    monkeypatch.delenv("TMUX_PANE", raising=False)
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("LEASH_ENTITY", raising=False)
    monkeypatch.delenv("LEASH_SOCKET", raising=False)
    monkeypatch.delenv("LEASH_OPERATOR_SOCKET", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)  # path locks are anchored at it when set
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


@contextmanager
def environment(overrides: dict[str, str] | None):
    """``os.environ`` with ``overrides`` for the length of one call, as a child process would see it."""
    saved = dict(os.environ)
    os.environ.update(overrides or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def leash(home):
    """Run ``leash ARGS`` in-process as ``leash_proc`` runs it as a process: a
    hook call goes through the hook's entry (``leash.core.hook.hooks.run``) with the
    stdin bytes, anything else through the command line; ``env`` applies to
    this call only. The process contract itself (exit status, a real stdin,
    the fast path) is what ``leash_proc`` tests."""
    from leash.console.cli import main
    from leash.core.hook.hooks import run as run_hook
    from leash.core.hook.main import hook_call

    def run(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        call = hook_call(list(args))
        with environment(env):
            if call is not None:
                code = run_hook(call[1], home=call[0], stdin=io.BytesIO(stdin), stdout=out, stderr=err)
            else:
                old_stdin = sys.stdin
                sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
                try:
                    with redirect_stdout(out), redirect_stderr(err):
                        code = main(list(args))
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                finally:
                    sys.stdin = old_stdin
        return CliResult(code, out.getvalue(), err.getvalue())

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
    from leash.core.base.clock import iso
    from leash.core.base.statefile import write_json
    from leash.core.state.warrants import WarrantQueue

    seed_fleet(home, now=CONSOLE_NOW)
    seed_warrant(home, now=CONSOLE_NOW - 10)
    queue = WarrantQueue(home)
    state, fd = queue.claim_next(owner={"pid": 0, "host": "test"}, now=CONSOLE_NOW - 8)
    state.update(state="interrogating", attempt=1, last_message_at=iso(CONSOLE_NOW - 5),
                 next_timeout=iso(CONSOLE_NOW + 15), baseline=0)
    write_json(queue.active_path(state["id"]), state)
    queue.release(state["id"], fd)


def console(home, **options):
    """The console as every test builds it: no kennel and no watcher unless
    asked for, acting as ``ops@test``; ``options`` go to ``LeashApp``."""
    from leash.console.app import LeashApp

    options.setdefault("run_kennel", False)
    options.setdefault("watch", False)
    options.setdefault("source", "ops@test")
    return LeashApp(home, **options)


@pytest.fixture
def console_app(home):
    """A console on a seeded home with a fixed clock, a fixed tmux list, no
    watcher thread of its own choosing and no kennel."""
    seed_console_fleet(home)

    def make(**options):
        options.setdefault("list_tmux", lambda: CONSOLE_TMUX)
        options.setdefault("clock", lambda: CONSOLE_NOW)
        return console(home, **options)

    return make


# ---------------------------------------------------------------- leashd
@pytest.fixture
def daemon(home):
    """A leash daemon in this process on the test's home (real sockets and
    threads, no kennel), closed afterwards; ``tests/daemon_support.py`` has the
    clients."""
    from .daemon_support import start_daemon

    running = start_daemon(home, line_deadline=0.5)
    yield running
    running.close()


# ---------------------------------------------------------------- PostgreSQL
@pytest.fixture(scope="session")
def postgres_cluster():
    """A throwaway PostgreSQL server for this test worker (``postgres_support``),
    stopped and removed at the end; each test takes a schema of its own."""
    from .postgres_support import Cluster, binaries

    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl); .ci/run installs it")
    cluster = Cluster()
    yield cluster
    cluster.stop()
