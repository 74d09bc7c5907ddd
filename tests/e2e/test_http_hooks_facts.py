"""The facts about Claude Code's HTTP hooks that leash relies on, with the real client.

Each test runs one case of ``capture_http_hooks.py`` (``claude -p``, the
stand-in model calling Bash ``echo marker > marker``, a PreToolUse hook of
``type: "http"`` pointed at ``http_probe.py`` or at a port nothing listens
on) and asserts what ``HTTP_HOOK_FACTS.md`` says: with ``onFailure: "block"``
every failure of the listener refuses the call on a Claude Code that has
``onFailure`` (``leash.core.base.claudeversion``, 2.1.295 on) and lets it run
on one that has not; without it every failure lets the call run; a deny
refuses and an allow runs; the body is a command hook's stdin; ``timeout`` is
in seconds; SessionStart is never sent over HTTP. A new version that changes
one of them fails here. Skipped with one line when Claude Code cannot be
installed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leash.core.base.claudeversion import supports_on_failure

from ..support.e2e.capture_http_hooks import CASES, FAILURE_MODES, SLOW_SECONDS, Outcome, run_case
from ..support.e2e.harness import ClaudeUnavailable, ensure_claude
from ..support.e2e.http_probe import DENY_REASON

try:
    CLAUDE, VERSION = ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)
HAS_ON_FAILURE = supports_on_failure(tuple(int(part) for part in VERSION.split(".")))
needs_on_failure = pytest.mark.skipif(not HAS_ON_FAILURE, reason=f"Claude Code {VERSION} has no onFailure")


def run(name: str, tmp_path: Path) -> Outcome:
    outcome = run_case(CLAUDE, VERSION, tmp_path, CASES[name])
    assert outcome.code == 0 and not outcome.timed_out, outcome
    return outcome


def attempted(outcome: Outcome) -> None:
    """The model asked for the call and was answered: an absent marker is a refusal, not a run that stopped early."""
    assert len(outcome.tool_results) == 1, outcome


@pytest.mark.parametrize("mode", FAILURE_MODES)
def test_a_failing_listener_refuses_with_on_failure_block(tmp_path, mode):
    outcome = run(f"{mode}/block", tmp_path)
    attempted(outcome)
    assert len(outcome.requests) == (0 if mode == "down" else 1), outcome.requests
    if HAS_ON_FAILURE:
        assert not outcome.ran, f"Claude Code {VERSION}: a listener failing as {mode!r} let the call run"
    else:
        assert outcome.ran, f"Claude Code {VERSION} has no onFailure, yet {mode!r} refused: leash could rely on it"


@pytest.mark.parametrize("mode", ["down", "500", "garbage"])
def test_without_on_failure_a_failing_listener_lets_the_call_run(tmp_path, mode):
    outcome = run(f"{mode}/absent", tmp_path)
    attempted(outcome)
    assert outcome.ran, f"Claude Code {VERSION}: {mode!r} now refuses without onFailure"


def test_a_deny_refuses_and_its_reason_reaches_the_model(tmp_path):
    outcome = run("deny/block", tmp_path)
    assert not outcome.ran
    (result,) = outcome.tool_results
    assert DENY_REASON in result


@pytest.mark.parametrize("mode", ["allow", "empty"])
def test_an_allow_or_an_empty_answer_runs_the_call(tmp_path, mode):
    outcome = run(f"{mode}/block", tmp_path)
    assert outcome.ran and len(outcome.requests) == 1, outcome


def test_a_non_2xx_body_is_not_read(tmp_path):
    """A 500 whose body is a deny is a failure, not a deny: it refuses through onFailure alone."""
    assert run("deny-500/absent", tmp_path).ran


def test_a_redirect_is_not_followed(tmp_path):
    outcome = run("redirect/block", tmp_path)
    assert [request["path"] for request in outcome.requests] == ["/hook/PreToolUse"]
    assert outcome.ran is not HAS_ON_FAILURE


def test_the_body_is_what_a_command_hook_reads_on_stdin(tmp_path):
    outcome = run("body/beside-command", tmp_path)
    (request,) = outcome.requests
    (stdin,) = outcome.command_stdin
    assert request["method"] == "POST"
    assert json.loads(request["body"]) == stdin and stdin["hook_event_name"] == "PreToolUse"
    headers = {name.lower(): value for name, value in request["headers"]}
    assert headers["content-type"] == "application/json"


def test_headers_interpolate_only_allowed_variables(tmp_path):
    (request,) = run("headers/allowedEnvVars", tmp_path).requests
    headers = dict(request["headers"])
    assert (headers["X-Allowed"], headers["X-Other"], headers["X-Fixed"]) == ("yes", "", "fixed")


def test_the_timeout_is_in_seconds(tmp_path):
    outcome = run("timeout-2s/slow", tmp_path)
    assert outcome.hook_to_next is not None and 1.5 <= outcome.hook_to_next < SLOW_SECONDS - 1, outcome.hook_to_next
    assert outcome.ran is not HAS_ON_FAILURE


def test_session_start_is_never_sent_over_http(tmp_path):
    outcome = run("events/empty", tmp_path)
    sent = {request["path"].rsplit("/", 1)[-1] for request in outcome.requests}
    assert {"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"} <= sent, sent
    assert "SessionStart" not in sent


@needs_on_failure
def test_a_failing_user_prompt_submit_hook_drops_the_prompt(tmp_path):
    outcome = run("UserPromptSubmit/500/block", tmp_path)
    assert outcome.model_requests == 0 and not outcome.ran, outcome


@needs_on_failure
def test_an_unknown_on_failure_value_drops_the_hook(tmp_path):
    """``onFailure`` other than continue or block makes the entry invalid: the hook is never asked."""
    outcome = run("onFailure-unknown/500", tmp_path)
    assert outcome.requests == [] and outcome.ran, outcome


def test_allowed_http_hook_urls_blocks_a_url_it_does_not_match(tmp_path):
    outcome = run("allowedHttpHookUrls/other/block", tmp_path)
    assert outcome.requests == []
    assert outcome.ran is not HAS_ON_FAILURE



def test_an_http_proxy_in_the_environment_carries_the_loopback_hook(tmp_path):
    """HTTP_PROXY without 127.0.0.1 in NO_PROXY: the hook goes to the proxy, never to the listener."""
    proxied = run("proxy-env/allow/block", tmp_path / "proxied")
    assert proxied.requests == [] and proxied.ran is not HAS_ON_FAILURE, proxied
    exempt = run("proxy-env/no-proxy/allow/block", tmp_path / "exempt")
    assert len(exempt.requests) == 1 and exempt.ran, exempt
