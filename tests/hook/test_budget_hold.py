"""A reached spend cap holds the sessions it covers, in all three CLIs.

Holds are placed as leashd's meter places them: a held counter written
through a real FileBackend's budget unit (``budget.db`` and the
``budget-holds.json`` mirror the gate reads). Then every hook a held session
can reach refuses in its CLI's own form, with the figure and the cap; a
session outside the held bucket goes on; an unreadable store holds everyone
while caps are configured, and is never read while none is; the ``budget``
halt is recorded once per session and cap, and switching the condition off
stops the holds."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from leash.core.hook.hooks import answer
from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.state.lineage import BY_TRANSCRIPT
from leash.core.state.sessions import SessionRegistry
from leash.core.store.files import FileBackend
from leash.core.store.records_budget import BudgetCounterRecord

from ..support.backends import make_backend
from ..support.checkout import ROOT, leash_argv
from ..support.thin_hook import decision, hook

NOW = 1_795_824_000.0 + 3_600  # 2026-11-28 01:00 UTC
DAY_END = 1_795_824_000.0 + 86_400
SESSION = "9b2e0d1e-0000-4000-8000-00000000b0d9"
HOST = "web1"
FLEET_CAP = '[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\nlimit_usd = 10\n'
ENTITY_CAP = '[[budget.cap]]\nname = "per-agent"\nscope = "entity"\nperiod = "day"\nlimit_usd = 5\n'
SESSION_CAP = '[[budget.cap]]\nname = "per-session"\nscope = "session"\nperiod = "total"\nlimit_usd = 2\n'
WINDOW_CAP = ('[[budget.cap]]\nname = "window"\nscope = "fleet"\nperiod = "window-5h"\nlimit_percent = 80\n')
FIGURE = "$10.42 of $10.00 spent (fleet, 2026-11-28)"
READ = {"session_id": SESSION, "hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": "/etc/hostname"}, "cwd": "/"}


@pytest.fixture(autouse=True)
def this_host(monkeypatch):
    monkeypatch.setenv("LEASH_HOST", HOST)  # the host the gate names a session's, as the meter does


def configure(home, text: str) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.toml").write_text(text)


def place_hold(home, cap: str = "daily", bucket: str = "fleet", *, used: float = 10.42, unit: str = "usd",
               period: str = "2026-11-28", period_end: float = DAY_END, estimated: bool = False) -> None:
    """A held counter, written as the meter writes one: through the backend's budget unit."""
    backend = FileBackend(str(home))
    counter = BudgetCounterRecord.of(dict(
        cap=cap, bucket=bucket, period=period, period_end=period_end, unit=unit, used=used, estimated=estimated,
        raised_to=None, warned=[0.75, 0.95], held_since=NOW, held_use=used, released_at=None, released_by=None,
        updated_at=NOW))
    with backend.budget.unit(now=NOW) as unit_of_work:
        unit_of_work.put_counter(counter)


def call(home, verb: str, payload: dict, env: dict | None = None) -> tuple[str, str, int]:
    """``leash hook VERB`` in-process, as the hook (and leashd) answer it."""
    return answer(verb, json.dumps(payload).encode(), home=str(home), env=env or {}, now=NOW)


def bash(session: str = SESSION, command: str = "make test", **more) -> dict:
    return {"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "cwd": "/", **more}


def denied_reason(out: str) -> str | None:
    if not out.strip():
        return None
    specific = json.loads(out)["hookSpecificOutput"]
    return specific["permissionDecisionReason"] if specific["permissionDecision"] == "deny" else None


def gemini(event: str, **more) -> dict:
    return {"session_id": SESSION, "transcript_path": "/p/.gemini/chats/session.json", "cwd": "/",
            "hook_event_name": event, "timestamp": "2026-11-28T01:00:00.000Z", **more}


# ------------------------------------------------------------------ Claude Code
def test_a_held_sessions_tool_call_is_denied_naming_the_figure_and_the_cap(home):
    configure(home, FLEET_CAP)
    place_hold(home)
    reason = denied_reason(call(home, "pre-tool-use", bash())[0])
    assert reason == (f"leash: budget cap 'daily' is reached: {FIGURE}. This session is held until an operator "
                      "raises the cap (leash budget raise daily --to AMOUNT --reason ...). Do not retry.")


def test_a_read_only_tool_is_denied_too(home):
    configure(home, FLEET_CAP)
    place_hold(home)
    assert FIGURE in denied_reason(call(home, "pre-tool-use", READ)[0])


def test_the_turn_ends_the_prompt_is_blocked_and_a_starting_session_is_told(home):
    configure(home, FLEET_CAP)
    place_hold(home)
    ended = json.loads(call(home, "post-tool-batch", {"session_id": SESSION, "hook_event_name": "PostToolBatch"})[0])
    assert ended["continue"] is False and FIGURE in ended["stopReason"]
    prompt = json.loads(call(home, "user-prompt-submit", {"session_id": SESSION, "prompt": "go on"})[0])
    assert prompt["decision"] == "block" and FIGURE in prompt["reason"]
    started = json.loads(call(home, "session-start", {"session_id": SESSION, "source": "startup", "cwd": "/"})[0])
    assert FIGURE in started["hookSpecificOutput"]["additionalContext"]


def test_a_percent_cap_names_the_window_and_its_limit(home):
    configure(home, WINDOW_CAP)
    reset = NOW + 2 * 3_600
    place_hold(home, "window", used=87, unit="percent", period=f"window-5h@{int(reset)}", period_end=reset)
    reason = denied_reason(call(home, "pre-tool-use", bash())[0])
    assert "budget cap 'window' is reached: 87% of the 5-hour window, cap 80% (fleet, resets 2026-11-28 03:00 UTC)" \
        in reason and "--to PERCENT" in reason


def test_only_the_sessions_of_the_held_bucket_are_held(home):
    configure(home, ENTITY_CAP)
    place_hold(home, "per-agent", f"{HOST}/ezra", used=5.5)
    held = denied_reason(call(home, "pre-tool-use", bash(), env={"LEASH_ENTITY": "ezra"})[0])
    assert "budget cap 'per-agent' is reached: $5.50 of $5.00 spent (web1/ezra, 2026-11-28)" in held
    other = bash("other-session")
    assert call(home, "pre-tool-use", other, env={"LEASH_ENTITY": "mabel"}) == ("", "", 0)
    assert call(home, "post-tool-batch", {"session_id": "other-session"}) == ("", "", 0)


def test_a_fork_of_a_session_held_by_a_session_cap_is_held_too(home):
    configure(home, SESSION_CAP)
    place_hold(home, "per-session", SESSION, used=2.5)
    SessionRegistry(str(home)).observe("fork-of-it", now=NOW, parent=SESSION, parent_by=BY_TRANSCRIPT)
    reason = denied_reason(call(home, "pre-tool-use", bash("fork-of-it"))[0])
    assert "budget cap 'per-session' is reached: $2.50 of $2.00 spent" in reason
    assert call(home, "pre-tool-use", bash("unrelated")) == ("", "", 0)


def test_a_hold_of_a_cap_no_longer_configured_holds_nobody(home):
    configure(home, FLEET_CAP)
    place_hold(home)
    assert FIGURE in denied_reason(call(home, "pre-tool-use", bash())[0])
    configure(home, ENTITY_CAP)  # the operator removed "daily" from config.toml
    # (its budget halt still waits for an acknowledgement: read-only tools pass meanwhile)
    assert call(home, "pre-tool-use", READ) == ("", "", 0)


def test_an_unreadable_budget_store_holds_every_call_while_caps_are_configured(home):
    configure(home, FLEET_CAP)
    (home / "budget-holds.json").write_text("{not json")
    reason = denied_reason(call(home, "pre-tool-use", bash())[0])
    assert reason.startswith("leash: budget store unreadable (") and "leash doctor" in reason
    ended = json.loads(call(home, "post-tool-batch", {"session_id": SESSION})[0])
    assert ended["continue"] is False


def test_with_no_cap_configured_the_budget_store_is_never_read(home):
    configure(home, FLEET_CAP)
    (home / "budget-holds.json").write_text("{not json")
    assert denied_reason(call(home, "pre-tool-use", bash())[0])  # read, and unreadable: held
    configure(home, "")
    assert call(home, "pre-tool-use", bash()) == ("", "", 0)
    assert call(home, "user-prompt-submit", {"session_id": SESSION, "prompt": "go"}) == ("", "", 0)


# ------------------------------------------------------------------ the budget halt
def test_the_budget_halt_is_recorded_once_and_listed(home, cli):
    configure(home, FLEET_CAP)
    place_hold(home)
    for verb, payload in (("pre-tool-use", bash()), ("pre-tool-use", bash(command="ls")),
                          ("post-tool-batch", {"session_id": SESSION}),
                          ("user-prompt-submit", {"session_id": SESSION, "prompt": "go"})):
        assert call(home, verb, payload)[0]
    listed = cli("halts", "list", "--json")
    assert listed.code == 0, listed.err
    halts = json.loads(listed.out)["halts"]
    assert [(h["condition_name"], h["session_id"], h["severity"], h["task_id"]) for h in halts] == \
        [("budget", SESSION, "high", "budget:daily")]
    assert "Budget cap 'daily' is reached: $10.42 of $10.00 spent" in halts[0]["description"]
    context = FileBackend(str(home)).halts.find(halts[0]["halt_id"]).context
    context = json.loads(context) if isinstance(context, str) else context
    assert {k: context[k] for k in ("cap", "bucket", "period", "used", "limit")} == \
        {"cap": "daily", "bucket": "fleet", "period": "2026-11-28", "used": 10.42, "limit": 10.0}


def test_a_batch_of_parallel_calls_records_one_budget_halt(home, cli):
    """Claude Code runs a batch's hooks at once: each is denied, one records."""
    configure(home, FLEET_CAP)
    place_hold(home)
    running = [hook("pre-tool-use", bash(command=f"echo {n}"), background=True) for n in range(6)]
    answers = [proc.communicate(timeout=60)[0] for proc in running]
    assert all(b"budget cap 'daily' is reached" in out for out in answers), answers
    halts = json.loads(cli("halts", "list", "--json").out)["halts"]
    assert [h["condition_name"] for h in halts] == ["budget"]


def test_halts_config_lists_budget_and_switched_off_caps_never_hold(home, cli):
    configure(home, FLEET_CAP)
    place_hold(home)
    shown = cli("halts", "config", "budget")
    assert shown.code == 0 and "budget" in shown.out and "high" in shown.out, shown.err
    assert cli("halts", "config", "budget", "--enabled", "false").code == 0
    assert call(home, "pre-tool-use", bash()) == ("", "", 0)
    assert json.loads(cli("halts", "list", "--json").out)["halts"] == []


# ------------------------------------------------------------------ Gemini CLI and Codex CLI
def test_gemini_before_model_is_refused_and_before_tool_ends_the_loop(home):
    configure(home, FLEET_CAP)
    place_hold(home)
    request = gemini("BeforeModel", llm_request={"model": "gemini-2.5-pro", "messages": [], "config": {}})
    out, err, code = call(home, "gemini-before-model", request)
    assert (out, code) == ("", 2) and FIGURE in err
    tool = gemini("BeforeTool", tool_name="read_file", tool_input={"file_path": "README.md"})
    out, err, code = call(home, "gemini-before-tool", tool)
    ended = json.loads(out)
    assert code == 0 and ended["continue"] is False and ended["decision"] == "deny" and FIGURE in ended["stopReason"]
    response = gemini("AfterModel", llm_request={}, llm_response={"usageMetadata": {"totalTokenCount": 9}})
    assert call(home, "gemini-after-model", response) == ("", "", 0)  # fails open, answers nothing


def test_gemini_before_model_of_a_session_not_held_answers_nothing(home):
    configure(home, FLEET_CAP)
    assert call(home, "gemini-before-model", gemini("BeforeModel", llm_request={})) == ("", "", 0)


def test_codex_pre_tool_use_and_prompt_are_refused_with_exit_2(home):
    configure(home, FLEET_CAP)
    place_hold(home)
    payload = {"session_id": SESSION, "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "cat README.md"}, "cwd": "/", "model": "gpt-5"}
    out, err, code = call(home, "codex-pre-tool-use", payload)
    assert (out, code) == ("", 2) and FIGURE in err
    out, err, code = call(home, "codex-user-prompt-submit", {"session_id": SESSION, "prompt": "go", "cwd": "/"})
    assert (out, code) == ("", 2) and FIGURE in err


def test_on_the_shared_store_the_hold_and_its_halt_are_the_databases(home, postgres_cluster):
    """leashd on PostgreSQL: the gate reads the holds from the shared tables and
    records the budget halt there (host h1 names the sessions' entity buckets)."""
    configure(home, ENTITY_CAP)
    backend = make_backend("postgres", home, url=postgres_cluster.url(postgres_cluster.fresh_schema()))
    try:
        counter = BudgetCounterRecord.of(dict(
            cap="per-agent", bucket="h1/ezra", period="2026-11-28", period_end=DAY_END, unit="usd", used=6.0,
            estimated=False, raised_to=None, warned=[], held_since=NOW, held_use=6.0, released_at=None,
            released_by=None, updated_at=NOW))
        with backend.budget.unit(now=NOW) as unit_of_work:
            unit_of_work.put_counter(counter)
        said = answer("pre-tool-use", json.dumps(bash()).encode(), home=str(home), env={"LEASH_ENTITY": "ezra"},
                      now=NOW, backend=backend)
        assert "budget cap 'per-agent' is reached: $6.00 of $5.00 spent (h1/ezra, 2026-11-28)" in denied_reason(said[0])
        other = answer("pre-tool-use", json.dumps(bash("s2")).encode(), home=str(home), env={"LEASH_ENTITY": "mabel"},
                       now=NOW, backend=backend)
        assert other == ("", "", 0)
        halts = backend.halts.listing(HaltQuery.of({"pending": True}), now=NOW).halts
        assert [(h.condition_name, h.session_id, h.task_id) for h in halts] == \
            [("budget", SESSION, "budget:per-agent")]
    finally:
        backend.close()


# ------------------------------------------------------------------ processes
def test_the_thin_hook_through_a_real_leashd_denies(daemon, home):
    configure(home, FLEET_CAP)
    place_hold(home)
    done = hook("pre-tool-use", bash())
    assert decision(done) == "deny" and FIGURE.encode() in done.stdout
    assert sum(" hook " in line for line in daemon.log_stream.lines) == 1  # leashd answered it


def imported_by_hook(payload: dict) -> tuple[bytes, set[str]]:
    """(stdout, the modules imported) of ``leash hook pre-tool-use`` as a process."""
    done = subprocess.run([sys.executable, "-X", "importtime"] + leash_argv()[1:] + ["hook", "pre-tool-use"],
                          input=json.dumps(payload).encode(), capture_output=True, cwd=ROOT, timeout=60)
    return done.stdout, {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
                         if line.startswith("import time:") and "|" in line}


def test_a_held_call_imports_nothing_costly(home, tmp_path):
    """With caps configured and a hold in force, the in-process hook imports
    no more of typing, dataclasses or inspect than any hook reading a
    config.toml does (tomllib's own typing)."""
    costly = {"typing", "dataclasses", "inspect"}
    configure(home, FLEET_CAP)
    _, before = imported_by_hook(bash(cwd=str(tmp_path)))
    place_hold(home)
    out, held = imported_by_hook(bash(cwd=str(tmp_path)))
    assert b"budget cap 'daily' is reached" in out and "leash.core.policy.budgethold" in held
    assert held & costly == before & costly and not held & {"dataclasses", "inspect"}
