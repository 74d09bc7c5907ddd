"""A reached spend cap in the real Gemini CLI: its BeforeModel hook, wired by
``leash install --agent gemini``, refuses the model request of a held session
so nothing more is spent, and a cap reached while the model thinks refuses
the next tool call and ends the loop. Runs as ``test_leash_gemini.py`` does
(the headless CLI against the loopback stand-in, a private HOME, a LEASH_HOME
of its own); skipped with npm's reason when the CLI cannot be installed."""
from __future__ import annotations

import json
import uuid

import pytest

from leash.core.store.files import FileBackend
from leash.core.store.records import BudgetCounterRecord

from .gemini_cli import HEADLESS_ARGS, run_gemini
from .gemini_rig import STOPPED, Rig, write_out
from .gemini_standin import GeminiStandin, text

pytestmark = pytest.mark.timeout(600)

CAP = '[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\nlimit_usd = 10\n'
FIGURE = "$10.42 of $10.00 spent"


def hold_the_fleet(rig: Rig) -> None:
    """The meter's hold on the fleet bucket of cap "daily", written through the backend's budget unit."""
    import time

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


def rig_run_unchecked(rig: Rig):
    """One ``gemini -p`` whose exit code and events the test judges itself."""
    with GeminiStandin([write_out(), text("done")]) as standin:
        rig.standin = standin
        run = run_gemini(rig.gemini, "write out.txt", home=rig.home, cwd=rig.project, standin_url=standin.url,
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


def test_leashd_counts_what_each_model_response_reported(rig):
    """Gemini CLI's AfterModel hook hands leashd each response's usageMetadata:
    leash's count equals what the stand-in answered the conversation's requests."""
    import os
    import signal
    import subprocess
    import time

    from ..harness import LEASH

    daemon = subprocess.Popen([LEASH, "daemon", "--no-kennel"], env=dict(os.environ, **rig.env),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not (rig.leash_home / "run" / "agent.sock").exists():
            assert daemon.poll() is None and time.monotonic() < deadline, "leash daemon did not start"
            time.sleep(0.05)
        rig_run_unchecked(rig)
        answered = [usage for conversation, _, usage in rig.standin.usages if conversation]
        expected = (sum(u["promptTokenCount"] for u in answered), sum(u["candidatesTokenCount"] for u in answered))

        def counted():
            rows = json.loads(rig.leash("costs", "--json").stdout)
            return (sum(r["input"] + r["cache_read"] for r in rows), sum(r["output"] for r in rows)) if rows else None

        deadline = time.monotonic() + 20
        while counted() != expected:
            assert time.monotonic() < deadline, (counted(), expected, rig.standin.usages)
            time.sleep(0.1)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.communicate(timeout=30)
