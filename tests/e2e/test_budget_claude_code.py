"""Spend metered from the real Claude Code (``claude -p`` against the loopback
stand-in, whose answers carry usage the test chose), with leashd running:
leash's count equals what the stand-in returned, priced by the table within
0.1 %, and agrees with Claude Code's own ``total_cost_usd``; a cap reached
mid-run holds the session at its next call and ends the turn (no further
model request); ``leash budget raise`` lets the next prompt run; a subagent's
own requests (the ``Agent`` tool, its transcript in ``subagents/``) count."""
from __future__ import annotations

import json
import subprocess
from decimal import Decimal

import pytest

from leash.core.policy.prices import price
from leash.core.policy.usagelines import TokenUsage

from ..support.e2e.harness import LEASH, claude_env, run_claude
from ..support.e2e.harness import leashd as running_leashd
from ..support.e2e.standin import MODEL, StandInServer, bash, text, tool_use
from ..support.waiting import wait_for

WAIT_SECONDS = 20.0
ZERO = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def usage_of(n: int) -> dict:
    """The nth main answer's usage: distinct figures of every kind."""
    return {"input_tokens": 2000 + 100 * n, "output_tokens": 40 + n, "cache_creation_input_tokens": 300 * (n + 1),
            "cache_read_input_tokens": 500 * n}


def priced(usages: list[dict], model: str) -> float:
    return float(sum((price(TokenUsage("claude", model, u["input_tokens"], u["output_tokens"],
                                       u["cache_creation_input_tokens"], u["cache_read_input_tokens"])).usd
                      for u in usages), Decimal(0)))


@pytest.fixture
def leashd(agent):
    with running_leashd(agent.home) as daemon:
        yield daemon


def leash_json(agent, *args: str):
    done = subprocess.run([LEASH, "--home", str(agent.home), *args, "--json"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout)


def run(agent, script, prompt: str, *, before=None):
    with StandInServer(script) as standin:
        standin.usage, standin.other_usage = usage_of, ZERO
        standin.before.update(before or {})
        env = claude_env(agent.base, standin.url, LEASH_HOME=str(agent.home))
        done = run_claude(agent.claude, agent.project, prompt, env,
                          args=("--permission-mode", "bypassPermissions", "--output-format", "json"))
    assert not done.timed_out, done
    agent.last = done
    return done, standin


def costs(agent) -> list[dict]:
    return leash_json(agent, "costs")


def test_the_count_equals_the_stand_ins_usage_and_claude_codes_own_cost(agent, leashd):
    done, standin = run(agent, [[text("Listing."), bash("ls")], [text("done")]], "list the files")
    assert len(standin.usages) == 2
    expected_tokens = [sum(u[k] for u in standin.usages) for k in
                       ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    wait_for(lambda: costs(agent) and costs(agent)[0]["requests"] == 2,
             WAIT_SECONDS, what="leash's count of both requests")
    (row,) = costs(agent)
    assert [row["input"], row["output"], row["cache_write"], row["cache_read"]] == expected_tokens
    model = standin.model_requests[0].body.get("model") or MODEL
    assert row["usd"] == pytest.approx(priced(standin.usages, model), rel=1e-3)
    own = done.json().get("total_cost_usd")
    assert own is not None and row["usd"] == pytest.approx(own, rel=1e-3), (row["usd"], own, model)


def test_a_cap_reached_mid_run_holds_the_next_call_ends_the_turn_and_a_raise_lets_it_go_on(agent, leashd):
    first = priced([usage_of(0)], MODEL)
    (agent.home / "config.toml").write_text(
        f'[[budget.cap]]\nname = "run-cap"\nscope = "fleet"\nperiod = "day"\nlimit_usd = {first * 0.5:.8f}\n')

    def held() -> bool:
        return any(row["held"] for row in leash_json(agent, "budget"))

    script = [[text("First."), bash("touch marker-one")], [text("Second."), bash("touch marker-two")],
              [text("done")]]
    # Before the second model request is answered, the first answer's spend is metered and holds the fleet.
    done, standin = run(agent, script, "touch two markers", before={1: lambda: wait_for(held,
                                                                                        WAIT_SECONDS, what="the hold")})
    assert (agent.project / "marker-one").exists()
    assert not (agent.project / "marker-two").exists()  # held at its next call
    # The hold lands while the first call's hooks run (PostToolBatch then ends the turn: one request) or
    # just after (the second call is refused and the turn ends: two). Never a request after a refusal.
    assert len(standin.model_requests) in (1, 2), standin.model_requests
    if len(standin.model_requests) == 2:
        assert any("budget cap 'run-cap' is reached" in t for t in agent.tool_results()), agent.tool_results()
    refused, _ = run(agent, [[text("Again."), bash("touch marker-three")], [text("done")]], "once more")
    assert not (agent.project / "marker-three").exists()  # a held fleet: the prompt is refused
    subprocess.run([LEASH, "--home", str(agent.home), "budget", "raise", "run-cap", "--to", "100",
                    "--reason", "let it finish"], check=True, capture_output=True, timeout=60)
    assert not held()
    run(agent, [[text("Again."), bash("touch marker-three")], [text("done")]], "once more")
    assert (agent.project / "marker-three").exists()


def test_a_subagents_usage_counts(agent, leashd):
    helper = tool_use("Agent", {"description": "look around", "prompt": "say hi", "subagent_type": "general-purpose"})
    done, standin = run(agent, [[text("Asking a helper."), helper], [text("hi from the helper")], [text("done")]],
                        "ask a helper")
    assert len(standin.usages) == 3  # the main turn, the subagent's own request, the main turn again
    session_id = done.json()["session_id"]
    (helper_transcript,) = (agent.base / "claude-home" / ".claude" / "projects").glob(
        f"*/{session_id}/subagents/agent-*.jsonl")
    assert '"input_tokens":%d' % standin.usages[1]["input_tokens"] in helper_transcript.read_text().replace(" ", "")
    wait_for(lambda: costs(agent) and costs(agent)[0]["requests"] == 3,
             WAIT_SECONDS, what="leash's count of the subagent's request")
    (row,) = costs(agent)
    assert row["input"] == sum(u["input_tokens"] for u in standin.usages)
    models = {request.body.get("model") or MODEL for request in standin.model_requests}
    assert len(models) == 1, models  # the general-purpose subagent asks for the main model
    assert row["usd"] == pytest.approx(priced(standin.usages, models.pop()), rel=1e-3)
    own = done.json().get("total_cost_usd")
    assert own is not None and row["usd"] == pytest.approx(own, rel=1e-3), (row["usd"], own)
