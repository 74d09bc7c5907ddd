"""An ask rule on ``git push`` holds the push however the command spells it:
the program by its base name, git's global options and the aliases the
command sets read, and what leash cannot read (a computed program or verb, a
script, an interpreter's code, a shell alias) held while the rule could
match it — saying so. A ``path:`` rule holds a write to the whole tree and a
write it cannot resolve, as the path locks deny them."""
from __future__ import annotations

import json
import os
import random
import subprocess

import pytest

from leash.core.base.askrules import could_start, holding_rule, parse_rules
from leash.core.hook.approvalhold import matching_ask_rule
from leash.core.hook.hooks import answer
from leash.core.policy.toolcall import read_tool_call
from leash.core.views.protocol import StopProtocol

PUSH = "Bash(git push*)"
DEPLOY = "path:deploy/**"
RULES = parse_rules([PUSH, DEPLOY])

# Spellings a rule on the words as written already held.
WRITTEN_FORMS = [
    "git push", "git push origin main", "git push --force", "git   push", "cd x && git push", "sh -c 'git push'",
    'bash -c "git push -f"', "env git push", "sudo git push", "timeout 60 git push", "nohup git push",
    "command git push", "\\git push", '"git" push', "G=git; $G push", "echo ok; git push --tags",
    "true || git push", "(git push)", "eval git push", "echo 'git push' | sh", "sh <<< 'git push'",
    "FOO=1 git push",
]
# Spellings it missed.
REPHRASED = [
    "/usr/bin/git push", "git -C . push", "git --no-pager push", "git -c k=v push", "$(printf 'git push')",
    "git $(echo push)", "echo push | xargs git", "git config alias.p push && git p", "git -c alias.p=push p",
    "alias p='git push'; p", "bash push.sh", "python3 -c \"subprocess.run(['git','push'])\"", "git send-pack",
    "git --git-dir=.git push", "git -P push", "`echo git` push",
]
UNHELD = ["git status", "git log --grep push", "echo git push", "grep push file", "git -c alias.st=status st",
          "git $(echo status)", "git -c alias.push=status status", "python3 --version",
          "git commit -m \"$(cat <<'EOF'\nfix the push\nEOF\n)\"", "cd \"$(git rev-parse --show-toplevel)\" && ls"]


def held(command: str, cwd: str, env: dict | None = None, rules=RULES):
    call = read_tool_call("Bash", {"command": command}, cwd=cwd, env=env or {"PATH": "/usr/bin:/bin"})
    found = holding_rule(rules, call, "Bash", {"command": command}, root=cwd)
    return (found[0].text, found[1]) if found is not None else None


def test_there_are_38_spellings_of_a_push():
    assert len(WRITTEN_FORMS) == 22 and len(REPHRASED) == 16 and not set(WRITTEN_FORMS) & set(REPHRASED)


@pytest.mark.parametrize("command", WRITTEN_FORMS + REPHRASED)
def test_every_spelling_of_a_push_is_held(command, tmp_path):
    found = held(command, str(tmp_path))
    assert found is not None and found[0] == PUSH, (command, found)


@pytest.mark.parametrize("command", UNHELD)
def test_calls_that_cannot_push_are_not_held(command, tmp_path):
    assert held(command, str(tmp_path)) is None


@pytest.mark.parametrize("command", ["/usr/bin/git push", "git -C . -c k=v --no-pager push",
                                     "git --namespace=x --work-tree . -P push", "git -c alias.p=push p",
                                     "git config --global alias.p push; git p", "git send-pack origin",
                                     "git subtree push --prefix lib origin main", "$(which git) push",
                                     "/usr/bin/git push $(cat remote)", "echo main | xargs git -C . push origin"])
def test_a_push_leash_reads_is_a_plain_match(command, tmp_path):
    assert held(command, str(tmp_path)) == (PUSH, "")


@pytest.mark.parametrize("command, why", [
    ("$(printf 'git push')", "its program is computed ($(printf 'git push'))"),
    ("alias p='git push'; p", "p is a shell alias or function the command defines"),
    ("function p { git push; }; p", "p is a shell alias or function the command defines"),
    ("bash push.sh", "bash runs the script push.sh"),
    ("cat cmds | sh", "sh runs a script from its input"),
    ("source push.sh", "it sources push.sh into the shell"),
    ("perl -e 'system(\"git push\")'", "perl runs code leash does not read"),
    ("python3 -m tool", "python3 runs code leash does not read"),
    ("git p", "git p is no git command: an alias from git's configuration, which leash does not read"),
    ("git -c \"alias.p=$(cat v)\" p", "git p is an alias to a computed value"),
    ("git config alias.p '!git push'; git p", "git p is an alias that runs a shell command"),
    ("echo push | xargs git", "a word before git's command is computed or comes from xargs' input"),
    ("git $(cat verb)", "a word before git's command is computed or comes from xargs' input"),
])
def test_what_leash_cannot_read_is_held_saying_why(command, why, tmp_path):
    assert held(command, str(tmp_path)) == (PUSH, why)


def test_a_computed_word_holds_only_where_the_rule_could_still_match(tmp_path):
    rules = parse_rules(["Bash(git push --force*)"])
    assert held("git push $(cat flags)", str(tmp_path), rules=rules) == ("Bash(git push --force*)",
                                                                        "a word of it is computed ($(cat flags))")
    assert held("git commit $(cat flags)", str(tmp_path), rules=rules) is None
    assert could_start("git push*", "git ") and could_start("*push*", "ls ") and could_start("git [pq]ush*", "git p")
    assert not could_start("git push*", "git commit ") and not could_start("git push*", "ls ")


def test_a_git_program_on_the_path_is_no_alias(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "git-lfs"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert held("git lfs ls-files", str(tmp_path), env=env) is None
    assert held("git lfs ls-files", str(tmp_path))[1].startswith("git lfs is no git command")


@pytest.fixture
def work_tree(tmp_path):
    tree = tmp_path / "app"
    (tree / "deploy").mkdir(parents=True)
    (tree / "src").mkdir()
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    return str(tree)


@pytest.mark.parametrize("command", ["git checkout .", "git reset --hard", "git clean -fdx", "git stash",
                                     "cd src && git reset --hard", "rm -rf deploy",
                                     "git -c alias.co=checkout co ."])
def test_a_write_to_the_whole_tree_is_held_by_a_path_rule(command, work_tree):
    assert held(command, work_tree) == (DEPLOY, "")


@pytest.mark.parametrize("command", ["echo x > $(printf deploy/prod.yaml)", "cp a \"$TARGET\""])
def test_a_write_leash_cannot_resolve_is_held_by_a_path_rule(command, work_tree):
    rule, why = held(command, work_tree)
    assert rule == DEPLOY and why.startswith("it writes a path leash cannot resolve ("), why


def test_a_program_leash_cannot_read_is_held_by_a_path_rule(work_tree):
    rules = parse_rules([DEPLOY])
    assert held("bash wipe.sh", work_tree, rules=rules) == (DEPLOY, "bash runs the script wipe.sh")
    assert held("$(cat tool) x", work_tree, rules=rules) == (DEPLOY, "its program is computed ($(cat tool))")
    assert held("ls $(cat dir)", work_tree, rules=rules) is None  # a known program that only reads


@pytest.mark.parametrize("command", ["git checkout -- src/x.py", "cd src && git checkout .", "rm -rf src",
                                     "echo x > src/y", "git status"])
def test_writes_elsewhere_are_not_held_by_a_path_rule(command, work_tree):
    assert held(command, work_tree) is None


def test_the_approval_names_what_leash_could_not_read_escaped(tmp_path):
    settings = {"ask": [PUSH]}
    rule = matching_ask_rule(settings, "Bash", {"command": "$(printf '\x1b[2Jgit push')"}, cwd=str(tmp_path), env={})
    assert rule.startswith(f"{PUSH}, held unread: its program is computed (") and "\x1b" not in rule, rule
    assert matching_ask_rule(settings, "Bash", {"command": "git -C . push"}, cwd=str(tmp_path), env={}) == PUSH
    rule = matching_ask_rule(settings, "Bash", {"command": "git 'p\x1b[2J" + "x" * 500 + "'"}, cwd=str(tmp_path),
                             env={})
    assert rule.startswith(f"{PUSH}, held unread: git p") and "\x1b" not in rule and len(rule) < 300, rule


def test_without_leashd_the_hook_denies_a_rephrased_push_saying_why(home, tmp_path):
    StopProtocol(home)
    (home / "config.toml").write_text(f'[approvals]\nask = ["{PUSH}"]\n')
    payload = {"session_id": "00000000-0000-4000-8000-000000000001", "cwd": str(tmp_path),
               "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1",
               "tool_input": {"command": "echo push | xargs git"}}
    out, _, code = answer("pre-tool-use", json.dumps(payload).encode(), home=str(home), env={}, now=1_800_000_000.0)
    said = json.loads(out)["hookSpecificOutput"]
    assert code == 0 and said["permissionDecision"] == "deny"
    assert f"({PUSH}, held unread: a word before git's command" in said["permissionDecisionReason"]
    assert not os.path.exists(tmp_path / ".git")  # nothing ran


@pytest.mark.parametrize("content, why", [(b"\x7fELF\x02\x01\x01", ""),
                                          (b"#!/bin/sh\ngit push\n", "it runs the script ./bin/git")])
def test_a_program_named_by_its_path_is_read_unless_it_is_a_script(content, why, tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "git").write_bytes(content)
    assert held("./bin/git push", str(tmp_path)) == (PUSH, why)
    assert held("./push.sh", str(tmp_path)) == (PUSH, "it runs ./push.sh, which leash cannot open")


@pytest.mark.parametrize("command, why", [
    ("su -c 'git push'", "su runs a command string leash does not read"),
    ("script -qc 'git push' /dev/null", "script runs a command string leash does not read"),
    ("ssh -p 2222 host git push", "ssh runs a command on another host"),
])
def test_programs_that_run_a_command_string_are_held(command, why, tmp_path):
    assert held(command, str(tmp_path)) == (PUSH, why)
    assert held("ssh -p 2222 host", str(tmp_path)) is None


def test_no_call_makes_the_rules_raise(tmp_path):
    words = ["git", "-c", "alias.p=push", "p", "$(printf x)", "|", "xargs", "&&", "alias", "q=git", "q", "'", '"',
             "-C", "config", "alias.", "sh", "-c", "`", "(", ")", "{", "}", ";", "python3", "--", "=", "\\", "{}",
             "./x"]
    chooser = random.Random(7)
    for _ in range(400):
        command = " ".join(chooser.choice(words) for _ in range(chooser.randint(1, 12)))
        held(command, str(tmp_path))


def test_an_alias_the_line_sets_writes_as_its_command_for_the_path_locks_too(work_tree):
    from leash.core.policy.gitroles import git_roles

    assert git_roles(["git", "-c", "alias.co=checkout", "co", "."], work_tree) == [(work_tree, "write", True)]
    assert git_roles(["git", "-c", "alias.status=checkout", "status"], work_tree) == []  # git's own verb wins
