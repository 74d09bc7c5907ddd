"""What the interrupt tests of the Gemini CLI and the Codex CLI share
(test_interrupt_gemini.py, test_interrupt_codex.py): a ``Lab`` per test, with a
private tmux server whose panes run a CLI as a person does, and ``Leash`` to
run leash's CLI and read its state on the test's home.

``Lab(base)`` keeps everything under the test's ``base`` folder (tmp_path):
the tmux server's socket (``tmux -S base/tmux.sock -f /dev/null``, started with
a closed environment), the output of the processes it starts, and the CLIs'
homes and temporary folders, which the tests put there. A pane runs ``bash
--noprofile --norc`` in the project with the CLI's closed environment; the CLI
is typed into it (``type_line``: the text, then Enter a moment later, since a
burst that ends in Enter reads as a paste). ``Lab.close()`` ends every process
the test started, whatever happened: each headless run's process group, every
process below a pane, then every process whose command line, working directory
or executable lies in ``base`` (Codex's background ``codex app-server``, which
outlives the TUI that started it and runs from a copy of the binary in
CODEX_HOME: SIGTERM first, so it removes its socket), by pid and start time,
never by name; then the tmux server. Codex's app-server makes its control
socket in ``/tmp/codex-daemon-<uid>``: entries made during the test that are
still there are removed, and the folder too when the test made it and it is
empty. ``close`` returns what it could not end; ``with Lab(base) as lab``
fails the test (AssertionError) when something was left behind. The tmux part
(``tmux``, ``new_pane``, ``screen``, ``keys``, ``type_line``, ``wait_screen``)
is ``panes.PaneServer``, shared with the ``Lab`` of ``capture_processes``.

``Leash(home, tmux_socket)`` runs ``leash ARGS`` as a process of its own on
that home, with the tmux server named in ``LEASH_TMUX_SOCKET`` (so nothing can
reach a tmux server outside the test), reads ``sessions.json`` and the ack
log's ``interrupt`` lines. ``in_flight`` waits until a session of a CLI is in
its long call: its PreToolUse (Gemini BeforeTool) hook has recorded it working
on a Bash call, and the call's ``sleep 60`` runs in the project.

The long call is ``sleep 60; echo done > marker``. Its processes are found in
/proc by their working directory (the project) and command line: the
``sleep 60`` and the tool's shell, whose command line holds the call
(``tool_processes``). ``assert_interrupted`` has what every interrupt that
works must show; ``require_tmux`` skips a test when tmux is missing.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from leash.core import StopProtocol

from ..waiting import eventually
from .capture_processes import CODEX_DAEMON_DIR, CodexDaemonDir, alive, all_pids, descendants, proc
from .harness import LEASH
from .panes import POLL, PaneServer

LONG_CALL = "sleep 60; echo done > marker"
SLEEP_ARGV = ["sleep", "60"]
START_SECONDS = 60  # for a TUI to draw its input box (a few seconds here; slower on a busy machine)
CALL_STARTS_WITHIN_SECONDS = 60  # for the long call to be in flight after the prompt
GONE_WITHIN_SECONDS = 15  # for the interrupted call's processes to be gone (the call would take 60)
RUN_ENDS_WITHIN_SECONDS = 15  # for a headless run to end after its interrupt
STILL_RUNNING_SECONDS = 1.5  # how long a TUI is watched after its interrupt
FIRST_ENTER_SECONDS = 10  # a TUI just started may miss the first Enter: it is pressed again after this
PROMPT = "wait a minute, then write the marker"
REASON = "cancel the wait"  # the operator's reason for ``leash stop --interrupt``
TERM_GRACE_SECONDS = 2  # for a process to end on SIGTERM at teardown
# What leash's commands must not inherit from whoever runs the suite.
FOREIGN_ENV = ("LEASH_SOCKET", "LEASH_OPERATOR_SOCKET", "LEASH_ENTITY", "TMUX", "TMUX_PANE", "CLAUDE_PROJECT_DIR",
               "CODEX_HOME", "LEASH_HOME", "LEASH_TMUX_SOCKET")


# ----------------------------------------------------------------- the CLI
def require_tmux() -> None:
    """The test is skipped, saying why, when tmux is missing (the CLI itself is
    the rig's ``codex`` or ``gemini`` fixture, skipped when it cannot be had)."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")


# ----------------------------------------------------------------- the long call
def tool_processes(project: Path) -> list[dict]:
    """The long call's living processes: its ``sleep 60`` and the shell that runs it."""
    found = []
    for pid in all_pids():
        entry = proc(pid)
        if entry is None or entry["state"] in ("Z", "X") or entry["cwd"] != str(project):
            continue
        if entry["argv"] == SLEEP_ARGV or LONG_CALL in " ".join(entry["argv"]):
            found.append(entry)
    return found


def the_sleep(project: Path) -> dict | None:
    return next((entry for entry in tool_processes(project) if entry["argv"] == SLEEP_ARGV), None)


def gone(entries: list[dict]) -> bool:
    return not [entry for entry in entries if alive(entry["pid"], entry["start"])]


def still_running(entry: dict, seconds: float = STILL_RUNNING_SECONDS) -> bool:
    """Whether the process lives on for ``seconds`` (an observation window, not a wait for something)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(entry["pid"], entry["start"]):
            return False
        time.sleep(POLL)
    return True


def environ_of(pid: int) -> dict[str, str]:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in data.split("\0") if "=" in item)


# ----------------------------------------------------------------- the lab
class Lab(PaneServer):
    """One test's private tmux server and processes, and the cleanup of all of them."""

    def __init__(self, base: Path):
        # a tmux command that fails, or a screen that never shows what is awaited, fails the test
        super().__init__(base, check=True, error=AssertionError, screen_seconds=START_SECONDS, screen_required=True)
        self.base = base
        self.output = base / "output"
        self.output.mkdir(parents=True, exist_ok=True)
        self.popens: list[subprocess.Popen] = []
        self.daemon_dir = CodexDaemonDir()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        """``close``; then, unless the body raised, AssertionError when processes were left behind."""
        left = self.close()
        if exc_type is None:
            assert not left, f"processes left behind: {left}"

    # ------------------------------------------------------------- tmux (the panes: PaneServer)
    def below(self, pane: str) -> list[dict]:
        """Every living process below the pane's shell."""
        return [entry for entry in descendants(self.pane_pid(pane)) if entry["state"] not in ("Z", "X")]

    # ------------------------------------------------------------- headless runs
    def start(self, argv: list[str], *, cwd: Path, env: dict[str, str], name: str) -> subprocess.Popen:
        """``argv`` in a session of its own, stdin from /dev/null, its output in ``output/NAME.*``."""
        with open(self.output / f"{name}.stdout", "w") as stdout, open(self.output / f"{name}.stderr", "w") as stderr:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                                       stderr=stderr, start_new_session=True)
        self.popens.append(process)
        return process

    def output_of(self, name: str) -> tuple[str, str]:
        return tuple((self.output / f"{name}.{kind}").read_text(errors="replace")  # type: ignore[return-value]
                     for kind in ("stdout", "stderr"))

    # ------------------------------------------------------------- cleanup
    def ours(self) -> list[dict]:
        """Living processes (other than tmux and this one) whose command line,
        working directory or executable lies in the test's folder."""
        mine = str(self.base)

        def within(text: str) -> bool:  # the folder itself or a path in it (not a sibling named alike)
            return text == mine or text.endswith(mine) or mine + "/" in text

        found = []
        for pid in all_pids():
            if pid == os.getpid():
                continue
            entry = proc(pid)
            if entry is None or entry["state"] in ("Z", "X") or entry["comm"].startswith("tmux"):
                continue
            if within(entry["cwd"]) or within(entry["exe"]) or any(within(word) for word in entry["argv"]):
                found.append(entry)
        return found

    def close(self) -> list[dict]:
        """End everything the test started; what is still alive afterwards."""
        sockets = unix_sockets_of([entry["pid"] for entry in self.ours()], CODEX_DAEMON_DIR)
        for process in self.popens:
            if process.poll() is None:
                _kill(-process.pid, signal.SIGKILL)
            process.wait()
        # SIGTERM first (Codex's app-server then removes its socket), SIGKILL to what
        # is left a moment later (Gemini's first node and an interactive bash ignore SIGTERM).
        for sig, grace in ((signal.SIGTERM, TERM_GRACE_SECONDS), (signal.SIGKILL, 5)):
            victims = self.ours()
            for entry in victims:
                if alive(entry["pid"], entry["start"]):
                    _kill(entry["pid"], sig)
            if victims:
                eventually(lambda group=victims: gone(group), grace, interval=POLL)
        if self.socket.exists():  # what runs below a pane and nowhere in the folder
            done = self.tmux("list-panes", "-a", "-F", "#{pane_pid}", check=False)
            for root in [int(word) for word in done.stdout.split() if word.isdigit()]:
                below = descendants(root)
                _kill(-root, signal.SIGKILL)
                for entry in below:
                    if alive(entry["pid"], entry["start"]):
                        _kill(entry["pid"], signal.SIGKILL)
        if self.socket.exists():
            self.tmux("kill-server", check=False)
        eventually(lambda: not self.ours(), 5, interval=POLL)
        self._remove_daemon_sockets(sockets)
        return self.ours()

    def _remove_daemon_sockets(self, ours: set[str]) -> None:
        """What Codex's app-server left in ``CODEX_DAEMON_DIR`` since the test
        began: the sockets our processes listened on (and their ``.lock``), and
        new sockets nothing listens on; not another test's live one."""
        def removable(name: str) -> bool:
            path = CODEX_DAEMON_DIR / name
            socket_path = str(path.with_suffix("")) if name.endswith(".lock") else str(path)
            return socket_path in ours or (not name.endswith(".lock") and stale_socket(path))

        self.daemon_dir.remove([name for name in self.daemon_dir.added() if removable(name)])


def unix_sockets_of(pids: list[int], folder: Path) -> set[str]:
    """The paths in ``folder`` of the unix sockets the processes ``pids`` hold open."""
    try:
        table = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return set()
    by_inode = {}
    for line in table:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith(str(folder) + "/"):
            by_inode[fields[6]] = fields[7]
    found = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in by_inode:
                found.add(by_inode[link[8:-1]])
    return found


def stale_socket(path: Path) -> bool:
    """A unix socket file that nothing listens on."""
    import socket
    import stat

    try:
        if not stat.S_ISSOCK(path.lstat().st_mode):
            return False
    except OSError:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
    return False


def _kill(pid: int, sig: int) -> None:
    try:
        if pid < 0:
            os.killpg(-pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# ----------------------------------------------------------------- leash
@dataclass
class InFlight:
    """A session in its long call: its id, its record, the call's ``sleep``."""
    session_id: str
    record: dict
    sleep: dict

    def agent(self, cli: str, comm: str, *, headless: bool) -> tuple[dict, dict]:
        """The session's recorded ``agent_process``, of ``cli`` run headless or
        not, and what /proc says of it: a living process named ``comm``."""
        agent = self.record.get("agent_process")
        assert isinstance(agent, dict), self.record
        assert (agent.get("cli"), agent.get("headless")) == (cli, headless), agent
        entry = proc(agent["pid"])
        assert entry is not None and entry["comm"] == comm, (agent, entry)
        return agent, entry


class Leash:
    """leash's CLI and state on one home, with the test's tmux server."""

    def __init__(self, home: Path, tmux_socket: Path, **env: str):
        self.home = home
        self.tmux_socket = tmux_socket
        self.extra = env

    @property
    def env(self) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items() if name not in FOREIGN_ENV}
        return {**env, "LEASH_HOME": str(self.home), "LEASH_TMUX_SOCKET": str(self.tmux_socket), **self.extra}

    def __call__(self, *args: str, expect: int | None = 0, cwd: Path | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([LEASH, *args], capture_output=True, text=True, timeout=60, env=self.env, cwd=cwd)
        if expect is not None:
            assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
        return done

    def sessions(self) -> dict[str, dict]:
        path = self.home / "sessions.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        return {sid: record for sid, record in data.items() if isinstance(record, dict)}

    def interrupts(self) -> list[dict]:
        from leash.core.state.acklog import AckLog

        return [line for line in AckLog(self.home).read().entries if line.get("event") == "interrupt"]

    def interrupt(self, session_id: str, reason: str = REASON) -> tuple[subprocess.CompletedProcess, float]:
        """``leash stop SESSION --interrupt --reason REASON``: (its result, seconds it took)."""
        began = time.monotonic()
        done = self("stop", session_id, "--interrupt", "--reason", reason, expect=None)
        return done, time.monotonic() - began

    def the_interrupt(self, session_id: str, reason: str = REASON) -> dict:
        """The ack log's one ``interrupt`` line: of the session's Bash call, with ``reason``."""
        lines = self.interrupts()
        assert len(lines) == 1, lines
        line = lines[0]
        assert (line["session_id"], line["tool"], line["reason"]) == (session_id, "Bash", reason), line
        return line

    def stopped_sessions(self) -> list[str]:
        status = json.loads(self("status", "--json").stdout)
        return [stop["session_id"] for stop in status["stopped_sessions"]]

    def in_flight(self, project: Path, cli: str, *, seconds: float = CALL_STARTS_WITHIN_SECONDS,
                  session_id: str | None = None, context: Callable[[], str] = lambda: "") -> InFlight:
        """Once the hook has recorded a session of ``cli`` working on a Bash call
        and the call's ``sleep 60`` runs in ``project``; AssertionError (with
        ``context()``) after ``seconds``."""
        def found() -> InFlight | None:
            sleep = the_sleep(project)
            if sleep is None:
                return None
            for sid, record in self.sessions().items():
                if session_id not in (None, sid) or record.get("cli") != cli:
                    continue
                if record.get("last_tool") == "Bash" and record.get("status") == "working":
                    return InFlight(sid, record, sleep)
            return None

        got = eventually(found, seconds, interval=POLL)
        if got is None:
            raise AssertionError(f"the long call of a {cli} session was not in flight within {seconds} s: "
                                 f"sleep={the_sleep(project)}, sessions={self.sessions()}\n{context()}")
        return got


def prompt_long_call(lab: Lab, pane: str, leash: Leash, project: Path, cli: str, *,
                     asked: Callable[[], bool]) -> InFlight:
    """``PROMPT`` typed into the TUI of ``pane``; once its long call is in
    flight, what the hook recorded. When the model was not ``asked`` within
    ``FIRST_ENTER_SECONDS`` (a TUI just drawn may miss the first Enter),
    Enter is pressed again."""
    lab.type_line(pane, PROMPT)
    try:
        return leash.in_flight(project, cli, seconds=FIRST_ENTER_SECONDS)
    except AssertionError:
        if not asked():
            lab.keys(pane, "Enter")
    return leash.in_flight(project, cli, context=lambda: lab.screen(pane))


def assert_interrupted(leash: Leash, project: Path, session_id: str,
                       interrupted: tuple[subprocess.CompletedProcess, float], running: list[dict], agent: dict, *,
                       method: str, target: str, run: subprocess.Popen | None = None,
                       context: Callable[[], object] = lambda: ()) -> None:
    """What an interrupt that works shows: ``leash stop SESSION --interrupt``
    (``interrupted``: its result, seconds it took) exits 0 saying it
    interrupted the session by ``method`` to ``target``; a headless ``run``
    ends, the recorded ``agent`` with it; the call's processes (``running``)
    are gone within ``GONE_WITHIN_SECONDS`` and none is left; the marker is never
    written; the ack log has the one ``interrupt`` line saying how; a TUI (no
    ``run``) runs on; the stop is filed. ``context()`` goes with a failure."""
    done, took = interrupted
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert f"interrupted {session_id} ({method} to {target})" in done.stdout, done.stdout
    if run is not None:
        assert eventually(lambda: run.poll() is not None, RUN_ENDS_WITHIN_SECONDS, interval=POLL), (
            "the run goes on", context())
    assert eventually(lambda: gone(running), GONE_WITHIN_SECONDS, interval=POLL), (
        "the call's processes still run", done.stdout, tool_processes(project), context())
    assert took < GONE_WITHIN_SECONDS
    assert tool_processes(project) == []
    if run is not None:
        assert not alive(agent["pid"], agent["started"]), agent
    assert not (project / "marker").exists()
    line = leash.the_interrupt(session_id)
    assert (line["method"], line["target"]) == (method, target), line
    if run is None:  # the TUI runs on
        assert still_running({"pid": agent["pid"], "start": agent["started"]}), context()
    assert StopProtocol(leash.home).is_stopped(session_id)
