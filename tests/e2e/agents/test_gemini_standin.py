"""The loopback stand-in drives the real Gemini CLI: a scripted shell call runs,
and a BeforeTool hook that exits 2 refuses it, with its reason sent back to the
model. Only the helpers of this folder are used (no leash code), so a failure
here is in the stand-in, the helpers or the CLI, not in leash.

The CLI version is ``LEASH_E2E_GEMINI_VERSION`` (a number or ``latest``), else
the pinned one. Skipped, with npm's reason, when the CLI cannot be installed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ...support.e2e.gemini_cli import GeminiUnavailable, install_gemini, run_gemini, wanted_version
from ...support.e2e.gemini_standin import GeminiStandin, shell, text

pytestmark = pytest.mark.timeout(600)  # the first test may install the CLI


@pytest.fixture(scope="module")
def gemini() -> Path:
    try:
        return install_gemini(wanted_version())
    except GeminiUnavailable as exc:
        pytest.skip(f"Gemini CLI unavailable: {exc}")


@pytest.fixture
def dirs(tmp_path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".gemini").mkdir(parents=True)
    project.mkdir()
    return home, project


SCRIPT = [shell("echo hi > out.txt", "write out.txt"), text("done")]


def test_a_scripted_shell_call_runs(gemini, dirs):
    home, project = dirs
    with GeminiStandin(SCRIPT) as standin:
        run = run_gemini(gemini, "write out.txt", home=home, cwd=project, standin_url=standin.url)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (project / "out.txt").read_text() == "hi\n"
    assert run.session_id, run.stdout
    assert standin.played == 2 and not standin.stray
    [result] = standin.tool_results()
    assert result["name"] == "run_shell_command" and "error" not in result["response"], result


def test_a_hook_that_exits_2_refuses_the_call(gemini, dirs):
    home, project = dirs
    refuse = {"matcher": ".*", "hooks": [{"type": "command", "name": "refuse", "command": "echo no >&2; exit 2",
                                          "timeout": 10000}]}
    (home / ".gemini" / "settings.json").write_text(json.dumps({"hooks": {"BeforeTool": [refuse]}}))
    with GeminiStandin(SCRIPT) as standin:
        run = run_gemini(gemini, "write out.txt", home=home, cwd=project, standin_url=standin.url)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not (project / "out.txt").exists()
    assert standin.tool_result_texts() == ["Tool execution blocked: no"]
    assert standin.played == 2  # the refusal went back to the model, which answered
