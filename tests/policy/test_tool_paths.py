"""What the readers now see that they did not: a computed program word that
resolves (``"$(which leash)"``), the words the reader cannot resolve, the
directories ``tar`` extracts into wherever ``-C`` stands, the paths an MCP
tool or an unknown tool names, and the project path locks are anchored at."""
from __future__ import annotations

import os

import pytest

from leash.core.base.project import project_root
from leash.core.policy.shellread import read_shell
from leash.core.policy.toolcall import read_tool_call


def programs(line: str) -> list[str]:
    return [c.program for c in read_shell(line, cwd="/w", env={}).commands if c.within == 0]


@pytest.mark.parametrize("line, program", [
    ('"$(which leash)" resume s1', "leash"),
    ("`which leash` resume s1", "leash"),
    ("$(command -v leash) resume s1", "leash"),
    ('"$(type -P leash)" release x', "leash"),
    ("$(readlink -f $(which leash)) stop --all", "leash"),
    ("$(which leash | head -n 1) stop", "leash"),
    ("$(echo /opt/bin/leash) stop", "leash"),
    ("$(printf %s leash) stop", "leash"),
    ("$(which rm) -rf x", "rm"),
])
def test_a_computed_program_word_resolves(line, program):
    assert programs(line)[-1] == program


@pytest.mark.parametrize("line", [
    "$(find-the-binary) resume s1",
    "$(type leash) resume",  # prints "leash is /path": not a program
    "$(printf 'le\\x61sh') resume",  # printf's escapes: not read as the word they make
    "$(which leash; echo rm) x",
    "$L resume",
])
def test_a_computed_program_word_that_does_not_resolve(line):
    command = read_shell(line, cwd="/w", env={}).commands[-1]
    assert command.dynamic[0] and command.resolved is None


def test_command_dash_v_only_looks_a_name_up():
    assert programs("command -v leash") == ["command"]
    assert programs("command leash resume") == ["leash"]


def written(command: str, cwd) -> set[tuple[str, bool, bool]]:
    call = read_tool_call("Bash", {"command": command}, cwd=str(cwd), env={})
    return {(os.path.relpath(t.path, cwd), t.subtree, t.computed) for t in call.writes}


@pytest.mark.parametrize("command, expected", [
    ("tar -C src -xf a.tar", {("src", True, False)}),
    ("tar xf a.tar -C src", {("src", True, False)}),
    ("tar --directory=src -xzf a.tgz", {("src", True, False)}),
    ("tar --directory src --extract -f a.tar", {("src", True, False)}),
    ("tar -xf a.tar", {(".", True, False)}),
    ("tar -czf out.tgz -C src .", {("out.tgz", False, False)}),
    ("tar -tf a.tar", set()),
    ("sed -i s/a/b/ $(printf src/x.py)", {("$(printf src/x.py)", False, True)}),
    ("rm -f $UNKNOWN/x", {("$UNKNOWN/x", False, True)}),
    ("echo x > $(mktemp)", {("$(mktemp)", False, True)}),
    ("echo $(date) > notes.txt", {("notes.txt", False, False)}),
])
def test_what_is_written_and_what_cannot_be_resolved(tmp_path, command, expected):
    (tmp_path / "src").mkdir()
    assert written(command, tmp_path) == expected


def test_tar_create_reads_what_it_packs_from_its_directory(tmp_path):
    call = read_tool_call("Bash", {"command": "tar -czf out.tgz -C /srv data"}, cwd=str(tmp_path), env={})
    assert ("/srv/data", "read") in {(t.path, t.role) for t in call.targets}


@pytest.mark.parametrize("tool, tool_input, expected", [
    ("mcp__filesystem__write_file", {"path": "/p/src/a.py", "content": "x"}, {("/p/src/a.py", "write")}),
    ("mcp__fs__move", {"source": "a.py", "destination": "b/a.py"}, {("/p/a.py", "write"), ("/p/b/a.py", "write")}),
    ("mcp__fs__delete", {"paths": ["x/a.py", "x/b.py"]}, {("/p/x/a.py", "write"), ("/p/x/b.py", "write")}),
    ("SomeTool", {"filePath": "file:///etc/app.conf"}, {("/etc/app.conf", "write")}),
    ("SomeTool", {"edits": [{"target_path": "d/e.py", "text": "t"}]}, {("/p/d/e.py", "write")}),
    ("SomeTool", {"profile": "default", "query": "src/a.py"}, set()),
    ("Read", {"file_path": "a.py"}, {("/p/a.py", "read")}),
    ("Grep", {"pattern": "x", "path": "src"}, {("/p/src", "read")}),
    ("Glob", {"pattern": "**", "path": "src"}, set()),
    ("WebFetch", {"url": "https://example.com/a.py"}, set()),
])
def test_the_paths_a_tool_names(tool, tool_input, expected):
    call = read_tool_call(tool, tool_input, cwd="/p", env={})
    assert {(t.path, t.role) for t in call.targets} == expected


def test_the_project_is_the_declared_one_then_the_work_tree_then_the_cwd(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src").mkdir()
    inside = str(tmp_path / "repo" / "src")
    assert project_root(inside, {"CLAUDE_PROJECT_DIR": str(tmp_path)}) == str(tmp_path)
    assert project_root(inside, {"CLAUDE_PROJECT_DIR": "relative/dir"}) == str(tmp_path / "repo")
    assert project_root(inside, {}) == str(tmp_path / "repo")
    assert project_root(str(tmp_path), {}) == str(tmp_path)
    assert project_root(None, {}) is None
