"""Approvals in an interactive Claude Code TUI in tmux, through ``leash
daemon``: the permission dialog and leash's approval race, the first answer
wins (2.1.197 and 2.1.332 alike).

* "Yes" in the pane runs the tool but does not end the hook (its process
  runs on): leashd sees the call's PostToolUse and withdraws the approval
  ``via`` "pane", answering the hook with nothing;
* Escape in the pane kills the hook: leashd sees its connection close and
  withdraws the approval (``via`` "leash"); the tool does not run;
* ``leash approvals allow`` from another process answers the hook: the
  dialog goes away and the tool runs."""
from __future__ import annotations

import json
import shutil
import time

import pytest

from leash.core.state.acklog import AckLog

from ..support.e2e.harness import ClaudeUnavailable, ensure_claude, leashd
from ..support.e2e.standin import bash, text
from ..support.e2e.tui import Fleet
from ..support.waiting import wait_for

try:  # once, at collection: without Claude Code or tmux the whole module is one skip line
    ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)
if shutil.which("tmux") is None:
    pytest.skip("tmux is not installed", allow_module_level=True)

WAIT_SECONDS = 40
POLL_SECONDS = 0.2  # a look at a pane is a tmux process
DIALOG = "Do you want to proceed?"


@pytest.fixture
def fleet(claude, home, tmp_path):
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with leashd(home), Fleet(claude, tmp_path, home) as fleet:
        yield fleet


def waiting(fleet) -> list[dict]:
    done = fleet.leash("approvals", "list", "--json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else []


def closing(home, approval_id: str) -> dict | None:
    found = [line for line in AckLog(home).read().entries
             if line.get("approval") == approval_id and line["event"] != "approval_requested"]
    return found[0] if found else None


def start_asking(fleet):
    (agent,) = fleet.start([[[text("Creating the marker."), bash("touch marker")], [text("done")]]],
                           args=("--permission-mode", "default"))
    agent.submit("create the marker")
    (approval,) = wait_for(lambda: waiting(fleet), timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="an approval")
    agent.wait_for(DIALOG, timeout=WAIT_SECONDS)
    return agent, approval


def answer_yes_in_the_pane(agent) -> None:
    """Enter on the dialog's first choice (Yes), again while the dialog still
    shows: a key that arrives while Claude Code is still drawing it is lost."""
    for _ in range(3):
        time.sleep(0.5)
        agent.keys("Enter")
        try:
            wait_for(lambda: DIALOG not in agent.screen(), timeout=5, interval=POLL_SECONDS, what="the dialog gone")
            return
        except AssertionError:
            continue
    wait_for(lambda: DIALOG not in agent.screen(), timeout=5, interval=POLL_SECONDS, what="the dialog gone")


def test_yes_in_the_pane_withdraws_the_approval(fleet, home):
    agent, approval = start_asking(fleet)
    answer_yes_in_the_pane(agent)

    line = wait_for(lambda: closing(home, approval["id"]),
                    timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the approval's close")
    assert (line["event"], line["via"]) == ("approval_withdrawn", "pane"), line
    wait_for(agent.marker.exists, timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the tool")
    assert waiting(fleet) == []


def test_escape_in_the_pane_withdraws_the_approval(fleet, home):
    agent, approval = start_asking(fleet)
    agent.keys("Escape")

    line = wait_for(lambda: closing(home, approval["id"]),
                    timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the approval's close")
    assert (line["event"], line["via"]) == ("approval_withdrawn", "leash"), line
    assert not agent.marker.exists()


def test_an_answer_from_the_cli_takes_the_dialog_away(fleet, home):
    agent, approval = start_asking(fleet)
    fleet.leash("approvals", "allow", approval["id"])

    wait_for(agent.marker.exists, timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the tool")
    assert closing(home, approval["id"])["event"] == "approval_allowed"
    wait_for(lambda: DIALOG not in agent.screen(), timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the dialog gone")


def test_an_answer_from_the_consoles_keys_takes_the_dialog_away(fleet, home):
    """The operator's console (through leashd): `7` shows the Approvals panel,
    `y` opens the allow modal (its note field has the cursor), a note typed,
    ctrl+y confirms."""
    agent, approval = start_asking(fleet)
    console = fleet.console()
    console.keys("7")
    console.wait_for("Approvals", timeout=WAIT_SECONDS)
    console.wait_for("touch marker", timeout=WAIT_SECONDS)
    console.press_until("y", "Allow Bash for")
    console.type("only this once")
    console.keys("C-y")

    wait_for(agent.marker.exists, timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the tool")
    line = closing(home, approval["id"])
    assert (line["event"], line["via"]) == ("approval_allowed", "console"), line
    wait_for(lambda: DIALOG not in agent.screen(), timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the dialog gone")


def test_a_denial_typed_in_the_console_reaches_the_model(fleet, home):
    """`n`, a message typed in the modal (its field has the cursor), Enter (to
    the Deny button), `y`: the call is refused and the model is given the
    operator's words."""
    agent, approval = start_asking(fleet)
    console = fleet.console()
    console.keys("7")
    console.wait_for("touch marker", timeout=WAIT_SECONDS)
    console.press_until("n", "Deny Bash for")
    console.type("not on a Friday")
    console.wait_for("not on a Friday", timeout=WAIT_SECONDS)
    console.keys("Enter")  # to the Deny button, where y confirms (the keys are read in order)
    console.keys("y")

    line = wait_for(lambda: closing(home, approval["id"]),
                    timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the approval's close")
    assert (line["event"], line["via"]) == ("approval_denied", "console"), line
    wait_for(lambda: any("not on a Friday" in r for r in agent.tool_results()),
             timeout=WAIT_SECONDS, interval=POLL_SECONDS, what="the message in the transcript")
    assert not agent.marker.exists()
