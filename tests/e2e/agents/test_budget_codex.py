"""Spend metered from the real Codex CLI (``codex exec`` against the loopback
stand-in, every response carrying 10 input and 5 output tokens), with leashd
running for the rig's home: leash reads Codex's rollout (its ``token_count``
events) and counts what the stand-in returned; a reached cap refuses the
session's next run; a raise lets the next run's call through. (Codex writes
a response's ``token_count`` to its rollout at its own pace, so a hold
within one run is not asserted here: Claude Code's test shows that.)"""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from leash.core.policy.prices import price
from leash.core.policy.usagelines import TokenUsage

from ..harness import LEASH
from .codex_standin import shell, text

pytestmark = pytest.mark.timeout(600)
INPUT, OUTPUT = 10, 5  # what the stand-in's every response reports
WAIT_SECONDS = 20.0


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_SECONDS} s"
        time.sleep(0.1)


@pytest.fixture
def leashd(wired):
    env = {**wired.env(), "LEASH_HOME": str(wired.leash_home)}
    daemon = subprocess.Popen([LEASH, "daemon", "--no-kennel"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (wired.leash_home / "run" / "agent.sock").exists():
        assert daemon.poll() is None and time.monotonic() < deadline, "leash daemon did not start"
        time.sleep(0.05)
    yield daemon
    daemon.send_signal(signal.SIGTERM)
    daemon.communicate(timeout=30)


def costs(wired) -> list[dict]:
    return json.loads(wired.leash("costs", "--json").stdout)


def test_leash_counts_what_codex_was_answered(wired, leashd):
    run = wired.run([shell("echo hi > out.txt"), text("done")])
    turns = len(wired.api.turns)
    assert turns >= 2
    wait_for(lambda: costs(wired) and costs(wired)[0]["input"] == INPUT * turns, "leash's count")
    (row,) = costs(wired)
    assert row["key"] == run.session_id and (row["input"], row["output"]) == (INPUT * turns, OUTPUT * turns)
    model = json.loads(wired.leash("costs", "--by", "model", "--json").stdout)[0]["key"]
    expected = float(price(TokenUsage("codex", model, INPUT * turns, OUTPUT * turns)).usd)
    assert row["usd"] == pytest.approx(expected, rel=1e-3)


def test_a_reached_cap_refuses_the_next_call_and_a_raise_lets_it_go_on(wired, leashd):
    (wired.leash_home / "config.toml").write_text(
        '[[budget.cap]]\nname = "codex-cap"\nscope = "fleet"\nperiod = "day"\nlimit_usd = 0.00000001\n')
    wired.run([shell("echo one > one.txt"), text("done")])
    assert (wired.project / "one.txt").exists()  # the spend is known only after it is made: one request overshoots
    wait_for(lambda: any(r["held"] for r in json.loads(wired.leash("budget", "--json").stdout)), "the hold")
    wired.run([shell("echo two > two.txt"), text("done")], played=False)
    assert not (wired.project / "two.txt").exists()  # held: the prompt (or its call) is refused
    wired.leash("budget", "raise", "codex-cap", "--to", "100", "--reason", "go on")
    wired.run([shell("echo three > three.txt"), text("done")], played=False)
    assert (wired.project / "three.txt").exists()
