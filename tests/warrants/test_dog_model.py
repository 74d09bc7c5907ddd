"""A model of one dog, checked step by step against core.warrants.dog.Dog.

The dog runs on a fake clock (integer microseconds, so every deadline is exact)
and a fake tmux: an in-memory pane per session that echoes every message the
dog sends (unless the model turns echo off, as a frozen full-screen agent
would), shows "ALIVE" (or other output) when the model makes the target answer,
and loses its session on a kill unless the model says the kill fails.
The warrant queue is the real one, on a fresh temp home per example, and the
hands-off check is the real one (``core.warrants.kennel.hands_off_check``).

The model is gastown's state machine: received -> interrogating ->
(evaluating) -> interrogating | pardoned | executing -> complete, three
attempts, a gate per attempt that closes at last_message_at + its timeout, an
answer that counts only after the latest message, an operator pardon that wins
until the kill. After every step the in-memory dog, its state file and the
ack log must agree with the model.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from itertools import pairwise

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from leash.core.base.clock import parse_iso
from leash.core.base.statefile import read_json, release_hold
from leash.core.base.tmux import TmuxError
from leash.core.state.acklog import AckLog
from leash.core.state.warrants.epitaph import health_check
from leash.core.state.warrants.queue import WarrantError, WarrantQueue
from leash.core.views.protocol import StopProtocol
from leash.core.warrants.dog import FINAL_SCREEN_LINES, Dog
from leash.core.warrants.kennel import hands_off_check
from leash.core.warrants.speech import Delivery

TARGET = "agent-7"
REQUESTER = "deacon"
US = 1_000_000
START_US = 1_700_000_000 * US
ANSWERS = ["ALIVE", "ALIVE.", "> ALIVE", "   ALIVE   "]
NOISE = ["working on the tests", "I am still ALIVE, just busy", "$ ls -la", "ALIVE and kicking"]
STATES_AT_REST = {"received", "interrogating", "complete"}
# every state a dog may write next, from the one it is in
EDGES = {
    "received": {"interrogating", "complete"},
    "interrogating": {"interrogating", "evaluating", "pardoned", "complete"},
    "evaluating": {"interrogating", "pardoned", "executing", "complete"},
    "executing": {"executing", "complete"},
    "pardoned": {"complete"},
    "complete": set(),
}
HEALTH_CHECK_LINE = "[DOG] HEALTH CHECK"
ROLL = st.integers(0, 9)  # a rule that ends the story acts only on a roll of 7 (rare, and shrinks away)


def seconds(us: int) -> float:
    return us / US


def scratch_dir() -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="leash-dog-model-", dir=base)


class FakeTmux:
    """Sessions as lists of pane lines. A killed session keeps its lines in
    ``graveyard`` so the test can still count what was sent to it."""

    def __init__(self):
        self.sessions: dict[str, list[str]] = {TARGET: ["$ agent started"]}
        self.graveyard: dict[str, list[str]] = {}
        self.kill_fails = False
        self.echo = True  # off: a full-screen agent that has hung draws nothing of what is typed
        self.calls: Counter[str] = Counter()

    def _pane(self, name: str) -> list[str]:
        if name not in self.sessions:
            raise TmuxError(f"can't find session: {name}")
        return self.sessions[name]

    def lines(self, name: str) -> list[str]:
        return self.sessions.get(name, self.graveyard.get(name, []))

    def has_session(self, name: str) -> bool:
        self.calls["has_session"] += 1
        return name in self.sessions

    def resolve(self, name: str) -> dict | None:
        """This fake's sessions are their own ids."""
        return {"id": name, "name": name, "panes": []} if name in self.sessions else None

    def marks(self, name: str) -> dict[str, int]:
        self.calls["marks"] += 1
        pane = self._pane(name)  # this fake never trims its history
        return {"history": len(pane), "limit": 10**9, "position": len(pane)}

    def read_since(self, name: str, position: int, *, history: int):
        marks = self.marks(name)
        return marks, list(self._pane(name)[position:])

    def capture(self, name: str, lines: int = 200) -> list[str]:
        self.calls["capture"] += 1
        return list(self._pane(name)[-lines:])

    def mark(self, name: str, *, tail: int = 60):
        return self.marks(name), self.capture(name, tail)

    def recent(self, name: str, lines: int) -> list[str]:
        return self.capture(name, lines)

    def send_message(self, name: str, text: str) -> None:
        self.calls["send_message"] += 1
        pane = self._pane(name)
        if self.echo:  # the tty echoes what was typed
            pane.extend(text.splitlines())
            self.calls["echoed"] += 1

    def kill(self, name: str) -> None:
        self.calls["kill"] += 1
        if not self.kill_fails and name in self.sessions:
            self.graveyard[name] = self.sessions.pop(name)

    # the model's hands on the target
    def show(self, name: str, line: str) -> None:
        self._pane(name).append(line)

    def vanish(self, name: str) -> None:
        if name in self.sessions:
            self.graveyard[name] = self.sessions.pop(name)


class LineSpeaker:
    """Delivers every check as one line: this fake's panes have no input line
    to confirm (``core.warrants.speech`` is tested on real panes)."""

    def __init__(self, tmux: FakeTmux):
        self.tmux = tmux

    def deliver(self, target: str, message: str) -> Delivery:
        self.tmux.send_message(target, message)
        return Delivery(True, "shell", "fake", enters=1)


class RecordingDog(Dog):
    """A Dog that remembers every state it wrote through ``_save``."""

    def __init__(self, *args, written: list, **kwargs):
        super().__init__(*args, **kwargs)
        self.written = written

    def _save(self) -> None:
        self.written.append(self.state.state)
        super()._save()


class DogMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.home = scratch_dir()
        self.tmux = FakeTmux()
        self.queue = WarrantQueue(self.home, tmux=self.tmux)
        self.protocol = StopProtocol(self.home)
        self.fd = None
        self.dog: Dog | None = None
        self.written: list[str] = []
        self.kennels = 0

    def teardown(self):
        if hasattr(self, "id"):
            event(f"outcome: {self.outcome or 'unfinished'}" + (f" by {self.pardoned_by}" if self.pardoned_by else ""))
        if self.fd is not None:
            release_hold(self.fd)
            self.fd = None
        shutil.rmtree(self.home, ignore_errors=True)

    # ------------------------------------------------------------ set-up
    @initialize(timeouts=st.lists(st.integers(1, 300), min_size=3, max_size=3),
                poll=st.sampled_from([0.25, 1.0, 5.0]), activity=st.booleans(),
                reason=st.sampled_from(["stuck", "no output for 10 minutes", "say ALIVE?"]))
    def file_and_claim(self, timeouts, poll, activity, reason):
        self.timeouts = [float(t) for t in timeouts]
        self.poll = poll
        self.activity = activity
        self.now = START_US
        warrant, created = self.queue.file(TARGET, reason=reason, requester=REQUESTER, now=seconds(self.now))
        assert created
        self.id = warrant["id"]
        # the model
        self.phase = "received"
        self.attempt = 0
        self.deadline = None  # microseconds
        self.last_message = None
        # What the pane showed since the latest message: an ALIVE line, other
        # output; and whether a whole echo of the message is there. The dog reads
        # what follows the first whole echo, or, with none on the screen, what
        # follows the place it sent from.
        self.heard = False      # an ALIVE line after the first whole echo (or after the send, with no echo)
        self.busy = False       # other output, the same
        self.echoed = False     # a whole echo of the latest message is in the pane
        self.heard_before = self.busy_before = False  # shown after the send but before a late first echo
        self.alive = True
        self.hands_off = False
        self.pardon_source: str | None = None
        self.outcome: str | None = None
        self.pardoned_by: str | None = None
        self.gates_closed = 0
        self.kill_sent = False
        self.last_state: dict = {}
        self._claim_next()

    def _new_dog(self, state: dict) -> None:
        self.dog = RecordingDog(self.queue, state, tmux=self.tmux, speaker=LineSpeaker(self.tmux),
                                timeouts=self.timeouts, poll_seconds=self.poll,
                                pardon_on_activity=self.activity, hands_off=hands_off_check(self.home),
                                written=self.written)

    def _owner(self) -> dict:
        self.kennels += 1
        return {"pid": 1000 + self.kennels, "host": "model"}

    def _claim_next(self) -> None:
        claimed = self.queue.claim_next(owner=self._owner(), now=seconds(self.now))
        assert claimed is not None
        state, self.fd = claimed
        assert state["state"] == "received" and state["attempt"] == 0
        self._new_dog(state)
        self.last_state = dict(state)

    # ------------------------------------------------------------ the model
    def _send(self, attempt: int) -> None:
        self.attempt = attempt
        self.phase = "interrogating"
        self.last_message = self.now
        self.deadline = self.now + round(self.timeouts[attempt - 1] * US)
        self.heard = self.busy = self.heard_before = self.busy_before = False
        self.echoed = self.tmux.echo  # the tty's echo of what was typed

    def _complete(self, outcome: str, by: str | None = None) -> None:
        self.phase = "complete"
        self.outcome = outcome
        self.pardoned_by = by

    def _answered(self) -> bool:
        heard = self.heard or (not self.echoed and self.heard_before)
        busy = self.busy or (not self.echoed and self.busy_before)
        return heard or (self.activity and busy)

    def _predict_tick(self) -> None:
        if self.pardon_source is not None:
            return self._complete("pardoned", by=self.pardon_source)
        if self.phase == "received":
            if not self.alive:
                return self._complete("already_dead")
            return self._send(1)
        if not self.alive:
            return self._complete("already_dead")
        if self._answered():
            return self._complete("pardoned")
        if self.now < self.deadline:
            return None
        self.gates_closed += 1
        if self.attempt < len(self.timeouts):
            return self._send(self.attempt + 1)
        if self.hands_off:
            return self._complete("blocked_hands_off")
        self.kill_sent = True
        if self.tmux.kill_fails:
            return self._complete("failed")
        self.alive = False
        return self._complete("executed")

    # ------------------------------------------------------------ rules
    def _tick(self) -> None:
        before_attempt, before_messages = self.attempt, self._messages()
        self._predict_tick()
        delay = self.dog.tick(seconds(self.now))
        state = self.dog.state.as_dict()  # as the claim stores it
        assert state["state"] == self.phase, (state["state"], self.phase)
        assert state["attempt"] == self.attempt and before_attempt <= state["attempt"] <= before_attempt + 1
        if self.phase == "complete":
            assert delay is None
            assert state["outcome"] == self.outcome
            assert state.get("pardoned_by") == self.pardoned_by
            self.queue.release(self.id, self.fd)  # what the kennel does when a dog is done
            self.fd = None
            self.dog = None
        else:
            assert delay is not None and delay > 0
            remaining = seconds(self.deadline - self.now)
            assert delay <= min(self.poll, remaining) + 1e-6  # float seconds near 1.7e9: ulp ~0.24 us
            if self.attempt > before_attempt:  # a new gate opened: one more message, in gastown's words
                assert self._messages() == before_messages + 1
                sent = health_check(TARGET, self.timeouts[self.attempt - 1], state["warrant"]["reason"], REQUESTER,
                                    self.attempt, 3, warrant_id=state["warrant"]["id"]).splitlines()
                if self.tmux.echo:
                    assert self.tmux.lines(TARGET)[-len(sent):] == sent
        self.last_state = state

    @precondition(lambda self: self.dog is not None)
    @rule(when=st.sampled_from(["soon", "later", "just before the gate", "at the gate", "just after the gate"]),
          advance=st.integers(0, 300 * US))
    def tick(self, when, advance):
        """Time passes (to the open gate's deadline, or by a random amount), then the dog ticks."""
        gate = {"just before the gate": -1, "at the gate": 0, "just after the gate": 1}.get(when)
        if gate is not None and self.phase == "interrogating" and self.deadline + gate >= self.now:
            self.now = self.deadline + gate
        else:
            self.now += advance % (2 * US) if when == "soon" else advance
        self._tick()

    @precondition(lambda self: self.phase != "complete" and self.alive)
    @rule(kind=st.sampled_from(["answer", "output", "echo"]), pick=st.integers(0, 3), roll=ROLL)
    def pane_shows(self, kind, pick, roll):
        """The target answers ALIVE (rarely), prints something else, or a line of
        the latest message shows again (a redraw, a second echo)."""
        if kind == "answer":
            if roll != 7:  # rare, so that most examples reach the later gates
                return
            self.tmux.show(TARGET, ANSWERS[pick])
            if self.echoed:
                self.heard = self.busy = True
            else:
                self.heard_before = self.busy_before = True
        elif kind == "output":
            self.tmux.show(TARGET, NOISE[pick])
            if self.echoed:
                self.busy = True
            else:
                self.busy_before = True
        elif self.attempt > 0:
            message = health_check(TARGET, self.timeouts[self.attempt - 1], self.last_state["warrant"]["reason"],
                                   REQUESTER, self.attempt, 3, warrant_id=self.last_state["warrant"]["id"])
            self.tmux.show(TARGET, ([message] + message.split(" -- ")[1:])[pick])  # the line, or a piece of it
            # A late first whole echo: what came before it is no longer "after the message".
            self.echoed = self.echoed or pick == 0

    @precondition(lambda self: self.phase != "complete")
    @rule(what=st.sampled_from(["target dies", "kennel dies", "hands-off", "kill fails", "echo"]), roll=ROLL)
    def something_happens(self, what, roll):
        if what == "target dies" and self.alive and roll == 7:
            self.tmux.vanish(TARGET)
            self.alive = False
        elif what == "kennel dies" and self.dog is not None:
            # SIGKILL between two ticks: the claim goes with the process, the file stays
            release_hold(self.fd)
            self.fd = None
            self.dog = None
        elif what == "hands-off":
            if self.hands_off:
                self.protocol.release(TARGET, source="ops")
            else:
                self.protocol.hands_off(TARGET, hours=1, reason="keep", source="ops")
            self.hands_off = not self.hands_off
        elif what == "kill fails":
            self.tmux.kill_fails = not self.tmux.kill_fails
        elif what == "echo":
            self.tmux.echo = not self.tmux.echo

    @rule(roll=ROLL)
    def operator_pardons(self, roll):
        if roll != 7 and self.phase != "complete":
            return
        if self.phase == "complete":
            try:
                self.queue.pardon(self.id, source="ops", now=seconds(self.now))
            except WarrantError:
                return
            raise AssertionError("a finished warrant was pardoned")
        result, record = self.queue.pardon(self.id, source="ops", reason="mine", now=seconds(self.now))
        if self.fd is not None:  # a dog holds it: a request, acted on at the next tick
            assert result == "requested"
            assert os.path.exists(self.queue.pardon_path(self.id))
            self.pardon_source = "ops"
        else:  # no kennel holds it: closed at once
            assert result == "pardoned"
            assert record["outcome"] == "pardoned" and record["pardoned_by"] == "ops"
            self._complete("pardoned", by="ops")
            self.last_state = record

    @precondition(lambda self: self.dog is None and self.fd is None)
    @rule()
    def kennel_resumes(self):
        claimed = self.queue.claim_orphans(owner=self._owner(), skip=set())
        if self.phase == "complete":
            assert claimed == []
            return
        assert len(claimed) == 1
        state, self.fd = claimed[0]
        assert {k: v for k, v in state.items() if k != "kennel"} == \
            {k: v for k, v in self.last_state.items() if k != "kennel"}
        self._new_dog(state)
        self.last_state = state

    @precondition(lambda self: self.phase == "complete")
    @rule(advance=st.integers(0, 600 * US))
    def time_passes_after_the_end(self, advance):
        """A finished warrant stays finished: nothing more is sent, nothing moves."""
        before = (self._messages(), read_json(self.queue.completed_path(self.id), None))
        self.now += advance
        assert (self._messages(), read_json(self.queue.completed_path(self.id), None)) == before
        assert self.queue.claim_orphans(owner=self._owner(), skip=set()) == []

    # ------------------------------------------------------------ invariants
    def _messages(self) -> int:
        """Health checks the dog typed into the pane (a redraw of one is not another)."""
        return self.tmux.calls["send_message"]

    @invariant()
    def attempts_follow_the_messages(self):
        if not hasattr(self, "id"):
            return
        assert 0 <= self.attempt <= 3
        assert self._messages() == self.attempt
        assert self.gates_closed <= 3
        if self.dog is not None:
            assert self.dog.state.attempt == self.attempt

    @invariant()
    def states_move_along_the_edges(self):
        sequence = ["received"] + self.written + (["complete"] if self.phase == "complete" else [])
        for here, there in pairwise(sequence):
            assert there in EDGES[here], sequence
        attempts_seen = self.last_state.get("attempt", 0)
        assert attempts_seen == self.attempt

    @invariant()
    def state_file_matches_the_dog(self):
        if not hasattr(self, "id"):
            return
        active = self.queue.active_path(self.id)
        if self.phase != "complete":
            on_disk = read_json(active, None)
            assert isinstance(on_disk, dict)
            assert on_disk["state"] in STATES_AT_REST and on_disk["state"] == self.phase
            assert on_disk == self.last_state
            if self.dog is not None:
                assert on_disk == self.dog.state.as_dict()
            assert not os.path.exists(self.queue.completed_path(self.id))
            if self.phase == "interrogating":
                sent, deadline = parse_iso(on_disk["last_message_at"]), parse_iso(on_disk["next_timeout"])
                assert abs(deadline - sent - self.timeouts[self.attempt - 1]) < 1e-6
                assert deadline == seconds(self.deadline) and sent == seconds(self.last_message)
                assert on_disk["timeout_seconds"] == self.timeouts[self.attempt - 1]
            return
        assert not os.path.exists(active)
        assert not os.path.exists(self.queue.pardon_path(self.id))
        done = read_json(self.queue.completed_path(self.id), None)
        assert done == self.last_state
        assert done["state"] == "complete" and done["outcome"] == self.outcome
        lines = done["epitaph"].splitlines()
        assert lines[0] == f"EPITAPH: {TARGET}"
        assert lines[1] == f"Verdict: {self.outcome.upper()}"
        assert lines[2] == f"Warrant: {self.id}"
        assert lines[4] == f"Filed by: {REQUESTER}"
        if self.outcome == "executed":
            parts = " + ".join(f"{t:g}s" for t in self.timeouts)
            assert lines[5] == f"Attempts: 3 ({parts} = {sum(self.timeouts):g}s total)"
            assert done["final_screen"].splitlines() == self.tmux.lines(TARGET)[-FINAL_SCREEN_LINES:]
            if self.tmux.calls["echoed"]:
                assert HEALTH_CHECK_LINE in done["final_screen"]
        if self.outcome == "already_dead":
            assert lines[5] == "Note: Target session not found at warrant processing"
        if self.outcome == "pardoned" and self.pardoned_by:
            assert lines[5].startswith(f"Pardoned by: {self.pardoned_by}")

    @invariant()
    def verdicts_keep_their_promises(self):
        if self.phase != "complete":
            return
        if self.outcome == "executed":
            assert self.gates_closed == 3 and self._messages() == 3
            assert not self._answered()  # nothing after the last message counted
            assert not self.tmux.has_session(TARGET)
        if self.outcome in ("blocked_hands_off", "failed"):
            assert self.gates_closed == 3 and self.tmux.has_session(TARGET)
        if self.outcome == "blocked_hands_off":
            assert self.hands_off
        if self.outcome == "pardoned" and self.pardoned_by is None:
            assert self._answered()
        if self.outcome == "already_dead":
            assert not self.kill_sent

    @invariant()
    def the_session_lives_unless_killed_or_dead(self):
        if not hasattr(self, "id"):
            return
        assert self.tmux.has_session(TARGET) == self.alive

    @invariant()
    def ack_log_tells_the_story(self):
        if not hasattr(self, "id"):
            return
        log = AckLog(self.home)
        mine = [e for e in log.read().entries if e.get("warrant_id") == self.id]
        events = Counter(e["event"] for e in mine)
        assert events["warrant_filed"] == 1
        finished = self.phase == "complete"
        assert events["epitaph"] == (1 if finished else 0)
        assert events["warrant_executed"] == (1 if self.outcome == "executed" else 0)
        assert events["warrant_pardoned"] == (1 if self.outcome == "pardoned" else 0)
        assert events["warrant_blocked"] == (1 if self.outcome == "blocked_hands_off" else 0)
        if finished:
            (line,) = [e for e in mine if e["event"] == "epitaph"]
            assert line["reason"] == self.last_state["epitaph"] and line["outcome"] == self.outcome
        assert log.verify().ok


# 100 runs of up to 50 steps reach every outcome (``--hypothesis-show-statistics`` counts them).
DogMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=50, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
TestDogModel = DogMachine.TestCase


def test_an_earlier_answer_in_the_scrollback_never_counts():
    """A pane that answered an earlier warrant and has since hung (echo off,
    nothing drawn) is executed, not pardoned by the old ALIVE."""
    home = scratch_dir()
    tmux = FakeTmux()
    queue = WarrantQueue(home, tmux=tmux)
    tmux.sessions[TARGET] += health_check(TARGET, 60, "stuck", REQUESTER, 1, 3).splitlines() + ["ALIVE"]
    tmux.echo = False
    queue.file(TARGET, reason="stuck", requester=REQUESTER, now=seconds(START_US))
    state, fd = queue.claim_next(owner={"pid": 1, "host": "model"}, now=seconds(START_US))
    try:
        dog = Dog(queue, state, tmux=tmux, speaker=LineSpeaker(tmux), timeouts=[60, 120, 240], poll_seconds=1.0)
        now = seconds(START_US)
        while dog.tick(now) is not None:
            now += 1.0
        assert (dog.state.outcome, dog.state.attempt) == ("executed", 3)
    finally:
        release_hold(fd)
        shutil.rmtree(home, ignore_errors=True)
