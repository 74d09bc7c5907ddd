"""Fixtures of the end-to-end suite: the real Claude Code CLI (the version
``LEASH_E2E_CLAUDE_VERSION`` names, installed once into
``.cache/claude-code/<version>``), a loopback stand-in for the Messages API per
test, and a project wired with leash's hooks on the test's own ``LEASH_HOME``.

When Claude Code cannot be installed (no npm, no registry) every test here is
skipped with one line saying why."""
from __future__ import annotations

import pytest

from ..support.e2e.claude_agent import Agent
from ..support.e2e.harness import ClaudeUnavailable, ensure_claude, wire


@pytest.fixture(scope="session")
def claude() -> list[str]:
    try:
        argv, _version = ensure_claude()
    except ClaudeUnavailable as exc:
        pytest.skip(f"Claude Code unavailable: {exc}")
    return argv


@pytest.fixture
def agent(claude, home, tmp_path) -> Agent:
    project = tmp_path / "project"
    project.mkdir()
    wire(project)
    return Agent(claude=claude, base=tmp_path, home=home, project=project)
