"""The findings of pure rules kept for a call judged again (``core.halts.engine``)
follow everything that can change them: the condition config, the declared
environment, the variables a command expands, and a command whose glob is
matched against the working tree is judged afresh."""
from __future__ import annotations

from leash.core.policy.halts.conditions import load_all
from leash.core.state.halts.api import check_halt_conditions, update_halt_config

T0 = 1_800_000_000.0


def fired(home, commands: list[str], **context) -> set[str]:
    data = {"session_token": "s", "current_context": {"commands": commands, **context}}
    result = check_halt_conditions(data, home=home, now=T0, record=False)
    return {r["condition_name"] for r in result["halt_reasons"]}


def test_the_rules_kept_are_the_ones_that_read_only_the_call():
    pure = {name for name, c in load_all().items() if c.pure}
    assert "supervisor_tampering" not in pure and "unknown_dependencies" not in pure  # they read files
    assert "no_rollback_plan" not in pure  # it reads this process's home directory
    assert {"unknown_commands", "test_production_mix", "secrets_exposure"} <= pure


def test_a_config_change_is_seen_by_the_next_check(home):
    update_halt_config({"condition_name": "unknown_commands", "enabled": True}, home=home, now=T0)
    assert "unknown_commands" in fired(home, ["frobnicate --all"])
    assert "unknown_commands" in fired(home, ["frobnicate --all"])  # kept
    update_halt_config({"condition_name": "unknown_commands", "threshold": {"allow": ["frobnicate"]}}, home=home,
                       now=T0 + 1)
    assert "unknown_commands" not in fired(home, ["frobnicate --all"])
    update_halt_config({"condition_name": "unknown_commands", "enabled": False}, home=home, now=T0 + 2)
    update_halt_config({"condition_name": "unknown_commands", "enabled": True, "threshold": {"allow": []}},
                       home=home, now=T0 + 3)
    assert "unknown_commands" in fired(home, ["frobnicate --all"])


def test_the_declared_environment_is_part_of_the_call(home):
    assert "test_production_mix" not in fired(home, ["psql -h prod-db -c 'select 1'"])
    assert "test_production_mix" in fired(home, ["psql -h prod-db -c 'select 1'"], environment="test")
    assert "test_production_mix" not in fired(home, ["psql -h prod-db -c 'select 1'"])


def test_the_same_text_expanding_to_other_values_is_judged_again(home, monkeypatch):
    monkeypatch.setenv("DB", "test-db")
    assert "test_production_mix" not in fired(home, ["psql -h $DB -c 'select 1'"], environment="test")
    monkeypatch.setenv("DB", "prod-db")
    assert "test_production_mix" in fired(home, ["psql -h $DB -c 'select 1'"], environment="test")


def test_a_glob_matched_against_the_files_is_judged_afresh(home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("")
    assert "data_exposure" not in fired(home, ["cat *"], cwd=str(work))
    (work / "id_rsa").write_text("")  # the same text now reads a private key
    assert "data_exposure" in fired(home, ["cat *"], cwd=str(work))
