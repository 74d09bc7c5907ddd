"""Each agent CLI's record read into token usage: Claude Code's transcript
lines (a real capture), Codex CLI's running totals and the spend between
them, Gemini CLI's AfterModel payload (a real capture), and odd input of
every kind read as "not a usage line" or MALFORMED, never an exception."""
from __future__ import annotations

import json

import pytest

from leash.core.policy.usagelines import (
    MALFORMED,
    TokenUsage,
    claude_code_usage,
    codex_delta,
    codex_model,
    codex_totals,
    gemini_usage,
)

from ..support.checkout import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
TRANSCRIPT = FIXTURES / "claude_code_transcript" / "session.jsonl"
SUBAGENT = FIXTURES / "claude_code_transcript" / "session" / "subagents" / "agent-a0000000000000001.jsonl"
ROLLOUT = FIXTURES / "codex_cli_rollout" / "rollout.jsonl"
AFTER_MODEL = FIXTURES / "gemini_cli" / "AfterModel.json"


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assistant_line(**usage) -> dict:
    """The first assistant line of the captured transcript with other usage."""
    line = next(line for line in lines(TRANSCRIPT) if line["type"] == "assistant")
    return dict(line, message=dict(line["message"], usage=usage))


def test_a_captured_claude_code_transcript_reads_one_usage_per_content_block_with_the_message_as_key():
    read = [claude_code_usage(line) for line in lines(TRANSCRIPT)]
    usages = [usage for usage in read if usage is not None]
    assert [(u.input, u.output, u.cache_write, u.cache_read) for u in usages] == [
        (1100, 11, 200, 50), (1100, 11, 200, 50), (1200, 12, 400, 100), (1400, 14, 800, 200)]
    assert usages[0].key == usages[1].key != usages[2].key  # text and tool call of one message
    assert usages[0].key == "msg_standin_2\x1freq_standin_0002"
    assert {u.model for u in usages} == {"claude-opus-4-8"} and {u.cli for u in usages} == {"claude"}
    assert not any(u.sidechain for u in usages)
    assert usages[0].tokens == 1100 + 11 + 200 + 50


def test_a_subagents_own_transcript_is_read_as_sidechain():
    usages = [u for u in map(claude_code_usage, lines(SUBAGENT)) if u is not None]
    assert [(u.input, u.output, u.sidechain) for u in usages] == [(1300, 13, True)]


def test_a_claude_code_line_without_request_id_is_keyed_by_its_message_and_without_either_by_its_uuid():
    line = assistant_line(input_tokens=3, output_tokens=4)
    del line["requestId"]
    assert claude_code_usage(line).key == "msg_standin_2\x1f"
    line["message"] = {key: value for key, value in line["message"].items() if key != "id"}
    assert claude_code_usage(line).key == f"uuid\x1f{line['uuid']}"
    del line["uuid"]
    assert claude_code_usage(line).key == ""


@pytest.mark.parametrize("usage", [[1, 2], {"input_tokens": "3", "output_tokens": 4},
                                   {"input_tokens": 3}, {"input_tokens": True, "output_tokens": 4},
                                   {"input_tokens": -1, "output_tokens": 4}, {"input_tokens": 1.5, "output_tokens": 4},
                                   {"input_tokens": 10 ** 13, "output_tokens": 4},
                                   {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": "many"}])
def test_claude_code_usage_whose_counts_are_not_counts_is_malformed(usage):
    line = assistant_line()
    line["message"]["usage"] = usage
    assert claude_code_usage(line) is MALFORMED


@pytest.mark.parametrize("value", [None, 3, "assistant", [], {}, {"type": "assistant"},
                                   {"type": "assistant", "message": "text"}, {"type": "user", "message": {"usage": {}}},
                                   {"type": "assistant", "message": {"content": []}}])
def test_what_is_no_usage_line_is_none_for_every_reader(value):
    assert claude_code_usage(value) is None
    assert codex_totals(value) is None and codex_model(value) is None
    assert gemini_usage(value) is None


def test_codex_running_totals_read_with_cached_input_apart_and_reasoning_inside_output():
    rollout = lines(ROLLOUT)
    totals = [t for t in map(codex_totals, rollout) if t is not None]
    assert [(t.input, t.cache_read, t.output, t.reasoning) for t in totals] == [
        (4000, 1000, 300, 200), (4000, 1000, 300, 200), (6000, 5000, 420, 250), (8000, 10000, 500, 260)]
    assert [m for m in map(codex_model, rollout) if m] == ["gpt-5-codex", "gpt-5.1-codex-mini"]
    rate_limits_only = rollout[3]
    assert rate_limits_only["payload"]["info"] is None and codex_totals(rate_limits_only) is None


def test_codex_spend_between_totals_adds_nothing_for_a_repeat_and_all_after_a_restart():
    first, again, later, last = [t for t in map(codex_totals, lines(ROLLOUT)) if t is not None]
    assert codex_delta(None, first) == first
    assert codex_delta(first, again).counts() == [0, 0, 0, 0, 0]
    assert codex_delta(again, later).counts() == [2000, 120, 0, 4000, 50]
    assert codex_delta(later, last).counts() == [2000, 80, 0, 5000, 10]
    restarted = TokenUsage("codex", input=10, output=2, cache_read=1)
    assert codex_delta(last, restarted) == restarted
    # Codex's fill_to_context_window: every count zeroed but total_tokens; the next total grows from there.
    filled = codex_totals({"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
                              "reasoning_output_tokens": 0, "total_tokens": 272000}}}})
    assert codex_delta(last, filled).counts() == [0, 0, 0, 0, 0]


@pytest.mark.parametrize("info", ["none", [], {"total_token_usage": None},
                                  {"total_token_usage": {"input_tokens": 1}},
                                  {"total_token_usage": {"input_tokens": 1, "output_tokens": "2"}}])
def test_codex_token_count_whose_totals_are_not_counts_is_malformed(info):
    assert codex_totals({"type": "event_msg", "payload": {"type": "token_count", "info": info}}) is MALFORMED


def test_a_captured_gemini_after_model_payload_reads_its_last_chunks_usage_and_the_requests_model():
    payload = json.loads(AFTER_MODEL.read_text())
    usage = gemini_usage(payload)
    assert (usage.cli, usage.model, usage.input, usage.output, usage.cache_read, usage.reasoning) == (
        "gemini", "gemini-3.8-flash", 11798, 30, 0, 0)
    assert usage.key == "<SESSION_ID>\x1f<TIMESTAMP>"


def test_a_gemini_chunk_before_the_last_is_no_usage_line():
    payload = json.loads(AFTER_MODEL.read_text())
    for candidate in payload["llm_response"]["candidates"]:
        del candidate["finishReason"]
    assert gemini_usage(payload) is None


def test_gemini_cached_and_thinking_tokens_when_passed_and_the_remainder_as_thinking_when_not():
    payload = json.loads(AFTER_MODEL.read_text())
    payload["llm_response"]["usageMetadata"] = {"promptTokenCount": 1000, "candidatesTokenCount": 50,
                                                "cachedContentTokenCount": 600, "thoughtsTokenCount": 70,
                                                "totalTokenCount": 1120}
    usage = gemini_usage(payload)
    assert (usage.input, usage.cache_read, usage.output, usage.reasoning) == (400, 600, 120, 70)
    payload["llm_response"]["usageMetadata"] = {"promptTokenCount": 1000, "candidatesTokenCount": 50,
                                                "totalTokenCount": 1120}
    usage = gemini_usage(payload)
    assert (usage.input, usage.cache_read, usage.output, usage.reasoning) == (1000, 0, 120, 70)


@pytest.mark.parametrize("metadata", [[], "x", {"promptTokenCount": "1"}, {"totalTokenCount": -5}])
def test_gemini_usage_whose_counts_are_not_counts_is_malformed(metadata):
    payload = json.loads(AFTER_MODEL.read_text())
    payload["llm_response"]["usageMetadata"] = metadata
    assert gemini_usage(payload) is MALFORMED
