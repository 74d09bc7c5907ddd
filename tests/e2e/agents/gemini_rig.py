"""The Gemini CLI rig of the e2e tests: the CLI installed once per module
(``gemini``), a project wired by ``leash install --agent gemini`` on the
test's home (``rig``) and the scripted calls the tests play. Shared by the
test modules of ``tests/e2e/agents`` so none imports another."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from .gemini_cli import HEADLESS_ARGS, GeminiRun, GeminiUnavailable, install_gemini, run_gemini, wanted_version
from .gemini_standin import GeminiStandin, Turn, function_call, shell

LEASH = str(Path(sys.executable).with_name("leash"))
BLOCKED = "Tool execution blocked: "
STOPPED = "Agent execution stopped by hook: "


@pytest.fixture(scope="module")
def gemini() -> Path:
    try:
        return install_gemini(wanted_version())
    except GeminiUnavailable as exc:
        pytest.skip(f"Gemini CLI unavailable: {exc}")


@dataclass
class Rig:
    """One project wired for Gemini CLI by ``leash install``, its private HOME
    and its leash home; ``run`` is one ``gemini -p`` against a fresh stand-in."""
    gemini: Path
    base: Path
    leash_home: Path
    home: Path = field(init=False)
    project: Path = field(init=False)
    standin: GeminiStandin | None = None
    last: GeminiRun | None = None

    def __post_init__(self) -> None:
        self.home, self.project = self.base / "gemini-home", self.base / "project"
        (self.home / ".gemini").mkdir(parents=True)
        self.project.mkdir()

    @property
    def env(self) -> dict[str, str]:
        """What a leash command of this test runs with: the private HOME (``leash
        install`` trusts the folder in ``$HOME/.gemini``) and this test's home."""
        return dict(os.environ, HOME=str(self.home), LEASH_HOME=str(self.leash_home))

    def install(self, *extra: str, code: int | None = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([LEASH, "install", "--agent", "gemini", "--project", str(self.project), *extra],
                              capture_output=True, text=True, timeout=60, env=self.env)
        if code is not None:
            assert done.returncode == code, (extra, done.returncode, done.stdout, done.stderr)
        return done

    def leash(self, *args: str) -> subprocess.CompletedProcess:
        """``leash ARGS`` on this home, as a process of its own (safe from the stand-in's thread)."""
        done = subprocess.run([LEASH, "--home", str(self.leash_home), *args], capture_output=True, text=True,
                              timeout=60, env=self.env)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def leash_json(self, *args: str):
        return json.loads(self.leash(*args, "--json").stdout)

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
            self.last = run_gemini(self.gemini, prompt, home=self.home, cwd=self.project,
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

    def sessions(self) -> dict[str, dict]:
        return {session["session_id"]: session for session in self.leash_json("status")["sessions"]}


@pytest.fixture
def rig(gemini, home, tmp_path) -> Rig:
    """A project wired by ``leash install --agent gemini --project`` on this test's home."""
    rig = Rig(gemini=gemini, base=tmp_path, leash_home=home)
    done = rig.install()
    assert str(rig.settings_path) in done.stdout, done.stdout
    return rig


def write_out(name: str = "out.txt") -> dict:
    return shell(f"echo hi > {name}", f"write {name}")


def write_file(path: str, content: str) -> dict:
    return function_call("write_file", {"file_path": path, "content": content})


def replace(path: str, old: str, new: str) -> dict:
    return function_call("replace", {"file_path": path, "instruction": "change the setting",
                                     "old_string": old, "new_string": new})
