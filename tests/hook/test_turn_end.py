"""A halt at a blocking severity ends the agent's turn the way a stop does
(PostToolBatch ``continue: false``), unless ``[gate] end_turn_on_halt = false``;
a halt below the blocking severity does not."""
from __future__ import annotations

import json
from pathlib import Path

from leash.core.hook.hooks import answer
from leash.core.state.halts.api import record_halt

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"
SESSION = "00000000-0000-4000-8000-000000000001"
T0 = 1_800_000_000.0


def post_tool_batch(home) -> str:
    data = json.loads((FIXTURES / "PostToolBatch.json").read_text())
    out, _, code = answer("post-tool-batch", json.dumps(data).encode(), home=str(home), env={}, now=T0 + 1)
    assert code == 0
    return out


def halt(home, severity: str) -> None:
    record_halt({"session_token": SESSION, "halt_type": "security", "severity": severity,
                 "condition_name": "secrets_exposure", "description": "a key in a command"}, home=str(home), now=T0)


def test_a_critical_halt_ends_the_turn(home):
    assert post_tool_batch(home) == ""
    halt(home, "critical")
    answer_ = json.loads(post_tool_batch(home))
    assert answer_["continue"] is False
    assert "halted until the operator acknowledges" in answer_["stopReason"]


def test_a_low_halt_lets_the_turn_go_on(home):
    halt(home, "low")
    assert post_tool_batch(home) == ""


def test_end_turn_on_halt_false_keeps_the_turn(home):
    Path(home).mkdir(mode=0o700, exist_ok=True)
    (Path(home) / "config.toml").write_text("[gate]\nend_turn_on_halt = false\n")
    halt(home, "critical")
    assert post_tool_batch(home) == ""
