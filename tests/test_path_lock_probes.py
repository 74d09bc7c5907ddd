"""A ``path:src/auth/**`` lock against commands that reach src/auth in every
way bash allows, through the real gate on a real work tree (and a few through
``leash hook pre-tool-use``'s entry); commands that stay away pass."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from leash.core.gate import Gate
from leash.core.protocol import StopProtocol

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


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    for name in ("src/auth/login.py", "src/auth/tokens.py", "src/billing/pay.py", "README.md", "docs/index.md"):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n")
    (root / "shortcut").symlink_to(root / "src" / "auth")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def locked(home, tree):
    StopProtocol(home).hands_off(LOCK, reason="auth rewrite", source="ops")
    return Gate(home)


def test_there_are_33_probes():
    assert len(PROBES) == 33 and len(set(PROBES)) == 33


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
