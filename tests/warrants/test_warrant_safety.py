"""Death warrants against hostile input and a moving target, on real tmux.

The health check types only printable text into a pane (nothing a shell runs,
no Ctrl-C); targets are checked when filed; a corrupt warrant or dog state is
quarantined instead of spinning the kennel; a warrant follows its session by
tmux id through a rename, and the hands-off check sees the filed name, the
current name and the id — and never kills while the locks cannot be read.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from leash.core.base.statefile import read_json, write_json
from leash.core.base.tmux import Tmux
from leash.core.state.acklog import AckLog
from leash.core.state.warrants import WarrantQueue
from leash.core.state.warrants.epitaph import MESSAGE_FIELD_LIMITS, health_check
from leash.core.views.protocol import StopProtocol
from leash.core.warrants.kennel import Kennel

from ..support.kennel import FAST, POLL, KennelThread, goes_idle, health_checks, kennel_process, start_agent
from ..support.waiting import wait_for

SHELL_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 []:,./-_+=@%#")

# Dies on Ctrl-C (KeyboardInterrupt ends it, and with it the pane); answers ALIVE.
ANSWERS_UNTIL_INTERRUPTED = """\
import sys
print("ready", flush=True)
for line in sys.stdin:
    if "HEALTH CHECK" in line:
        print("ALIVE", flush=True)
"""


def run_kennel_within(home, tmux_server, seconds: float = 20.0, **options) -> dict[str, dict]:
    """An in-process kennel until idle; a kennel that never goes idle fails
    the test instead of hanging it."""
    worker = KennelThread(home, tmux_server, **options)
    worker.start()
    worker.join(timeout=seconds)
    if worker.is_alive():
        worker.kennel.request_stop()
        worker.join(timeout=10)
        raise AssertionError("the kennel never went idle")
    return {state["warrant"]["target"]: state for state in worker.finished}


def session_id(tmux_server: Tmux, name: str) -> str:
    (found,) = [s["id"] for s in tmux_server.list_sessions() if s["name"] == name]
    return found


# ------------------------------------------------------------------ the message
def test_the_message_is_one_printable_line_without_shell_syntax():
    message = health_check("agent-1", 60, "stuck\ntouch X; rm -rf ~ | cat > f & `id` 'q' \"d\" \\ (a) {b} !!",
                           "$(touch Y)\x03\x1b[31m\t\u202e", 1, 3)
    assert "\n" not in message and "\r" not in message and message.isprintable()
    assert message.startswith("[DOG] HEALTH CHECK: Session agent-1, respond ALIVE within 60s or face termination.")
    assert message.endswith("Attempt: 1/3")
    assert set(message) <= SHELL_SAFE, sorted(set(message) - SHELL_SAFE)
    assert "touch X" in message and "touch Y" in message  # the words stay readable, as text
    long = health_check("t" * 1000, 1, "r" * 5000, "q" * 1000, 2, 3)
    assert len(long) < sum(MESSAGE_FIELD_LIMITS.values()) + 200


def test_the_health_check_types_nothing_a_shell_runs(home, tmux, tmp_path):
    """A shell in the pane (it cannot answer; hands-off keeps it alive): the
    newline in the reason, ``$(...)`` and Ctrl-C in the requester reach it only
    as inert text on one line."""
    workdir = tmp_path / "shell-cwd"
    workdir.mkdir()
    shell = "bash --norc --noprofile" if os.path.exists("/bin/bash") else "sh"
    tmux.new_session("shell", f"cd {workdir} && PS1='ready$ ' exec {shell}")
    wait_for(lambda: any("ready$" in line for line in tmux.capture("shell")), what="the shell prompt")
    StopProtocol(home).hands_off("shell", reason="keep the shell", source="ops")
    WarrantQueue(home).file("shell", reason="stuck\ntouch X", requester="$(touch Y)\x03`touch Z`")
    done = run_kennel_within(home, tmux, timeouts=FAST)["shell"]
    assert done["outcome"] == "blocked_hands_off"
    tmux.server.cmd("send-keys", "-t", session_id(tmux, "shell") + ":", "-l", "echo marker-$((40+2))")
    tmux.server.cmd("send-keys", "-t", session_id(tmux, "shell") + ":", "Enter")
    wait_for(lambda: any(line.strip() == "marker-42" for line in tmux.capture("shell")), what="the shell to answer")
    assert sorted(os.listdir(workdir)) == []
    (pane,) = [s for s in tmux.list_sessions() if s["name"] == "shell"][0]["panes"]
    assert pane["command"] in ("bash", "sh")
    assert health_checks(tmux.capture("shell")) == 3


def test_ctrl_c_in_a_warrant_never_reaches_the_agent(home, tmux, tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(ANSWERS_UNTIL_INTERRUPTED)
    tmux.new_session("fragile", f"{sys.executable} {script}")
    wait_for(lambda: any("ready" in line for line in tmux.capture("fragile")), what="the agent")
    WarrantQueue(home).file("fragile", reason="check\x03\x03", requester="ops\x03\x04\x1a")
    done = run_kennel_within(home, tmux, timeouts=FAST)["fragile"]
    assert (done["outcome"], done["attempt"]) == ("pardoned", 1)
    assert tmux.has_session("fragile")


# ------------------------------------------------------------------ filing
@pytest.mark.parametrize("target", ["", "   ", "a\nb", "a\tb", "\x1b[31mred", "a\x03", "a\x00b", "x" * 300,
                                    "bidi\u202eevil"])
def test_a_bad_target_is_refused_when_filed(home, cli, target):
    result = cli("warrant", "file", target, "--reason", "r")
    assert result.code == 2, result
    assert result.err.startswith("leash: error: ") and result.err.count("\n") == 1 and "Traceback" not in result.err
    assert WarrantQueue(home).pending() == []


def test_filing_binds_the_session_id_and_says_when_there_is_none(home, tmux, tmp_path, cli):
    start_agent(tmux, tmp_path, "bound", "silent")
    filed = cli("warrant", "file", "bound", "--reason", "r")
    assert filed.code == 0, filed
    (warrant,) = WarrantQueue(home).pending()
    assert warrant["target"] == "bound" and warrant["target_id"] == session_id(tmux, "bound")
    missing = cli("warrant", "file", "nobody", "--reason", "r")
    assert missing.code == 0 and "no tmux session" in missing.out
    assert [w.get("target_id", "absent") for w in WarrantQueue(home).pending()][1] is None
    again = cli("warrant", "file", session_id(tmux, "bound"), "--reason", "r")  # the same session, by id
    assert again.code == 0 and "already has a live warrant" in again.out


def test_targets_with_colons_and_dots_never_wedge_the_kennel(home, tmux, tmp_path):
    """tmux reads ``=agent:`` or ``=agent.`` as the session ``agent`` plus a
    window or pane part: such targets once made a dog crash forever."""
    start_agent(tmux, tmp_path, "agent", "silent")
    queue = WarrantQueue(home)
    targets = ["agent:", "agent.", "agent:0", "agent:.", "agent.0"]
    for target in targets:
        queue.file(target, reason="odd name", requester="ops")
    proc = kennel_process(home, tmux.socket, "--until-idle", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert goes_idle(proc, timeout=15)
    assert {c["warrant"]["target"]: c["outcome"] for c in queue.completed()} == dict.fromkeys(targets, "already_dead")
    assert tmux.has_session("agent") and health_checks(tmux.capture("agent")) == 0


# ------------------------------------------------------------------ bad files
def test_a_corrupt_pending_warrant_is_quarantined_not_spun_on(home, tmux, cli):
    queue = WarrantQueue(home)
    queue.ensure_dirs()
    bad = queue.pending_path("w-20260101T000000Z-badbad")
    with open(bad, "w") as handle:
        handle.write('{"id": "w-2026')
    proc = kennel_process(home, tmux.socket, "--until-idle", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert goes_idle(proc, timeout=10)
    assert not os.path.exists(bad)
    (moved,) = [n for n in os.listdir(queue.pending_dir) if n.startswith("w-20260101T000000Z-badbad.json.corrupt-")]
    (logged,) = AckLog(home).read(event="state_quarantined").entries
    assert logged["file"] == "warrants/w-20260101T000000Z-badbad.json" and logged["moved_to"] == moved
    listing = cli("warrant", "list")
    assert listing.code == 0 and moved in listing.out
    assert moved in cli("warrant", "list", "--json").json()["quarantined"][0]
    doctor = cli("doctor")
    assert moved in doctor.out


def test_a_corrupt_dog_state_is_quarantined_and_reported(home, tmux, cli):
    queue = WarrantQueue(home)
    queue.ensure_dirs()
    bad = queue.active_path("w-20260101T000000Z-dogdog")
    with open(bad, "w") as handle:
        handle.write("[1, 2")
    doctor = cli("doctor")
    assert "w-20260101T000000Z-dogdog.json" in doctor.out and os.path.exists(bad)  # doctor alone moves nothing
    done = run_kennel_within(home, tmux, timeouts=FAST)
    assert done == {} and not os.path.exists(bad)
    (moved,) = [n for n in os.listdir(queue.active_dir) if ".corrupt-" in n]
    assert moved in cli("warrant", "list").out and moved in cli("doctor").out
    assert AckLog(home).read(event="state_quarantined").entries[0]["file"] == \
        "dogs/active/w-20260101T000000Z-dogdog.json"


def test_a_dog_state_of_the_wrong_shape_is_quarantined(home, tmux):
    queue = WarrantQueue(home)
    queue.ensure_dirs()
    write_json(queue.active_path("w-20260101T000000Z-shapes"), {"id": "w-20260101T000000Z-shapes"})
    warrant = {"id": "w-20260101T000000Z-states", "target": "x", "target_id": None, "reason": "r",
               "requester": "ops", "filed_at": "2026-01-01T00:00:00Z"}
    write_json(queue.active_path(warrant["id"]), {"id": warrant["id"], "warrant": warrant, "state": "sleeping"})
    write_json(queue.pending_path("w-20260101T000000Z-misfiled"), dict(warrant))  # its id is not its name
    assert run_kennel_within(home, tmux, timeouts=FAST) == {}
    assert [n for n in os.listdir(queue.active_dir) if n.endswith(".json")] == []
    assert [n for n in os.listdir(queue.pending_dir) if n.endswith(".json")] == []
    assert len(queue.quarantined()) == 3


# ------------------------------------------------------------------ renames
def test_a_renamed_session_is_still_the_one_interrogated_and_killed(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "victim", "silent")
    start_agent(tmux, tmp_path, "bystander", "silent")
    bound = session_id(tmux, "victim")
    warrant, _ = WarrantQueue(home).file("victim", reason="stuck", requester="ops")
    tmux.server.cmd("rename-session", "-t", bound, "escaped")
    tmux.server.cmd("rename-session", "-t", session_id(tmux, "bystander"), "victim")  # a new session takes the name
    done = run_kennel_within(home, tmux, timeouts=FAST)["victim"]
    assert (done["outcome"], done["attempt"]) == ("executed", 3)
    assert bound not in {s["id"] for s in tmux.list_sessions()}
    assert health_checks(done["final_screen"]) == 3
    assert tmux.has_session("victim") and health_checks(tmux.capture("victim")) == 0


def test_a_hands_off_session_renamed_after_the_warrant_is_not_killed(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "keeper", "silent")
    StopProtocol(home).hands_off("keeper", reason="do not kill", source="ops")
    WarrantQueue(home).file("keeper", reason="stuck", requester="ops")
    tmux.server.cmd("rename-session", "-t", session_id(tmux, "keeper"), "renamed")
    done = run_kennel_within(home, tmux, timeouts=FAST)["keeper"]
    assert (done["outcome"], done["attempt"]) == ("blocked_hands_off", 3)
    assert tmux.has_session("renamed") and health_checks(tmux.capture("renamed")) == 3
    assert done["blocked_by"] == "keeper"


def test_the_kennel_never_kills_while_the_locks_cannot_be_read(home, tmux, tmp_path):
    start_agent(tmux, tmp_path, "mute", "silent")
    StopProtocol(home).hands_off("someone-else", reason="a lock the log must vouch for", source="ops")
    WarrantQueue(home).file("mute", reason="stuck", requester="ops")
    (home / "stop_ack_log.jsonl").write_text("")  # the log was cut: no lock can be established
    done = run_kennel_within(home, tmux, timeouts=FAST)["mute"]
    assert (done["outcome"], done["attempt"]) == ("blocked_hands_off", 3)
    assert "locks cannot be read" in done["blocked_by"]
    assert tmux.has_session("mute")


# ------------------------------------------------------------------ tmux ids
def test_resolve_matches_exact_names_and_ids(tmux):
    tmux.new_session("agent-10", "cat")
    tmux.new_session("agent-1*", "cat")
    ten = session_id(tmux, "agent-10")
    (listed,) = [s for s in tmux.list_sessions() if s["id"] == ten]
    assert tmux.resolve("agent-10") == {"id": ten, "name": "agent-10", "panes": [p["id"] for p in listed["panes"]]}
    assert tmux.resolve("agent-1") is None  # never tmux's prefix rule
    assert tmux.resolve("agent-1?") is None  # nor its fnmatch rule
    assert tmux.resolve("agent-1*")["name"] == "agent-1*"
    assert tmux.resolve(ten)["name"] == "agent-10"
    assert tmux.resolve(listed["panes"][0]["id"])["id"] == ten
    assert tmux.resolve("agent-10:") is None and tmux.resolve("agent-10.0") is None
    assert tmux.resolve("$999") is None and tmux.resolve("%999") is None
    assert not tmux.has_session("agent-10:") and not tmux.has_session("agent-10.")
    tmux.server.cmd("rename-session", "-t", ten, "moved")
    assert tmux.resolve(ten)["name"] == "moved" and tmux.has_session(ten)
    tmux.send_message(ten, "hello")
    wait_for(lambda: any(line.strip() == "hello" for line in tmux.capture(ten)), what="the message")
    tmux.kill(ten)
    assert not tmux.has_session(ten) and tmux.resolve("moved") is None


def test_resolve_without_a_server_is_none(tmux_socket):
    assert Tmux(str(tmux_socket)).resolve("anything") is None


def test_a_kennel_uses_no_name_after_filing(home, tmux, tmp_path):
    """Every tmux command a dog sends addresses the session by id."""
    start_agent(tmux, tmp_path, "plain", "answering")
    WarrantQueue(home).file("plain", reason="check", requester="ops")
    seen: list[tuple] = []
    real = tmux.server.cmd

    def cmd(name, *args, **kwargs):
        seen.append((name,) + args)
        return real(name, *args, **kwargs)

    tmux.server.cmd = cmd
    done = asyncio.run(Kennel(home, tmux=tmux, timeouts=FAST, poll_seconds=POLL, until_idle=True).run())
    assert done[0]["outcome"] == "pardoned"
    targets = {args[i + 1] for args in seen for i, a in enumerate(args[:-1]) if a == "-t"}
    assert targets and all(t.startswith(("$", "%")) for t in targets), targets
    assert read_json(WarrantQueue(home).completed_path(done[0]["id"]))["warrant"]["target_id"].startswith("$")


def test_a_secret_on_the_final_screen_is_stored_masked(home, tmux, tmp_path):
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    tmux.new_session("leaky", f"echo ready; echo token={secret}; exec cat > /dev/null", width=120)
    wait_for(lambda: any("ready" in line for line in tmux.capture("leaky")), what="leaky to start")
    WarrantQueue(home).file("leaky", reason="stuck", requester="ops")
    done = run_kennel_within(home, tmux, timeouts=FAST)["leaky"]
    assert done["outcome"] == "executed" and "[REDACTED:" in done["final_screen"]
    for path in home.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path.name
