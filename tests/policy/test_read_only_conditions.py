"""A call of a read-only tool runs only the halt conditions that can fire on
it: those declared ``write_or_exec`` (their evidence is the commands, the
edits or the files to change) are left out, decided from the tool call the
hook parsed; a write still runs them all, and so does any check whose context
declares a command, an edit or a change. Rules that read the session's own
record (its failures) or guard reads (the tampering rule) still run for reads.
"""
from __future__ import annotations

from leash.core.policy.halts import engine
from leash.core.policy.halts.conditions import REGISTRY, conditions_for, load_all, reads_only
from leash.core.policy.halts.context import CheckContext
from leash.core.policy.halts.hookcontext import check_input
from leash.core.policy.toolcall import read_tool_call
from leash.core.state.halts.api import default_config

AWS_KEY = "AK" + "IA" + "QWERTYUIOPASDFGH"  # credential-shaped, assembled so this file holds none


def context_of(tool: str, tool_input: dict, cwd: str, **fields) -> CheckContext:
    """The check the gate builds for a hook's tool call (the parsed call handed over)."""
    call = read_tool_call(tool, tool_input, cwd=cwd, env={})
    data = check_input("s1", tool, tool_input, cwd=cwd, env={}, files_read=[], call=call)
    assert data is not None
    data["current_context"].update(fields)
    return CheckContext(data)


def fired(ctx: CheckContext) -> set[str]:
    return {f.name for f in engine.evaluate(ctx, default_config())}


def test_the_write_rules_are_declared_and_the_read_rules_are_not():
    load_all()
    write_rules = {name for name, rule in REGISTRY.items() if rule.write_or_exec}
    assert {"secrets_exposure", "breaking_changes", "unknown_commands", "out_of_scope",
            "modifying_unread_code"} <= write_rules
    assert not write_rules & {"supervisor_tampering", "three_strikes", "repeated_errors", "uncertainty_scale",
                              "ambiguous_requirements", "shared_instances"}


def test_a_write_rule_fires_for_a_write_and_is_skipped_for_a_read(tmp_path):
    source = tmp_path / "settings.py"
    source.write_text("KEY = None\n")
    edit = context_of("Edit", {"file_path": str(source), "old_string": "KEY = None",
                               "new_string": f"KEY = '{AWS_KEY}'"}, str(tmp_path))
    assert not reads_only(edit)
    assert "secrets_exposure" in conditions_for(edit)
    assert "secrets_exposure" in fired(edit)

    bash = context_of("Bash", {"command": f"echo {AWS_KEY}"}, str(tmp_path))
    assert "secrets_exposure" in fired(bash)

    for tool, tool_input in (("Read", {"file_path": str(source)}), ("Grep", {"pattern": "KEY", "path": str(tmp_path)}),
                             ("NotebookRead", {"notebook_path": str(tmp_path / "n.ipynb")})):
        read = context_of(tool, tool_input, str(tmp_path))
        assert reads_only(read), tool
        chosen = conditions_for(read)
        assert "secrets_exposure" not in chosen and "unknown_commands" not in chosen
        assert "supervisor_tampering" in chosen and "three_strikes" in chosen


def test_a_read_whose_check_declares_a_change_runs_every_rule(tmp_path):
    read = context_of("Read", {"file_path": str(tmp_path / "a.py")}, str(tmp_path), commands=[f"echo {AWS_KEY}"])
    assert not reads_only(read)
    assert conditions_for(read) == load_all()
    assert "secrets_exposure" in fired(read)


def test_a_check_without_a_tool_call_runs_every_rule():
    ctx = CheckContext({"session_token": "s1", "current_context": {"operation": "deploy"}})
    assert not reads_only(ctx)
    assert conditions_for(ctx) == load_all()


def test_a_tool_that_is_not_read_only_runs_every_rule(tmp_path):
    mcp = context_of("mcp__fs__write_file", {"path": str(tmp_path / "out.txt"), "content": "x"}, str(tmp_path))
    assert not reads_only(mcp)
    assert conditions_for(mcp) == load_all()


def test_a_read_still_meets_the_rules_of_the_session_record(tmp_path):
    read = CheckContext(check_input("s1", "Read", {"file_path": str(tmp_path / "a.py")}, cwd=str(tmp_path), env={},
                                    files_read=[], call=read_tool_call("Read", {"file_path": str(tmp_path / "a.py")},
                                                                       cwd=str(tmp_path), env={})),
                        stored_attempts=3)
    assert reads_only(read)
    assert "three_strikes" in fired(read)
