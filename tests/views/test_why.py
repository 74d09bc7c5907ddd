"""``leash why SESSION``: every rule that holds a session now, the command
that lifts each, exit 3 when something holds it and 0 when nothing does; the
same answer as the gate's for each rule."""
from __future__ import annotations

from leash.core import StopProtocol
from leash.core.hook.gate import Gate
from leash.core.state.halts import api as halts
from leash.core.state.sessions import SessionRegistry
from leash.core.views.why import why

NOW = 1_800_000_000.0


def seen(home, session_id: str, **fields) -> None:
    protocol = StopProtocol(home)
    SessionRegistry(protocol.home, protocol.acklog).observe(session_id, now=NOW - 10, tool="Bash", **fields)


def rules(home, session: str, **options) -> list[str]:
    return [rule["rule"] for rule in why(home, session, now=NOW, tmux_session_id="", **options)["rules"]]


def test_a_free_session_exits_0(cli, home):
    seen(home, "claude-1", tmux_session="agent-1")
    result = cli("why", "claude-1")
    assert result.code == 0 and "free" in result.out
    assert cli("why", "claude-1", "--json").json()["held"] is False
    assert Gate(home).check("claude-1", "Bash", {"command": "make"}, now=NOW).allow


def test_fleet_stop(cli, home):
    StopProtocol(home).stops.stop_fleet(source="ops@test", reason="maintenance", now=NOW)
    result = cli("why", "anything", "--json")
    assert result.code == 3
    (rule,) = result.json()["rules"]
    assert rule["rule"] == "fleet_stop" and rule["lift"] == "leash resume --all" and rule["reason"] == "maintenance"


def test_stop_by_session_id_and_by_tmux_name(cli, home):
    seen(home, "claude-1", tmux_session="agent-1")
    StopProtocol(home).stops.stop("agent-1", source="ops@test", reason="by name", now=NOW)
    StopProtocol(home).stops.stop("claude-1", source="ops@test", reason="by id", now=NOW)
    answer = cli("why", "claude-1", "--json").json()
    assert [(r["rule"], r["subject"], r["lift"]) for r in answer["rules"]] == [
        ("session_stop", "claude-1", "leash resume claude-1"), ("session_stop", "agent-1", "leash resume agent-1")]
    assert cli("why", "agent-1").code == 3  # the tmux name answers for the agents seen in it
    assert Gate(home).check("claude-1", "Read", {}, now=NOW).rule == "session_stop"


def test_a_stop_bound_to_the_tmux_session_id_holds_after_a_rename(home):
    seen(home, "claude-1", tmux_session="renamed", tmux_session_id="$7")
    protocol = StopProtocol(home)
    protocol.stops.stop("old-name", source="ops@test", reason="before the rename", now=NOW, tmux_session_id="$7")
    assert "$7" in protocol.stops.snapshot()["by_tmux_id"]
    (rule,) = why(home, "claude-1", now=NOW)["rules"]
    assert rule["rule"] == "session_stop" and rule["subject"] == "old-name" and rule["bound_to"] == "$7"
    assert rule["lift"] == "leash resume old-name"
    (by_name,) = why(home, "renamed", now=NOW, tmux_session_id="$7")["rules"]
    assert by_name["subject"] == "old-name"
    assert Gate(home).check("claude-1", "Read", {}, now=NOW).rule == "session_stop"


def test_hands_off_on_the_session_its_entity_and_its_tmux_id(home):
    seen(home, "claude-1", tmux_session="agent-1", tmux_session_id="$3", entity="ezra")
    protocol = StopProtocol(home)
    protocol.hands_off("ezra", hours=2, reason="migrating", source="ops@test", now=NOW)
    protocol.hands_off_registry.lock("was-agent-1", hours=1, source="ops@test", now=NOW, tmux_session_id="$3")
    answer = why(home, "claude-1", now=NOW)
    found = {(r["rule"], r["subject"], r.get("bound_to", "")) for r in answer["rules"]}
    assert found == {("hands_off", "ezra", ""), ("hands_off", "was-agent-1", "$3")}
    assert {r["lift"] for r in answer["rules"]} == {"leash release ezra", "leash release was-agent-1"}
    assert Gate(home).check("claude-1", "Read", {}, now=NOW).rule == "hands_off"


def test_halted_and_paused_name_the_halts(cli, home):
    seen(home, "claude-1", tmux_session="agent-1")
    seen(home, "claude-2", tmux_session="agent-2")
    high = halts.record_halt({"session_token": "claude-1", "halt_type": "execution", "severity": "high",
                              "condition_name": "three_strikes", "description": "failed 3 times"},
                             home=home, now=NOW - 60)["halt_id"]
    halts.record_halt({"session_token": "claude-1", "halt_type": "scope", "severity": "low",
                       "description": "a low one holds nothing"}, home=home, now=NOW - 60)
    escalated = halts.record_halt({"session_token": "claude-2", "halt_type": "security", "severity": "medium",
                                   "description": "escalated"}, home=home, now=NOW - 60)["halt_id"]
    halts.acknowledge_halt({"session_token": "claude-2", "halt_id": escalated, "resolution": "escalated",
                            "acknowledged_by": "ops@test"}, home=home, now=NOW - 30)
    (halted,) = why(home, "claude-1", now=NOW)["rules"]
    assert halted["rule"] == "session_halted" and halted["halt_id"] == high
    assert halted["lift"] == f"leash halts ack {high[:8]}"
    (paused,) = why(home, "agent-2", now=NOW, tmux_session_id="")["rules"]
    assert paused["rule"] == "session_paused" and paused["halt_id"] == escalated
    assert Gate(home).check("claude-2", "Read", {}, now=NOW).rule == "session_paused"
    assert cli("halts", "ack", high[:8]).code == 0  # the lifting command works as printed
    assert why(home, "claude-1")["held"] is False


def test_a_path_lock_names_the_files_it_would_deny(home, tmp_path):
    work = tmp_path / "work"
    (work / "infra" / "prod").mkdir(parents=True)
    (work / "infra" / "prod" / "main.tf").write_text("x")
    (work / "src").mkdir()
    (work / "src" / "app.py").write_text("x")
    seen(home, "claude-1", cwd=str(work))
    seen(home, "claude-2", cwd=str(work / "src"))
    StopProtocol(home).hands_off("path:infra/prod/**", hours=1, reason="freeze", source="ops@test", now=NOW)
    (rule,) = why(home, "claude-1", now=NOW)["rules"]
    assert rule["rule"] == "path_lock" and "infra/prod/main.tf" in rule["files"]
    assert rule["lift"] == "leash release 'path:infra/prod/**'"
    assert not Gate(home).check("claude-1", "Write", {"file_path": str(work / "infra/prod/main.tf")},
                                cwd=str(work), now=NOW).allow
    other = why(home, "claude-2", now=NOW)
    assert not other["held"] and other["path_locks_elsewhere"][0]["entity"] == "path:infra/prod/**"


def test_unreadable_stop_state_holds_everything(cli, home):
    StopProtocol(home).stops.stop("claude-1", source="ops@test", now=NOW)
    (home / "stops.json").write_text("{not json")
    (home / "stop_ack_log.jsonl").write_text("{torn")
    answer = cli("why", "claude-9", "--json")
    assert answer.code == 3
    found = {rule["rule"]: rule["lift"] for rule in answer.json()["rules"]}
    assert found["stop_unreadable"] == "leash doctor --repair"
    assert not Gate(home).check("claude-9", "Read", {}).allow


def test_agent_text_in_the_answer_is_escaped(cli, home):
    StopProtocol(home).stops.stop("evil\x1b]0;pwned\x07", source="ops@test", reason="a\nfleet: running", now=NOW)
    result = cli("why", "evil\x1b]0;pwned\x07")
    assert result.code == 3
    assert "\x1b" not in result.out and "\\x1b" in result.out and "a\\nfleet" in result.out


def test_why_as_a_real_process(leash_proc, home):
    StopProtocol(home).stops.stop("agent-x", source="ops@test", reason="look", now=NOW)
    done = leash_proc("why", "agent-x")
    assert done.code == 3 and "leash resume agent-x" in done.out and done.err == ""
    assert leash_proc("why").code == 2


def test_a_name_nothing_knows_is_said_to_be_unknown_not_free(home, cli):
    from leash.core.views.protocol import StopProtocol

    StopProtocol(home).sessions.observe("sess-known", now=1_800_000_000.0, status="idle")
    unknown = cli("why", "nobody-here")
    assert unknown.code == 1 and "nothing knows 'nobody-here'" in unknown.err
    assert cli("why", "nobody-here", "--json").code == 1
    free = cli("why", "sess-known")
    assert free.code == 0 and "is free" in free.out
