"""The real Codex CLI driven headless against the loopback Responses stand-in.

Proves the groundwork for end-to-end hook tests: a scripted shell command runs;
a trusted PreToolUse hook that exits 2 refuses a shell command and an
``apply_patch``, and the refusal reaches the model; an untrusted hook is
skipped, and the trust hash computed here is the one the CLI reports.

The Codex version is ``LEASH_E2E_CODEX_VERSION`` (a number or ``latest``),
else the pinned one. Every test is skipped, with the reason, when the CLI
cannot be installed (no npm, no registry).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ...support.e2e.codex_cli import (
    CodexRun,
    CodexUnavailable,
    hook_states,
    install_codex,
    run_codex,
    trust_hooks,
    write_codex_config,
)
from ...support.e2e.codex_standin import CodexStandin, add_file_patch, apply_patch, shell, text

REFUSE = {"PreToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command": "echo no >&2; exit 2",
                                                       "timeout": 10}]}]}
REFUSAL = "Command blocked by PreToolUse hook: no"


@pytest.fixture(scope="session")
def codex() -> Path:
    try:
        return install_codex()
    except CodexUnavailable as exc:
        pytest.skip(f"Codex CLI unavailable: {exc}")


def session(codex: Path, base: Path, turns: list[dict], hooks: dict | None = None, *,
            trust: bool = True) -> tuple[CodexRun, CodexStandin, Path]:
    """One ``codex exec`` in ``base/project`` playing ``turns``; (run, stand-in, project)."""
    home, project = base / "codex-home", base / "project"
    project.mkdir(parents=True)
    with CodexStandin(turns) as api:
        write_codex_config(home, api.url, hooks)
        if hooks and trust:
            trust_hooks(codex, home, cwd=project)
        run = run_codex(codex, "do the task", codex_home=home, cwd=project, proxy_url=api.proxy_url)
    assert run.returncode == 0, run
    assert not api.errors, api.errors
    assert not api.blocked, f"the CLI reached for other hosts: {api.blocked}"
    return run, api, project


def test_a_scripted_shell_command_runs(codex, tmp_path):
    run, api, project = session(codex, tmp_path, [shell("echo hi > out.txt"), text("done")])
    assert (project / "out.txt").read_text() == "hi\n"
    assert run.session_id
    assert [item["text"] for item in run.items("agent_message")] == ["done"]
    assert len(api.turns) == 2 and not api.remaining
    assert "Process exited with code 0" in api.tool_output_texts()[0]


def test_a_trusted_hook_exiting_2_refuses_a_shell_command(codex, tmp_path):
    _run, api, project = session(codex, tmp_path, [shell("echo hi > out.txt"), text("done")], REFUSE)
    assert not (project / "out.txt").exists()
    assert api.tool_output_texts() == [f"{REFUSAL}. Command: echo hi > out.txt"]


def test_a_trusted_hook_exiting_2_refuses_an_apply_patch(codex, tmp_path):
    patch = add_file_patch("added.txt", "hello")
    _run, api, project = session(codex, tmp_path, [apply_patch(patch), text("done")], REFUSE)
    assert not (project / "added.txt").exists()
    [output] = api.tool_outputs()
    assert output["type"] == "custom_tool_call_output"
    assert api.tool_output_texts()[0].startswith(f"{REFUSAL}. Command: *** Begin Patch\n*** Add File: added.txt")


def test_an_untrusted_hook_is_skipped_and_the_computed_hash_is_the_clis(codex, tmp_path):
    _run, api, project = session(codex, tmp_path / "untrusted", [shell("echo hi > out.txt"), text("done")], REFUSE,
                                 trust=False)
    assert (project / "out.txt").exists(), "an untrusted hook ran"
    home = tmp_path / "trusted" / "codex-home"
    write_codex_config(home, "http://127.0.0.1:9/v1", REFUSE)
    listed = trust_hooks(codex, home)
    assert {hook["key"]: {"trusted_hash": hook["currentHash"]} for hook in listed} == hook_states(home, REFUSE)
