"""``leash stop SESSION --interrupt`` against the real Codex CLI (npm's
``codex``, as a person runs it), wired by the real ``leash install --agent
codex --user`` (HOME and CODEX_HOME in the test's folder), against the loopback
Responses stand-in, on a LEASH_HOME of its own (``agent_tui`` has the shared lab).

The scripted model calls the shell tool with ``sleep 60; echo done > marker``.
Once that call is in flight (PreToolUse has recorded the session working on
it, and its ``sleep 60`` runs), the operator's stop with ``--interrupt``:

* headless ``codex exec``: SIGINT to the native ``codex`` the hook recorded
  (not npm's node wrapper above it); Codex kills its tool itself and the run
  ends;
* the TUI run with ``--no-daemon`` in a pane of a private tmux server: Escape
  pressed in the pane, then ``/stop`` typed and Enter (Escape alone leaves the
  command running as a "background terminal"); the TUI runs on;

each long before the minute is up, with the marker never written, an
``interrupt`` line in the ack log saying how, and the stop still filed.

* the TUI in its default mode: a shared background ``codex app-server`` (its
  own session, from a copy of the binary in CODEX_HOME) runs the hooks and the
  tools, and the ``TMUX_PANE`` it hands them may be another TUI's. leash must
  record no tmux pane for that session, and ``leash stop --interrupt`` files
  the stop but exits 1 saying nothing could be interrupted.

The app-server outlives the TUI: the lab ends it (SIGTERM) and removes its
socket in ``/tmp/codex-daemon-<uid>`` (PROCESS_FACTS.md).

The Codex version is ``LEASH_E2E_CODEX_VERSION`` (a number or ``latest``), else
the pinned one; every test is skipped, with the reason, when npm cannot
install it or tmux is missing.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from leash.core import StopProtocol

from ...support.e2e.agent_tui import (
    LONG_CALL,
    PROMPT,
    InFlight,
    Lab,
    Leash,
    assert_interrupted,
    prompt_long_call,
    require_tmux,
    tool_processes,
)
from ...support.e2e.capture_processes import CODEX_TUI_SETTINGS, proc
from ...support.e2e.codex_cli import EXEC_ARGS, codex_env, write_codex_config
from ...support.e2e.codex_standin import CodexStandin, shell, text

pytestmark = pytest.mark.timeout(600)  # the first test may install the CLI

READY = "Ask Codex to do anything"  # the TUI's input box
TUI_FLAGS = "--dangerously-bypass-approvals-and-sandbox"


class Rig:
    """A project and a Codex home wired by ``leash install --agent codex --user``,
    the stand-in, the lab (tmux server, processes)."""

    def __init__(self, codex: Path, base: Path, home: Path, lab: Lab, api: CodexStandin):
        self.native, self.base, self.lab, self.api = codex, base, lab, api
        self.npm_bin = next(parent for parent in codex.parents if parent.name == "node_modules") / ".bin"
        self.codex_home, self.project = base / "codex-home", base / "project"
        self.project.mkdir()
        # The first-run screens of a TUI are answered in the config; the project is trusted.
        write_codex_config(self.codex_home, api.url, settings=json.loads(json.dumps(CODEX_TUI_SETTINGS)),
                           trusted_projects=(self.project,))
        self.leash = Leash(home, lab.socket, HOME=str(self.codex_home), CODEX_HOME=str(self.codex_home))
        done = self.leash("install", "--agent", "codex", "--user", cwd=self.project)
        assert str(self.codex_home / "config.toml") in done.stdout, done.stdout

    def env(self) -> dict[str, str]:
        env = codex_env(self.codex_home, proxy_url=self.api.proxy_url)
        env["PATH"] = f"{self.npm_bin}:{env['PATH']}"
        return env

    def tui(self, *flags: str) -> str:
        """``codex FLAGS`` typed into a new pane, ready for a prompt; the pane."""
        env = self.env()
        env.pop("TERM"), env.pop("NO_COLOR")
        pane = self.lab.new_pane("codex", self.project, env)
        self.lab.type_line(pane, " ".join(["codex", *flags]))
        self.lab.wait_screen(pane, READY)
        return pane

    def prompt_long_call(self, pane: str) -> InFlight:
        return prompt_long_call(self.lab, pane, self.leash, self.project, "codex", asked=lambda: bool(self.api.turns))


@pytest.fixture
def rig(codex, home, tmp_path) -> Iterator[Rig]:
    require_tmux()
    with CodexStandin([shell(LONG_CALL), text("done")]) as api:
        with Lab(tmp_path) as lab:
            yield Rig(codex, tmp_path, home, lab, api)


def assert_native_codex(rig: Rig, call: InFlight, *, headless: bool) -> dict:
    """The recorded agent is the native ``codex`` binary of the npm package."""
    agent, entry = call.agent("codex", "codex", headless=headless)
    assert entry["exe"] == str(rig.native), (agent, entry)
    return agent


def app_server_above(rig: Rig, pid: int) -> dict | None:
    """The ``codex app-server`` (run from its copy in CODEX_HOME) that ``pid`` runs below, if any."""
    entry = proc(pid)
    while entry is not None and entry["pid"] > 1:
        if entry["comm"] == "codex" and "app-server" in entry["argv"] \
                and entry["exe"].startswith(str(rig.codex_home) + "/"):
            return entry
        entry = proc(entry["ppid"])
    return None


# ------------------------------------------------------------------ 1. codex exec
def test_interrupt_sigints_codex_exec(rig):
    run = rig.lab.start(["codex", "exec", *EXEC_ARGS, PROMPT], cwd=rig.project, env=rig.env(), name="codex")
    call = rig.leash.in_flight(rig.project, "codex", context=lambda: "\n".join(rig.lab.output_of("codex")))
    agent = assert_native_codex(rig, call, headless=True)
    # npm's codex.js: on node 20 a node process that spawns the binary (from node 22.15 it execs it)
    assert agent["pid"] == run.pid or proc(agent["pid"])["ppid"] == run.pid, (agent, proc(run.pid))
    running = tool_processes(rig.project)

    interrupted = rig.leash.interrupt(call.session_id)

    assert_interrupted(rig.leash, rig.project, call.session_id, interrupted, running, agent, method="sigint",
                       target=f"pid {agent['pid']}", run=run, context=lambda: rig.lab.output_of("codex"))


# ------------------------------------------------------------------ 2. the TUI without the app-server
def test_interrupt_escapes_and_stops_the_codex_tui(rig):
    lab = rig.lab
    pane = rig.tui(TUI_FLAGS, "--no-daemon")
    call = rig.prompt_long_call(pane)
    assert call.record.get("tmux_pane") == pane, call.record
    agent = assert_native_codex(rig, call, headless=False)
    assert agent["pid"] in [entry["pid"] for entry in lab.below(pane)], (agent, lab.below(pane))
    running = tool_processes(rig.project)

    interrupted = rig.leash.interrupt(call.session_id)

    assert_interrupted(rig.leash, rig.project, call.session_id, interrupted, running, agent, method="escape",
                       target=pane, context=lambda: lab.screen(pane))  # the TUI runs on


# ------------------------------------------------------------------ 3. the TUI with its shared app-server
def test_interrupt_refuses_a_codex_tui_run_by_its_app_server(rig):
    lab = rig.lab
    pane = rig.tui(TUI_FLAGS)
    call = rig.prompt_long_call(pane)
    server = app_server_above(rig, call.sleep["pid"])
    assert server is not None, ("the tool does not run below Codex's app-server", lab.below(pane))
    assert not call.record.get("tmux_pane"), call.record

    done, _ = rig.leash.interrupt(call.session_id)

    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "nothing could be interrupted" in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert call.session_id in rig.leash.stopped_sessions()  # the stop stays filed
    assert StopProtocol(rig.leash.home).is_stopped(call.session_id)
    assert rig.leash.interrupts() == []
