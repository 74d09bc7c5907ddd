"""Stand-ins for Claude Code in the interrupt tests and ``bench/interrupt.py``:
real processes that run leash's hook the way Claude Code runs it, then hold a
long call in flight.

* ``start_headless``: a ``claude -p`` stand-in. It runs the PreToolUse hook
  through ``sh -c "timeout ... hookentry.py hook pre-tool-use || exit 2"``
  (the command ``leash install`` writes), starts ``sleep 60`` as its "tool",
  and on SIGINT kills that tool and records the signal, as Claude Code does.
* ``start_in_pane``: an interactive one in a tmux pane: it runs the same
  hook, then reads its terminal in raw mode and records every byte it gets
  (and ends on Escape when asked to).

Both are Python run through a link named ``claude`` (so the process's name is
``claude``, as the real binary's is); what makes them Claude Code to leash is
that name, and what ties them to their session is the process tree their
hook ran in. Each writes ``ready`` once its call is in flight.

``cli="gemini"`` or ``"codex"`` makes them stand for those CLIs as
tests/e2e/agents/PROCESS_FACTS.md found them: Gemini CLI is a JavaScript
runtime (a link named ``node``) running ``node_modules/.bin/gemini`` (``-p``
headless), and on SIGINT it leaves its tool running in a session of its own
(the tool's pid in ``tool_pid``); Codex CLI is a program named ``codex``
(``exec`` headless; ``app-server`` as the background server of its TUIs).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .checkout import ROOT  # bench/interrupt.py runs these stand-ins too

READY_SECONDS = 20
TOOL_COMMAND = "sleep 60; echo done > marker"

_COMMON = r'''
import json, os, signal, subprocess, sys, time
config = json.load(open(sys.argv[-1]))
def note(name, text):
    with open(os.path.join(config["dir"], name), "a") as out:
        out.write(text)
def run_hook():
    env = dict(os.environ, LEASH_HOME=config["home"])
    for name in config.get("drop_env", []):
        env.pop(name, None)
    done = subprocess.run(["sh", "-c", config["hook"]], input=json.dumps(config["payload"]).encode(),
                          capture_output=True, env=env, timeout=60)
    note("hook", done.stdout.decode() + done.stderr.decode() + f"exit {done.returncode}\n")
'''

HEADLESS = _COMMON + r'''
run_hook()
if config["leaves_tool"]:  # Gemini CLI's way: the tool leads a session of its own, left running on SIGINT
    tool = subprocess.Popen(["sleep", "60"], start_new_session=True)
    note("tool_pid", str(tool.pid))
else:
    tool = subprocess.Popen(["sleep", "60"])  # in the stand-in's own group: ``stop`` ends both
def interrupted(signum, frame):
    if not config["leaves_tool"]:
        tool.kill()
        tool.wait()
    note("signals", "SIGINT\n")
    sys.exit(130)
signal.signal(signal.SIGINT, interrupted)
note("ready", "ready\n")
deadline = time.time() + config["live_seconds"]
while time.time() < deadline:
    time.sleep(0.05)
tool.kill()
'''

IN_PANE = _COMMON + r'''
import select, termios, tty
run_hook()
def interrupted(signum, frame):
    note("signals", "SIGINT\n")
    sys.exit(130)
signal.signal(signal.SIGINT, interrupted)
saved = termios.tcgetattr(0)
tty.setraw(0)
try:
    note("ready", "ready\n")
    deadline = time.time() + config["live_seconds"]
    while time.time() < deadline:
        readable, _, _ = select.select([0], [], [], 0.05)
        if readable:
            got = os.read(0, 64)
            with open(os.path.join(config["dir"], "keys"), "ab") as out:
                out.write(got)
            if config["exit_on_escape"] and got == b"\x1b":
                break
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
'''


def claude_link(where: Path) -> Path:
    """A link named ``claude`` to this interpreter (the process's name is then ``claude``)."""
    link = where / "bin" / "claude"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(os.path.realpath(sys.executable))
    return link


# How each CLI's stand-in is started: (link name, the program's file name or
# None for a script of its own, the arguments before the config that make it headless).
STAND_INS = {"claude": ("claude", None, ["-p", "do the long thing"]),
             "gemini": ("node", "node_modules/.bin/gemini", ["-p", "do the long thing"]),
             "codex": ("codex", None, ["exec", "do the long thing"])}


def agent_argv(where: Path, cli: str, text: str, *, headless: bool, extra: tuple[str, ...] = ()) -> list[str]:
    """The command line of ``cli``'s stand-in running ``text`` (a program)."""
    link_name, script, headless_args = STAND_INS[cli]
    link = claude_link(where)
    if link_name != "claude":
        link = link.with_name(link_name)
        if not link.exists():
            link.symlink_to(os.path.realpath(sys.executable))
    program = where / (script or ("headless.py" if headless else "in_pane.py"))
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(text)
    return [str(link), str(program), *extra, *(headless_args if headless else [])]


def end_tool(where: Path) -> None:
    """End the tool a stand-in left running in a session of its own, if it still runs."""
    pid = read(where, "tool_pid")
    if pid:
        try:
            os.killpg(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def hook_command() -> str:
    """What ``leash install`` wires for PreToolUse, run from this checkout."""
    from leash.core.hook.install import VERBS
    from leash.core.hook.install import hook_command as wired

    return wired([sys.executable, "-P", str(ROOT / "core" / "hook" / "hookentry.py")], VERBS["pre-tool-use"])


def payload(session_id: str, where: Path, command: str = TOOL_COMMAND) -> dict:
    return {"session_id": session_id, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "a long call"}, "cwd": str(where),
            "transcript_path": str(where / "transcript.jsonl")}


def write_transcript(where: Path, command: str = TOOL_COMMAND) -> None:
    """A transcript whose last call has no result yet: the call in flight."""
    lines = [{"type": "user", "message": {"role": "user", "content": "go"}},
             {"type": "assistant", "message": {"role": "assistant", "content": [
                 {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}},
             {"type": "user", "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"}]}},
             {"type": "assistant", "message": {"role": "assistant", "content": [
                 {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": command}}]}}]
    (where / "transcript.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _config(where: Path, home: Path, session_id: str, *, command: str, live_seconds: float,
            exit_on_escape: bool = False, drop_env: tuple[str, ...] = (), leaves_tool: bool = False) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    config = where / "config.json"
    config.write_text(json.dumps({"dir": str(where), "home": str(home), "hook": hook_command(),
                                  "payload": payload(session_id, where, command), "live_seconds": live_seconds,
                                  "exit_on_escape": exit_on_escape, "drop_env": list(drop_env),
                                  "leaves_tool": leaves_tool}))
    return config


def start_headless(where: Path, home: Path, session_id: str, *, command: str = TOOL_COMMAND,
                   live_seconds: float = 30, env: dict | None = None, cli: str = "claude",
                   extra: tuple[str, ...] = ()) -> subprocess.Popen:
    """The ``claude -p`` stand-in (or ``cli``'s headless run; ``extra``
    arguments before its own), started; the caller waits with ``wait_ready``
    and ends it (``stop``, and ``end_tool``)."""
    config = _config(where, home, session_id, command=command, live_seconds=live_seconds,
                     leaves_tool=cli == "gemini")
    argv = agent_argv(where, cli, HEADLESS, headless=not extra, extra=extra)
    return subprocess.Popen([*argv, str(config)], cwd=where, env=dict(os.environ, **(env or {})),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def start_in_pane(socket: Path, name: str, where: Path, home: Path, session_id: str, *,
                  command: str = TOOL_COMMAND, live_seconds: float = 30, exit_on_escape: bool = False,
                  program_name: str = "claude", cli: str = "claude") -> None:
    """The interactive stand-in in a new tmux session ``name`` on ``socket``
    (run as ``program_name``: ``claude``, or another name to stand for a pane
    that runs something else; or as ``cli``'s terminal UI)."""
    config = _config(where, home, session_id, command=command, live_seconds=live_seconds,
                     exit_on_escape=exit_on_escape)
    if cli != "claude":
        argv = agent_argv(where, cli, IN_PANE, headless=False)
    else:
        program = where / "in_pane.py"
        program.write_text(IN_PANE)
        link = claude_link(where)
        if program_name != "claude":
            link = link.with_name(program_name)
            if not link.exists():
                link.symlink_to(os.path.realpath(sys.executable))
        argv = [str(link), str(program)]
    subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "80",
                    "-y", "20", "-e", f"LEASH_HOME={home}", " ".join([*argv, str(config)])], check=True,
                   env=dict(os.environ, LEASH_HOME=str(home)))


def wait_ready(where: Path, seconds: float = READY_SECONDS) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if (where / "ready").exists():
            return
        time.sleep(0.02)
    hook = (where / "hook").read_text() if (where / "hook").exists() else "(the hook did not run)"
    raise AssertionError(f"the stand-in never got its call in flight: {hook}")


def read(where: Path, name: str) -> str:
    path = where / name
    return path.read_text() if path.exists() else ""


def stop(proc: subprocess.Popen) -> None:
    """End a process this test started in a session of its own, with whatever
    it started (and reap it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=10)
