"""One project wired with leash's hooks on a leash home of its own, run by the
real Claude Code CLI against a loopback stand-in for the Messages API: the
``agent`` fixture of the end-to-end suite (``tests/e2e/conftest.py``).
A turn that times out, or a leash command that fails, fails the test."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .harness import LEASH, Run, claude_env, run_claude
from .standin import StandIn, StandInServer, result_text


@dataclass
class Agent:
    """One wired project with its leash home; ``run`` is one ``claude -p`` turn."""
    claude: list[str]
    base: Path
    home: Path
    project: Path
    env: dict[str, str] = field(default_factory=dict)
    standin: StandIn | None = None
    last: Run | None = None

    def run(self, prompt: str, script: list[list[dict]], *, before: dict | None = None,
            args: tuple[str, ...] = (), **env: str) -> Run:
        with StandInServer(script) as standin:
            standin.before.update(before or {})
            self.standin = standin
            merged = claude_env(self.base, standin.url, LEASH_HOME=str(self.home), **{**self.env, **env})
            self.last = run_claude(self.claude, self.project, prompt, merged,
                                   args=("--permission-mode", "bypassPermissions", *args))
        assert not self.last.timed_out, self.last
        return self.last

    def leash(self, *args: str) -> subprocess.CompletedProcess:
        """``leash ARGS`` as a separate process on this home (safe from the stand-in's thread)."""
        done = subprocess.run([LEASH, "--home", str(self.home), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    @property
    def marker(self) -> Path:
        """The file the scripted tool call creates when it runs."""
        return self.project / "marker"

    def tool_results(self) -> list[str]:
        """The tool_result texts of the last run, as Claude Code recorded them in
        its transcript: what it sends the model next (a turn that a hook ends
        after the call sends nothing more, so the stand-in may never see them)."""
        assert self.last is not None
        session_id = self.last.json()["session_id"]
        transcripts = list((self.base / "claude-home" / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
        assert len(transcripts) == 1, transcripts
        texts = []
        for line in transcripts[0].read_text().splitlines():
            entry = json.loads(line)
            content = (entry.get("message") or {}).get("content") if entry.get("type") == "user" else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    texts.append(result_text(block))
        return texts

    def sessions(self) -> dict:
        path = self.home / "sessions.json"
        return json.loads(path.read_text()) if path.exists() else {}
