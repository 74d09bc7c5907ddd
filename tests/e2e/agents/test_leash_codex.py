"""leash in the real Codex CLI: ``codex exec`` headless against the loopback
Responses stand-in, wired by the real ``leash install --agent codex --user``
(HOME and CODEX_HOME in the test's folder, a LEASH_HOME of its own).

Each test scripts the model's tool calls (``codex_standin``). Whether a call
ran shows in the file it writes; what leash told the model shows in the tool
output Codex sent back to the stand-in (Codex asks the model again after a
refused call): ``Command blocked by PreToolUse hook: <leash's stderr>. Command:
<the call's command>``. An operator's action "while the agent works" (a stop,
a broken hook) is done by the stand-in just before it answers a turn, so the
prompt has already passed leash's UserPromptSubmit hook and it is the tool
call's PreToolUse hook that meets it.

The Codex version is ``LEASH_E2E_CODEX_VERSION`` (a number or ``latest``), else
the pinned one; every test is skipped, with the reason, when npm cannot
install it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from leash.core.wire.hookevents import CODEX, events_of

from ...support.e2e.codex_cli import (
    EVENT_LABELS,
)
from ...support.e2e.codex_standin import Request, add_file_patch, apply_patch, shell, text
from ...support.e2e.harness import LEASH
from ...support.e2e.rig import CodexRig

BLOCKED = "Command blocked by PreToolUse hook: "
# A GitHub personal access token's shape (ghp_ and 36 letters and digits), made
# up here and joined at run time so no scanner takes this file for a leak.
FAKE_GITHUB_TOKEN = "ghp" + "_" + "R7xQe9Lm2Tz4Wb8Kc1Vn5Yd3" + "Hs6Jf0PaXu7G"
# Codex's labels of the events leash wires (``leash install`` writes one hook for each).
LEASH_EVENTS = {EVENT_LABELS[spec.event] for spec in events_of(CODEX)}


def session_of(request: Request) -> str:
    """Codex's session id, as its ``session-id`` header carries it."""
    return next(value for name, value in request.headers.items() if name.lower() == "session-id")


def assert_refused(output: str, command: str, *reason: str) -> str:
    """``output`` is Codex's refusal of ``command`` carrying leash's reason; leash's part of it."""
    assert output.startswith(BLOCKED), output
    tail = f". Command: {command}"
    assert output.endswith(tail), output
    said = output[len(BLOCKED):-len(tail)]
    for words in reason:
        assert words in said, (words, output)
    return said


# ------------------------------------------------------------------ 1. allowed, recorded
def test_an_allowed_shell_call_runs_and_the_session_is_recorded_as_codex(wired):
    run = wired.run([shell("echo hi > out.txt"), text("done")])

    assert (wired.project / "out.txt").read_text() == "hi\n"
    [output] = wired.outputs()
    assert "Process exited with code 0" in output, output
    assert run.session_id
    sessions = {s["session_id"]: s for s in wired.status()["sessions"]}
    assert set(sessions) == {run.session_id}, sessions
    record = sessions[run.session_id]
    assert record["cli"] == "codex", record
    assert record["cwd"] == str(wired.project)
    assert record["last_tool"] == "Bash"
    assert wired.halts() == []


# ------------------------------------------------------------------ 2. stops
def test_a_fleet_stop_refuses_the_call_and_the_reason_reaches_the_model(wired):
    def stop_the_fleet(_request: Request) -> None:
        wired.leash("stop", "--all", "--reason", "maintenance window 42")

    wired.run([shell("echo hi > out.txt"), text("done")], before={0: stop_the_fleet})

    assert not (wired.project / "out.txt").exists()
    [output] = wired.outputs()
    assert_refused(output, "echo hi > out.txt", "leash: the whole fleet is stopped", "maintenance window 42")
    assert wired.status()["fleet_stopped"][0]["reason"] == "maintenance window 42"


def test_a_session_stop_refuses_that_sessions_next_call(wired):
    stopped: list[str] = []

    def stop_this_session(request: Request) -> None:  # after its first call ran
        stopped.append(session_of(request))
        wired.leash("stop", stopped[0], "--reason", "review this one first")

    run = wired.run([shell("echo one > one.txt"), shell("echo two > two.txt"), text("done")],
                    before={1: stop_this_session})

    assert stopped == [run.session_id]
    assert (wired.project / "one.txt").exists()
    assert not (wired.project / "two.txt").exists()
    first, second = wired.outputs()
    assert "Process exited with code 0" in first
    assert_refused(second, "echo two > two.txt", "review this one first")
    status = wired.status()
    assert [s["session_id"] for s in status["stopped_sessions"]] == [run.session_id]
    assert status["fleet_stopped"] == []


# ------------------------------------------------------------------ 3. path lock
def test_a_path_lock_refuses_an_apply_patch_that_adds_a_file_under_it(wired):
    locked = wired.project / "src" / "auth"
    wired.leash("hands-off", f"path:{locked}/**", "--hours", "1", "--reason", "auth rewrite")
    blocked_patch = add_file_patch("src/auth/token.py", "SECRET = 1")
    free_patch = add_file_patch("src/billing/ok.py", "X = 1")

    wired.run([apply_patch(blocked_patch), apply_patch(free_patch), text("done")])

    assert not (locked / "token.py").exists()
    assert (wired.project / "src" / "billing" / "ok.py").read_text() == "X = 1\n"
    refused, applied = wired.outputs()
    assert_refused(refused, blocked_patch, "src/auth/token.py", f"path:{locked}/**", "auth rewrite")
    assert "Success. Updated the following files:\nA src/billing/ok.py" in applied, applied


# ------------------------------------------------------------------ 4. secrets
def test_a_secret_in_a_command_halts_the_session(wired):
    command = f'curl -s -H "Authorization: Bearer {FAKE_GITHUB_TOKEN}" https://api.github.com/user > user.json'

    run = wired.run([shell(command), shell("echo later > later.txt"), text("done")])

    assert not (wired.project / "user.json").exists()
    assert not (wired.project / "later.txt").exists()  # the session is halted, not just that call refused
    first, second = wired.outputs()
    said = assert_refused(first, command, "halt", "secrets_exposure", "github-pat")
    assert FAKE_GITHUB_TOKEN not in said  # (Codex itself appends the command, token and all)
    assert_refused(second, "echo later > later.txt", "halted until the operator acknowledges")
    [halt] = wired.halts()
    assert (halt["condition_name"], halt["session_id"], halt["acknowledged"]) == (
        "secrets_exposure", run.session_id, False), halt
    assert FAKE_GITHUB_TOKEN not in json.dumps(halt)


# ------------------------------------------------------------------ 5. leash cannot run
def private_interpreter(base: Path) -> Path:
    """A Python of this test's own that runs this checkout's leash: a venv
    whose ``bin/python`` links to the real interpreter and whose ``lib`` is
    the project venv's (so it can be taken away without touching .venv)."""
    venv = base / "venv"
    (venv / "bin").mkdir(parents=True)
    project_venv = Path(LEASH).parent.parent
    shutil.copy(project_venv / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(project_venv / "lib")
    python = venv / "bin" / "python"
    python.symlink_to(os.path.realpath(project_venv / "bin" / "python"))
    return python


def test_a_hook_whose_interpreter_is_gone_refuses_the_call(wired):
    """The hook's ``|| { …; exit 2; }`` tail: the interpreter leash was installed
    with disappears while the agent works (its venv removed or rebuilt), so
    ``timeout`` exits 127 and the wrapper turns that into Codex's refusal."""
    python = private_interpreter(wired.base)
    wired.wire(python=python)
    assert f"{python} -S -P " in wired.config.read_text()
    assert wired.check().returncode == 0

    wired.run([shell("echo hi > out.txt"), text("done")], before={0: lambda _request: python.unlink()})

    assert not (wired.project / "out.txt").exists()
    [output] = wired.outputs()
    assert_refused(output, "echo hi > out.txt", f"{python}",
                   "leash: hook codex-pre-tool-use could not run (exit 127): the call is refused")
    check = wired.check()
    assert check.returncode == 3 and f"runs {python}, which is missing" in check.stdout, check


def test_a_home_leash_cannot_open_refuses_the_call(wired):
    """LEASH_HOME turns into a regular file while the agent works: leash itself
    answers, refusing every call until the home is safe."""
    def break_the_home(_request: Request) -> None:
        wired.leash_home.rename(wired.base / "leash-home.moved")
        wired.leash_home.write_text("not a directory\n")

    wired.run([shell("echo hi > out.txt"), text("done")], before={0: break_the_home})

    assert not (wired.project / "out.txt").exists()
    [output] = wired.outputs()
    assert_refused(output, "echo hi > out.txt", f"leash: unsafe state home {wired.leash_home}: not a directory",
                   "every tool call is denied until it is safe")


def test_a_home_leash_cannot_open_at_the_start_refuses_the_prompt(wired):
    """Broken before the session starts, the UserPromptSubmit hook (its failure
    tail: leash exits 1 there) refuses the prompt: no model request is made."""
    shutil.rmtree(wired.leash_home, ignore_errors=True)
    wired.leash_home.write_text("not a directory\n")

    run = wired.run([shell("echo hi > out.txt")], played=False)

    assert not (wired.project / "out.txt").exists()
    assert wired.api.turns == [] and wired.outputs() == []
    assert run.items("command_execution") == []


# ------------------------------------------------------------------ 6. trust and --check
def edit_timeout(config: Path, verb: str) -> tuple[int, int]:
    """Add a second to the timeout of leash's ``verb`` hook in ``config``: (old, new)."""
    lines = config.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("command = ") and f"hook {verb} " in line)
    n, old = next((n, int(m.group(1))) for n, line in enumerate(lines[at:], at)
                  if (m := re.fullmatch(r"timeout = (\d+)\n", line)))
    lines[n] = f"timeout = {old + 1}\n"
    config.write_text("".join(lines))
    return old, old + 1


def leash_hooks(wired: CodexRig) -> dict[str, str]:
    """Codex's trust status of each leash hook in the user's config, by event label."""
    return {key.split(":")[-3]: hook["trustStatus"] for key, hook in wired.codex_hooks().items()
            if key.startswith(f"{wired.config}:")}


def test_after_install_codex_trusts_every_leash_hook_and_check_passes(wired):
    """What ``leash install`` wrote is what Codex runs: each hook's trusted hash
    is the one Codex computes (``hooks/list``), and --check agrees."""
    check = wired.check()
    assert check.returncode == 0, check
    assert leash_hooks(wired) == {event: "trusted" for event in LEASH_EVENTS}


def test_a_codex_session_is_recorded_as_ended_when_codex_exec_exits(wired):
    """leash's SessionEnd hook runs when ``codex exec`` exits (when leash wires
    one), and Codex has nothing to say about how leash wired it (a timeout
    Codex must clamp changes the hook's hash: Codex then skips it)."""
    if "session_end" not in LEASH_EVENTS:
        pytest.skip("leash wires no SessionEnd hook for Codex")
    run = wired.run([text("nothing to do")])

    assert [item["message"] for item in run.items("error")] == []
    [record] = [s for s in wired.status()["sessions"] if s["session_id"] == run.session_id]
    assert record["status"] == "ended", record


def test_check_fails_and_codex_skips_a_leash_hook_whose_timeout_was_edited(wired):
    """After a hook's timeout is edited by hand, Codex reports that hook
    ``modified`` and skips it: a fleet stop no longer refuses anything.
    ``leash install --agent codex --check`` says so with exit 3."""
    assert wired.check().returncode == 0
    assert leash_hooks(wired)["pre_tool_use"] == "trusted"

    edit_timeout(wired.config, "codex-pre-tool-use")
    check = wired.check()
    assert check.returncode == 3, check
    assert "codex PreToolUse" in check.stdout and "not trusted: Codex CLI skips it" in check.stdout, check.stdout
    assert leash_hooks(wired)["pre_tool_use"] == "modified"

    def stop_the_fleet(_request: Request) -> None:
        wired.leash("stop", "--all", "--reason", "maintenance window 42")

    wired.run([shell("echo hi > out.txt"), text("done")], before={0: stop_the_fleet})

    assert (wired.project / "out.txt").read_text() == "hi\n", "the skipped hook refused the call"
    [output] = wired.outputs()
    assert "Process exited with code 0" in output and "blocked" not in output, output
    assert wired.status()["fleet_stopped"], "the fleet stop was not filed"
