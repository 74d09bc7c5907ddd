"""The reply-send stop guard, through the real `leash hook stop` command."""
from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from leash.core.state.replyledger import record, reply_pending


def stop_payload(session_id="sess_1", active=False) -> bytes:
    return json.dumps({"session_id": session_id, "hook_event_name": "Stop", "stop_hook_active": active,
                       "cwd": "/tmp"}).encode()


def channel_env(channel="chat", key="alice"):
    return {"LEASH_TRIGGER_CHANNEL": channel, "LEASH_TRIGGER_SESSION_KEY": key}


# ---------------------------------------------------------------- the ledger
def test_ledger_inbound_is_pending(home):
    record(str(home), "chat", "alice", "in", now=1)
    assert reply_pending(str(home), "chat", "alice") is True


def test_ledger_outbound_answers(home):
    record(str(home), "chat", "alice", "in", now=1)
    record(str(home), "chat", "alice", "out", now=2)
    assert reply_pending(str(home), "chat", "alice") is False


def test_ledger_new_inbound_after_outbound_is_pending_again(home):
    for n, direction in enumerate(["in", "out", "in"]):
        record(str(home), "chat", "alice", direction, now=n)
    assert reply_pending(str(home), "chat", "alice") is True


def test_ledger_unknown_conversation_is_not_pending(home):
    record(str(home), "chat", "alice", "in", now=1)
    assert reply_pending(str(home), "chat", "bob") is False
    assert reply_pending(str(home), "mail", "alice") is False


def test_ledger_empty_is_not_pending(home):
    assert reply_pending(str(home), "chat", "alice") is False  # no database at all
    record(str(home), "chat", "x", "out", now=1)
    assert reply_pending(str(home), "chat", "alice") is False


def test_ledger_conversations_are_isolated(home):
    record(str(home), "chat", "alice", "in", now=1)
    record(str(home), "chat", "bob", "in", now=2)
    record(str(home), "chat", "bob", "out", now=3)
    assert reply_pending(str(home), "chat", "alice") is True
    assert reply_pending(str(home), "chat", "bob") is False


def test_ledger_rejects_bad_input(home, cli):
    with pytest.raises(ValueError):
        record(str(home), "chat", "alice", "sideways", now=1)
    assert cli("reply", "in", "--channel", "", "--key", "k").code == 2
    assert cli("reply", "up", "--channel", "c", "--key", "k").code == 2


# ---------------------------------------------------------------- the hook
def test_pending_reply_blocks_once(leash, cli):
    assert cli("reply", "in", "--channel", "chat", "--key", "alice").code == 0
    result = leash("hook", "stop", stdin=stop_payload(), env=channel_env())
    assert result.code == 0
    decision = json.loads(result.out)
    assert decision["decision"] == "block"
    reason = decision["reason"]
    assert "only what you send" in reason and "not the prose of this turn" in reason
    assert "may stop" in reason and "only once" in reason
    # Claude Code sets stop_hook_active on the stop that follows the block
    again = leash("hook", "stop", stdin=stop_payload(active=True), env=channel_env())
    assert (again.code, again.out) == (0, "")


def test_answered_conversation_allows(leash, cli):
    cli("reply", "in", "--channel", "chat", "--key", "alice")
    cli("reply", "out", "--channel", "chat", "--key", "alice")
    assert leash("hook", "stop", stdin=stop_payload(), env=channel_env()).out == ""


def test_no_channel_allows(leash, cli):
    cli("reply", "in", "--channel", "chat", "--key", "alice")
    assert leash("hook", "stop", stdin=stop_payload()).out == ""


def test_kill_switch_allows(leash, cli):
    cli("reply", "in", "--channel", "chat", "--key", "alice")
    env = dict(channel_env(), LEASH_REPLY_GUARD="off")
    assert leash("hook", "stop", stdin=stop_payload(), env=env).out == ""


def test_operator_stop_allows(leash, cli):
    cli("reply", "in", "--channel", "chat", "--key", "alice")
    cli("stop", "--force", "sess_1", "--reason", "operator wants it to stop")
    assert leash("hook", "stop", stdin=stop_payload(), env=channel_env()).out == ""


@pytest.mark.parametrize("garbage", [b"", b"nope", b"[]"])
def test_bad_input_fails_open_with_one_line(leash, cli, garbage):
    cli("reply", "in", "--channel", "chat", "--key", "alice")
    result = leash("hook", "stop", stdin=garbage, env=channel_env())
    assert (result.code, result.out) == (0, "")
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_broken_ledger_fails_open(leash, home):
    home.mkdir(parents=True)
    (home / "replies.db").write_bytes(b"this is not a database" * 100)
    result = leash("hook", "stop", stdin=stop_payload(), env=channel_env())
    assert (result.code, result.out) == (0, "")
    assert result.err.startswith("leash: reply guard skipped")


def test_bad_config_fails_open(leash, home):
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[reply_guard.channels.signal]\nneeds_reply = 3\n")
    result = leash("hook", "stop", stdin=stop_payload(), env=channel_env("signal", "+4917"))
    assert (result.code, result.out) == (0, "")
    assert "config.toml" in result.err


def test_missing_key_allows_with_a_note(leash, cli):
    result = leash("hook", "stop", stdin=stop_payload(), env={"LEASH_TRIGGER_CHANNEL": "chat"})
    assert result.out == "" and "LEASH_TRIGGER_SESSION_KEY" in result.err


@pytest.fixture
def signal_command(tmp_path):
    """A stand-in for `signal needs-reply <key>`: exit 0 when <key> is in a file."""
    pending = tmp_path / "pending.txt"
    pending.write_text("+4917\n")
    script = tmp_path / "signal"
    script.write_text(f"#!{sys.executable}\nimport sys\n"
                      f"if sys.argv[1:2] == ['crash']: raise SystemExit(70)\n"
                      f"keys = open({str(pending)!r}).read().split()\n"
                      f"raise SystemExit(0 if sys.argv[2] in keys else 1)\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def write_channel(home, command, hint="signal send"):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"[reply_guard.channels.signal]\nneeds_reply = {json.dumps(command)}\nsend_hint = \"{hint}\"\n")


def test_command_channel_pending(leash, home, signal_command):
    write_channel(home, [str(signal_command), "needs-reply", "{key}"])
    result = leash("hook", "stop", stdin=stop_payload(), env=channel_env("signal", "+4917"))
    reason = json.loads(result.out)["reason"]
    assert "`signal send`" in reason


def test_command_channel_not_pending(leash, home, signal_command):
    write_channel(home, [str(signal_command), "needs-reply", "{key}"])
    assert leash("hook", "stop", stdin=stop_payload(), env=channel_env("signal", "+999")).out == ""


def test_command_channel_crash_or_missing_allows(leash, home, signal_command):
    write_channel(home, [str(signal_command), "crash", "{key}"])
    assert leash("hook", "stop", stdin=stop_payload(), env=channel_env("signal", "+4917")).out == ""
    write_channel(home, [str(home / "no-such-command"), "{key}"])
    assert leash("hook", "stop", stdin=stop_payload(), env=channel_env("signal", "+4917")).out == ""


def test_stdin_read_is_bounded_in_time():
    from leash.core.wire.hookio import HookInputError, read_stdin

    reader, writer = os.pipe()
    try:
        os.write(writer, b'{"session_id": "half')  # the writer never finishes nor closes
        # The writer stays open: only the read's own deadline can end it.
        with pytest.raises(HookInputError, match="within 0.3 s"):
            read_stdin(os.fdopen(reader, "rb", closefd=False), timeout=0.3)
    finally:
        os.close(reader)
        os.close(writer)
