"""Shared fixtures: every test gets its own state home and, where tmux is used,
its own tmux server on a private socket that is killed afterwards. Helpers the
tests share are in ``tests/support/`` (the names imported from there below are
also read from here by older callers: the console's tests, bench/, screenshots/)."""
from __future__ import annotations

import gc
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager, redirect_stderr, redirect_stdout, suppress
from pathlib import Path

import pytest

# The helpers' own asserts report their values as a test's do.
pytest.register_assert_rewrite("tests.support")

from .support.backends import BACKENDS, make_backend  # noqa: E402
from .support.checkout import ROOT, leash_argv  # noqa: E402
from .support.console import CONSOLE_NOW, CONSOLE_TMUX, console, seed_console_fleet  # noqa: E402

# The end-to-end suite runs the real Claude Code CLI; `make e2e` runs it on its own.
collect_ignore = ["e2e"]

# Temporary files (every tmp_path, the PostgreSQL servers' data, mkdtemp's) go
# to a RAM disk when the machine has one to spare: leash fsyncs every state
# write, and on a disk the fsyncs were much of the suite's time. What a test
# checks does not change (a killed writer's file is the same on tmpfs); a
# TMPDIR of one's own, or --basetemp, is kept; so is the end-to-end suite's.
RAM_DISK, RAM_DISK_SPARE_BYTES = "/dev/shm", 2 << 30


# Python's collector of reference cycles runs far less often in a test process
# than its defaults have it: each console a test starts is a web of cycles, and
# with the defaults the oldest generation (the suite's modules, its collected
# tests and all they hold, by then) was scanned again every few tests: 15-20 %
# of the console tests' CPU. What is there once the tests are collected lives to
# the end, so it is set aside (``gc.freeze``) and never scanned. A cycle a test
# leaves is still collected, only later (a worker holds ~100 MB more); pytest
# still collects all at the end and reports what could not be.
GC_THRESHOLDS = (10_000, 10, 10)  # Python's: (700, 10, 10)


# Tests that ``make e2e`` runs instead of ``make test`` (``make test`` must
# finish in two minutes on two cores): each is marked ``heavy(reason)``, the
# reason saying what it costs and what ``make test`` keeps of what it shows.
# ``--heavy`` runs those alone (``make e2e``); without it they are deselected.
HEAVY = "heavy"


def pytest_addoption(parser):
    parser.addoption("--heavy", action="store_true",
                     help="run only the tests marked heavy (make e2e runs them; make test leaves them out)")


def pytest_collection_modifyitems(config, items):
    wanted = config.getoption("--heavy")
    kept, left = [], []
    for item in items:
        mark = item.get_closest_marker(HEAVY)
        if mark is not None and not (mark.args and str(mark.args[0]).strip()):
            raise pytest.UsageError(f"{item.nodeid}: a heavy mark says why the test is left to make e2e")
        (kept if (mark is not None) == wanted else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


def pytest_configure(config):
    config.addinivalue_line("markers", f"{HEAVY}(reason): run by make e2e, not make test; the reason says why")
    gc.set_threshold(*GC_THRESHOLDS)
    if config.option.basetemp or os.environ.get("TMPDIR") or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    if any("e2e" in Path(str(arg).split("::")[0]).parts for arg in config.args):
        return
    try:
        disk = os.statvfs(RAM_DISK)
    except OSError:
        return
    if disk.f_bavail * disk.f_frsize >= RAM_DISK_SPARE_BYTES and os.access(RAM_DISK, os.W_OK | os.X_OK):
        os.environ["TMPDIR"] = RAM_DISK  # child processes (and xdist's workers) too
        tempfile.tempdir = None  # read again: this process's mkdtemp and pytest's base directory


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """After a passing run, remove its base directory (every tmp_path, the
    workers' included), then its per-user parent and the ``pytest-current``
    link when no other run is using them (``rmdir`` removes only what is
    empty). A failing run keeps its directories to look into.

    First, what the process holds at its end is set aside (``gc.freeze``):
    pytest's five full collections after this hook (for the warnings of
    objects freed late) and the interpreter's teardown scanned and freed a
    worker's 1-2 million objects one by one, 5-8 s after its last test, and
    the run waited for the slowest worker. Frozen, they go back whole when
    the process exits."""
    gc.freeze()
    if not hasattr(session.config, "workerinput"):
        # pytest-textual-snapshot's folder of this run's pictures: the plugin
        # removes it ignoring errors, and one was once found left behind, empty.
        snapshots = os.environ.get("TEXTUAL_SNAPSHOT_TEMPDIR")
        if snapshots and Path(snapshots).parent == Path(tempfile.gettempdir()):
            shutil.rmtree(snapshots, ignore_errors=True)
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
def home(tmp_path, tmp_path_factory, monkeypatch) -> Path:
    """A fresh LEASH_HOME for this test (also exported to child processes)."""
    path = tmp_path / "leash-home"
    monkeypatch.setenv("LEASH_HOME", str(path))
    monkeypatch.delenv("TMUX_PANE", raising=False)
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("LEASH_ENTITY", raising=False)
    monkeypatch.delenv("LEASH_SOCKET", raising=False)
    monkeypatch.delenv("LEASH_OPERATOR_SOCKET", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)  # path locks are anchored at it when set
    # tmux asked with no socket (leash's default) meets no server of the user's,
    # and leaves its socket directory in the run's folder, not in /tmp (beside
    # tmp_path: tests hold what is in it)
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path_factory.mktemp("default-tmux")))
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


@pytest.fixture
def tmux(tmux_socket, monkeypatch, home):
    """A ``Tmux`` on this test's private server (its socket also exported to
    child processes as ``LEASH_TMUX_SOCKET``), killed afterwards."""
    from leash.core.base.tmux import Tmux

    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(tmux_socket))
    server = Tmux(str(tmux_socket))
    yield server
    server.kill_server()


# ---------------------------------------------------------------- the console
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


# ---------------------------------------------------------------- tampering
@pytest.fixture
def scene(home, tmp_path):
    """The tampering tests' scene (``support/tampering.py``'s ``build_scene``):
    session "other" stopped, "ezra" locked, a project wired with leash's hooks."""
    from .support.tampering import build_scene

    return build_scene(home, tmp_path)


# ---------------------------------------------------------------- leashd
@pytest.fixture
def daemon(home):
    """A leash daemon in this process on the test's home (real sockets and
    threads, no kennel), closed afterwards; ``tests/support/daemon.py`` has the
    clients."""
    from .support.daemon import start_daemon

    running = start_daemon(home, line_deadline=0.5)
    yield running
    running.close()


# ---------------------------------------------------------------- PostgreSQL
@pytest.fixture(scope="session")
def postgres_cluster():
    """A throwaway PostgreSQL server for this test worker (``support/postgres.py``),
    stopped and removed at the end; each test takes a schema of its own."""
    from .support.postgres import Cluster, binaries

    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl); .ci/run installs it")
    cluster = Cluster()
    yield cluster
    cluster.stop()


# ---------------------------------------------------------------- the store contract's backends
@pytest.fixture(params=BACKENDS)
def backend(request, home):
    """Each kind of backend in turn (``support/backends.py``): the file backend,
    the shared PostgreSQL store with one role, and with two."""
    if request.param == "file":
        yield make_backend("file", home)
        return
    cluster = request.getfixturevalue("postgres_cluster")
    if request.param == "postgres-roles":
        runtime, owner = cluster.two_roles()
        made = make_backend("postgres", home, url=runtime, owner_url=owner)
    else:
        made = make_backend("postgres", home, url=cluster.url(cluster.fresh_schema()))
    yield made
    made.close()


@pytest.fixture
def second_backend(backend, home):
    """Another client of the same store (another host's or process's view)."""
    made = make_backend(backend.name, home, url=getattr(backend, "url", None))
    yield made
    if hasattr(made, "close"):
        made.close()
