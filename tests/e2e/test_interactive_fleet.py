"""leash over a fleet of interactive Claude Code TUIs in tmux, as an operator
runs them: each test starts its TUIs (three where the scenario is about a
fleet, one otherwise) on a private tmux server of its own and its own
LEASH_HOME, each agent against its own loopback stand-in of the Messages API
(see tui.py), and acts as the operator does — leash's CLI, the console's keys,
the kennel — then looks at what a person would see: the panes, the files the
scripted calls make, the state leash reports.

A stop is filed while the model is "thinking" (the stand-in holds that
request until the test lets it go), so it is the next tool call that meets it.
Every test ends with every live agent's input line empty: nothing leash did
is left where the operator types next."""
from __future__ import annotations

import json
import shutil
import time

import pytest

from ..support.e2e.harness import ClaudeUnavailable, ensure_claude
from ..support.e2e.standin import bash, text, tool_use
from ..support.e2e.tui import Fleet, above_input_box, input_text, squeezed
from ..support.waiting import wait_for

try:  # once, at collection: without Claude Code or tmux the whole module is one skip line
    ensure_claude()
except ClaudeUnavailable as exc:
    pytest.skip(f"Claude Code unavailable: {exc}", allow_module_level=True)
if shutil.which("tmux") is None:
    pytest.skip("tmux is not installed", allow_module_level=True)

SECRET = "AKIAZ7Q3R5T2W8Y4U6PL"  # the shape of an AWS access key id, not a real one
FINISHED = "all finished here"
HEALTH_CHECK = "[DOG] HEALTH CHECK"
INTERRUPTED = "Interrupted"  # "⎿  Interrupted · What should Claude do instead?" in both versions
LONG_CALL_SECONDS = 60
INTERRUPT_WITHIN_SECONDS = 20
WAIT_SECONDS = 30
POLL_SECONDS = 0.2  # a look at a pane is a tmux process
# Short gates for the kennel: three attempts of 8 s, looked at twice a second.
WARRANT_CONFIG = "[warrants]\ntimeouts = [8, 8, 8]\npoll_seconds = 0.5\n"
KENNEL_SECONDS = 55


@pytest.fixture
def fleet(claude, home, tmp_path):
    with Fleet(claude, tmp_path, home) as fleet:
        yield fleet


def touch_then_finish() -> list[list[dict]]:
    return [[text("Creating the marker."), bash("touch marker")], [text(FINISHED)]]


def write(path, content: str = "x = 1\n") -> dict:
    return tool_use("Write", {"file_path": str(path), "content": content})


def assert_inputs_clean(fleet: Fleet) -> None:
    for agent in fleet.agents:
        if agent.alive():
            assert agent.input_text() == "", f"{agent.name}'s input line is not empty:\n{agent.screen()}"


def shows(screen: str, words: str) -> bool:
    return squeezed(words) in squeezed(screen)


def fleet_stopped(fleet: Fleet) -> bool:
    return bool(json.loads(fleet.leash("status", "--json").stdout)["fleet_stopped"])


# ------------------------------------------------------------------ stops
def test_stopping_one_agent_mid_task_denies_its_next_call_while_the_others_run(fleet):
    agents = fleet.start([touch_then_finish()] * 3)
    held = [agent.pause_before(0) for agent in agents]
    for agent in agents:
        agent.submit("create the marker")
    for pause in held:
        pause.wait_reached()

    fleet.leash("stop", "agent-2", "--reason", "review agent-2 first")
    for pause in held:
        pause.release()

    first, stopped, third = agents
    for agent in (first, third):
        agent.wait_for(FINISHED)
        assert agent.marker.exists()
    stopped.wait_for("review agent-2 first")
    assert not stopped.marker.exists()
    stopped.wait_tool_result("review agent-2 first")
    assert not shows(stopped.screen(), FINISHED)  # the turn ended at the deny
    assert_inputs_clean(fleet)


def test_a_fleet_stop_from_the_console_keys_denies_every_agents_next_call(fleet):
    agents = fleet.start([[[bash("touch before")], [bash("touch marker")], [text(FINISHED)]]] * 3)
    console = fleet.console()
    held = [agent.pause_before(1) for agent in agents]
    for agent in agents:
        agent.submit("create both files")
    for agent, pause in zip(agents, held, strict=True):
        pause.wait_reached()  # its first call ran; the model is "thinking" about the next
        assert (agent.project / "before").exists()

    console.press_until("S", "Stop the whole fleet?")
    console.type("fleet drill")  # the dialog opens with the cursor in its reason field
    console.keys("C-y")  # its confirm key (y there is a letter of the reason)
    wait_for(lambda: fleet_stopped(fleet), WAIT_SECONDS, interval=POLL_SECONDS, what="the fleet stop")
    (stop,) = json.loads(fleet.leash("status", "--json").stdout)["fleet_stopped"]
    for pause in held:
        pause.release()

    for agent in agents:
        agent.wait_for(stop["reason"])
        assert not agent.marker.exists()
        agent.wait_tool_result(stop["reason"])
    assert_inputs_clean(fleet)


def test_a_path_lock_denies_a_write_into_it_and_lets_one_elsewhere_run(fleet):
    fleet.leash("hands-off", "path:src/auth/**", "--reason", "auth freeze")
    (agent,) = fleet.start([[]])
    locked, elsewhere = agent.project / "src" / "auth" / "session.py", agent.project / "src" / "app" / "main.py"
    agent.standin.script.extend([[write(elsewhere)], [write(locked)], [text(FINISHED)]])

    agent.submit("write the two modules")

    agent.wait_for("auth freeze")
    assert elsewhere.exists()
    assert not locked.exists()
    agent.wait_tool_result("auth freeze")
    assert_inputs_clean(fleet)


# ------------------------------------------------------------------ halts
def test_a_halt_is_acknowledged_from_the_console(fleet):
    (agent,) = fleet.start([[[bash(f"echo {SECRET} > marker")], [text(FINISHED)]]])
    console = fleet.console()

    agent.submit("print the key")
    agent.wait_for("secrets_exposure")
    assert not agent.marker.exists()
    pending = json.loads(fleet.leash("halts", "list", "--json").stdout)["halts"]
    assert [halt["condition_name"] for halt in pending] == ["secrets_exposure"], pending

    console.keys("2")
    console.wait_for("secrets_exposure")
    console.press_until("a", "Acknowledge this halt?")
    console.type("key rotated already")  # the note field has the cursor
    console.keys("C-y")

    def acknowledged() -> list[dict]:
        return [halt for halt in json.loads(fleet.leash("halts", "list", "--all", "--json").stdout)["halts"]
                if halt["acknowledged"]]
    wait_for(acknowledged, WAIT_SECONDS, interval=POLL_SECONDS, what="the acknowledgement")
    (halt,) = acknowledged()
    assert halt["halt_id"] == pending[0]["halt_id"]
    assert halt["resolution"] == "resolved"
    assert json.loads(fleet.leash("halts", "list", "--json").stdout)["halts"] == []
    assert SECRET not in console.screen()
    assert_inputs_clean(fleet)


# ------------------------------------------------------------------ interrupt
def test_stop_with_interrupt_cancels_the_long_call_in_flight(fleet):
    # Not a leading sleep: 2.1.332 refuses a command that begins with a long one.
    (agent,) = fleet.start([[[bash(f"touch started; sleep {LONG_CALL_SECONDS}; echo done > marker")],
                             [text(FINISHED)]]])
    agent.submit("wait a minute, then write the marker")
    wait_for((agent.project / "started").exists, WAIT_SECONDS, interval=POLL_SECONDS, what="the long call")
    assert sleeping(agent)

    began = time.monotonic()
    fleet.leash("stop", "agent-1", "--interrupt", "--reason", "cancel the wait")
    agent.wait_for(INTERRUPTED, INTERRUPT_WITHIN_SECONDS)
    wait_for(lambda: not sleeping(agent), INTERRUPT_WITHIN_SECONDS,
             interval=POLL_SECONDS, what="the end of the cancelled command")

    assert time.monotonic() - began < INTERRUPT_WITHIN_SECONDS  # not the 60 s the call would take
    assert not agent.marker.exists()  # it never reaches its last step
    assert not shows(agent.screen(), FINISHED)  # the turn ended there
    assert_inputs_clean(fleet)


def sleeping(agent) -> bool:
    return any(f"sleep {LONG_CALL_SECONDS}" in command for command in agent.commands())


# ------------------------------------------------------------------ warrants
def file_warrant_and_run_kennel(fleet: Fleet) -> dict:
    """File a warrant on agent-1, work the queue until it is empty, and return
    the finished dog's state."""
    (fleet.home / "config.toml").write_text(WARRANT_CONFIG)
    fleet.leash("warrant", "file", "agent-1", "--reason", "health check drill")
    fleet.leash("kennel", "--until-idle", timeout=KENNEL_SECONDS)
    listing = json.loads(fleet.leash("warrant", "list", "--json").stdout)
    assert not listing["pending"] and not listing["active"], listing
    (dog,) = listing["completed"]
    return dog


def test_a_warrant_on_a_healthy_idle_agent_ends_pardoned(fleet):
    (agent,) = fleet.start([[[text("ALIVE")]]])

    dog = file_warrant_and_run_kennel(fleet)

    assert dog["outcome"] == "pardoned", dog
    assert agent.alive()
    (asked,) = agent.standin.model_requests  # the check was submitted: it reached the model
    assert HEALTH_CHECK in json.dumps(asked.body["messages"])
    lines = agent.lines()
    assert any(HEALTH_CHECK in line for line in above_input_box(lines)), "\n".join(lines)
    assert shows("\n".join(above_input_box(lines)), "● ALIVE")  # the model's answer, under the check
    events = [json.loads(line)["event"] for line in fleet.leash("log", "--json").stdout.splitlines()]
    assert "warrant_pardoned" in events, events
    assert_inputs_clean(fleet)


def test_a_warrant_on_a_hung_agent_ends_executed_after_the_check_was_delivered(fleet):
    (agent,) = fleet.start([[[text("ALIVE")]]])
    hung = agent.pause_before(0)  # the model never answers the check

    dog = file_warrant_and_run_kennel(fleet)

    assert dog["outcome"] == "executed", dog
    assert hung.reached.is_set()  # delivered: submitted, so it reached the model
    assert not agent.alive()
    final = dog["final_screen"].splitlines()
    assert any(HEALTH_CHECK in line for line in above_input_box(final)), dog["final_screen"]
    # Nothing of the dog's left in the input line (on plain text a placeholder may show there).
    assert HEALTH_CHECK not in (input_text(final) or ""), dog["final_screen"]
    assert_inputs_clean(fleet)
