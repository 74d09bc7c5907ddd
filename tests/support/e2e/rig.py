"""The agent CLIs' rig of the e2e tests, one for Codex CLI and Gemini CLI.

Each CLI is installed once per module (the ``codex`` and ``gemini`` fixtures,
made by ``cli_fixture``; a test is skipped with one line when its CLI cannot
be had). An ``AgentRig`` is one project wired by ``leash install --agent
AGENT`` in a test's folder, the CLI's private HOME and a leash home of the
test's own; what differs between the two CLIs is what wiring them takes
(Codex's user config, Gemini's project settings) and how a run is played:

* ``CodexRig`` (fixture ``wired``): the Codex home wired with ``--user``, one
  stand-in serving the whole test, ``run`` one ``codex exec``;
* ``GeminiRig`` (fixture ``rig``): the project wired with ``--project``, ``run``
  one ``gemini -p`` against a fresh stand-in.

A leash command that fails where it should not fails the test with its
output; a run whose CLI fails, or that reached any host but the stand-in,
fails it too."""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Iterator

import pytest

from .codex_cli import (
    AppServer,
    CodexRun,
    CodexUnavailable,
    codex_env,
    config_path,
    install_codex,
    list_hooks,
    run_codex,
    write_codex_config,
)
from .codex_standin import CodexStandin, Request
from .gemini_cli import HEADLESS_ARGS, GeminiRun, GeminiUnavailable, install_gemini, run_gemini, wanted_version
from .gemini_standin import GeminiStandin, Turn
from .harness import LEASH

# What the e2e suite's leash commands must not inherit from whoever runs it.
FOREIGN_ENV = ("LEASH_SOCKET", "LEASH_OPERATOR_SOCKET", "LEASH_ENTITY", "TMUX", "TMUX_PANE", "CLAUDE_PROJECT_DIR",
               "CODEX_HOME", "LEASH_HOME")


def cli_fixture(name: str, what: str, install: Callable[[], Path], unavailable: type[Exception]):
    """A module-scoped fixture ``name``: the CLI ``install()`` returns, or the
    module skipped saying why ``what`` is unavailable."""
    @pytest.fixture(scope="module", name=name)
    def installed() -> Path:
        try:
            return install()
        except unavailable as exc:
            pytest.skip(f"{what} unavailable: {exc}")
    return installed


codex = cli_fixture("codex", "Codex CLI", install_codex, CodexUnavailable)
gemini = cli_fixture("gemini", "Gemini CLI", lambda: install_gemini(wanted_version()), GeminiUnavailable)


@dataclass
class AgentRig:
    """A project wired for ``AGENT`` by ``leash install`` in ``base``, the CLI's
    private HOME and the leash home; leash commands run on them."""
    AGENT: ClassVar[str]
    cli: Path
    base: Path
    leash_home: Path

    @property
    def home(self) -> Path:
        """The CLI's HOME (and Codex's CODEX_HOME)."""
        return self.base / f"{self.AGENT}-home"

    @property
    def project(self) -> Path:
        return self.base / "project"

    def env(self) -> dict[str, str]:
        """What a leash command of this test runs with: this HOME (``leash install``
        writes the CLI's user files there) and this test's leash home."""
        env = {name: value for name, value in os.environ.items() if name not in FOREIGN_ENV}
        return {**env, "HOME": str(self.home), "LEASH_HOME": str(self.leash_home), **self.cli_env()}

    def cli_env(self) -> dict[str, str]:
        return {}

    def install_scope(self) -> tuple[str, ...]:
        """Where ``leash install`` wires the CLI: its arguments."""
        raise NotImplementedError

    def leash(self, *args: str, expect: int | None = 0, python: Path | None = None) -> subprocess.CompletedProcess:
        """``leash ARGS`` in the project on this home, as a process of its own (safe
        from a stand-in's thread); run by ``python`` when given (``leash install``
        wires the interpreter that runs it); its exit code checked unless ``expect`` is None."""
        argv = [str(python), LEASH] if python else [LEASH]
        done = subprocess.run([*argv, *args], capture_output=True, text=True, timeout=60, env=self.env(),
                              cwd=self.project)
        if expect is not None:
            assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
        return done

    def leash_json(self, *args: str):
        return json.loads(self.leash(*args, "--json").stdout)

    def install(self, *extra: str, expect: int | None = 0, python: Path | None = None) -> subprocess.CompletedProcess:
        """``leash install --agent AGENT`` with this rig's scope and ``extra``."""
        return self.leash("install", "--agent", self.AGENT, *self.install_scope(), *extra, expect=expect,
                          python=python)

    def status(self) -> dict:
        return self.leash_json("status")

    def halts(self) -> list[dict]:
        return self.leash_json("halts", "list")["halts"]

    def sessions(self) -> dict[str, dict]:
        return {session["session_id"]: session for session in self.status()["sessions"]}


@dataclass
class CodexRig(AgentRig):
    """The Codex home wired by ``leash install --agent codex --user``, with the
    stand-in serving for the whole test."""
    AGENT: ClassVar[str] = "codex"
    api: CodexStandin
    runs: list[CodexRun] = field(default_factory=list)

    @property
    def codex_home(self) -> Path:
        return self.home

    @property
    def config(self) -> Path:
        return config_path(self.codex_home)

    def cli_env(self) -> dict[str, str]:
        return {"CODEX_HOME": str(self.codex_home)}

    def install_scope(self) -> tuple[str, ...]:
        return ("--user",)

    def check(self) -> subprocess.CompletedProcess:
        """``leash install --agent codex --check``, whatever its exit code."""
        return self.leash("install", "--agent", "codex", "--check", expect=None)

    def wire(self, *, python: Path | None = None) -> None:
        done = self.install(python=python)
        assert str(self.config) in done.stdout, done.stdout

    def run(self, turns: list[dict], *, before: dict[int, Callable[[Request], None]] | None = None,
            played: bool = True) -> CodexRun:
        """One ``codex exec`` in the project playing ``turns`` (all of them,
        unless ``played`` is false); ``before`` maps a turn of this run (0: its
        first) to what happens just before it is answered."""
        offset = len(self.api.turns)
        self.api.script(turns)
        for index, action in (before or {}).items():
            self.api.before(offset + index, action)
        run = run_codex(self.cli, "do the task", codex_home=self.codex_home, cwd=self.project,
                        env={"LEASH_HOME": str(self.leash_home)}, proxy_url=self.api.proxy_url)
        self.runs.append(run)
        assert run.returncode == 0, run
        assert not self.api.errors, self.api.errors
        assert not self.api.blocked, f"the CLI (or a command it ran) reached for other hosts: {self.api.blocked}"
        if played:
            assert not self.api.remaining, (self.api.remaining, run)
        return run

    def outputs(self) -> list[str]:
        """The tool outputs that reached the model, in order."""
        return self.api.tool_output_texts()

    def codex_hooks(self) -> dict[str, dict]:
        """Codex's own view of the hooks (``hooks/list`` of its app-server), by key."""
        with AppServer(self.cli, codex_env(self.codex_home), self.project) as server:
            return {hook["key"]: hook for hook in list_hooks(server, self.project)}


@pytest.fixture
def wired(codex, tmp_path) -> Iterator[CodexRig]:
    with CodexStandin() as api:
        setup = CodexRig(cli=codex, base=tmp_path, leash_home=tmp_path / "leash-home", api=api)
        setup.project.mkdir()
        write_codex_config(setup.codex_home, api.url)
        setup.wire()
        yield setup


@dataclass
class GeminiRig(AgentRig):
    """The project wired by ``leash install --agent gemini --project``; ``run`` is
    one ``gemini -p`` against a fresh stand-in."""
    AGENT: ClassVar[str] = "gemini"
    standin: GeminiStandin | None = None
    last: GeminiRun | None = None

    def install_scope(self) -> tuple[str, ...]:
        return ("--project", str(self.project))

    def __post_init__(self) -> None:
        (self.home / ".gemini").mkdir(parents=True)
        self.project.mkdir()

    @property
    def settings_path(self) -> Path:
        return self.project / ".gemini" / "settings.json"

    def settings(self) -> dict:
        return json.loads(self.settings_path.read_text())

    def run(self, prompt: str, script: list[Turn], *, session_id: str | None = None,
            before: dict[int, Callable[[], None]] | None = None) -> GeminiRun:
        args = HEADLESS_ARGS + (("--session-id", session_id) if session_id else ())
        with GeminiStandin(script) as standin:
            standin.before.update(before or {})
            self.standin = standin
            self.last = run_gemini(self.cli, prompt, home=self.home, cwd=self.project,
                                   standin_url=standin.url, args=args)
        assert not standin.before_errors, standin.before_errors
        assert self.last.returncode == 0, (self.last.returncode, self.last.stdout[-3000:], self.last.stderr[-3000:])
        assert not standin.stray, standin.stray  # nothing but the stand-in was reached
        if session_id:
            assert self.last.session_id == session_id, self.last.stdout[-2000:]
        return self.last

    def nothing_asked_after_the_first_turn(self) -> bool:
        """The first conversation request was the last request of any kind."""
        assert self.standin is not None
        conversation = self.standin.conversation()
        return bool(conversation) and self.standin.requests[-1] is conversation[0]

    def conversation_requests(self) -> int:
        assert self.standin is not None
        return len(self.standin.conversation())

    def tool_results(self) -> list[str]:
        """What the model was sent back for each call, in order."""
        assert self.standin is not None
        return self.standin.tool_result_texts()

    def stream_tool_results(self) -> list[dict]:
        """The stream-json ``tool_result`` events of the last run."""
        assert self.last is not None
        return [event for event in self.last.events() if event.get("type") == "tool_result"]


@pytest.fixture
def rig(gemini, home, tmp_path) -> GeminiRig:
    """A project wired by ``leash install --agent gemini --project`` on this test's home."""
    setup = GeminiRig(cli=gemini, base=tmp_path, leash_home=home)
    done = setup.install()
    assert str(setup.settings_path) in done.stdout, done.stdout
    return setup
