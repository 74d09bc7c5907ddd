"""The agent CLI process behind a hook call (Claude Code, Gemini CLI, Codex
CLI), and a signal that reaches that process and no other.

Each CLI runs a hook command through a shell
(``sh -c "PYTHON -S -P hookentry.py --deadline 25 hook pre-tool-use || exit 2"``),
so its process is the nearest ancestor of the hook's process once the
launchers on the way (shells, ``env``, the ``timeout`` of an older install...)
are passed; which
process is which CLI is ``core.base.agentprograms``'s reading of its name and
command line. ``agent_process(hook_pid, uid=)`` walks ``/proc/<pid>/stat``
(its parent, field 4) up from the hook and returns ``{"pid", "started",
"uid", "headless", "cli"}``: ``started`` is field 22 of the stat (clock ticks
since boot), which with the pid names one process for the whole life of the
machine, so a pid the kernel hands to another process later is never taken
for it; ``headless`` says whether it runs with no terminal UI (``claude -p``,
``gemini -p``, ``codex exec``). The walk stops at the first process that is
neither a launcher nor an agent CLI: a hook judged inside some other program
(a test, a script run from a terminal inside an agent) has no agent of its
own, and none is recorded. An agent CLI found is kept by its pid, start
time, name and user (``_AGENT_FOUND``): the next hook it runs costs the
walk's ``stat`` reads only, not its command line and owner again.

``hook_agent(env, known)`` is what a PreToolUse hook records (with the tmux
server of its ``$TMUX`` as ``tmux_socket``); while the process already
recorded still runs, it costs one read instead of a walk.

``verify(process)`` says whether a recorded process is still that agent CLI:
the same pid and start time, owned by the user recorded with it (the owner of
``/proc/<pid>``), and still that CLI (a record from before the CLI was
recorded is Claude Code's). ``send_signal(process, signum)``
verifies through a pidfd taken first (Linux >= 5.3), so the signal goes to the
process that was checked even if its pid is recycled in between.

Failure: whatever cannot be read counts as "not known" (``agent_process``
returns None) or as a refusal: ``NotTheAgent`` with one line saying why
(ended, another process now, another user's, no longer that CLI, not
permitted). Nothing here raises anything else for a process that has gone.

This module is on the hook path: it imports ``os`` and ``core.base.agentprograms`` only.
"""
from __future__ import annotations

import os

from leash.core.base.agentprograms import BY_CLI, CLAUDE, is_headless, is_shared_server, name_of, program_of

PROC = "/proc"
# Hook -> sh -> the agent CLI is two steps (three under an older install's
# timeout); a few more launchers (env, nice, a wrapper shell) fit, a long
# unrelated chain does not.
MAX_ANCESTRY = 8
# Programs that only start another program: the walk from a hook passes them.
LAUNCHERS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "mksh", "fish", "busybox", "timeout", "env",
                       "nice", "ionice", "stdbuf", "setsid", "nohup", "flock", "chrt", "taskset", "time"})
STAT_BYTES = 1024  # a stat line is a few hundred bytes
# Processes (pid, start time) that asked and were run by no agent CLI: one
# that asks again (leashd's caller over a kept connection, a program using the
# API in-process) is not walked again. A new hook process is a new entry.
NO_AGENT_KEPT = 1024
_NO_AGENT: set[tuple[str, int, int]] = set()
# Agent CLI processes found by a walk, by (pid, start time, name, uid): a
# hook's parent is the same agent on every call, so its command line and owner
# are read once, not on every call. Only what was found is kept: a process
# that was no agent may exec one under the same pid and start time, and must
# then be walked again. One found that execs into another program changes
# its name (``comm``) and is walked again too; one that keeps its name but
# drops being the CLI stays known as the agent, which only holds its
# descendants to an agent's rules (the safe side).
AGENTS_KEPT = 1024
_AGENT_FOUND: dict[tuple[int, int, str, int], dict] = {}
CMDLINE_BYTES = 32768  # enough for a long ``-p`` prompt and the options after it
MAX_DEPTH = 64  # no process tree is deeper; a loop in a racing /proc read ends here
MAX_TREE = 4096  # processes looked at below one pane
# stat fields after the ``(comm)``: state is field 3, so field N is at N - 3.
_PPID_AT = 4 - 3
_SESSION_AT = 6 - 3
_STARTTIME_AT = 22 - 3


class NotTheAgent(Exception):
    """A recorded process that must not be signalled; ``str()`` is one line."""


def _read(path: str, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of a /proc file in one read (None when gone):
    a hook walks several on every call, so no buffered file objects."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def stat_of(pid: int) -> tuple[str, int, int] | None:
    """(comm, parent pid, start time in clock ticks) of ``pid``; None when gone."""
    found = _stat(pid)
    return (found[0], found[1][_PPID_AT], found[1][_STARTTIME_AT]) if found is not None else None


def session_of(pid: int) -> int | None:
    """The session id of ``pid`` (stat field 6); None when gone."""
    found = _stat(pid)
    return found[1][_SESSION_AT] if found is not None else None


def _stat(pid: int) -> tuple[str, dict[int, int]] | None:
    """(comm, the numeric fields read: parent, session, start time) of ``pid``."""
    data = _read(f"{PROC}/{pid}/stat", STAT_BYTES)
    if data is None:
        return None
    opened, closed = data.find(b"("), data.rfind(b")")
    fields = data[closed + 2:].split(None, _STARTTIME_AT + 1)  # what follows start time is not read
    if opened < 0 or closed < opened or len(fields) <= _STARTTIME_AT:
        return None
    try:
        numbers = {at: int(fields[at]) for at in (_PPID_AT, _SESSION_AT, _STARTTIME_AT)}
    except ValueError:
        return None
    return data[opened + 1:closed].decode("utf-8", "replace"), numbers


def argv_of(pid: int) -> list[str]:
    """The process's command line, its first ``CMDLINE_BYTES`` ([] when gone
    or a kernel thread)."""
    data = _read(f"{PROC}/{pid}/cmdline", CMDLINE_BYTES)
    return [word.decode("utf-8", "replace") for word in data.split(b"\0") if word] if data else []


def owner_of(pid: int) -> int | None:
    """The user the process belongs to: the owner of ``/proc/<pid>`` (its
    effective uid; root for a process that is not dumpable); None when gone."""
    try:
        return os.stat(f"{PROC}/{pid}").st_uid
    except OSError:
        return None


def agent_process(hook_pid: int, *, uid: int) -> dict | None:
    """The agent CLI process that ran the hook process ``hook_pid`` on
    behalf of user ``uid``, as ``{"pid", "started", "uid", "headless", "cli"}``;
    None when the hook was not run by an agent CLI of that user."""
    facts = stat_of(hook_pid)
    for _ in range(MAX_ANCESTRY):
        if facts is None or facts[1] <= 1:
            return None
        pid = facts[1]
        facts = stat_of(pid)
        if facts is None:
            return None
        comm, _, started = facts
        if comm in LAUNCHERS:
            continue
        key = (pid, started, comm, uid)
        found = _AGENT_FOUND.get(key)
        if found is not None:
            return dict(found)
        argv = argv_of(pid)
        program = program_of(comm, argv)
        if program is None or owner_of(pid) != uid:
            return None
        found = {"pid": pid, "started": started, "uid": uid, "headless": is_headless(argv, program),
                 "cli": program.cli, "shared_server": is_shared_server(argv, program)}
        if len(_AGENT_FOUND) >= AGENTS_KEPT:
            _AGENT_FOUND.clear()
        _AGENT_FOUND[key] = found
        return dict(found)
    return None


def hook_agent(env, known: object = None) -> dict | None:
    """The agent CLI process behind this hook call, with the tmux server its
    ``$TMUX`` names (``tmux_socket``). The hook process is leashd's peer
    (``LEASH_HOOK_PID``, which leashd sets from SO_PEERCRED over whatever the
    client sent) or, in-process, this process; the user is that process's.

    ``known``: the process the session's record names. While that process
    runs (same pid, same start time) it is the answer and nothing is walked:
    one read instead of a walk on every call. (A session id resumed in a
    second agent while the first still runs keeps the first's.)"""
    if isinstance(known, dict) and running(known):
        return known
    from leash.core.base.wellknown import HOOK_PID_ENV

    given = env.get(HOOK_PID_ENV, "") if env is not None else ""
    hook_pid = int(given) if given.isdigit() else os.getpid()
    facts = stat_of(hook_pid)
    caller = (PROC, hook_pid, facts[2]) if facts is not None else None
    if caller is not None and caller in _NO_AGENT:
        return None  # the same process asked before, and no agent CLI ran it
    uid = owner_of(hook_pid)
    process = agent_process(hook_pid, uid=uid) if uid is not None else None
    if process is None and caller is not None:
        if len(_NO_AGENT) >= NO_AGENT_KEPT:
            _NO_AGENT.clear()
        _NO_AGENT.add(caller)
    tmux = env.get("TMUX", "") if env is not None else ""
    if process is not None and tmux and not process.get("shared_server"):
        process["tmux_socket"] = tmux.split(",")[0]
    return process


def recorded(process: object) -> tuple[int, int, int] | None:
    """(pid, start time, uid) of a recorded process; None when it is not one."""
    if not isinstance(process, dict):
        return None
    values = [process.get(key) for key in ("pid", "started", "uid")]
    numbers = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    if len(numbers) != len(values) or numbers[0] <= 1:
        return None
    return numbers[0], numbers[1], numbers[2]


def running(process: object) -> bool:
    """Whether a recorded process still runs: its pid has its start time."""
    known = recorded(process)
    facts = stat_of(known[0]) if known is not None else None
    return facts is not None and known is not None and facts[2] == known[1]


def verify(process: dict) -> list[str]:
    """The command line of the recorded ``process`` when it is still that
    agent CLI; ``NotTheAgent`` (one line) otherwise."""
    known = recorded(process)
    if known is None:
        raise NotTheAgent("no agent CLI process is recorded for it")
    pid, started, uid = known
    cli = recorded_cli(process)
    facts = stat_of(pid)
    if facts is None:
        raise NotTheAgent(f"its {name_of(cli)} (pid {pid}) has ended")
    if facts[2] != started:
        raise NotTheAgent(f"pid {pid} is another process now (its start time changed): not signalled")
    owner = owner_of(pid)
    if owner != uid:
        raise NotTheAgent(f"pid {pid} belongs to uid {owner}, not to the session's user (uid {uid}): not signalled")
    argv = argv_of(pid)
    program = program_of(facts[0], argv)
    if program is None or program.cli != cli:
        raise NotTheAgent(f"pid {pid} no longer runs {name_of(cli)}: not signalled")
    return argv


def recorded_cli(process: dict) -> str:
    """The CLI a recorded process was (Claude Code's when it predates the field)."""
    cli = process.get("cli")
    return cli if isinstance(cli, str) and cli in BY_CLI else CLAUDE.cli


def send_signal(process: dict, signum: int) -> int:
    """Send ``signum`` to the recorded ``process`` once ``verify`` holds for
    it; returns its pid. ``NotTheAgent`` when it does not hold or the kernel
    refuses."""
    import signal

    known = recorded(process)
    if known is None:
        raise NotTheAgent("no agent CLI process is recorded for it")
    pid = known[0]
    handle = _pidfd(pid, recorded_cli(process))
    try:
        verify(process)
        if handle is not None:
            signal.pidfd_send_signal(handle, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        raise NotTheAgent(f"its {name_of(recorded_cli(process))} (pid {pid}) has ended") from None
    except PermissionError:
        raise NotTheAgent(f"not permitted to signal pid {pid}: run this as its user or as root") from None
    finally:
        if handle is not None:
            os.close(handle)
    return pid


def _pidfd(pid: int, cli: str) -> int | None:
    """A pidfd for ``pid`` (None where the kernel or Python has none: the
    checks and the signal are then a moment apart)."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise NotTheAgent(f"its {name_of(cli)} (pid {pid}) has ended") from None
    except (AttributeError, OSError):
        return None


def is_within(pid: int, ancestor: int) -> bool:
    """Whether ``pid`` is ``ancestor`` or runs below it."""
    for _ in range(MAX_DEPTH):
        if pid == ancestor:
            return True
        facts = stat_of(pid)
        if facts is None or facts[1] <= 0:
            return False
        pid = facts[1]
    return False


def children_of_all() -> dict[int, list[int]]:
    """Every process's children, by parent pid (one pass over ``/proc``)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir(PROC):
        if name.isdigit():
            facts = stat_of(int(name))
            if facts is not None:
                children.setdefault(facts[1], []).append(int(name))
    return children


def agent_below(pid: int, cli: str) -> bool:
    """Whether a process of agent CLI ``cli`` runs at or below ``pid`` (a tmux
    pane's first process, when no hook has named its agent process yet)."""
    children = children_of_all()
    todo, seen = [pid], set[int]()
    while todo and len(seen) < MAX_TREE:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        facts = stat_of(current)
        program = program_of(facts[0], argv_of(current)) if facts is not None else None
        if program is not None and program.cli == cli:
            return True
        todo.extend(children.get(current, []))
    return False
