"""The Codex CLI rig of the e2e tests: the CLI installed once per module
(``codex``), a project and Codex home wired by ``leash install --agent
codex`` with the stand-in serving for the whole test (``wired``). Shared by
the test modules of ``tests/e2e/agents`` so none imports another."""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

from ..harness import LEASH
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

# What the e2e suite's leash commands must not inherit from whoever runs it.
FOREIGN_ENV = ("LEASH_SOCKET", "LEASH_OPERATOR_SOCKET", "LEASH_ENTITY", "TMUX", "TMUX_PANE", "CLAUDE_PROJECT_DIR",
               "CODEX_HOME", "LEASH_HOME")


@pytest.fixture(scope="module")
def codex() -> Path:
    try:
        return install_codex()
    except CodexUnavailable as exc:
        pytest.skip(f"Codex CLI unavailable: {exc}")


@dataclass
class Wired:
    """One project and a Codex home wired by ``leash install --agent codex --user``,
    on a LEASH_HOME of its own, with the stand-in serving for the whole test."""
    codex: Path
    base: Path
    api: CodexStandin
    runs: list[CodexRun] = field(default_factory=list)

    @property
    def codex_home(self) -> Path:
        return self.base / "codex-home"

    @property
    def project(self) -> Path:
        return self.base / "project"

    @property
    def leash_home(self) -> Path:
        return self.base / "leash-home"

    @property
    def config(self) -> Path:
        return config_path(self.codex_home)

    def env(self) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items() if name not in FOREIGN_ENV}
        return {**env, "HOME": str(self.codex_home), "CODEX_HOME": str(self.codex_home),
                "LEASH_HOME": str(self.leash_home)}

    def leash(self, *args: str, expect: int | None = 0, python: Path | None = None) -> subprocess.CompletedProcess:
        """``leash ARGS`` on this home (run by ``python`` when given: ``leash install``
        wires the interpreter that runs it)."""
        argv = [str(python), LEASH] if python else [LEASH]
        done = subprocess.run([*argv, *args], capture_output=True, text=True, timeout=60, env=self.env(),
                              cwd=self.project)
        if expect is not None:
            assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
        return done

    def install(self, *, python: Path | None = None) -> None:
        done = self.leash("install", "--agent", "codex", "--user", python=python)
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
        run = run_codex(self.codex, "do the task", codex_home=self.codex_home, cwd=self.project,
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

    def status(self) -> dict:
        return json.loads(self.leash("status", "--json").stdout)

    def halts(self) -> list[dict]:
        return json.loads(self.leash("halts", "list", "--json").stdout)["halts"]

    def check(self) -> subprocess.CompletedProcess:
        return self.leash("install", "--agent", "codex", "--check", expect=None)

    def codex_hooks(self) -> dict[str, dict]:
        """Codex's own view of the hooks (``hooks/list`` of its app-server), by key."""
        with AppServer(self.codex, codex_env(self.codex_home), self.project) as server:
            return {hook["key"]: hook for hook in list_hooks(server, self.project)}


@pytest.fixture
def wired(codex, tmp_path) -> Iterator[Wired]:
    with CodexStandin() as api:
        setup = Wired(codex=codex, base=tmp_path, api=api)
        setup.project.mkdir()
        write_codex_config(setup.codex_home, api.url)
        setup.install()
        yield setup
