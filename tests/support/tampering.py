"""The tampering tests' scene and verdicts: a home with one session stopped
and one entity locked, a project wired with leash's hooks, and a command (or
any tool call) judged through the real gate as the running agent's
(test_tampering, test_tampering_reach, bench/policy_audit.py)."""
from __future__ import annotations

import json
import os

from leash.core.hook.gate import Gate
from leash.core.views.protocol import StopProtocol

KENNEL_PID = "4194300"  # never signalled: commands are only judged


def build_scene(home, tmp_path) -> dict:
    """The home at $HOME/leash-home; session "other" stopped, "ezra" locked,
    a project with leash's hooks in .claude/settings.json."""
    protocol = StopProtocol(home)
    protocol.acknowledge_stop("ops", "other", "operator stop")
    protocol.hands_off("ezra", reason="migrating", source="ops")
    (home / "kennel.json").write_text(json.dumps({"pid": int(KENNEL_PID), "host": "h"}))
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    hooks = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "leash hook pre-tool-use"}]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(hooks, indent=2))
    (project / "home-link").symlink_to(home)
    env = {"HOME": str(tmp_path), "LEASH_HOME": str(home), "PATH": os.environ.get("PATH", "")}
    return {"home": home, "project": project, "env": env, "tmp": tmp_path}


def judge(scene, command=None, tool="Bash", tool_input=None):
    """The gate's verdict on the agent's call (``command`` in Bash, or ``tool`` with ``tool_input``)."""
    tool_input = tool_input if tool_input is not None else {"command": command}
    return Gate(scene["home"]).check("agent", tool, tool_input, cwd=str(scene["project"]), env=scene["env"])


def assert_tamper_blocked(scene, verdict):
    """Denied as tampering for a human to lift, logged, the agent halted; the stop and the lock still hold."""
    assert not verdict.allow
    assert "supervisor_tampering" in verdict.reason and "human" in verdict.reason.lower(), verdict
    lines = [e for e in StopProtocol(scene["home"]).read_ack_log() if e["event"] == "tamper_blocked"]
    assert lines and lines[-1]["session_id"] == "agent"
    gate = Gate(scene["home"])
    assert gate.check("other").rule == "session_stop"
    assert StopProtocol(scene["home"]).is_hands_off("ezra")
    after = gate.check("agent", "Bash", {"command": "make"}, cwd=str(scene["project"]), env=scene["env"])
    assert after.rule == "session_halted", after
