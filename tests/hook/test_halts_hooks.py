"""The halt engine end to end through the real hook processes.

Every call here is `leash hook pre-tool-use` / `leash hook post-tool-use` (or
`leash halts ...`) as its own process, with Claude Code's JSON on stdin, in a
fresh state home per test; files to edit live in tmp_path.
"""
from __future__ import annotations

import json
import os
import sqlite3

import pytest

GITHUB_TOKEN = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa12"


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    """No halt settings leak in from the environment running the tests."""
    for name in ("LEASH_SCOPE", "LEASH_ENVIRONMENT", "LEASH_PRODUCTION_APPROVED"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def work(tmp_path):
    """A small project: a.txt, b.txt and src/c.txt."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("bravo\n")
    (root / "src" / "c.txt").write_text("charlie\n")
    return root


def pre(leash, session, tool, tool_input, cwd, env=None):
    body = {"session_id": session, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
            "cwd": str(cwd)}
    return leash("hook", "pre-tool-use", stdin=json.dumps(body).encode(), env=env)


def post(leash, session, tool, tool_input, cwd, *, event="PostToolUse", **extra):
    body = {"session_id": session, "hook_event_name": event, "tool_name": tool, "tool_input": tool_input,
            "cwd": str(cwd), **extra}
    result = leash("hook", "post-tool-use", stdin=json.dumps(body).encode())
    assert (result.code, result.out, result.err) == (0, "", ""), result
    return result


def denial(result) -> str | None:
    """The deny reason, or None when the call was allowed."""
    assert result.code == 0, result
    assert "Traceback" not in result.err
    if result.out == "":
        return None
    decision = json.loads(result.out)["hookSpecificOutput"]
    assert decision["hookEventName"] == "PreToolUse" and decision["permissionDecision"] == "deny"
    return decision["permissionDecisionReason"]


def pending(leash, session) -> list[dict]:
    result = leash("halts", "list", "--session", session, "--json")
    assert result.code == 0, result
    return result.json()["halts"]


def edit(path, old="", new="edited"):
    return {"file_path": str(path), "old_string": old or path.read_text().strip(), "new_string": new}


def raw_store(home) -> bytes:
    data = b""
    for suffix in ("", "-wal"):
        path = os.path.join(home, "halts.db" + suffix)
        if os.path.exists(path):
            data += open(path, "rb").read()
    return data


# ------------------------------------------------------------------ a destructive command halts the session
def test_destructive_command_halts_the_session_until_acknowledged(leash, work):
    reason = denial(pre(leash, "wild", "Bash", {"command": "sudo rm -rf /"}, work))
    assert reason and "critical" in reason
    halts = pending(leash, "wild")
    assert halts and all(h["severity"] == "critical" for h in halts)
    assert {"privilege_escalation", "no_rollback_plan"} <= {h["condition_name"] for h in halts}

    held = denial(pre(leash, "wild", "Bash", {"command": "touch b.txt"}, work))
    assert held and "halted" in held
    assert denial(pre(leash, "wild", "Read", {"file_path": str(work / "a.txt")}, work)) is None
    # Commands that only look still run while halted; anything else waits.
    assert denial(pre(leash, "wild", "Bash", {"command": "ls -la && git status"}, work)) is None
    assert denial(pre(leash, "wild", "Bash", {"command": "ls > listing.txt"}, work))
    assert denial(pre(leash, "bystander", "Bash", {"command": "ls"}, work)) is None

    for h in halts:
        done = leash("halts", "ack", h["halt_id"], "--note", "operator checked")
        assert done.code == 0, done
    assert pending(leash, "wild") == []
    assert denial(pre(leash, "wild", "Bash", {"command": "ls"}, work)) is None


def test_dismissing_critical_halts_needs_caution(leash, work):
    denial(pre(leash, "wild", "Bash", {"command": "sudo rm -rf /"}, work))
    halts = pending(leash, "wild")
    for h in halts:
        assert leash("halts", "dismiss", h["halt_id"]).code == 1
    assert denial(pre(leash, "wild", "Bash", {"command": "make build"}, work)) is not None
    for h in halts:
        assert leash("halts", "dismiss", h["halt_id"], "--caution").code == 0
    assert denial(pre(leash, "wild", "Bash", {"command": "make build"}, work)) is None


# ------------------------------------------------------------------ three strikes from PostToolUseFailure
def _fail(leash, session, command, cwd):
    post(leash, session, "Bash", {"command": command}, cwd, event="PostToolUseFailure",
         error="Exit code 1\n3 failed, 10 passed in 0.4s")


def test_three_failures_of_a_command_deny_it(leash, work):
    command = "pytest -q tests/test_app.py"
    assert denial(pre(leash, "s3", "Bash", {"command": command}, work)) is None
    _fail(leash, "s3", command, work)
    _fail(leash, "s3", command, work)
    assert denial(pre(leash, "s3", "Bash", {"command": command}, work)) is None
    _fail(leash, "s3", command, work)
    reason = denial(pre(leash, "s3", "Bash", {"command": command}, work))
    assert reason and "three_strikes" in reason
    assert [h["condition_name"] for h in pending(leash, "s3")] == ["three_strikes"]


def test_a_success_resets_three_strikes(leash, work):
    command = "pytest -q tests/test_app.py"
    for _ in range(3):
        _fail(leash, "s4", command, work)
    post(leash, "s4", "Bash", {"command": command}, work,
         tool_response={"stdout": "13 passed", "stderr": "", "interrupted": False})
    assert denial(pre(leash, "s4", "Bash", {"command": command}, work)) is None
    assert pending(leash, "s4") == []


# ------------------------------------------------------------------ modifying unread code
def test_edit_of_an_unread_file_is_denied_for_a_tracked_session(leash, work):
    post(leash, "reader", "Read", {"file_path": str(work / "a.txt")}, work,
         tool_response={"type": "text", "file": {"filePath": str(work / "a.txt"), "content": "alpha\n"}})
    assert denial(pre(leash, "reader", "Edit", edit(work / "a.txt"), work)) is None
    assert denial(pre(leash, "reader", "Write", {"file_path": str(work / "new.txt"), "content": "new\n"},
                      work)) is None
    reason = denial(pre(leash, "reader", "Edit", edit(work / "b.txt"), work))
    assert reason and "modifying_unread_code" in reason and "b.txt" in reason
    assert [h["condition_name"] for h in pending(leash, "reader")] == ["modifying_unread_code"]


def test_no_post_tool_use_record_is_no_evidence(leash, work, home):
    post(leash, "reader", "Read", {"file_path": str(work / "a.txt")}, work, tool_response={})
    assert os.path.exists(os.path.join(home, "halts.db"))
    assert denial(pre(leash, "untracked", "Edit", edit(work / "b.txt"), work)) is None
    assert pending(leash, "untracked") == []


# ------------------------------------------------------------------ secrets
def test_a_secret_in_a_command_is_denied_and_masked(leash, work, home):
    command = f'curl -H "Authorization: Bearer {GITHUB_TOKEN}" https://api.github.com'
    result = pre(leash, "leaky", "Bash", {"command": command}, work)
    reason = denial(result)
    assert reason and "secrets_exposure" in reason
    assert GITHUB_TOKEN not in result.out
    halts = pending(leash, "leaky")
    assert "secrets_exposure" in {h["condition_name"] for h in halts}
    assert all(GITHUB_TOKEN not in h["description"] for h in halts)
    connection = sqlite3.connect(os.path.join(home, "halts.db"))
    try:
        rows = connection.execute("SELECT description, context, previous_error FROM halt_events").fetchall()
    finally:
        connection.close()
    assert rows and "[REDACTED:github-pat]" in rows[0][1]
    assert all(GITHUB_TOKEN not in str(value) for row in rows for value in row)
    log = os.path.join(home, "stop_ack_log.jsonl")
    assert not os.path.exists(log) or GITHUB_TOKEN.encode() not in open(log, "rb").read()



def test_a_denied_secret_is_nowhere_in_halts_db(leash, work, home):
    command = f'curl -H "Authorization: Bearer {GITHUB_TOKEN}" https://api.github.com'
    assert denial(pre(leash, "leaky", "Bash", {"command": command}, work))
    stored = raw_store(home)
    assert stored and GITHUB_TOKEN.encode() not in stored


def test_a_failed_command_with_a_secret_is_not_stored(leash, work, home):
    command = f'curl -H "Authorization: Bearer {GITHUB_TOKEN}" https://api.github.com'
    post(leash, "leaky", "Bash", {"command": command}, work, event="PostToolUseFailure",
         error="curl: (22) The requested URL returned error: 401")
    stored = raw_store(home)
    assert stored and GITHUB_TOKEN.encode() not in stored


# ------------------------------------------------------------------ scope and production
def test_scope_denies_an_edit_outside_it(leash, work):
    env = {"LEASH_SCOPE": "src/**"}
    for path in (work / "b.txt", work / "src" / "c.txt"):
        post(leash, "scoped", "Read", {"file_path": str(path)}, work, tool_response={})
    assert denial(pre(leash, "scoped", "Edit", edit(work / "src" / "c.txt"), work, env)) is None
    reason = denial(pre(leash, "scoped", "Edit", edit(work / "b.txt"), work, env))
    assert reason and "out_of_scope (high)" in reason
    assert [(h["condition_name"], h["severity"]) for h in pending(leash, "scoped")] == [("out_of_scope", "high")]


def test_scope_denies_an_edit_outside_it_without_a_read_record(leash, work):
    reason = denial(pre(leash, "scoped", "Edit", edit(work / "b.txt"), work, {"LEASH_SCOPE": "src/**"}))
    assert reason and "out_of_scope (high)" in reason


def test_scope_denies_creating_a_file_outside_it(leash, work):
    post(leash, "scoped", "Read", {"file_path": str(work / "src" / "c.txt")}, work, tool_response={})
    reason = denial(pre(leash, "scoped", "Write", {"file_path": str(work / "outside.txt"), "content": "x\n"},
                        work, {"LEASH_SCOPE": "src/**"}))
    assert reason and "out_of_scope (high)" in reason


def test_production_edit_needs_approval(leash, work):
    post(leash, "prod-edit", "Read", {"file_path": str(work / "a.txt")}, work, tool_response={})
    reason = denial(pre(leash, "prod-edit", "Edit", edit(work / "a.txt"), work,
                        {"LEASH_ENVIRONMENT": "production"}))
    assert reason and "unauthorized_production (critical)" in reason


def test_production_edit_needs_approval_without_a_read_record(leash, work):
    reason = denial(pre(leash, "prod-edit", "Edit", edit(work / "a.txt"), work,
                        {"LEASH_ENVIRONMENT": "production"}))
    assert reason and "unauthorized_production (critical)" in reason


def test_production_write_needs_approval(leash, work):
    command = {"command": "touch release-notes.txt"}
    assert denial(pre(leash, "dev", "Bash", command, work)) is None
    reason = denial(pre(leash, "prod", "Bash", command, work, {"LEASH_ENVIRONMENT": "production"}))
    assert reason and "unauthorized_production" in reason
    approved = {"LEASH_ENVIRONMENT": "production", "LEASH_PRODUCTION_APPROVED": "1"}
    assert denial(pre(leash, "approved", "Bash", command, work, approved)) is None
    assert denial(pre(leash, "prod-read", "Bash", {"command": "ls"}, work,
                      {"LEASH_ENVIRONMENT": "production"})) is None


# ------------------------------------------------------------------ quoted data is data
def test_a_quoted_destructive_command_is_only_data(leash, work):
    assert denial(pre(leash, "quoted", "Bash", {"command": "echo 'rm -rf /' > notes.txt"}, work)) is None
    assert pending(leash, "quoted") == []
    assert denial(pre(leash, "unquoted", "Bash", {"command": "echo hi; rm -rf /"}, work)) is not None


# ------------------------------------------------------------------ escalation pauses everything
def test_an_escalated_halt_pauses_even_reads(leash, work):
    recorded = leash("halts", "record", "--session", "esc", "--type", "scope", "--severity", "medium",
                          "--description", "requirements unclear", "--json")
    assert recorded.code == 0, recorded
    halt_id = recorded.json()["halt_id"]
    read = {"file_path": str(work / "a.txt")}
    assert denial(pre(leash, "esc", "Read", read, work)) is None
    assert denial(pre(leash, "esc", "Bash", {"command": "ls"}, work)) is None
    assert leash("halts", "escalate", halt_id).code == 0
    reason = denial(pre(leash, "esc", "Read", read, work))
    assert reason and "paused" in reason
    assert "paused" in denial(pre(leash, "esc", "Bash", {"command": "ls"}, work))
    assert leash("halts", "ack", halt_id).code == 0
    assert denial(pre(leash, "esc", "Read", read, work)) is None


# ------------------------------------------------------------------ failures
def test_a_broken_store_denies_and_points_at_doctor(leash, work, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "halts.db").write_bytes(b"definitely not sqlite \x00\x01\x02" * 300)
    for tool, tool_input in (("Bash", {"command": "ls"}), ("Read", {"file_path": str(work / "a.txt")})):
        reason = denial(pre(leash, "any", tool, tool_input, work))
        assert reason and "leash doctor" in reason


@pytest.mark.parametrize("garbage", [b"", b"not json", b"[1, 2]", b'{"tool_name": "Read"}', b"\xff\xfe",
                                     b'{"session_id": "x"'])
def test_post_tool_use_garbage_is_one_line_on_stderr(leash, garbage):
    result = leash("hook", "post-tool-use", stdin=garbage)
    assert result.code == 1
    assert result.out == ""
    assert result.err.count("\n") == 1 and result.err.startswith("leash: ")
    assert "Traceback" not in result.err
