"""Spend metered from the real Codex CLI (``codex exec`` against the loopback
stand-in, whose responses carry usage the test chose: input with a cached
part, output with a reasoning part), with leashd running for the rig's home:
leash reads Codex's rollout (its ``token_count`` events) after the session's
hooks and counts exactly what the stand-in answered, priced by the table
within 0.1 %; a cap reached mid-run holds the session at its next tool call
(a PreToolUse refusal naming the cap), after which Codex asks the model once
more (with the refusal) and nothing else; the held session's next prompt is
refused before any request; a raise lets the next prompt run."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from leash.core.policy.prices import price
from leash.core.policy.usagelines import TokenUsage

from ...support.e2e.codex_standin import shell, text, usage, with_usage
from ...support.e2e.harness import leashd as running_leashd
from ...support.waiting import wait_for

pytestmark = pytest.mark.timeout(600)
WAIT_SECONDS = 20.0
CAP = "codex-cap"
REFUSED = "Command blocked by PreToolUse hook: "
# Distinct figures of every kind the Responses API reports.
FIRST = usage(12_400, 930, cached=8_200, reasoning=410)
SECOND = usage(14_100, 77, cached=12_288, reasoning=31)
LAST = usage(15_350, 64, cached=13_056, reasoning=0)


@pytest.fixture
def leashd(wired):
    with running_leashd(wired.leash_home, wired.env()) as daemon:
        yield daemon


def as_leash_counts(answered: list[dict]) -> dict[str, int]:
    """What leash should count of the Responses usages ``answered``: cached
    input apart from the rest, reasoning inside output, no cache writes."""
    return {"input": sum(u["input_tokens"] - u["input_tokens_details"]["cached_tokens"] for u in answered),
            "cache_read": sum(u["input_tokens_details"]["cached_tokens"] for u in answered),
            "output": sum(u["output_tokens"] for u in answered),
            "reasoning": sum(u["output_tokens_details"]["reasoning_tokens"] for u in answered), "cache_write": 0}


def priced(answered: list[dict], model: str) -> float:
    """The table's price of each response, summed."""
    return float(sum((price(TokenUsage("codex", model, **{k: v for k, v in as_leash_counts([u]).items()})).usd
                      for u in answered), Decimal(0)))


def costs(wired) -> list[dict]:
    return json.loads(wired.leash("costs", "--json").stdout)


def counted(wired) -> dict[str, int] | None:
    rows = costs(wired)
    return {key: sum(row[key] for row in rows) for key in ("input", "cache_read", "output", "reasoning",
                                                           "cache_write")} if rows else None


def held(wired) -> bool:
    return any(row["held"] for row in json.loads(wired.leash("budget", "--json").stdout))


def test_leash_counts_what_codex_was_answered_and_prices_it_by_the_table(wired, leashd):
    run = wired.run([with_usage(shell("echo hi > out.txt"), FIRST), with_usage(text("done"), LAST)])
    requests, answered = zip(*wired.api.usages, strict=True)
    assert answered[:2] == (FIRST, LAST), answered  # nothing else was asked in between
    expected = as_leash_counts(list(answered))
    wait_for(lambda: counted(wired) == expected, WAIT_SECONDS, what=f"leash's count {expected}")
    (row,) = costs(wired)
    assert row["key"] == run.session_id
    model = requests[0].body["model"]
    assert row["usd"] == pytest.approx(priced(list(answered), model), rel=1e-3), (row, model)
    assert not row["estimated"]


def test_a_cap_reached_mid_run_holds_the_next_call_and_a_raise_lets_the_next_prompt_run(wired, leashd):
    model = "gpt-5.5"
    first = priced([FIRST], model)
    (wired.leash_home / "config.toml").write_text(
        f'[[budget.cap]]\nname = "{CAP}"\nscope = "fleet"\nperiod = "day"\nlimit_usd = {first * 0.5:.8f}\n')
    script = [with_usage(shell("echo one > one.txt"), FIRST), with_usage(shell("echo two > two.txt"), SECOND),
              with_usage(text("done"), LAST)]
    # Before the second request is answered, the first response's spend is metered and holds the fleet.
    wired.run(script, before={1: lambda request: wait_for(lambda: held(wired), WAIT_SECONDS, what="the hold")})
    assert wired.api.turns[0].body["model"] == model
    assert (wired.project / "one.txt").exists()
    assert not (wired.project / "two.txt").exists()  # held at its next call
    outputs = wired.outputs()
    assert len(outputs) == 2 and outputs[1].startswith(REFUSED) and f"budget cap '{CAP}' is reached" in outputs[1], \
        outputs
    # Codex asks once more, with the refusal, and is answered with text: nothing after that.
    assert len(wired.api.turns) == 3, wired.api.turns
    answered = [spent for _, spent in wired.api.usages]
    wait_for(lambda: counted(wired) == as_leash_counts(answered), WAIT_SECONDS, what="leash's count of every response")

    wired.run([shell("echo three > three.txt"), text("done")], played=False)
    assert not (wired.project / "three.txt").exists()  # a held fleet: the prompt is refused
    assert len(wired.api.usages) == len(answered)  # before any model request
    wired.leash("budget", "raise", CAP, "--to", "100", "--reason", "let it finish")
    assert not held(wired)
    wired.run([shell("echo three > three.txt"), text("done")])
    assert (wired.project / "three.txt").exists()
