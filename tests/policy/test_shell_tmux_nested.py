"""What tmux runs under its server, read as nested commands through the real
gate: a leash verb that lifts control, a write into leash's home, a write
under a path lock, a call an ask rule holds. Each tmux form that would run
one is judged as what it runs; a harmless command through tmux still passes."""
from __future__ import annotations

import pytest

from leash.core.base.askrules import matching_rule, parse_rules
from leash.core.hook.gate import Gate
from leash.core.policy.shellread import read_shell
from leash.core.policy.tmuxcommands import parse_tmux_line, tmux_scripts
from leash.core.policy.toolcall import read_tool_call
from leash.core.views.protocol import StopProtocol

from ..support.tampering import assert_tamper_blocked, build_scene, judge

# Each tmux form with {verb} where the command it runs goes.
TMUX_FORMS = [
    "tmux new-window -d '{verb}'",
    "tmux neww -d -n x -t ops '{verb}'",
    "tmux new-w -dn x '{verb}'",
    "tmux new-window -d {verb}",
    "tmux split-window -d '{verb}'",
    "tmux splitw -h -l 10 -c /tmp '{verb}'",
    "tmux new-session -d -s side '{verb}'",
    "tmux run-shell '{verb}'",
    "tmux run -b -t ops '{verb}'",
    "tmux run-shell -C 'new-window \"{verb}\"'",
    "tmux respawn-pane -k -t ops '{verb}'",
    "tmux respawnp -k '{verb}'",
    "tmux respawn-window -k -t ops {verb}",
    "tmux respawnw -k '{verb}'",
    "tmux display-popup -E '{verb}'",
    "tmux popup -d /tmp -w 80 -E '{verb}'",
    "tmux pipe-pane -t ops '{verb}'",
    "tmux if-shell '{verb}' 'display-message ok'",
    "tmux if -F 1 'new-window \"{verb}\"'",
    "tmux if-shell true 'display-message ok' 'run-shell \"{verb}\"'",
    "tmux if true {{ neww -d '{verb}' }}",
    "tmux send-keys -t ops '{verb}' Enter",
    "tmux send -t ops:1.0 -l '{verb}'",
    "tmux send-keys '{verb}' C-m",
    "tmux -S /tmp/ops.sock new-window -d '{verb}'",
    "tmux -L ops send-keys -t %1 '{verb}' Enter",
    "tmux new-window -d ls \\; new-window -d '{verb}'",
    "tmux new-window -d ls ';' send-keys -t ops '{verb}' Enter",
    "tmux confirm-before 'run-shell \"{verb}\"'",
    "tmux set-hook -g after-new-window 'run-shell \"{verb}\"'",
    "tmux bind-key -n F9 run-shell '{verb}'",
    "bash -c \"tmux new-window -d '{verb}'\"",
    "tmux -c '{verb}'",
    "tmux set-buffer '{verb}' \\; paste-buffer -t ops",
]
LIFTING_VERBS = ["leash resume other", "leash approvals allow 0123abcd", "leash release ezra"]


@pytest.fixture
def scene(home, tmp_path):
    return build_scene(home, tmp_path)


def test_there_are_34_tmux_forms():
    assert len(TMUX_FORMS) == 34 and len(set(TMUX_FORMS)) == 34


@pytest.mark.parametrize("verb", LIFTING_VERBS)
@pytest.mark.parametrize("form", TMUX_FORMS)
def test_a_leash_verb_run_by_tmux_is_tampering(scene, form, verb):
    assert_tamper_blocked(scene, judge(scene, form.format(verb=verb)))


@pytest.mark.parametrize("form", TMUX_FORMS)
def test_a_write_into_leash_home_run_by_tmux_is_tampering(scene, form):
    assert_tamper_blocked(scene, judge(scene, form.format(verb=f"rm {scene['home']}/stops.json")))


@pytest.mark.parametrize("form", TMUX_FORMS)
def test_a_write_under_a_path_lock_run_by_tmux_is_denied(home, tmp_path, form):
    tree = tmp_path / "tree"
    (tree / "src" / "auth").mkdir(parents=True)
    StopProtocol(home).hands_off("path:src/auth/**", reason="auth rewrite", source="ops")
    command = form.format(verb=f"rm -rf {tree}/src/auth")
    verdict = Gate(home).check("agent", "Bash", {"command": command}, cwd=str(tree), env={"HOME": str(tmp_path)})
    assert not verdict.allow and verdict.rule == "path_lock", (command, verdict)


@pytest.mark.parametrize("form", TMUX_FORMS)
def test_an_ask_rule_holds_what_tmux_runs(form):
    call = read_tool_call("Bash", {"command": form.format(verb="git push origin main")}, cwd="/work/app", env={})
    found = matching_rule(parse_rules(["Bash(git push*)"]), call, "Bash", {}, root="/work/app")
    assert found is not None and found.text == "Bash(git push*)", form


@pytest.mark.parametrize("command", [
    "tmux new-window -d 'ls'",
    "tmux split-window -h 'make test'",
    "tmux send-keys -t ops 'git status' Enter",
    "tmux list-sessions",
    "tmux display-message -p '#{pid}'",
    "tmux if-shell -F '#{pane_active}' 'display-message ok'",
])
def test_a_harmless_command_through_tmux_passes(scene, command):
    verdict = judge(scene, command)
    assert verdict.allow, (command, verdict)


def test_keys_typed_into_the_callers_own_pane_are_not_a_command():
    own = {"HOME": "/h", "TMUX_PANE": "%7"}
    assert ["leash", "resume", "x"] not in [c.argv for c in read_shell(
        "tmux send-keys -t %7 'leash resume x' Enter", cwd="/p", env=own).commands]
    assert ["leash", "resume", "x"] in [c.argv for c in read_shell(
        "tmux send-keys -t %8 'leash resume x' Enter", cwd="/p", env=own).commands]
    # another server's %7 is not the caller's pane
    assert ["leash", "resume", "x"] in [c.argv for c in read_shell(
        "tmux -L ops send-keys -t %7 'leash resume x' Enter", cwd="/p", env=own).commands]


def test_keys_are_typed_the_way_tmux_sends_them():
    typed = tmux_scripts(["tmux", "send", "-t", "ops", "leash", "Space", "resume", "Space", "x", "Enter", "C-c",
                          "Escape", "F5", "ls", "C-m"], [False] * 15).scripts
    assert [text for text, *_ in typed] == ["leash resume x\n\nls\n"]
    hexadecimal = tmux_scripts(["tmux", "send", "-H", "-t", "ops", "6c", "73", "0a"], [False] * 8).scripts
    assert [text for text, *_ in hexadecimal] == ["ls\n"]
    assert tmux_scripts(["tmux", "send", "-X", "-t", "ops", "cancel"], [False] * 6).scripts == []


def test_where_tmux_runs_its_command():
    found = read_shell("tmux neww -c /srv/app 'rm x'; tmux neww 'rm y'; tmux send -t ops 'rm z' Enter",
                       cwd="/p", env={"HOME": "/h"}).commands
    where = {c.argv[-1]: (c.cwd, c.via) for c in found if c.argv[0] == "rm"}
    assert where == {"x": ("/srv/app", ("tmux",)), "y": ("/p", ("tmux",)), "z": (None, ("tmux",))}


def test_tmux_quoting_and_what_cannot_be_seen():
    assert parse_tmux_line("neww -d \"leash resume 'a b'\"; run 'x;y' # note\nsend \"a;\"") == [
        "neww", "-d", "leash resume 'a b'", ";", "run", "x;y", ";", "send", "a;"]
    found = tmux_scripts(["tmux", "source-file", "~/.x.conf", ";", "$CMD", "arg"], [False, False, False, False,
                                                                                 True, False])
    assert found.scripts == [] and len(found.unseen) == 2
    assert tmux_scripts(["tmux", "new-window", "$X"], [False, False, True]).scripts == [("$X", True, None, True)]


def test_tmux_commands_nested_too_deep_are_not_let_through(scene):
    line = "neww -d 'leash resume other'"
    for _ in range(12):
        line = f"if true {{ {line} }}"
    verdict = judge(scene, f"tmux {line}")
    assert not verdict.allow and "could not be read to its end" in verdict.reason, verdict
