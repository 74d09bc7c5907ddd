"""leashd meters spend off the hook's path: a session's PostToolUse names it,
the meter thread reads its transcript (and its subagents'), and a reached cap
holds the session at its next call — all through the real agent socket."""
from __future__ import annotations

import shutil
import time

import pytest

from leash.core.policy.prices import price
from leash.core.state.meterread import claude_code_files, read_new

from ..support.checkout import ROOT
from ..support.daemon import exchange, hook_request, sockets, start_daemon

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code_transcript"
WAIT_SECONDS = 30.0


def fixture_price(path) -> float:
    return float(sum(price(u).usd for f in claude_code_files(path) for u in read_new(f, cli="claude").usages))


def transcript(tmp_path, name: str):
    shutil.copy(FIXTURE / "session.jsonl", tmp_path / f"{name}.jsonl")
    shutil.copytree(FIXTURE / "session", tmp_path / name)
    return tmp_path / f"{name}.jsonl"


def payload(session: str, path, event: str = "PostToolUse", **more) -> dict:
    return {"session_id": session, "transcript_path": str(path), "cwd": "/", "hook_event_name": event,
            "tool_name": "Bash", "tool_input": {"command": "ls"}, **more}


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


def metered_passes(meter) -> list[list[str]]:
    """The sessions each of ``meter``'s passes was handed, appended as each pass ends
    (the meter's own ``run_once`` still does the work)."""
    passes: list[list[str]] = []
    run_once = meter.run_once

    def recorded(sessions, payloads, *, whole_round):
        run_once(sessions, payloads, whole_round=whole_round)
        passes.append(list(sessions))

    meter.run_once = recorded
    return passes


def test_a_post_tool_use_hook_has_leashd_meter_the_sessions_transcript(home, leashd, tmp_path):
    # A pass is known by the sessions it was handed: a count of passes read after
    # the Stop's reply may already hold the pass it woke, and wait 30 s for the next.
    passes = metered_passes(leashd.meter)
    agent, _ = sockets(home)
    path = transcript(tmp_path, "one")
    exchange(agent, hook_request("post-tool-use", payload("one", path, tool_response={"stdout": ""})))
    wait_for(lambda: any("one" in metered for metered in passes), "the meter's pass over session one")
    charged = sum(row.usd for row in leashd.backend.budget.spend(session_id="one"))
    assert charged == pytest.approx(fixture_price(path), rel=1e-6)
    exchange(agent, hook_request("stop", payload("one", path, "Stop")))  # nothing new: charged once
    wait_for(lambda: sum("one" in metered for metered in passes) >= 2, "a second pass over session one")
    assert sum(row.usd for row in leashd.backend.budget.spend(session_id="one")) == pytest.approx(charged, rel=1e-9)


def test_a_cap_reached_through_leashd_holds_the_next_call(home, leashd, tmp_path):
    (home / "config.toml").write_text('[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\n'
                                      'limit_usd = 0.0001\n')
    agent, _ = sockets(home)
    path = transcript(tmp_path, "two")
    exchange(agent, hook_request("post-tool-use", payload("two", path, tool_response={"stdout": ""})))
    wait_for(lambda: leashd.backend.budget.holds(), "the hold")
    (reply,) = exchange(agent, hook_request("pre-tool-use", payload("two", path, "PreToolUse")))
    assert "budget cap 'daily' is reached" in reply["stdout"] and '"deny"' in reply["stdout"]


def test_a_gemini_model_response_is_metered_from_its_payload(home, leashd):
    agent, _ = sockets(home)
    response = {"session_id": "g1", "hook_event_name": "AfterModel", "timestamp": "2026-11-28T12:00:00Z",
                "cwd": "/", "llm_request": {"model": "gemini-2.5-pro"},
                "llm_response": {"candidates": [{"finishReason": "STOP"}],
                                 "usageMetadata": {"promptTokenCount": 2000, "candidatesTokenCount": 50,
                                                   "totalTokenCount": 2050}}}
    exchange(agent, hook_request("gemini-after-model", response))
    wait_for(lambda: leashd.backend.budget.spend(session_id="g1"), "the Gemini session's spend")
    (row,) = leashd.backend.budget.spend(session_id="g1")
    assert (row.input, row.output, row.model) == (2000, 50, "gemini-2.5-pro")


def test_a_reading_that_fails_is_tried_again_without_another_hook(home, leashd, tmp_path):
    agent, _ = sockets(home)
    path = tmp_path / "later.jsonl"
    path.mkdir()  # not a file yet: the reading fails (IsADirectoryError)
    exchange(agent, hook_request("post-tool-use", payload("later", path, tool_response={"stdout": ""})))
    wait_for(lambda: "read" in leashd.meter.problems, "the failed reading")
    path.rmdir()
    shutil.copy(FIXTURE / "session.jsonl", path)
    wait_for(lambda: leashd.backend.budget.spend(session_id="later"), "the retried reading")
