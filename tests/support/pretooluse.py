"""A PreToolUse call as Claude Code sends it, and what a deny looks like on
the hook's stdout (Claude Code's PreToolUse protocol)."""
from __future__ import annotations

import json


def payload(session_id="sess_123", tool="Bash", tool_input=None, cwd="/tmp", **extra) -> bytes:
    """The hook's stdin for one call (``ls`` in Bash unless told)."""
    body = {"session_id": session_id, "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": tool_input if tool_input is not None else {"command": "ls"}, "cwd": cwd}
    body.update(extra)
    return json.dumps(body).encode()


def assert_denied(result, *fragments):
    """``result`` (a ``CliResult``) is one deny whose reason holds every fragment; returns the reason."""
    assert result.code == 0, result
    decision = json.loads(result.out)
    assert set(decision) == {"hookSpecificOutput"}
    output = decision["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert output["permissionDecision"] == "deny"
    for fragment in fragments:
        assert fragment in output["permissionDecisionReason"]
    return output["permissionDecisionReason"]
