"""The separated profile's self-test: the managed hook, run as each agent
user exactly as Claude Code runs it, against the running leashd.

``leash setup separated`` ends with it. For each ``--agent-user`` it runs the
managed PreToolUse command (``sh -c``, as that user, with a bare
environment) on a Bash call of a fresh session: it must be allowed; then it
stops that session through the operator socket and runs the hook again: it
must be denied with the stop's reason; then it resumes the session. A
hook that cannot reach leashd, that leashd refuses (the socket's owner not
trusted: ``LEASH_DAEMON_UID`` missing), or that answers anything else is the
agent user's problem, one line each.

Which leashd: the one answering on the plan's operator socket. When none
answers (systemd does not run here, so setup did not start it), a leashd is
started as the leash user for the test and stopped after it.

Failure: nothing here raises for a failed check; each becomes a line.
``SELF_TEST_SECONDS`` bounds every step. The stop and resume are real
operator actions on leashd's home: they are in its ack log, with the reason
"leash setup separated self-test", as the audit trail should show them.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import subprocess
import time

SELF_TEST_SECONDS = 30
SELF_TEST_REASON = "leash setup separated self-test"
DAEMON_START_SECONDS = 20


def managed_pre_tool_command(settings_path: str) -> str | None:
    """The command of leash's PreToolUse hook in the managed settings."""
    from leash.core.hook import install

    settings = install.read_settings(settings_path)
    for group in (settings.get("hooks") or {}).get("PreToolUse") or []:
        for hook in group.get("hooks") or []:
            if install.is_leash_hook(hook) and isinstance(hook.get("command"), str):
                return hook["command"]
    return None


def run_hook_as(user: str, command: str, payload: dict) -> subprocess.CompletedProcess:
    entry = pwd.getpwnam(user)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/", "USER": user, "LOGNAME": user}
    return subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True,
                          user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd="/", env=env,
                          timeout=SELF_TEST_SECONDS)


def decision(done: subprocess.CompletedProcess) -> tuple[str, str]:
    """("allow" or "deny" or "error", the reason)."""
    text = done.stdout.decode(errors="replace").strip()
    if done.returncode == 0 and not text:
        return "allow", ""
    try:
        said = json.loads(text)["hookSpecificOutput"]
        return str(said.get("permissionDecision")), str(said.get("permissionDecisionReason", ""))
    except (ValueError, KeyError, TypeError):
        return "error", (done.stderr.decode(errors="replace").strip() or text or f"exit {done.returncode}")[-300:]


def operator(socket_path: str, *argv: str) -> dict:
    from leash.core.wire.operator import request

    return request(socket_path, {"verb": "cli", "argv": list(argv)}, timeout=SELF_TEST_SECONDS)


def check_agent(user: str, command: str, socket_path: str) -> str | None:
    """Why ``user``'s hook does not work with leashd (one line), or None."""
    session = f"leash-self-test-{secrets.token_hex(4)}"
    payload = {"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "true"}, "cwd": "/"}
    try:
        first = decision(run_hook_as(user, command, payload))
        if first[0] != "allow":
            return f"agent user {user}: leash's hook did not allow a free session's call ({first[1] or first[0]})"
        operator(socket_path, "stop", session, "--reason", SELF_TEST_REASON)
        try:
            second = decision(run_hook_as(user, command, payload))
        finally:
            operator(socket_path, "resume", session, "--reason", SELF_TEST_REASON)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"agent user {user}: the self-test could not run ({exc})"
    except Exception as exc:  # the operator socket's own errors: said in one line
        return f"agent user {user}: the self-test could not reach leashd ({exc})"
    if second[0] != "deny" or SELF_TEST_REASON not in second[1]:
        return f"agent user {user}: leash's hook did not deny a stopped session's call ({second[1] or second[0]})"
    return None


def self_test(plan, settings_path: str, *, leash: list[str]) -> tuple[list[str], list[str]]:
    """(what passed, each agent user's problem) for ``plan``'s agent users;
    ``leash``: how to run leash (for a leashd of the test's own)."""
    from leash.core.wire.operator import answers

    if not plan.agent_users:
        return [], []
    command = managed_pre_tool_command(settings_path)
    if command is None:
        return [], [f"self-test: no leash PreToolUse hook in {settings_path}"]
    started, why = (None, "") if answers(plan.operator_socket) else _start_daemon(plan, leash)
    try:
        if not answers(plan.operator_socket):
            return [], [f"self-test: leashd does not answer on {plan.operator_socket}" + (f" ({why})" if why else "")]
        problems = [p for user in plan.agent_users if (p := check_agent(user, command, plan.operator_socket))]
    finally:
        if started is not None:
            started.terminate()
            try:
                started.wait(timeout=SELF_TEST_SECONDS)
            except subprocess.TimeoutExpired:
                started.kill()
                started.wait()
    passed = [f"agent user {user}: self-test passed (a free call allowed, a stopped session denied)"
              for user in plan.agent_users if not any(p.startswith(f"agent user {user}:") for p in problems)]
    return passed, problems


def _start_daemon(plan, leash: list[str]) -> tuple[subprocess.Popen | None, str]:
    """leashd as the leash user for the self-test; (None, why) when it does not come up."""
    from leash.core.wire.operator import answers

    entry = pwd.getpwnam(plan.user)
    env = {"PATH": "/usr/bin:/bin", "HOME": plan.home, "LEASH_HOME": plan.home, "USER": plan.user}
    proc = subprocess.Popen(leash + ["daemon", "--no-kennel"], env=env, user=entry.pw_uid,
                            group=entry.pw_gid, extra_groups=[], cwd="/", stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + DAEMON_START_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(plan.operator_socket) and answers(plan.operator_socket):
            proc.stderr.close()  # type: ignore[union-attr]  # (a PIPE: never None here)
            return proc, ""
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    _, said = proc.communicate()
    lines = [line for line in (said or "").splitlines() if line.strip()]
    return None, (lines[-1][-200:] if lines else f"exit {proc.returncode}")
