"""A config.toml with a mistake never locks the operator out, with a real
``leash daemon`` process. An unknown key: the file is understood, leashd
starts and says which key it ignores, the hooks judge by the rest of the
file. A broken file: leashd starts on the strictest settings and says why
(file:line), every call a hook sends is held for an operator, and
``leash approvals allow`` answers it through leashd."""
from __future__ import annotations

import json
import subprocess

import pytest

from leash.core.store.files import FileBackend
from leash.core.views.protocol import StopProtocol

from ..support.daemon import daemon_process, stop
from ..support.thin_hook import decision, hook
from ..support.waiting import wait_for

UNKNOWN_KEY = "[warrants]\ntimeout = 5\n"
BROKEN = '[gate]\nread_only_tools = []\n\n[approvals]\nask = ["Bash(git push*)"\n'  # line 5 lacks its bracket
ASKED_WITHIN_SECONDS = 20


def ls_call(session: str = "s1") -> dict:
    return {"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "cwd": "/", "permission_mode": "default"}


@pytest.fixture
def leashd(home):
    """``leash daemon`` as a process on the test's home, config.toml written
    first; returns the process and the lines it said before it served."""
    started: list[subprocess.Popen] = []

    def start(config: str) -> tuple[subprocess.Popen, list[str]]:
        StopProtocol(home)
        (home / "config.toml").write_text(config)
        proc = daemon_process(home, "--no-kennel")
        started.append(proc)
        said = []
        while not said or " started " not in said[-1]:
            said.append(proc.stderr.readline().decode())
        return proc, said

    yield start
    for proc in started:
        stop(proc)


def test_an_unknown_key_is_said_at_start_and_the_hooks_judge_by_the_rest(leashd, home, leash_proc):
    _, said = leashd(UNKNOWN_KEY)
    (warning,) = [line for line in said if " config_warning " in line]
    assert f"{home}/config.toml:2: key 'warrants.timeout': unknown setting, ignored (did you mean 'timeouts'?)" \
        in warning
    assert not [line for line in said if "config_broken" in line]
    done = hook("pre-tool-use", ls_call())
    assert done.returncode == 0 and decision(done) is None, done  # `ls` passes: no strictest floor
    assert "config_broken" not in done.stderr.decode()
    result = leash_proc("stop", "s1", "--reason", "typo")  # through leashd
    assert result.code == 0 and "stopped s1" in result.out, result
    assert "warning:" in result.err and "config.toml:2: key 'warrants.timeout'" in result.err, result
    assert StopProtocol(home).is_stopped("s1")


def test_a_broken_file_starts_leashd_on_the_strictest_settings_and_says_where(leashd, home, leash_proc):
    _, said = leashd(BROKEN)
    (line,) = [line for line in said if " config_broken " in line]
    assert f"{home}/config.toml:5: key 'approvals.ask'" in line and "strictest" in line, said
    doctor = leash_proc("doctor")
    assert doctor.code == 2
    assert f"fail  config_broken: {home}/config.toml:5: key 'approvals.ask'" in doctor.out, doctor


def test_a_call_held_on_the_broken_file_is_answered_through_leashd(leashd, home, leash_proc):
    leashd(BROKEN)
    client = hook("pre-tool-use", ls_call(), background=True)
    try:
        wait_for(lambda: FileBackend(home).approvals.pending(), timeout=ASKED_WITHIN_SECONDS,
                 what="the call held as an approval")
        listed = leash_proc("approvals", "--json")
        assert listed.code == 0 and f"{home}/config.toml:5" in listed.err, listed
        (approval,) = json.loads(listed.out)
        assert "config.toml cannot be used" in approval["rule"], approval
        allowed = leash_proc("approvals", "allow", approval["id"])
        assert allowed.code == 0, allowed
        assert f"{home}/config.toml:5" in allowed.err and "warning:" in allowed.err, allowed
        out, err = client.communicate(timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate()
    assert client.returncode == 0
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", (out, err)
