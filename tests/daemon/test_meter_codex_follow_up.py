"""Codex CLI writes a response's ``token_count`` to its rollout only after
the response's tool call is done: just after its PostToolUse hook is
answered. leashd reads the rollout again a moment after that hook, so the
response's spend is counted (and a cap it reaches holds the next call)
without waiting for another hook — through the real agent socket."""
from __future__ import annotations

import json
import time

import pytest

from ..support.daemon import exchange, hook_request, sockets, start_daemon

WAIT_SECONDS = 10.0
TURN_CONTEXT = {"timestamp": "2026-11-28T12:00:00.000Z", "type": "turn_context", "payload": {"model": "gpt-5"}}
TOKEN_COUNT = {"timestamp": "2026-11-28T12:00:01.000Z", "type": "event_msg", "payload": {
    "type": "token_count", "info": {"total_token_usage": {
        "input_tokens": 12_000, "cached_input_tokens": 8_000, "output_tokens": 900, "reasoning_output_tokens": 400,
        "total_tokens": 12_900}}}}


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_SECONDS} s"
        time.sleep(0.02)


@pytest.fixture
def leashd(home):
    running = start_daemon(home, line_deadline=0.5)
    yield running
    running.close()


def test_the_token_count_written_after_codexs_post_tool_use_is_counted_without_another_hook(home, leashd,
                                                                                             tmp_path):
    (home / "config.toml").write_text('[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\n'
                                      'limit_usd = 0.001\n')
    agent, _ = sockets(home)
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(json.dumps(TURN_CONTEXT) + "\n")
    payload = {"session_id": "cx1", "transcript_path": str(rollout), "cwd": "/", "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": "done"}
    passes = leashd.meter.passes
    exchange(agent, hook_request("codex-post-tool-use", payload))
    wait_for(lambda: leashd.meter.passes > passes, "the reading after the hook")
    assert not leashd.backend.budget.spend(session_id="cx1")  # the response's count is not written yet
    with rollout.open("a") as out:  # as Codex writes it, once the tool's output is recorded
        out.write(json.dumps(TOKEN_COUNT) + "\n")
    wait_for(lambda: leashd.backend.budget.spend(session_id="cx1"), "the response's spend")
    (row,) = leashd.backend.budget.spend(session_id="cx1")
    assert (row.input, row.cache_read, row.output, row.reasoning) == (4_000, 8_000, 900, 400)
    wait_for(lambda: leashd.backend.budget.holds(), "the hold")
    pre_tool_use = {**payload, "hook_event_name": "PreToolUse"}
    del pre_tool_use["tool_response"]
    (reply,) = exchange(agent, hook_request("codex-pre-tool-use", pre_tool_use))
    assert reply["code"] == 2 and "budget cap 'daily' is reached" in reply["stderr"], reply  # Codex's refusal
