"""The approvals floor never loosens: a config.toml that does not parse
cannot say which calls need a human, so every call needs one — held as an
approval through leashd, denied without it (saying why)."""
from __future__ import annotations

import json
from pathlib import Path

from leash.core.hook.hooks import answer
from leash.core.views.protocol import StopProtocol

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"


def pre_tool_use(home) -> dict:
    data = json.loads((FIXTURES / "PreToolUse.json").read_text())
    out, _, code = answer("pre-tool-use", json.dumps(data).encode(), home=str(home), env={}, now=1_800_000_000.0)
    assert code == 0
    return json.loads(out)["hookSpecificOutput"] if out.strip() else {}


def test_a_broken_config_holds_every_call_rather_than_dropping_the_ask_rules(home):
    StopProtocol(home)
    (Path(home) / "config.toml").write_text('[approvals]\nask = ["Bash(git push*)"\n')  # a missing bracket
    said = pre_tool_use(home)
    assert said.get("permissionDecision") == "deny"
    reason = said["permissionDecisionReason"]  # what the operator must mend, not "start leash daemon"
    assert f"config.toml cannot be used: {home}/config.toml:2: key 'approvals.ask'" in reason, reason
    assert "leash doctor" in reason and "start it" not in reason
    (Path(home) / "config.toml").write_text('[approvals]\nask = ["Bash(git push*)"]\n')
    assert pre_tool_use(home) == {}  # mended: a call no rule names runs
