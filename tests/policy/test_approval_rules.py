"""The ``[approvals] ask`` floor read into rules, matched against calls read
by the one tool-call reader; what an operator reads of a waiting call."""
from __future__ import annotations

import pytest

from leash.core.base.askrules import matching_rule, parse_rule, parse_rules
from leash.core.policy.approvalsummary import detail, one_line
from leash.core.policy.toolcall import read_tool_call

RULES = parse_rules(["Bash(git push*)", "path:deploy/**", "tool:mcp__*"])


def rule_for(tool, tool_input, cwd="/work/app"):
    call = read_tool_call(tool, tool_input, cwd=cwd, env={})
    found = matching_rule(RULES, call, tool, tool_input, root="/work/app")
    return found.text if found else None


@pytest.mark.parametrize("command", ["git push origin main", "git   push", "bash -c 'git push -f'",
                                     "cd sub && git push", "echo ok; git push --tags"])
def test_a_push_in_any_form_needs_a_human(command):
    assert rule_for("Bash", {"command": command}) == "Bash(git push*)"


@pytest.mark.parametrize("tool, tool_input", [
    ("Write", {"file_path": "/work/app/deploy/prod.yaml", "content": "x"}),
    ("Edit", {"file_path": "deploy/prod.yaml", "old_string": "a", "new_string": "b"}),
    ("Bash", {"command": "echo x > deploy/prod.yaml"}),
])
def test_a_write_under_deploy_needs_a_human(tool, tool_input):
    assert rule_for(tool, tool_input) == "path:deploy/**"


def test_mcp_tools_and_what_passes():
    assert rule_for("mcp__github__create_pr", {"title": "t"}) == "tool:mcp__*"
    assert rule_for("Bash", {"command": "git status"}) is None
    assert rule_for("Read", {"file_path": "/work/app/deploy/prod.yaml"}) is None  # reading is no write
    assert rule_for("Write", {"file_path": "/work/app/src/x.py", "content": ""}) is None


@pytest.mark.parametrize("text", ["", "Bash(", "tool:", "(x)", 3])
def test_malformed_rules_are_refused_with_one_line(text):
    with pytest.raises(ValueError):
        parse_rule(text)


def test_the_summary_is_one_masked_escaped_line_and_the_detail_a_diff():
    secret = "AKIAZ7Q3R5T2W8Y4U6PL"
    line = one_line("Bash", {"command": f"aws s3 cp x s3://b --key {secret}\n\x1b[31mred"})
    assert secret not in line and "\n" not in line and "\x1b" not in line
    diff = detail("Edit", {"file_path": "/w/a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"})
    assert "-x = 1" in diff and "+x = 2" in diff and "--- /w/a.py" in diff
    assert detail("Bash", {"command": "git push origin main"}) == "git push origin main"
