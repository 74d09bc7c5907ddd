"""``leash stop SESSION --interrupt`` against the real Gemini CLI, wired by the
real ``leash install --agent gemini --project``, against the loopback stand-in
of Gemini's API, on a LEASH_HOME of its own (``agent_tui`` has the shared lab).

The scripted model calls the shell tool with ``sleep 60; echo done > marker``.
Once that call is in flight (BeforeTool has recorded the session working on
it, and its ``sleep 60`` runs), the operator's stop with ``--interrupt``
must cancel it long before the minute is up, the marker never written, and
the ack log must say how (PROCESS_FACTS.md has what the CLI takes):

* the TUI, typed into a pane of a private tmux server: Escape pressed in that
  pane (the tool is killed by Gemini, ~0.2 s), and the TUI runs on;
* headless ``gemini -p``: SIGINT to the relaunched child node (the process
  the hook recorded), which ends the run; Gemini leaves the shell command of
  the call running in its own session, so leash must end that too: no
  process of the call is left.

Both times the session's ``agent_process`` is Gemini's child node (the one
with ``GEMINI_CLI_NO_RELAUNCH=true``, below the node that was started), and
the stop stays filed.

The CLI version is ``LEASH_E2E_GEMINI_VERSION`` (a number or ``latest``), else
the pinned one; every test is skipped, with the reason, when it cannot be
installed or tmux is missing.
"""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import pytest

from ...support.e2e.agent_tui import (
    LONG_CALL,
    PROMPT,
    InFlight,
    Lab,
    Leash,
    assert_interrupted,
    environ_of,
    prompt_long_call,
    require_tmux,
    tool_processes,
)
from ...support.e2e.gemini_cli import (
    HEADLESS_ARGS,
    gemini_env,
    prepare_home,
)
from ...support.e2e.gemini_standin import GeminiStandin, shell, text

pytestmark = pytest.mark.timeout(600)  # the first test may install the CLI

READY = "Type your message"  # the TUI's input box


class Rig:
    """A project wired by ``leash install --agent gemini --project``, a private
    HOME for Gemini, the stand-in, the lab (tmux server, processes)."""

    def __init__(self, gemini: Path, base: Path, home: Path, lab: Lab, api: GeminiStandin):
        self.gemini, self.base, self.lab, self.api = gemini, base, lab, api
        self.gemini_home, self.project = base / "gemini-home", base / "project"
        (self.gemini_home / ".gemini").mkdir(parents=True)
        self.project.mkdir()
        self.leash = Leash(home, lab.socket, HOME=str(self.gemini_home))
        done = self.leash("install", "--agent", "gemini", "--project", str(self.project))
        assert str(self.project / ".gemini" / "settings.json") in done.stdout, done.stdout
        prepare_home(self.gemini_home, self.project)

    def env(self) -> dict[str, str]:
        env = gemini_env(self.gemini_home, self.api.url)
        env["PATH"] = f"{self.gemini.parent}:{env['PATH']}"
        return env


@pytest.fixture
def rig(gemini, home, tmp_path) -> Iterator[Rig]:
    require_tmux()
    with GeminiStandin([shell(LONG_CALL, "wait a minute"), text("done")]) as api:
        with Lab(tmp_path) as lab:
            yield Rig(gemini, tmp_path, home, lab, api)


def assert_gemini_child(call: InFlight, parent_pid: int, *, headless: bool) -> dict:
    """The recorded agent is Gemini's relaunched child node, just below ``parent_pid``."""
    agent, entry = call.agent("gemini", "node", headless=headless)
    assert entry["ppid"] == parent_pid, (agent, entry, parent_pid)
    assert environ_of(agent["pid"]).get("GEMINI_CLI_NO_RELAUNCH") == "true", agent
    return agent


# ------------------------------------------------------------------ 1. the TUI in a tmux pane
def test_interrupt_presses_escape_in_the_gemini_tui(rig):
    lab = rig.lab
    pane = lab.new_pane("gemini", rig.project, rig.env())
    lab.type_line(pane, "gemini --approval-mode yolo")
    lab.wait_screen(pane, READY)
    call = prompt_long_call(lab, pane, rig.leash, rig.project, "gemini", asked=lambda: bool(rig.api.conversation()))
    record = call.record
    assert record.get("tmux_pane") == pane, record
    parent = next(entry for entry in lab.below(pane) if entry["ppid"] == lab.pane_pid(pane))  # the node typed
    agent = assert_gemini_child(call, parent["pid"], headless=False)
    running = tool_processes(rig.project)

    interrupted = rig.leash.interrupt(call.session_id)

    assert_interrupted(rig.leash, rig.project, call.session_id, interrupted, running, agent, method="escape",
                       target=pane, context=lambda: lab.screen(pane))  # the TUI runs on


# ------------------------------------------------------------------ 2. headless gemini -p
def test_interrupt_sigints_headless_gemini_and_ends_its_tool(rig):
    session_id = str(uuid.uuid4())
    run = rig.lab.start([str(rig.gemini), "-p", PROMPT, *HEADLESS_ARGS,
                         "--session-id", session_id], cwd=rig.project, env=rig.env(), name="gemini")
    call = rig.leash.in_flight(rig.project, "gemini", session_id=session_id,
                               context=lambda: "\n".join(rig.lab.output_of("gemini")))
    agent = assert_gemini_child(call, run.pid, headless=True)
    running = tool_processes(rig.project)
    assert any(entry["argv"] != ["sleep", "60"] for entry in running), running  # the call's shell, too

    interrupted = rig.leash.interrupt(session_id)

    # no process of the call is left: leash ends the shell command Gemini leaves running
    assert_interrupted(rig.leash, rig.project, session_id, interrupted, running, agent, method="sigint",
                       target=f"pid {agent['pid']}", run=run, context=lambda: rig.lab.output_of("gemini"))
