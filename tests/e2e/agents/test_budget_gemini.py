"""A reached spend cap in the real Gemini CLI: its BeforeModel hook, wired by
``leash install --agent gemini``, refuses the model request of a held session
so nothing more is spent, and a cap reached while the model thinks refuses
the next tool call and ends the loop. With leashd running, the usage the
stand-in answered (AfterModel's payloads) is what leash counts and prices,
and a cap that metered spend reaches holds the next model request. Runs as ``test_leash_gemini.py`` does
(the headless CLI against the loopback stand-in, a private HOME, a LEASH_HOME
of its own); skipped with npm's reason when the CLI cannot be installed."""
from __future__ import annotations

import json
import time
import uuid
from decimal import Decimal

import pytest

from leash.core.policy.prices import price
from leash.core.policy.usagelines import TokenUsage
from leash.core.store.files import FileBackend
from leash.core.store.records_budget import BudgetCounterRecord

from ...support.e2e.gemini_cli import HEADLESS_ARGS, STOPPED, run_gemini
from ...support.e2e.gemini_standin import GeminiStandin, shell, text, usage, with_usage, write_out
from ...support.e2e.harness import leashd as running_leashd
from ...support.e2e.rig import GeminiRig
from ...support.waiting import wait_for

pytestmark = pytest.mark.timeout(600)

CAP = '[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\nlimit_usd = 10\n'
FIGURE = "$10.42 of $10.00 spent"
WAIT_SECONDS = 20.0
# Distinct figures of every kind the API reports.
FIRST = usage(9_800, 140, cached=6_144, thoughts=380)
LAST = usage(10_450, 12, cached=8_192, thoughts=0)


def hold_the_fleet(rig: GeminiRig) -> None:
    """The meter's hold on the fleet bucket of cap "daily", written through the backend's budget unit."""

    now = time.time()
    counter = BudgetCounterRecord.of(dict(
        cap="daily", bucket="fleet", period=time.strftime("%Y-%m-%d", time.gmtime(now)), period_end=now + 86_400,
        unit="usd", used=10.42, estimated=False, raised_to=None, warned=[0.75, 0.95], held_since=now, held_use=10.42,
        released_at=None, released_by=None, updated_at=now))
    with FileBackend(str(rig.leash_home)).budget.unit(now=now) as unit:
        unit.put_counter(counter)


def test_a_held_sessions_prompt_is_refused_before_anything_is_sent(rig):
    (rig.leash_home / "config.toml").write_text(CAP)
    hold_the_fleet(rig)
    run = rig_run_unchecked(rig)
    assert rig.standin.requests == []
    assert not (rig.project / "out.txt").exists()
    assert any(e.get("type") == "error" and FIGURE in e.get("message", "") for e in run.events()), run.stdout


def rig_run_unchecked(rig: GeminiRig):
    """One ``gemini -p`` whose exit code and events the test judges itself."""
    with GeminiStandin([write_out(), text("done")]) as standin:
        rig.standin = standin
        run = run_gemini(rig.cli, "write out.txt", home=rig.home, cwd=rig.project, standin_url=standin.url,
                         args=HEADLESS_ARGS + ("--session-id", str(uuid.uuid4())))
    assert not standin.stray, standin.stray
    return run


def test_before_model_alone_refuses_the_model_request_of_a_held_session(rig):
    """With the prompt's hook (BeforeAgent) taken out, it is BeforeModel that
    meets the hold: the turn is aborted before the request is sent."""
    settings = rig.settings()
    del settings["hooks"]["BeforeAgent"]
    rig.settings_path.write_text(json.dumps(settings))
    (rig.leash_home / "config.toml").write_text(CAP)
    hold_the_fleet(rig)
    run = rig_run_unchecked(rig)
    # The model router's request (generateContent, no conversation) is not a
    # BeforeModel request: the CLI sends it first. The conversation's is refused.
    assert rig.standin.conversation() == [], [r.action for r in rig.standin.requests]
    assert not (rig.project / "out.txt").exists()
    blocked = [e["message"] for e in run.events() if e.get("type") == "error"]
    assert len(blocked) == 1 and blocked[0].startswith("Agent execution blocked: leash: budget cap 'daily'") \
        and FIGURE in blocked[0], run.stdout
    assert [e["status"] for e in run.events() if e.get("type") == "result"] == ["success"]


def test_a_cap_reached_while_the_model_thinks_refuses_the_call_and_ends_the_loop(rig):
    (rig.leash_home / "config.toml").write_text(CAP)
    rig.run("write out.txt", [write_out(), text("but I really must")], session_id=str(uuid.uuid4()),
            before={0: lambda: hold_the_fleet(rig)})
    assert not (rig.project / "out.txt").exists()
    assert rig.conversation_requests() == 1  # no model request after the refused call
    [event] = rig.stream_tool_results()
    assert event["output"].startswith(STOPPED) and FIGURE in event["output"], event


@pytest.fixture
def leashd(rig):
    with running_leashd(rig.leash_home, rig.env()) as daemon:
        yield daemon


def as_leash_counts(answered: list[dict], *, cache_seen: bool = False) -> dict[str, int]:
    """What leash should count of the ``usageMetadata`` answered: thoughts inside
    output (priced as output); the cached prompt tokens apart only when
    ``cache_seen``: Gemini CLI's AfterModel payload keeps only the prompt,
    candidates and total counts, so leash counts the cached tokens as input."""
    cached = sum(u.get("cachedContentTokenCount", 0) for u in answered) if cache_seen else 0
    return {"input": sum(u["promptTokenCount"] for u in answered) - cached, "cache_read": cached,
            "output": sum(u["candidatesTokenCount"] + u.get("thoughtsTokenCount", 0) for u in answered),
            "reasoning": sum(u.get("thoughtsTokenCount", 0) for u in answered)}


def priced(answered: list[tuple[str, dict]], *, cache_seen: bool = False) -> float:
    """The table's price of each (model, usage) answered, summed."""
    return float(sum((price(TokenUsage("gemini", model, **as_leash_counts([u], cache_seen=cache_seen))).usd
                      for model, u in answered), Decimal(0)))


def counted(rig: GeminiRig) -> dict[str, int] | None:
    rows = rig.leash_json("costs")
    return {key: sum(row[key] for row in rows) for key in ("input", "cache_read", "output", "reasoning")} \
        if rows else None


def answered_conversation(rig: GeminiRig) -> list[tuple[str, dict]]:
    """(model, usage) of each answer to the conversation: the responses AfterModel sees."""
    assert rig.standin is not None
    return [(model, spent) for conversation, model, spent in rig.standin.usages if conversation]


def test_leashd_counts_what_each_model_response_reported_and_prices_it_by_the_table(rig, leashd):
    """Gemini CLI's AfterModel hook hands leashd each response's usageMetadata:
    leash's count equals what the stand-in answered the conversation's
    requests, as far as the payload carries it (the cached part of the prompt
    is not passed on: counted at the input rate, an overestimate, never under)."""
    rig.run("write out.txt", [with_usage(write_out(), FIRST), with_usage(text("done"), LAST)])
    answered = answered_conversation(rig)
    assert [spent for _, spent in answered] == [FIRST, LAST], rig.standin.usages
    expected = as_leash_counts([spent for _, spent in answered])
    wait_for(lambda: counted(rig) == expected, WAIT_SECONDS, what=f"leash's count {expected} (not {counted(rig)})")
    (row,) = rig.leash_json("costs")
    assert row["key"] == rig.last.session_id and row["requests"] == 2, row
    assert row["usd"] == pytest.approx(priced(answered), rel=1e-3), (row, answered)
    assert row["usd"] > priced(answered, cache_seen=True)
    assert not row["estimated"]


def test_a_cap_reached_by_metered_spend_holds_the_next_model_request(rig, leashd):
    """No hold written by the test: the first response's spend, metered by
    leashd from its AfterModel payload, reaches the cap; the model is asked
    nothing more (the call, or else the model request after it, is refused
    naming the cap: the meter runs off the hook's path, so which one meets the
    hold is a race; the call sleeps, so the next model request always does)."""
    (rig.leash_home / "config.toml").write_text(
        '[[budget.cap]]\nname = "spent"\nscope = "fleet"\nperiod = "day"\nlimit_usd = 0.0001\n')
    run = rig.run("write out.txt", [with_usage(shell("sleep 2; echo hi > out.txt", "write out.txt"), FIRST),
                                    with_usage(text("done"), LAST)], session_id=str(uuid.uuid4()))
    answered = answered_conversation(rig)
    assert priced(answered) > 0.0001, answered  # the first response alone is over the cap
    assert rig.conversation_requests() == 1, rig.standin.requests  # nothing asked after the cap was reached
    refusals = [event.get("output", "") for event in rig.stream_tool_results()] + \
               [event.get("message", "") for event in run.events() if event.get("type") == "error"]
    assert any("budget cap 'spent' is reached" in refusal for refusal in refusals), run.stdout
    assert [row["held"] for row in rig.leash_json("budget")] == [True]
    wait_for(lambda: counted(rig) == as_leash_counts([FIRST]),
             WAIT_SECONDS, what="the count of the response that reached the cap")
