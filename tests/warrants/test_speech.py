"""Speaking into a pane (core.warrants.speech) on real tmux panes: a program
that reads a burst with its Enter as a paste (as Claude Code's TUI does), a
shell, a dialog, and a program the dog does not know. Then the dog on top of
it: a healthy interactive agent is pardoned and its input line left as found."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from leash.core.base.tmux import Tmux
from leash.core.state.warrants import WarrantQueue
from leash.core.state.warrants.epitaph import health_check
from leash.core.warrants.kennel import Kennel
from leash.core.warrants.speech import CLAUDE_CODE, SHELL, UNKNOWN, Speaker, after_echo, program_of

from ..support.waiting import wait_for

PASTE_TUI = Path(__file__).parent.parent / "support" / "paste_tui.py"
CHECK = health_check("agent-1", 60, "is it alive", "ops@test", 1, 3, warrant_id="w-0001")
FAST = [1.5, 1.5, 1.5]


def start_tui(tmux: Tmux, tmp_path: Path, name: str, mode: str = "healthy", *, width: int = 120) -> Path:
    """The paste-reading TUI in session ``name``, run as a program named
    ``claude`` (a link to this interpreter: tmux names the pane by it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    claude = bin_dir / "claude"
    if not claude.exists():
        claude.symlink_to(sys.executable)
    log = tmp_path / f"{name}.log"
    log.touch()
    tmux.new_session(name, f"{claude} {PASTE_TUI} {log} {mode}", width=width, height=30)
    wait_for(lambda: any("paste_tui ready" in row for row in tmux.view(name)["rows"]), what=f"{name} to start")
    return log


def prompts(log: Path) -> list[str]:
    return [json.loads(line)["prompt"] for line in log.read_text().splitlines() if "prompt" in json.loads(line)]


def input_row(tmux: Tmux, name: str) -> str:
    view = tmux.view(name)
    return view["rows"][view["cursor"][1]]


# ------------------------------------------------------------------ the bug
def test_a_check_sent_with_its_enter_in_one_burst_stays_in_the_input_box(tmux, tmp_path):
    """What every warrant did before: ``send-keys -l TEXT ; send-keys Enter`` in
    one tmux command reaches the program as one read, a paste."""
    log = start_tui(tmux, tmp_path, "agent")
    target = tmux.resolve("agent")["id"] + ":"
    tmux.server.cmd("send-keys", "-t", target, "-l", "x" * 70, ";", "send-keys", "-t", target, "Enter")
    time.sleep(0.5)
    assert prompts(log) == []
    assert "x" * 20 in " ".join(tmux.view("agent")["rows"])


def test_the_speaker_submits_the_check_and_confirms_it(tmux, tmp_path):
    log = start_tui(tmux, tmp_path, "agent")
    delivery = Speaker(tmux).deliver(tmux.resolve("agent")["id"], CHECK)
    assert delivery.delivered, delivery
    assert delivery.program == CLAUDE_CODE and delivery.command == "claude"
    assert prompts(log) == [CHECK]
    assert input_row(tmux, "agent").strip() == "❯"


def test_an_operators_draft_is_put_back_after_the_check(tmux, tmp_path):
    log = start_tui(tmux, tmp_path, "agent")
    tmux.type_text("agent", "half a prompt")
    wait_for(lambda: "half a prompt" in input_row(tmux, "agent"), what="the draft")
    delivery = Speaker(tmux).deliver("agent", CHECK)
    assert delivery.delivered and delivery.draft_restored
    assert prompts(log) == [CHECK]
    wait_for(lambda: input_row(tmux, "agent").strip() == "❯ half a prompt", what="the draft back")
    tmux.send_keys("agent", "Enter")
    wait_for(lambda: prompts(log) == [CHECK, "half a prompt"], what="the operator's own prompt")


def test_a_dialog_gets_no_keys_and_the_attempt_is_undelivered(tmux, tmp_path):
    log = start_tui(tmux, tmp_path, "agent", "dialog")
    delivery = Speaker(tmux).deliver("agent", CHECK)
    assert not delivery.delivered
    assert "no input line" in delivery.why
    time.sleep(0.3)
    assert log.read_text() == ""  # not one key reached the dialog


def test_a_check_that_never_leaves_the_input_line_is_taken_back(tmux, tmp_path):
    """A program that ignores Enter: the check is undelivered and erased, and
    the draft found there is back."""
    log = start_tui(tmux, tmp_path, "agent", "healthy")
    tmux.type_text("agent", "my draft")
    wait_for(lambda: "my draft" in input_row(tmux, "agent"), what="the draft")

    class EnterIgnored:
        def __init__(self, real: Tmux):
            self.real = real

        def __getattr__(self, name):
            return getattr(self.real, name)

        def send_keys(self, target, *keys, repeat=1):
            if keys != ("Enter",):
                self.real.send_keys(target, *keys, repeat=repeat)

    delivery = Speaker(EnterIgnored(tmux), confirm_seconds=0.3).deliver("agent", CHECK)
    assert not delivery.delivered and delivery.enters == 3
    wait_for(lambda: input_row(tmux, "agent").strip() == "❯ my draft", what="the draft back")
    assert prompts(log) == []


def test_a_shell_gets_the_check_and_its_draft_back(tmux, tmp_path):
    tmux.new_session("shell", "env -i PS1='$ ' TERM=xterm bash --norc --noprofile", width=120)
    wait_for(lambda: input_row(tmux, "shell").startswith("$"), what="the shell")
    tmux.type_text("shell", "echo draft")
    wait_for(lambda: "echo draft" in input_row(tmux, "shell"), what="the draft")
    delivery = Speaker(tmux).deliver("shell", CHECK)
    assert delivery.delivered and delivery.program == SHELL and delivery.draft_restored
    wait_for(lambda: input_row(tmux, "shell").rstrip() == "$ echo draft", what="the draft back")
    assert any("command not found" in row for row in tmux.view("shell")["rows"])


def test_an_unknown_program_is_named_and_gets_text_and_enter(tmux, tmp_path):
    tmux.new_session("cat", "exec cat", width=120)
    wait_for(lambda: tmux.view("cat")["command"] == "cat", what="cat")
    delivery = Speaker(tmux).deliver("cat", CHECK)
    assert delivery.delivered and delivery.program == UNKNOWN
    assert "cat, which the dog does not know" in delivery.why


def test_program_of_reads_the_command_and_the_screen():
    box = {"rows": ["hello", "─" * 80, "❯ ", "─" * 80, "  status"], "width": 80, "cursor": (2, 2)}
    assert program_of({**box, "command": "claude"}) == CLAUDE_CODE
    assert program_of({**box, "command": "2.1.332"}) == CLAUDE_CODE  # the native installer's file name
    assert program_of({**box, "command": "node"}) == CLAUDE_CODE
    assert program_of({"rows": ["$ "], "width": 80, "cursor": (2, 0), "command": "node"}) == UNKNOWN
    assert program_of({"rows": ["$ "], "width": 80, "cursor": (2, 0), "command": "zsh"}) == SHELL


def test_an_echo_is_found_however_the_pane_wrapped_it():
    for width in (10, 11, 40, 119):
        rows = ["older output"]
        rest = "❯ " + CHECK
        while rest:
            rows.append(rest[:width])
            rest = "  " + rest[width:] if rest[width:] else ""
        assert after_echo(rows + ["● ALIVE"], CHECK) == ["● ALIVE"], width
        assert after_echo(rows[:-1], CHECK) is None  # not whole: not an echo


# ------------------------------------------------------------------ the dog
def run_until_idle(home, tmux: Tmux, timeouts=FAST) -> dict[str, dict]:
    kennel = Kennel(home, tmux=tmux, timeouts=timeouts, poll_seconds=0.1, until_idle=True)
    return {state["warrant"]["target"]: state for state in asyncio.run(kennel.run())}


def test_warrants_on_a_healthy_interactive_agent_end_pardoned_and_leave_its_input_line_empty(home, tmux, tmp_path):
    log = start_tui(tmux, tmp_path, "agent-1")
    queue = WarrantQueue(home)
    for n in range(3):
        queue.file("agent-1", reason=f"check {n}", requester="ops@test")
        done = run_until_idle(home, tmux)["agent-1"]
        assert (done["outcome"], done["attempt"]) == ("pardoned", 1), done.get("epitaph")
        assert input_row(tmux, "agent-1").strip() == "❯"
    assert len(prompts(log)) == 3 and all("HEALTH CHECK" in p for p in prompts(log))


def test_a_silent_interactive_agent_is_executed_with_every_check_delivered(home, tmux, tmp_path):
    log = start_tui(tmux, tmp_path, "agent-1", "silent")
    WarrantQueue(home).file("agent-1", reason="hung", requester="ops@test")
    done = run_until_idle(home, tmux, timeouts=[0.5, 0.5, 0.5])["agent-1"]
    assert done["outcome"] == "executed"
    assert [p.rsplit("Attempt: ", 1)[1] for p in prompts(log)] == ["1/3", "2/3", "3/3"]
    assert "Attempt: 3/3" in done["final_screen"]
    assert not tmux.has_session("agent-1")


def test_a_dialog_is_never_killed_on_silence(home, tmux, tmp_path):
    start_tui(tmux, tmp_path, "agent-1", "dialog")
    WarrantQueue(home).file("agent-1", reason="stuck?", requester="ops@test")
    done = run_until_idle(home, tmux, timeouts=[0.3, 0.3, 0.3])["agent-1"]
    assert done["outcome"] == "undelivered"
    assert tmux.has_session("agent-1")
    lines = [json.loads(line) for line in (Path(os.environ["LEASH_HOME"]) / "stop_ack_log.jsonl").read_text()
             .splitlines()]
    assert [line["event"] for line in lines if line["event"].startswith("warrant_")] == \
        ["warrant_filed", "warrant_undelivered"]


def test_a_program_that_rewraps_the_check_is_not_an_answer():
    """A program prints the check again, word-wrapped to a narrow pane: one of
    its rows reads ALIVE alone. Every whole echo is taken out, however it was
    wrapped."""
    import textwrap

    from leash.core.state.warrants.epitaph import ALIVE_ALONE, answered

    lone = 0
    for width in range(8, 16):
        pieces = textwrap.wrap(CHECK, width)
        lone += any(ALIVE_ALONE.match(piece.strip()) for piece in pieces)
        rows = ["$ " + CHECK] + pieces + ["$ "]
        after = after_echo(rows, CHECK)
        assert after is not None and answered(after, CHECK) is None, width
        assert answered(after_echo(rows + ["ALIVE"], CHECK), CHECK) == "alive"
    assert lone  # the wrapping does leave ALIVE alone on a row


def test_a_pane_that_rewraps_the_check_at_eleven_columns_is_not_pardoned(home, tmux, tmp_path):
    tmux.new_session("agent-1", "exec fold -s -w 11", width=120)
    wait_for(lambda: tmux.view("agent-1")["command"] == "fold", what="fold")
    WarrantQueue(home).file("agent-1", reason="stuck", requester="ops@test")
    done = run_until_idle(home, tmux, timeouts=[0.4, 0.4, 0.4])["agent-1"]
    assert done["outcome"] == "executed", done.get("epitaph")
    assert any(row.strip() == "ALIVE" for row in done["final_screen"].splitlines())  # the trap was there
