"""The shell readings ``core.toolcall`` keeps for commands judged again are
never stale: a reading that matched a glob against the working tree is read
again, and each reading is kept by everything it was read from (text, place,
environment, home, this process's HOME); the roles of the words are judged
against the file system on every call."""
from __future__ import annotations

import os

from leash.core.policy.toolcall import read_tool_call


def targets(command: str, cwd, *, env: dict | None = None, home: str = "/nonexistent-home") -> list[tuple[str, str]]:
    call = read_tool_call("Bash", {"command": command}, cwd=str(cwd), env=env if env is not None else {}, home=home)
    return sorted((os.path.relpath(t.path, cwd), t.role) for t in call.targets)


def test_a_glob_sees_a_file_created_since_the_last_call(tmp_path):
    (tmp_path / "a.py").write_text("")
    assert targets("rm *.py", tmp_path) == [("a.py", "write")]
    (tmp_path / "b.py").write_text("")
    assert targets("rm *.py", tmp_path) == [("a.py", "write"), ("b.py", "write")]
    (tmp_path / "a.py").unlink()
    assert targets("rm *.py", tmp_path) == [("b.py", "write")]


def test_the_same_text_in_another_environment_is_read_again(tmp_path):
    assert targets("rm $D/x", tmp_path, env={"D": "one"}) == [("one/x", "write")]
    assert targets("rm $D/x", tmp_path, env={"D": "two"}) == [("two/x", "write")]
    assert targets("rm $D/x", tmp_path, env={"D": "one"}) == [("one/x", "write")]


def test_the_same_text_in_another_place_is_read_again(tmp_path):
    (tmp_path / "sub").mkdir()
    assert ("sub/x", "write") in targets("cd sub && rm x", tmp_path)
    call = read_tool_call("Bash", {"command": "cd sub && rm x"}, cwd=str(tmp_path / "sub"), env={}, home="/h")
    assert str(tmp_path / "sub" / "sub" / "x") in [t.path for t in call.targets if t.role == "write"]


def test_home_without_the_call_s_own_follows_this_process_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "first"))
    assert targets("rm ~/x", tmp_path) == [("first/x", "write")]
    monkeypatch.setenv("HOME", str(tmp_path / "second"))
    assert targets("rm ~/x", tmp_path) == [("second/x", "write")]


def test_a_leash_home_given_per_call_is_part_of_the_reading(tmp_path):
    assert targets("rm $LEASH_HOME/stops.json", tmp_path, home=str(tmp_path / "h1")) == [("h1/stops.json", "write")]
    assert targets("rm $LEASH_HOME/stops.json", tmp_path, home=str(tmp_path / "h2")) == [("h2/stops.json", "write")]


def test_a_word_that_becomes_an_existing_file_is_a_path_at_once(tmp_path):
    assert targets("frob notes", tmp_path) == []  # no slash, no extension, no such file: a plain word
    (tmp_path / "notes").write_text("")
    assert targets("frob notes", tmp_path) == [("notes", "touch")]


def test_a_directory_written_is_a_subtree_as_soon_as_it_exists(tmp_path):
    first = read_tool_call("Bash", {"command": "rm build"}, cwd=str(tmp_path), env={}, home="/h")
    assert [(t.role, t.subtree) for t in first.targets] == [("write", False)]
    (tmp_path / "build").mkdir()
    again = read_tool_call("Bash", {"command": "rm build"}, cwd=str(tmp_path), env={}, home="/h")
    assert [(t.role, t.subtree) for t in again.targets] == [("write", True)]
