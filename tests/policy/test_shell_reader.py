"""The shell reader (core.shellread) and the tool call it feeds
(core.toolcall): what bash would run, where, and which paths it writes."""
from __future__ import annotations

import os
import shlex

import pytest

from leash.core.policy.shellread import MAX_DEPTH, MAX_SIMPLE_COMMANDS, read_shell
from leash.core.policy.toolcall import read_tool_call


@pytest.fixture
def tree(tmp_path):
    for name in ("src/auth/login.py", "src/auth/tokens.py", "src/billing/pay.py", "notes.md"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    return tmp_path


def run(line, cwd=None, env=None, home=None):
    return [(c.argv, c.cwd) for c in read_shell(line, cwd=cwd, env=env or {"HOME": "/home/u"}, home=home).commands]


def argvs(line, **kwargs):
    return [argv for argv, _ in run(line, **kwargs)]


def writes(command, tree, **kwargs):
    call = read_tool_call("Bash", {"command": command}, cwd=str(tree), env={"HOME": "/home/u"}, **kwargs)
    return {(os.path.relpath(t.path, tree), t.subtree) for t in call.writes}


# ------------------------------------------------------------------ what runs
@pytest.mark.parametrize("line, inner", [
    ("bash -c 'rm -rf x'", ["rm", "-rf", "x"]),
    ("bash -lc 'rm -rf x'", ["rm", "-rf", "x"]),
    ("sh -c \"bash -c 'eval rm -rf x'\"", ["rm", "-rf", "x"]),
    ("echo $(rm -rf x)", ["rm", "-rf", "x"]),
    ("echo \"$(echo `rm -rf x`)\"", ["rm", "-rf", "x"]),
    ("diff <(rm -rf x) y", ["rm", "-rf", "x"]),
    ("ls | xargs -n1 rm -rf", ["rm", "-rf"]),
    ("env -i PATH=/bin rm -rf x", ["rm", "-rf", "x"]),
    ("sudo -u root nohup timeout 5 rm -rf x", ["rm", "-rf", "x"]),
    ("bash <<'EOF'\nrm -rf x\nEOF", ["rm", "-rf", "x"]),
    ("bash <<< 'rm -rf x'", ["rm", "-rf", "x"]),
    ("echo rm -rf x | sh", ["rm", "-rf", "x"]),
    ("$'\\x72\\x6d' -rf x", ["rm", "-rf", "x"]),
    ("find . -name '*.pyc' -exec rm -f {} +", ["rm", "-f", "."]),
    ("find build -delete", ["rm", "-rf", "build"]),
    ("f() { rm -rf x; }; f", ["rm", "-rf", "x"]),
])
def test_commands_run_in_any_form_are_seen(line, inner):
    assert inner in argvs(line)


def test_a_quoted_here_document_is_data():
    line = "cat > notes.md <<'EOF'\nrm -rf /\n$(reboot)\nEOF\nls"
    assert argvs(line) == [["cat"], ["ls"]]


def test_an_unquoted_here_document_still_runs_its_substitutions():
    assert ["reboot"] in argvs("cat > notes.md <<EOF\nhello $(reboot)\nEOF")


def test_cd_is_carried_across_lists_and_subshells_keep_their_own(tree):
    found = run("cd src && rm -rf auth; (cd billing; rm pay.py); rm notes.md", cwd=str(tree))
    where = {argv[-1]: cwd for argv, cwd in found if argv[0] == "rm"}
    assert where == {"auth": str(tree / "src"), "pay.py": str(tree / "src" / "billing"),
                     "notes.md": str(tree / "src")}


def test_a_nested_shell_starts_where_its_command_runs(tree):
    found = run("cd src && bash -c 'cd auth && rm login.py' && rm x", cwd=str(tree))
    where = {argv[-1]: cwd for argv, cwd in found if argv[0] == "rm"}
    assert where == {"login.py": str(tree / "src" / "auth"), "x": str(tree / "src")}


def test_pushd_popd_and_env_dash_c(tree):
    found = run("pushd src && rm a && popd && rm b && env -C src/auth rm c", cwd=str(tree))
    where = {argv[-1]: cwd for argv, cwd in found if argv[0] == "rm"}
    assert where == {"a": str(tree / "src"), "b": str(tree), "c": str(tree / "src" / "auth")}


def test_variables_tilde_and_home():
    env = {"HOME": "/home/u", "PROJECT": "/srv/app"}
    assert argvs("D=~/x; rm -r $D ${D}/y", env=env) == [["rm", "-r", "/home/u/x", "/home/u/x/y"]]
    assert argvs("rm $PROJECT/build ${NOPE:-/tmp/fallback}", env=env) == [["rm", "/srv/app/build", "/tmp/fallback"]]
    assert argvs("export A=1 B=$HOME; rm $B/$A", env=env) == [["export", "A=1", "B=/home/u"], ["rm", "/home/u/1"]]
    assert argvs("rm $LEASH_HOME/stops.json", env=env, home="/var/leash") == [["rm", "/var/leash/stops.json"]]
    assert argvs("cd /opt && rm $PWD/x", env=env)[-1] == ["rm", "/opt/x"]


def test_an_unknown_variable_is_listed_as_unseen():
    reading = read_shell("rm -rf $SOMEWHERE", env={})
    assert reading.commands[0].dynamic == [False, False, True]
    assert "the value of $SOMEWHERE" in reading.unseen


def test_quotes_stop_expansion(tree):
    assert argvs("echo '$HOME' \"~\" '*.md' \"{a,b}\"", cwd=str(tree)) == [["echo", "$HOME", "~", "*.md", "{a,b}"]]


def test_braces_and_globs_expand_against_the_tree(tree):
    assert argvs("rm src/{auth,billing}/x {1..3}", cwd=str(tree)) == [
        ["rm", "src/auth/x", "src/billing/x", "1", "2", "3"]]
    assert argvs("rm src/a*/*.py", cwd=str(tree)) == [["rm", "src/auth/login.py", "src/auth/tokens.py"]]
    assert argvs("rm nothing*here", cwd=str(tree)) == [["rm", "nothing*here"]]  # no match: kept, as bash does


def test_brace_expansion_is_capped(tree):
    command = read_shell("rm src/{1..100000}/x", cwd=str(tree)).commands[0]
    assert command.argv == ["rm", "src/{1..100000}/x"] and command.overflow_dirs == ["src"]
    call = read_tool_call("Bash", {"command": "rm src/{1..100000}/x"}, cwd=str(tree))
    assert any(t.subtree and t.path == str(tree / "src") for t in call.targets)


def test_redirections_are_files_written_and_read(tree):
    (command,) = read_shell("sort < in.txt >> out.txt 2>/dev/null 2>&1", cwd=str(tree)).commands
    assert command.redirects == [("<", "in.txt"), (">>", "out.txt"), (">", "/dev/null")]


def test_nesting_is_capped():
    nested = "rm -rf x"
    for _ in range(MAX_DEPTH - 1):
        nested = "bash -c " + shlex.quote(nested)
    assert read_shell(nested).incomplete is None and ["rm", "-rf", "x"] in argvs(nested)
    for _ in range(3):
        nested = "bash -c " + shlex.quote(nested)
    assert read_shell(nested).incomplete.startswith("nested deeper")
    assert read_shell("echo " + "$(" * 50 + "x" + ")" * 50).incomplete.startswith("nested deeper")


def test_too_many_commands_stop_the_reading():
    reading = read_shell("true; " * (MAX_SIMPLE_COMMANDS + 10))
    assert len(reading.commands) == MAX_SIMPLE_COMMANDS and "commands" in reading.incomplete


def test_a_one_mebibyte_command_is_read_to_its_end():
    reading = read_shell("echo '" + "a" * (1 << 20) + "' && rm -rf /srv/x")
    assert reading.incomplete is None and reading.commands[-1].argv == ["rm", "-rf", "/srv/x"]


@pytest.mark.parametrize("line", ["echo \"unterminated", "echo 'oops", "echo $(unclosed", "echo `never",
                                  "sh -c 'rm -rf", "\\", "''", ")(", "&& ||", "${", "$((1+", "<<", "cat <<EOF",
                                  "{a,{b", "[", "a=(", "$'\\x", "\x00\x1b"])
def test_broken_input_never_raises(line):
    assert isinstance(read_shell(line).commands, list)


# ------------------------------------------------------------------ what a call writes
@pytest.mark.parametrize("command, expected", [
    ("rm -rf src/auth", {("src/auth", True)}),
    ("echo x > notes.md", {("notes.md", False)}),
    ("echo x | tee -a notes.md", {("notes.md", False)}),
    ("mv notes.md src/", {("notes.md", False), ("src", True)}),
    ("rm -r src/auth/login.py", {("src/auth/login.py", True)}),
    ("cp notes.md copy.md", {("copy.md", False)}),
    ("sed -i s/a/b/ notes.md", {("notes.md", False)}),
    ("dd if=/dev/zero of=notes.md", {("notes.md", False)}),
    ("chmod 600 notes.md", {("notes.md", False)}),
    ("git checkout .", {(".", True)}),
    ("git checkout -- src/auth/login.py", {("src/auth/login.py", True)}),
    ("git clean -fdx", {(".", True)}),
    ("git restore src", {("src", True)}),
    ("git status", set()),
    ("git checkout -b feature", set()),
    ("tar -xzf a.tgz -C src", {("src", True)}),
    ("cat notes.md", set()),
    ("find src -name '*.py' -delete", {("src", True)}),
])
def test_what_a_command_writes(tree, command, expected):
    assert writes(command, tree) == expected


def test_git_rewrites_the_whole_work_tree_from_a_subdirectory(tree):
    (tree / ".git").mkdir()
    call = read_tool_call("Bash", {"command": "cd src/auth && git reset --hard"}, cwd=str(tree))
    assert [(t.path, t.subtree) for t in call.writes] == [(str(tree), True)]


def test_code_literals_that_look_like_paths_are_reached(tree):
    call = read_tool_call("Bash", {"command": "python3 -c \"open('src/auth/login.py', 'w')\""}, cwd=str(tree))
    assert str(tree / "src" / "auth" / "login.py") in {t.path for t in call.may_write}
    quiet = read_tool_call("Bash", {"command": "python3 -c \"print('hello world')\""}, cwd=str(tree))
    assert not [t for t in quiet.targets if "hello" in t.path]


def test_edit_tools_write_their_file(tree):
    call = read_tool_call("Edit", {"file_path": "notes.md"}, cwd=str(tree))
    assert [(t.path, t.role) for t in call.targets] == [(str(tree / "notes.md"), "write")]
    read = read_tool_call("Read", {"file_path": "notes.md"}, cwd=str(tree)).targets
    assert [(t.path, t.role) for t in read] == [(str(tree / "notes.md"), "read")]
    assert read_tool_call("Glob", {"pattern": "**/*.py", "path": "src"}, cwd=str(tree)).targets == []
