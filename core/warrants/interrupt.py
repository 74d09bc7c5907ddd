"""A stop that cancels the call in flight: ``leash stop --interrupt``, the
console's stop modal with "interrupt" ticked, and a fleet stop with it.

The stop is filed first, by the caller, as any stop; then each agent session
it names is reached the way its agent CLI (Claude Code, Gemini CLI, Codex
CLI: the session's ``cli``) takes an interrupt from a person:

* an interactive one in a tmux pane gets the terminal UI's own interrupt
  key, Escape (``INTERRUPT_KEYS``), pressed in that pane on its own
  (``send-keys -t %N Escape``); Codex CLI's TUI then gets ``/stop`` typed and
  Enter (``AFTER_THE_KEY``): its Escape ends the turn but leaves the running
  command on as a "background terminal". The pane must show that agent: when a hook
  recorded the session's process (``core.base.agentproc``), that process is
  the pane's or runs below it; otherwise the pane's program is the CLI's
  (``claude``, ``gemini``, ``codex``, or a JavaScript runtime with that CLI
  at or below it) in the tmux session the hooks recorded;
* a headless one (``claude -p``, ``gemini -p``, ``codex exec``; in a pane or
  not) gets SIGINT, sent to the process its hooks recorded and only while that
  pid still has the recorded start time and user and still runs that CLI,
  which aborts the running tool and ends the run. Gemini CLI ends but leaves
  its running shell command behind in a session of its own: leash takes the
  tool sessions below it before the signal and ends them after
  (``core.base.agenttools``).

A Codex CLI TUI whose hooks ran in Codex's shared background server (``codex
app-server``, the default) has no pane on record (``core.hook.whereabouts``):
it is refused, and the operator told to run it with ``codex --no-daemon`` for
leash to reach it.

A terminal UI outside any tmux pane is not signalled: SIGINT ends an
interactive Claude Code and leaves its running tool behind, so the operator is
told to press Escape there instead.

Each interrupt appends an ``interrupt`` line to the ack log after it was
sent: the session, the stop's reason, what was running (the tool, from the
session's transcript when it shows the call not yet answered, else the
record's last tool; its input summarised, secrets masked, one printable
line), the ``method`` (``escape`` or ``sigint``) and the ``target`` (the pane,
or ``pid N``).

Failure: nothing here lifts or undoes the stop. A session that cannot be
reached (no pane and no known process, a process that ended or whose pid now
names another process or another user's, a pane that runs something else, a
session of another host, tmux that cannot be asked) is a one-line refusal in
the report; ``InterruptReport.failure`` words them when nothing at all could
be interrupted, and the CLI exits 1 on it with the stop still filed.
"""
from __future__ import annotations

import os
import time
from typing import Callable

from leash.core.base.agentproc import NotTheAgent, is_within, recorded, recorded_cli, verify
from leash.core.base.agentprograms import BY_CLI, CLAUDE, JS_RUNTIMES, is_headless, name_of

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend
    from leash.core.store.records import LogLine, SessionRecord


ESCAPE_KEY = "Escape"
# Each terminal UI's interrupt key: Claude Code's "esc to interrupt", Gemini
# CLI's "esc to cancel", Codex CLI's "Esc to interrupt".
INTERRUPT_KEYS = {"claude": ESCAPE_KEY, "gemini": ESCAPE_KEY, "codex": ESCAPE_KEY}
# Typed (then Enter) after the key where the key alone leaves the command running.
AFTER_THE_KEY = {"codex": "/stop"}
# Between the key and what is typed after it: a terminal UI reads an Escape
# followed at once by a character as Alt and that character.
KEY_SETTLE_SECONDS = 0.3
METHOD_ESCAPE = "escape"
METHOD_SIGINT = "sigint"
INPUT_SUMMARY_CHARS = 300
TRANSCRIPT_TAIL_BYTES = 256 * 1024  # the call in flight is among the last lines
REASONS_SHOWN = 3  # refusals named in the one-line failure
PROCESS_FIELD = "agent_process"  # the session record's field (core.hooks records it)


class Unreachable(Exception):
    """This session cannot be interrupted; ``str()`` is one line."""


class InterruptReport:
    """What an interrupt did: ``done`` (the ack-log lines written) and
    ``refused`` (one line per session that could not be reached)."""

    def __init__(self) -> None:
        self.done: list[LogLine] = []
        self.refused: list[str] = []
        self.quiet: list[str] = []  # a fleet's sessions with no call in flight, left alone

    @property
    def ok(self) -> bool:
        return bool(self.done)

    def failure(self, what: str) -> str:
        """The one line when nothing was interrupted."""
        why = "; ".join(self.refused[:REASONS_SHOWN]) or (
            f"no session has a call in flight ({len(self.quiet)} idle or waiting for input)" if self.quiet
            else "no agent session of it has been seen by leash's hooks")
        more = f" (and {len(self.refused) - REASONS_SHOWN} more)" if len(self.refused) > REASONS_SHOWN else ""
        return f"{what} is stopped, but nothing could be interrupted: {why}{more}"


def interrupt(names: list[str], *, backend: Backend, source: str, reason: str = "", home=None, tmux=None,
              now: float | None = None) -> InterruptReport:
    """Interrupt every agent session known by one of ``names`` (its id, its
    tmux session's name or id, or a session it was resumed from). In a store
    shared by many hosts a bare tmux name means that name on every host, as
    for the stop itself (another host's sessions are refused: reach them
    from there)."""
    wanted = {name for name in names if isinstance(name, str) and name}
    sessions = backend.sessions

    def named(sid: str, record: SessionRecord) -> bool:
        tmux_name = str(record.tmux_session or "")
        return bool(sid in wanted or tmux_name in wanted or tmux_name.rpartition("/")[2] in wanted
                    or record.tmux_session_id in wanted
                    or (record.parent and wanted & set(sessions.lineage(sid, now=now))))
    chosen = {sid: record for sid, record in sessions.all(now=now).items() if named(sid, record)}
    return _Reach(backend, source, reason, home=home, tmux=tmux, now=now).each(chosen)


def interrupt_fleet(*, backend: Backend, source: str, reason: str = "", home=None, tmux=None,
                    now: float | None = None) -> InterruptReport:
    """Interrupt every agent session with a call in flight: not those whose
    hooks said the session ended, its turn ended or it waits for input (an
    Escape there would land in a person's typing, for nothing)."""
    from leash.core.state.sessions import STATUS_ENDED, STATUS_IDLE, STATUS_WAITING_INPUT

    every = backend.sessions.all(now=now)
    quiet = {STATUS_ENDED, STATUS_IDLE, STATUS_WAITING_INPUT}
    report = _Reach(backend, source, reason, home=home, tmux=tmux, now=now).each(
        {sid: record for sid, record in every.items() if record.status not in quiet})
    report.quiet = sorted(sid for sid, record in every.items() if record.status in quiet)
    return report


class _Reach:
    """One interrupt over some sessions: each target is reached once."""

    def __init__(self, backend: Backend, source: str, reason: str, *, home, tmux, now: float | None,
                 wait: Callable[[float], None] = time.sleep):
        self.backend, self.source, self.reason, self.now, self.wait = backend, source, reason, now, wait
        self.home = home if home is not None else backend.home
        self.host = backend.sessions.host or ""
        self._tmux: dict[str | None, object] = {None: tmux} if tmux is not None else {}
        self.reached: set[str] = set()

    def each(self, chosen: dict[str, SessionRecord]) -> InterruptReport:
        report = InterruptReport()
        newest_first = sorted(chosen.items(), key=lambda item: str(item[1].last_seen or ""), reverse=True)
        for sid, record in newest_first:
            try:
                line = self.one(sid, record)
            except Unreachable as exc:
                report.refused.append(f"{sid}: {exc}")
                continue
            if line is not None:
                report.done.append(line)
        return report

    def one(self, sid: str, record: SessionRecord) -> LogLine | None:
        """The ack-log line of this session's interrupt; None when its target
        was reached already (two sessions in one pane)."""
        method, target, process = self.choose(record)
        if target in self.reached:
            return None
        cli = session_cli(record, process)
        if method == METHOD_ESCAPE:
            self.press(process, target, cli)
        else:
            self.signal(process or {}, cli)
        self.reached.add(target)
        tool, summary = running_call(record, process)
        extra = {"method": method, "target": target, "tool": tool, "input": summary}
        if record.status_since and record.status == "working":
            extra["running_since"] = record.status_since
        return self.backend.acklog.append("interrupt", source=self.source, session_id=sid, reason=self.reason,
                                          now=self.now, **extra)

    def choose(self, record: SessionRecord) -> tuple[str, str, dict | None]:
        """(method, target, process): how this session takes an interrupt."""
        host = record.host or ""
        if self.host and host and host != self.host:
            raise Unreachable(f"it runs on host {host}: interrupt it from there")
        process, argv, gone = live_process(record)
        cli = session_cli(record, process)
        pane = self.local(record.tmux_pane or "")
        if pane and not (argv is not None and is_headless(argv, BY_CLI[cli])):
            if gone:  # the pane may hold another agent now; this one is not there to interrupt
                raise Unreachable(gone)
            self.check_pane(pane, record, process if argv is not None else None, cli)
            return METHOD_ESCAPE, pane, process
        if argv is None or process is None:
            raise Unreachable(gone or f"no tmux pane shows it and no {name_of(cli)} process of it is known")
        if process.get("shared_server"):
            raise Unreachable(f"its {name_of(cli)} calls run in a server shared by its terminal UIs (pid "
                              f"{process['pid']}), with no tmux pane leash knows: interrupt it in its terminal, "
                              "and start it with --no-daemon for leash to reach it")
        if not is_headless(argv, BY_CLI[cli]):
            raise Unreachable(f"its {name_of(cli)} (pid {process['pid']}) is a terminal UI outside any tmux pane "
                              f"leash knows: press {INTERRUPT_KEYS[cli]} in its terminal")
        return METHOD_SIGINT, f"pid {process['pid']}", process

    def local(self, value: str) -> str:
        """A pane id as this host's tmux knows it ("" for another host's)."""
        if self.host and "/" in value:
            host, _, value = value.partition("/")
            return value if host == self.host else ""
        return value

    # ------------------------------------------------------------ panes
    def tmux(self, process: dict | None):
        """The tmux server of the agent's own ``$TMUX`` when its hook recorded
        one, else the home's (``[tmux] socket``, ``LEASH_TMUX_SOCKET``)."""
        socket = process.get("tmux_socket") if process else None
        socket = socket if isinstance(socket, str) and socket and os.path.exists(socket) else None
        if None in self._tmux:
            return self._tmux[None]
        if socket not in self._tmux:
            try:
                from leash.core.base.tmux import Tmux

                self._tmux[socket] = Tmux(socket, home=self.home)
            except Exception as exc:  # no tmux, no libtmux, a bad config: this path is closed
                raise Unreachable(f"tmux cannot be asked ({exc.__class__.__name__}: {exc})") from None
        return self._tmux[socket]

    def check_pane(self, pane: str, record: SessionRecord, process: dict | None, cli: str) -> None:
        """Unreachable unless tmux pane ``pane`` shows this session's agent CLI ``cli``."""
        found = self.pane_of(pane, process)
        if found is None:
            raise Unreachable(f"its tmux pane {pane} is gone")
        session_id, pane_pid, command = found
        if process is not None:
            if not is_within(process["pid"], pane_pid):
                raise Unreachable(f"tmux pane {pane} does not run its {name_of(cli)} (pid {process['pid']})")
            return
        bound = self.local(record.tmux_session_id or "")
        if bound and bound != session_id:
            raise Unreachable(f"tmux pane {pane} belongs to another tmux session now")
        if command in BY_CLI[cli].programs:
            return
        if command in JS_RUNTIMES:
            from leash.core.base.agentproc import agent_below

            if agent_below(pane_pid, cli):
                return
        raise Unreachable(f"tmux pane {pane} runs {command or 'nothing'!r}, not {name_of(cli)}")

    def pane_of(self, pane: str, process: dict | None) -> tuple[str, int, str] | None:
        """(tmux session id, first pid, current command) of ``pane``; None when gone."""
        from leash.core.base.tmux import TmuxError

        try:
            listed = self.tmux(process).list_sessions()
        except TmuxError as exc:
            raise Unreachable(f"tmux cannot be asked ({exc})") from None
        for session in listed:
            for found in session["panes"]:
                if found["id"] == pane:
                    return session["id"], found["pid"], found["command"]
        return None

    def press(self, process: dict | None, pane: str, cli: str) -> None:
        """The CLI's interrupt key in ``pane``, and what it types after it."""
        from leash.core.base.tmux import TmuxError
        from leash.core.warrants.speech import ENTER_PAUSE_SECONDS

        key, after = INTERRUPT_KEYS[cli], AFTER_THE_KEY.get(cli)
        try:
            tmux = self.tmux(process)
            tmux.press(pane, key)
            if after:
                self.wait(KEY_SETTLE_SECONDS)
                tmux.type_text(pane, after)
                self.wait(ENTER_PAUSE_SECONDS)  # typed with its Enter in one burst, a TUI takes a paste
                tmux.send_keys(pane, "Enter")
        except TmuxError as exc:
            raise Unreachable(f"tmux could not press {key} in {pane} ({exc})") from None

    def signal(self, process: dict, cli: str) -> None:
        """SIGINT to the agent; the tool sessions it would leave behind ended after."""
        from signal import SIGINT

        from leash.core.base.agentproc import send_signal
        from leash.core.base.agenttools import end_sessions, tool_sessions

        leaves_tools = not BY_CLI[cli].ends_its_tools and recorded(process) is not None
        tools = tool_sessions(process["pid"], process["uid"]) if leaves_tools else []
        try:
            send_signal(process, SIGINT)
        except NotTheAgent as exc:
            raise Unreachable(str(exc)) from None
        end_sessions(tools, process["uid"] if tools else 0)


def session_cli(record: SessionRecord, process: dict | None) -> str:
    """The agent CLI of a session: its recorded process's, else the one its
    hooks' payloads were read as (``cli``), else Claude Code."""
    if process is not None and recorded(process) is not None:
        return recorded_cli(process)
    cli = record.cli
    return cli if isinstance(cli, str) and cli in BY_CLI else CLAUDE.cli


def live_process(record: SessionRecord) -> tuple[dict | None, list[str] | None, str]:
    """(the recorded process, its command line when it is still that agent
    CLI, why not when it is not): ``(None, None, "")`` when none is recorded."""
    found = record.agent_process
    if not isinstance(found, dict) or recorded(found) is None:
        return None, None, ""
    try:
        return found, verify(found), ""
    except NotTheAgent as exc:
        return found, None, str(exc)


# ------------------------------------------------------------------ what was running
def running_call(record: SessionRecord, process: dict | None) -> tuple[str, str]:
    """(tool, input summary) of the call in flight: the newest call the
    session's transcript shows unanswered, else the record's last tool with
    no summary. The summary is masked and one printable line."""
    tool = str(record.last_tool or "")
    pending = pending_call(str(record.transcript_path or ""), process)
    if pending is None:
        return tool, ""
    name, tool_input = pending
    return name or tool, summary_of(name, tool_input)


def summary_of(tool: str, tool_input: object) -> str:
    from leash.core.base.secrets import mask
    from leash.core.base.text import printable
    from leash.core.policy.toolcall import edited_files, shell_command

    command = shell_command(tool, tool_input)
    if command is not None:
        said = command
    elif edited_files(tool, tool_input):
        said = ", ".join(edited_files(tool, tool_input))
    else:
        import json

        said = json.dumps(tool_input, ensure_ascii=False, sort_keys=True)[:INPUT_SUMMARY_CHARS * 4]
    return printable(mask(said), limit=INPUT_SUMMARY_CHARS)


def pending_call(path: str, process: dict | None) -> tuple[str, object] | None:
    """(tool name, input) of the newest ``tool_use`` in the transcript's tail
    with no ``tool_result`` after it; None when there is none or the file is
    not a regular file of the session's user (a record's path is the agent's
    word: nothing else is opened)."""
    if not path:
        return None
    text = _tail(path, process["uid"] if process is not None else os.getuid())
    pending: dict[str, tuple[str, object]] = {}
    for line in text.splitlines():
        for kind, block in _blocks(line):
            if kind == "tool_use" and isinstance(block.get("id"), str):
                pending[block["id"]] = (str(block.get("name") or ""), block.get("input"))
            elif kind == "tool_result":
                pending.pop(block.get("tool_use_id"), None)
    return list(pending.values())[-1] if pending else None


def _tail(path: str, uid: int) -> str:
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, ValueError):
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != uid:
            return ""
        start = max(0, info.st_size - TRANSCRIPT_TAIL_BYTES)
        data = os.pread(fd, TRANSCRIPT_TAIL_BYTES, start)
    except OSError:
        return ""
    finally:
        os.close(fd)
    if start:
        data = data.partition(b"\n")[2]  # a line cut by the tail is not read
    return data.decode("utf-8", "replace")


def _blocks(line: str):
    """(type, block) of each content block of one transcript line."""
    import json

    if '"tool_' not in line:
        return
    try:
        entry = json.loads(line)
    except ValueError:
        return
    message = entry.get("message") if isinstance(entry, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and isinstance(block.get("type"), str):
            yield block["type"], block
