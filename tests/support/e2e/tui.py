"""Interactive Claude Code TUIs in tmux, wired with leash, each talking to a
loopback stand-in of the Messages API: the fleet an operator really runs.

``Fleet`` starts N interactive Claude Code TUIs (``claude`` without ``-p``) in
one private tmux server (a socket under the test's tmp_path, ``-f /dev/null``,
started with a closed environment), each in a session of its own
(``agent-1`` .. ``agent-N``, 120x30) with its own project directory wired by
``leash install --project``, its own private HOME and temp directory, its own
session id (``--session-id``) and its own ``StandInServer``, so every agent
plays its own script and a test can hold one agent's model request (``Pause``)
while the others are answered. Every pane shares the test's ``LEASH_HOME`` and
names the private server in ``LEASH_TMUX_SOCKET``, so leash's hooks, CLI,
kennel and console (``Fleet.console()``, a session of its own, 160x50) all see
the same fleet. ``Agent.submit`` types a prompt as a person does,
``Pane.wait_for`` polls the screen up to a deadline, ``Agent.input_text`` reads
what sits in the input box, and ``Fleet.close`` tears it all down: stand-ins
released, every process the panes started killed, the server killed.

What Claude Code 2.1.197 and 2.1.332 do in a pane, as seen here (both alike
unless said):

* First-run screens (theme, onboarding, "use this API key?", "trust this
  folder?") are skipped by a seeded ``~/.claude.json``:
  ``hasCompletedOnboarding``, the key's last 20 characters under
  ``customApiKeyResponses.approved``, ``hasTrustDialogAccepted`` for the project.
* Permission modes. ``--permission-mode bypassPermissions`` runs every
  scripted call without a dialog, but first shows a "Bypass Permissions mode"
  warning whose default answer is "No, exit"; ``skipDangerousModePermissionPrompt:
  true`` in ``~/.claude/settings.json`` (what accepting it writes) skips it. It
  is the mode used here (``--dangerously-skip-permissions`` is the same mode,
  with the same warning). ``acceptEdits`` runs file edits and file commands
  (``touch``) unasked but shows "This command requires approval" for others
  (``curl``). 2.1.332's default, ``auto``, runs its safety check on
  Anthropic's server: through a stand-in it shows "Auto mode can't check
  actions in this session" and waits for a person. leash's PreToolUse deny
  holds in every mode.
* 2.1.332 refuses a Bash command that *begins* with a long ``sleep`` ("Blocked:
  sleep 60 followed by: ..."), before any hook: a long call here starts with
  another command (``touch started; sleep 60; ...``).
* The input box is ``❯ text`` between two full-width ``─`` rules near the
  bottom (a long text goes on in lines indented under it); the line below the
  lower rule is the status line (``⏵⏵ bypass permissions on ...``; ``esc to
  interrupt`` while a turn runs). Text typed as one burst with its Enter is read
  as a paste and the Enter becomes a newline, so Enter is sent as a key of its
  own ``ENTER_PAUSE_SECONDS`` later. ``C-u`` clears the box one row at a time
  (a long line wrapped over two rows takes two), ``C-y`` puts back what it
  cleared. ``pane_current_command`` is ``claude``.
* An empty box may show a faint placeholder: a prompt sent while a turn runs
  is queued (2.1.332: ``❯ text`` / ``⎿  Queued · ctrl+x ctrl+s to send now``
  above the box; 2.1.197: ``❯ text`` indented under the spinner) and the box
  reads "Press up to edit queued messages". ``Agent.input_text`` reads the
  styled screen and leaves faint text out; on plain text (a saved screen)
  the placeholder reads as text.
* A call leash denies: 2.1.197 shows ``● Bash(cmd)`` / ``⎿  Error: <reason>``;
  2.1.332 shows ``Did not run 1 call`` / ``⎿  Not run · permission denied`` /
  ``│ Reason: PreToolUse:Bash hook error: <reason>``. Then both show
  ``PostToolBatch hook stopped ...`` with the reason again. The TUI wraps
  long reasons itself (2.1.332 with ``│`` before each line), so
  ``Pane.wait_for`` compares text without whitespace or that bar.
* Escape while a call runs: ``⎿  Interrupted · What should Claude do
  instead?`` under the call, and the command's shell and its children are
  killed.

Failure: a TUI that has not drawn its input box within ``START_SECONDS``, or a
screen that never shows what a test waits for, fails with the screen in the
message. Teardown runs whatever happened and leaves no process and nothing
outside tmp_path behind.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from .harness import LEASH, wire
from .standin import StandIn, StandInServer, result_text

AGENT_WIDTH, AGENT_HEIGHT = 120, 30
CONSOLE_WIDTH, CONSOLE_HEIGHT = 160, 50
CONSOLE_SESSION = "console"
# A key of the real shape and length: Claude Code remembers approved keys by
# their last 20 characters.
API_KEY = "sk-ant-api03-" + "x" * 40 + "leashE2eStandInKey20"
APPROVED_KEY_CHARS = 20
PERMISSION_ARGS = ("--permission-mode", "bypassPermissions")
# A burst of keys that ends in Enter is read as a paste (Enter turns into a newline).
ENTER_PAUSE_SECONDS = 0.3
START_SECONDS = 40  # for a TUI (or the console) to draw itself; a few seconds here
WAIT_SECONDS = 30  # for a screen to show what a step waits for
POLL_SECONDS = 0.2
# How long a held model request waits at most: longer than any test, shorter
# than Claude Code's own request timeout; teardown lets it go at once.
PAUSE_LIMIT_SECONDS = 300
# The input box: ``❯ text`` between two rules that span the pane (a rule
# inside a panel, e.g. the welcome box's, is shorter and framed).
INPUT_PROMPT = "❯"
RULE_CHAR = "─"
RULE_MIN_WIDTH = AGENT_WIDTH * 3 // 4
QUOTE_BAR = "│"  # drawn before each line of a quoted reason
# Reading the styled screen (``capture-pane -e``): only the faint and reverse
# attributes matter; an extended colour's arguments (``38;5;N``, ``38;2;R;G;B``)
# are skipped so they are never read as attributes.
ESC = "\x1b"
CSI = re.compile(r"\x1b\[([0-9;:?]*)([@-~])")
NO_BREAK_SPACE = "\xa0"  # Claude Code puts one after the ❯
SGR_RESET, SGR_FAINT, SGR_NORMAL_INTENSITY, SGR_REVERSE, SGR_NOT_REVERSE = 0, 2, 22, 7, 27
SGR_EXTENDED_COLOUR = (38, 48, 58)
SGR_COLOUR_ARGUMENTS = {5: 2, 2: 4}  # 5;N (256 colours), 2;R;G;B (true colour), counting the 5 or 2


class ScreenTimeout(AssertionError):
    """What a test waited for never showed; the message holds the screen."""


@dataclass
class Pause:
    """A ``before`` action of the stand-in that holds one model request until
    released: the agent is mid-task (its prompt taken, the model "thinking")
    for as long as the test needs. ``closing`` lets it go at teardown."""
    closing: threading.Event
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def __call__(self) -> None:
        self.reached.set()
        deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
        while not (self.released.is_set() or self.closing.is_set()) and time.monotonic() < deadline:
            self.released.wait(POLL_SECONDS)

    def wait_reached(self, timeout: float = WAIT_SECONDS) -> None:
        if not self.reached.wait(timeout):
            raise ScreenTimeout(f"the held model request never came within {timeout} s")

    def release(self) -> None:
        self.released.set()


def is_rule(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= RULE_MIN_WIDTH and set(stripped) == {RULE_CHAR}


def _box_bounds(lines: list[str]) -> tuple[int, int] | None:
    """The rows of the rules around the lowest input box (``❯ ...`` just
    under the upper one), or None when none is drawn."""
    rules = [index for index, line in enumerate(lines) if is_rule(line)]
    for top, bottom in reversed(list(pairwise(rules))):
        if bottom > top + 1 and lines[top + 1].lstrip().startswith(INPUT_PROMPT):
            return top, bottom
    return None


def input_box(lines: list[str]) -> list[str] | None:
    """The lines of the lowest input box on ``lines`` (``❯ ...`` and what
    continues it, between two rules), or None when none is drawn."""
    bounds = _box_bounds(lines)
    return None if bounds is None else lines[bounds[0] + 1:bounds[1]]


def input_text(lines: list[str]) -> str | None:
    """What the input box on ``lines`` holds ("" when empty), None when no box.
    On plain text a placeholder ("Press up to edit queued messages") reads as
    text; ``Agent.input_text`` reads the styled screen and leaves it out."""
    box = input_box(lines)
    if box is None:
        return None
    first = box[0].lstrip()[len(INPUT_PROMPT):]
    return "\n".join(line.strip() for line in [first, *box[1:]]).strip()


def above_input_box(lines: list[str]) -> list[str]:
    """The lines above the lowest input box (all of them when there is none)."""
    bounds = _box_bounds(lines)
    return lines if bounds is None else lines[:bounds[0]]


def typed_only(escaped: str) -> str:
    """A line captured with its escape sequences (``capture-pane -e``), as
    plain text without what the TUI draws faint: a placeholder or a suggested
    prompt in the input box is faint (SGR 2), and the cursor cell on its first
    letter is in reverse video just before it; typed text is neither."""
    cells: list[tuple[str, bool, bool]] = []  # (character, faint, reverse)
    faint = reverse = False
    index = 0
    while index < len(escaped):
        char = escaped[index]
        if char == ESC:
            match = CSI.match(escaped, index)
            if match is None:
                index += 1
                continue
            if match.group(2) == "m":
                faint, reverse = _sgr(match.group(1), faint, reverse)
            index = match.end()
            continue
        cells.append((char, faint, reverse))
        index += 1
    kept = [char for at, (char, faint, reverse) in enumerate(cells)
            if not faint and not (reverse and at + 1 < len(cells) and cells[at + 1][1])]
    return "".join(kept).replace(NO_BREAK_SPACE, " ")


def _sgr(params: str, faint: bool, reverse: bool) -> tuple[bool, bool]:
    """Faint and reverse after one SGR sequence (colours are skipped with
    their arguments: ``38;5;N``, ``38;2;R;G;B``)."""
    codes = [int(code) if code.isdigit() else 0 for code in params.replace(":", ";").split(";")] if params else [0]
    index = 0
    while index < len(codes):
        code = codes[index]
        if code == SGR_RESET:
            faint = reverse = False
        elif code == SGR_FAINT:
            faint = True
        elif code == SGR_NORMAL_INTENSITY:
            faint = False
        elif code == SGR_REVERSE:
            reverse = True
        elif code == SGR_NOT_REVERSE:
            reverse = False
        elif code in SGR_EXTENDED_COLOUR and index + 1 < len(codes):
            index += SGR_COLOUR_ARGUMENTS.get(codes[index + 1], 1)
        index += 1
    return faint, reverse


def squeezed(text: str) -> str:
    """``text`` without whitespace and the bar Claude Code draws beside a
    quoted reason: a TUI wraps long lines where it likes, and indents them."""
    return "".join(text.replace(QUOTE_BAR, " ").split())


class Pane:
    """One tmux session of the fleet's server, by its exact name."""

    def __init__(self, fleet: Fleet, name: str):
        self.fleet = fleet
        self.name = name

    @property
    def target(self) -> str:
        return f"={self.name}:"  # exactly this session (tmux would take a prefix), its active pane

    def keys(self, *keys: str) -> None:
        """Press keys (tmux key names: ``Enter``, ``Escape``, ``C-u``)."""
        self.fleet.tmux("send-keys", "-t", self.target, *keys)

    def press_until(self, key: str, shown: str, *, attempts: int = 3, each: float = 5.0) -> None:
        """Press ``key`` until the screen shows ``shown``: a key that arrives
        while the console is still drawing the row it acts on does nothing, and
        a person who pressed too soon presses again."""
        for _ in range(attempts - 1):
            self.keys(key)
            try:
                self.wait_for(shown, each)
                return
            except ScreenTimeout:
                continue
        self.keys(key)
        self.wait_for(shown, each)

    def type(self, text: str) -> None:
        """Type ``text`` literally, as one burst."""
        self.fleet.tmux("send-keys", "-t", self.target, "-l", text)

    def lines(self, history: int = 0) -> list[str]:
        """The screen (and ``history`` lines above it), without the blank rows at the bottom."""
        args = ["capture-pane", "-p", "-J", "-t", self.target]
        if history:
            args += ["-S", f"-{history}"]
        lines = self.fleet.tmux(*args).stdout.splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def screen(self, history: int = 0) -> str:
        return "\n".join(self.lines(history))

    def commands(self) -> list[str]:
        """The command lines of every process running below the pane's own."""
        done = self.fleet.tmux("display-message", "-p", "-t", self.target, "#{pane_pid}", check=False)
        if done.returncode != 0 or not done.stdout.strip().isdigit():
            return []
        found = []
        for pid in descendants(int(done.stdout.strip())):
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip())
            except OSError:
                pass  # it ended meanwhile
        return found

    def alive(self) -> bool:
        return self.fleet.tmux("has-session", "-t", f"={self.name}", check=False).returncode == 0

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = WAIT_SECONDS, *,
                 history: int = 0) -> str:
        """The screen, once it shows ``what`` (text, whitespace aside, or a test
        of the screen's text); ScreenTimeout with the screen after ``timeout``."""
        def shown(screen: str) -> bool:
            return squeezed(what) in squeezed(screen) if isinstance(what, str) else bool(what(screen))
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen(history)
            if shown(screen):
                return screen
            if time.monotonic() > deadline:
                raise ScreenTimeout(f"{self.name} did not show {what!r} within {timeout} s; its screen:\n{screen}")
            time.sleep(POLL_SECONDS)


class Agent(Pane):
    """An interactive Claude Code in its own session, project and stand-in."""

    def __init__(self, fleet: Fleet, name: str, *, project: Path, claude_home: Path, standin: StandIn):
        super().__init__(fleet, name)
        self.project = project
        self.claude_home = claude_home
        self.standin = standin
        self.session_id = str(uuid.uuid4())

    @property
    def marker(self) -> Path:
        """The file a scripted call creates when it runs."""
        return self.project / "marker"

    def input_text(self) -> str | None:
        """What is typed in the input box ("" when empty, a placeholder being
        no text), None when no box is drawn."""
        escaped = self.fleet.tmux("capture-pane", "-p", "-e", "-t", self.target).stdout.splitlines()
        return input_text([typed_only(line) for line in escaped])

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Until the TUI shows its empty input box (the first-run screens skipped)."""
        self.wait_for(lambda _screen: self.input_text() == "", timeout)

    def submit(self, text: str, timeout: float = WAIT_SECONDS) -> None:
        """Type a prompt as a person does and press Enter as a key of its own;
        returns once the prompt has left the input box."""
        self.type(text)
        self.wait_for(lambda _screen: squeezed(text) in squeezed(self.input_text() or ""), timeout)
        time.sleep(ENTER_PAUSE_SECONDS)
        self.keys("Enter")
        self.wait_for(lambda _screen: self.input_text() == "", timeout)

    def pause_before(self, index: int) -> Pause:
        """Hold the main request ``index`` (0: the first prompt's) until released."""
        pause = Pause(self.fleet.closing)
        self.standin.before[index] = pause
        return pause

    def wait_tool_result(self, words: str, timeout: float = WAIT_SECONDS) -> str:
        """The first tool result that holds ``words``, once the transcript has
        it (Claude Code writes it a little after the screen shows it)."""
        deadline = time.monotonic() + timeout
        while True:
            results = self.tool_results()
            found = [result for result in results if words in result]
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise ScreenTimeout(f"no tool result of {self.name} holds {words!r} within {timeout} s: {results}")
            time.sleep(POLL_SECONDS)

    def tool_results(self) -> list[str]:
        """The tool_result texts Claude Code recorded in this session's
        transcript (what the model is told, whether or not it is asked again)."""
        transcripts = list((self.claude_home / ".claude" / "projects").glob(f"*/{self.session_id}.jsonl"))
        texts = []
        for transcript in transcripts:
            for line in transcript.read_text().splitlines():
                entry = json.loads(line)
                content = (entry.get("message") or {}).get("content") if entry.get("type") == "user" else None
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        texts.append(result_text(block))
        return texts


class Fleet:
    """A private tmux server with interactive Claude Code TUIs on one LEASH_HOME.

    ``with Fleet(claude, tmp_path, home) as fleet: agents = fleet.start(scripts)``.
    """

    def __init__(self, claude: list[str], base: Path, home: Path):
        self.claude = claude
        self.base = base
        self.home = home
        self.socket = base / "tmux.sock"
        # The console runs in a tmux server of its own, as an operator's should: leashd
        # refuses a process under the tmux server an agent runs in.
        self.console_server = _Server(self, base / "console-tmux.sock")
        self.closing = threading.Event()
        self.agents: list[Agent] = []
        self._stack = ExitStack()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ tmux and leash
    def tmux(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
             socket: Path | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run(["tmux", "-S", str(socket or self.socket), "-f", "/dev/null", *args], capture_output=True,
                              text=True, timeout=30, env=env)
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done

    @property
    def leash_env(self) -> dict[str, str]:
        """The environment of leash's CLI, kennel and console: this home, this server."""
        return dict(os.environ, LEASH_HOME=str(self.home), LEASH_TMUX_SOCKET=str(self.socket))

    def leash(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """``leash ARGS`` as its own process on this home and tmux server."""
        done = subprocess.run([LEASH, *args], capture_output=True, text=True, timeout=timeout, env=self.leash_env)
        if check:
            assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
        return done

    def _closed_env(self, private: Path) -> dict[str, str]:
        """Everything a pane's program sees: nothing of the test's own environment
        but PATH, so no real key, config or socket leaks in."""
        tmp = private / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(private / "home"),
                "USER": os.environ.get("USER", "root"), "LANG": "C.UTF-8", "SHELL": "/bin/bash",
                "TERM": "xterm-256color", "TMPDIR": str(tmp), "CLAUDE_CODE_TMPDIR": str(tmp),
                "LEASH_HOME": str(self.home), "LEASH_TMUX_SOCKET": str(self.socket)}

    def _new_session(self, name: str, argv: list[str], *, cwd: Path, env: dict[str, str], width: int,
                     height: int, socket: Path | None = None) -> None:
        args = ["new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), "-c", str(cwd)]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        # The first session starts the server: with this environment, not the test's.
        self.tmux(*args, "--", *argv, env=env, socket=socket)

    # ------------------------------------------------------------ agents
    def start(self, scripts: list[list[list[dict]]], *, args: tuple[str, ...] = ()) -> list[Agent]:
        """One TUI per script, ``agent-1`` .. ``agent-N``, each ready for a prompt."""
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        for number, script in enumerate(scripts, start=len(self.agents) + 1):
            name = f"agent-{number}"
            private = self.base / name
            project = private / "project"
            project.mkdir(parents=True)
            wire(project, env=self.leash_env)
            claude_home = private / "home"
            self._seed_claude_home(claude_home, project)
            server = StandInServer(script)
            server.server.handle_error = _quiet_when_gone  # type: ignore[method-assign]
            standin = self._stack.enter_context(server)
            agent = Agent(self, name, project=project, claude_home=claude_home, standin=standin)
            env = self._closed_env(private)
            env.update(ANTHROPIC_BASE_URL=standin.url, ANTHROPIC_API_KEY=API_KEY, DISABLE_AUTOUPDATER="1",
                       CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                       DISABLE_ERROR_REPORTING="1",
                       # bypassPermissions is refused to root outside a sandbox; this is one
                       IS_SANDBOX="1")
            self._new_session(name, [*self.claude, *PERMISSION_ARGS, "--session-id", agent.session_id, *args],
                              cwd=project, env=env, width=AGENT_WIDTH, height=AGENT_HEIGHT)
            self.agents.append(agent)
        for agent in self.agents[-len(scripts):]:
            agent.wait_ready()
        return self.agents[-len(scripts):]

    @staticmethod
    def _seed_claude_home(claude_home: Path, project: Path) -> None:
        """The state of a Claude Code that has been set up before: no first-run
        screens, the key approved, the project trusted, bypass mode accepted."""
        (claude_home / ".claude").mkdir(parents=True)
        (claude_home / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True,
            "customApiKeyResponses": {"approved": [API_KEY[-APPROVED_KEY_CHARS:]], "rejected": []},
            "projects": {str(project): {"hasTrustDialogAccepted": True}}}))
        (claude_home / ".claude" / "settings.json").write_text(json.dumps({"skipDangerousModePermissionPrompt": True}))

    # ------------------------------------------------------------ the console
    def console(self, *args: str) -> Pane:
        """``leash console --no-kennel`` in a session of its own, once it has drawn its panels."""
        private = self.base / CONSOLE_SESSION
        private.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._new_session(CONSOLE_SESSION, [LEASH, "console", "--no-kennel", *args], cwd=private,
                          env=self._closed_env(private), width=CONSOLE_WIDTH, height=CONSOLE_HEIGHT,
                          socket=self.console_server.socket)
        pane = Pane(self.console_server, CONSOLE_SESSION)  # type: ignore[arg-type]  # its tmux is all a pane uses
        pane.wait_for("Pending halts", START_SECONDS)
        return pane

    # ------------------------------------------------------------ teardown
    def close(self) -> None:
        """Let every held request go, kill every process the panes started and
        the server, stop the stand-ins."""
        self.closing.set()
        try:
            for socket in (self.socket, self.console_server.socket):
                if socket.exists():  # a server was started, even by a start that failed
                    self._kill_pane_processes(socket)
                    self.tmux("kill-server", check=False, socket=socket)
        finally:
            self._stack.close()

    def _kill_pane_processes(self, socket: Path) -> None:
        """SIGKILL each pane's process group and every process below it (a tool
        call's shell may have a group of its own), before the server goes."""
        done = self.tmux("list-panes", "-a", "-F", "#{pane_pid}", check=False, socket=socket)
        roots = [int(word) for word in done.stdout.split() if word.isdigit()]
        for root in roots:
            with_children = [root, *descendants(root)]
            try:
                os.killpg(root, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for pid in with_children:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def _quiet_when_gone(request, client_address) -> None:
    """The stand-in's error handler: an agent killed mid-answer (a warrant
    executed, teardown) is no error; anything else is printed as before."""
    import socketserver
    import sys

    if not isinstance(sys.exc_info()[1], ConnectionError):
        socketserver.BaseServer.handle_error(None, request, client_address)  # type: ignore[arg-type]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), children before grandchildren."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])  # the fields after "(comm)": state, ppid, ...
        children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


class _Server:
    """Another tmux server of the fleet's (the console's): what a ``Pane`` asks of it."""

    def __init__(self, fleet: Fleet, socket: Path):
        self.fleet, self.socket = fleet, socket

    def tmux(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return self.fleet.tmux(*args, check=check, env=env, socket=self.socket)
