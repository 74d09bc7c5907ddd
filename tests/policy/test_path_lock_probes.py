"""A ``path:src/auth/**`` lock against commands that reach src/auth in every
way bash allows, through the real gate on a real work tree (and a few through
``leash hook pre-tool-use``'s entry); commands that stay away pass. The lock
is the project's ``src/auth`` wherever the agent works from (``CALL_PROBES``:
another directory, an MCP tool, an archive unpacked into it, a written path
the reader cannot resolve)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from leash.core.hook.gate import Gate
from leash.core.views.protocol import StopProtocol

LOCK = "path:src/auth/**"

PROBES = [
    "rm -rf src/auth",
    "rm src/auth/login.py",
    "cd src && rm -rf auth",
    "cd src; cd auth; rm login.py",
    "bash -c 'rm -rf src/auth'",
    'sh -c "cd src && rm -rf auth"',
    'eval "rm -rf src/auth"',
    "echo $(rm -rf src/auth)",
    "echo `rm src/auth/login.py`",
    "git checkout .",
    "git checkout -- src/auth/login.py",
    "git clean -fdx",
    "git reset --hard",
    "git stash",
    "git restore .",
    "echo x | tee src/auth/login.py",
    "cat > src/auth/login.py <<'EOF'\nprint('replaced')\nEOF",
    "echo pwned > src/auth/login.py",
    "printf pwned >> src/auth/tokens.py",
    "mv src/auth src/auth.old",
    "cp README.md src/auth/",
    "python3 -c \"open('src/auth/login.py', 'w').write('')\"",
    "node -e \"require('fs').rmSync('src/auth', {recursive: true})\"",
    "rm src/{auth,billing}/login.py",
    "rm src/a*/login.py",
    "find src -name '*.py' -delete",
    "sed -i 's/a/b/' src/auth/login.py",
    "ls src | xargs rm -rf",
    "sudo rm -rf src/auth",
    "env -C src rm -rf auth",
    "D=src/auth; rm -rf $D",
    'rm -rf "$PWD/src/auth"',
    "rm shortcut/login.py",
]
ALLOWED = [
    "ls",
    "git status",
    "cat src/billing/pay.py",
    "rm src/billing/pay.py",
    "cd src && rm -rf billing",
    "echo src/auth is locked",
    "grep -r token .",
    "git checkout -b feature",
    "python3 -c \"print('hello')\"",
    "cp src/billing/pay.py docs/",
    "rm -rf build && mkdir build",
    "git log -- src/billing",
]


# (what it shows, where it runs: "tree" (the project), "src" (cd src) or
# "outside" (a directory outside the project, CLAUDE_PROJECT_DIR naming it),
# tool, tool input; "{tree}" is the project's absolute path.)
CALL_PROBES = [
    ("absolute Edit after cd src", "src", "Edit",
     {"file_path": "{tree}/src/auth/login.py", "old_string": "#", "new_string": "#!"}),
    ("absolute Write from outside the project", "outside", "Write",
     {"file_path": "{tree}/src/auth/login.py", "content": "x"}),
    ("rm of an absolute path after cd src", "src", "Bash", {"command": "rm {tree}/src/auth/login.py"}),
    ("rm -rf auth after cd src", "src", "Bash", {"command": "rm -rf auth"}),
    ("cd src inside the command, then an absolute path", "tree", "Bash",
     {"command": "cd src && sed -i s/a/b/ {tree}/src/auth/tokens.py"}),
    ("MCP write_file", "tree", "mcp__filesystem__write_file", {"path": "{tree}/src/auth/login.py", "content": "x"}),
    ("MCP move_file destination", "tree", "mcp__filesystem__move_file",
     {"source": "src/billing/pay.py", "destination": "src/auth/pay.py"}),
    ("MCP tool with a list of paths", "src", "mcp__files__delete", {"paths": ["../docs/index.md", "auth/tokens.py"]}),
    ("an unknown tool's filePath", "tree", "SomeNewTool", {"filePath": "src/auth/login.py"}),
    ("tar -C DIR -x", "tree", "Bash", {"command": "tar -C src/auth -xf backup.tar"}),
    ("tar xf ARCHIVE -C DIR", "tree", "Bash", {"command": "tar xf backup.tar -C src/auth"}),
    ("tar --directory=DIR", "tree", "Bash", {"command": "tar --directory=src/auth -xzf backup.tgz"}),
    ("sed -i on $(printf ...)", "tree", "Bash", {"command": "sed -i 's/a/b/' $(printf src/auth/login.py)"}),
    ("a write through an unknown variable", "tree", "Bash", {"command": "rm -rf $TARGET_DIR/auth"}),
    ("a program word from $(which rm)", "tree", "Bash", {"command": "$(which rm) -rf src/auth"}),
]
CALLS_ALLOWED = [
    ("absolute Edit elsewhere after cd src", "src", "Edit",
     {"file_path": "{tree}/src/billing/pay.py", "old_string": "#", "new_string": "#!"}),
    ("rm -rf billing after cd src", "src", "Bash", {"command": "rm -rf billing"}),
    ("a file named auth elsewhere", "src", "Bash", {"command": "touch {tree}/docs/auth"}),
    ("MCP read of another file", "tree", "mcp__filesystem__write_file", {"path": "docs/index.md", "content": "x"}),
    ("tar -C another directory", "tree", "Bash", {"command": "tar -C docs -xf backup.tar"}),
    ("a computed word that is only printed", "tree", "Bash", {"command": "echo $(date) > docs/log.txt"}),
    ("Read of a locked file (path locks hold changes)", "src", "Read", {"file_path": "{tree}/src/auth/login.py"}),
    ("Grep of a locked directory", "tree", "Grep", {"pattern": "token", "path": "src/auth"}),
]


def where(tree, place: str) -> tuple[str, dict]:
    """(cwd, env) for a probe's place."""
    env = {"HOME": str(tree.parent)}
    if place == "src":
        return str(tree / "src"), env
    if place == "outside":
        outside = tree.parent / "outside"
        outside.mkdir(exist_ok=True)
        return str(outside), dict(env, CLAUDE_PROJECT_DIR=str(tree))
    return str(tree), env


def filled(value, tree):
    if isinstance(value, str):
        return value.replace("{tree}", str(tree))
    if isinstance(value, list):
        return [filled(v, tree) for v in value]
    return {k: filled(v, tree) for k, v in value.items()}


def build_tree(root):
    """The work tree the probes run in: a git work tree with src/auth, src/billing, docs."""
    for name in ("src/auth/login.py", "src/auth/tokens.py", "src/billing/pay.py", "README.md", "docs/index.md"):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n")
    (root / "shortcut").symlink_to(root / "src" / "auth")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def tree(tmp_path):
    return build_tree(tmp_path / "tree")


@pytest.fixture
def locked(home, tree):
    StopProtocol(home).hands_off(LOCK, reason="auth rewrite", source="ops")
    return Gate(home)


def test_there_are_33_probes():
    assert len(PROBES) == 33 and len(set(PROBES)) == 33
    assert len({label for label, *_ in CALL_PROBES}) == len(CALL_PROBES) == 15


@pytest.mark.parametrize("command", PROBES)
def test_a_probe_is_denied_by_the_path_lock(locked, tree, command):
    verdict = locked.check("agent", "Bash", {"command": command}, cwd=str(tree), env={"HOME": str(tree.parent)})
    assert not verdict.allow, command
    assert verdict.rule == "path_lock", verdict
    assert LOCK in verdict.reason and "auth rewrite" in verdict.reason


@pytest.mark.parametrize("command", ALLOWED)
def test_a_command_away_from_the_lock_passes(locked, tree, command):
    verdict = locked.check("agent", "Bash", {"command": command}, cwd=str(tree), env={"HOME": str(tree.parent)})
    assert verdict.rule != "path_lock", (command, verdict)


@pytest.mark.parametrize("label,place,tool,tool_input", CALL_PROBES, ids=[p[0] for p in CALL_PROBES])
def test_a_call_probe_is_denied_by_the_path_lock(locked, tree, label, place, tool, tool_input):
    cwd, env = where(tree, place)
    verdict = locked.check("agent", tool, filled(tool_input, tree), cwd=cwd, env=env)
    assert not verdict.allow and verdict.rule == "path_lock", (label, verdict)


@pytest.mark.parametrize("label,place,tool,tool_input", CALLS_ALLOWED, ids=[p[0] for p in CALLS_ALLOWED])
def test_a_call_away_from_the_lock_passes(locked, tree, label, place, tool, tool_input):
    cwd, env = where(tree, place)
    verdict = locked.check("agent", tool, filled(tool_input, tree), cwd=cwd, env=env)
    assert verdict.rule != "path_lock", (label, verdict)


def test_a_written_path_the_reader_cannot_resolve_is_named_in_the_reason(locked, tree):
    verdict = locked.check("agent", "Bash", {"command": "sed -i 's/a/b/' $(printf src/auth/login.py)"},
                           cwd=str(tree), env={"HOME": str(tree.parent)})
    assert "cannot resolve" in verdict.reason and "path locks" in verdict.reason, verdict


def test_without_path_locks_an_unresolved_write_is_not_held_by_them(home, tree):
    StopProtocol(home).hands_off("some-session", reason="x", source="ops")
    verdict = Gate(home).check("agent", "Bash", {"command": "rm -rf $TARGET_DIR/auth"}, cwd=str(tree),
                               env={"HOME": str(tree.parent)})
    assert verdict.rule != "path_lock", verdict


def test_the_declared_project_wins_over_a_nested_work_tree(locked, tree):
    nested = tree / "src" / "vendored"
    nested.mkdir()
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    command = {"command": "rm -rf ../auth"}
    env = {"HOME": str(tree.parent), "CLAUDE_PROJECT_DIR": str(tree)}
    assert locked.check("agent", "Bash", command, cwd=str(nested), env=env).rule == "path_lock"


def test_an_absolute_pattern_stays_absolute(home, tree):
    StopProtocol(home).hands_off(f"path:{tree}/docs/**", reason="docs freeze", source="ops")
    gate = Gate(home)
    env = {"HOME": str(tree.parent)}
    assert gate.check("agent", "Bash", {"command": "rm ../docs/index.md"}, cwd=str(tree / "src"),
                      env=env).rule == "path_lock"
    assert gate.check("agent", "Bash", {"command": "rm docs/index.md"}, cwd=str(tree / "src"),
                      env=env).rule != "path_lock"


def test_a_directory_write_names_what_it_covers(locked, tree):
    verdict = locked.check("agent", "Bash", {"command": "git clean -fdx"}, cwd=str(tree))
    assert "(and everything under it)" in verdict.reason


def test_a_one_mebibyte_command_is_read_to_its_end(locked, tree):
    command = "echo " + "a" * (1 << 20) + " && rm -rf src/auth"
    verdict = locked.check("agent", "Bash", {"command": command}, cwd=str(tree))
    assert not verdict.allow and verdict.rule == "path_lock"
    harmless = "echo " + "a" * (1 << 20) + " && rm -rf src/billing"
    assert locked.check("agent", "Bash", {"command": harmless}, cwd=str(tree)).rule != "path_lock"


def test_a_command_too_large_to_read_is_denied_while_path_locks_hold(locked, tree):
    command = "; ".join(["true"] * 12_000)
    verdict = locked.check("agent", "Bash", {"command": command}, cwd=str(tree))
    assert not verdict.allow and verdict.rule == "path_lock"
    assert "cannot be checked" in verdict.reason


def hook(leash, tree, command):
    body = {"session_id": "agent", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "cwd": str(tree)}
    return leash("hook", "pre-tool-use", stdin=json.dumps(body).encode(), env={"HOME": str(tree.parent)})


@pytest.mark.parametrize("command", ["cd src && rm -rf auth", "bash -c 'rm -rf src/auth'", "git checkout .",
                                     "cat > src/auth/login.py <<'EOF'\nx\nEOF", "rm src/{auth,billing}/login.py"])
def test_probes_through_the_hook(leash, locked, tree, command):
    result = hook(leash, tree, command)
    assert result.code == 0, result
    reason = json.loads(result.out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert LOCK in reason


def test_the_hook_lets_other_commands_through(leash, locked, tree):
    result = hook(leash, tree, "cd src && rm -rf billing")
    assert result.code == 0 and result.out == "", result
    assert os.path.isdir(tree / "src" / "auth")  # nothing was run, only judged
