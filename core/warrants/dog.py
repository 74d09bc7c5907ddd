"""A dog: one warrant worked through gastown's state machine.

    received -> interrogating -> evaluating -> (pardoned | interrogating again | executing) -> complete

``Dog(claim, tmux=...)`` works the warrant a claim of the warrant store holds
(``leash.core.store``: ``claim.state``, a ``DogState``, ``save()``, ``pardon_request()``,
``complete()``); ``Dog(queue, state, ...)`` is the same over a file queue whose
claim the caller holds. ``Dog.tick(now)`` does one step and returns the seconds
until it wants the next one (None when complete). Each attempt sends the health
check and opens a gate that closes at its timeout (60, 120, 240 s by default)
or earlier when the pane answers; the dog looks every ``poll_seconds``. Every
transition is saved through the claim (the file backend rewrites
``dogs/active/<id>.json`` atomically), so a kennel that dies is resumed by the
next one in the same state and at the same deadline.

The dog addresses its target by the tmux session id bound at filing
(``warrant["target_id"]``), never by name: a session renamed after filing is
still the one interrogated and killed, and a new session that takes the old
name is never touched. A warrant bound to no session (none had the name at
filing) is ``already_dead`` at once.

Before a kill the dog checks hands-off against the name filed, the session's
name now and its id (and the agent sessions and entities inside it): a locked
target is left alive, outcome ``blocked_hands_off``, and the operator is told
through the ack log. The dog never kills while the locks cannot be read: a
check that raises is tried up to ``HANDS_OFF_ATTEMPTS`` times, ``poll_seconds``
apart, and then the warrant ends ``blocked_hands_off`` naming the error. The
pane's last 200 lines are kept as ``final_screen``. The kill is verified; a
session that survives it is outcome ``failed``. An operator's pardon (a
``<id>.pardon`` request) is honoured at the next poll, in any state before the
kill. A target that is gone (before or during interrogation) is
``already_dead``.

How a claim seals and files a dog's state away (``finish``, ``complete``) is
the warrant queue's (``leash.core.state.warrants.outcome``).

Failure: a tmux error during a poll is treated as "no answer yet"; the dog
keeps its deadline. Any other error in a step is retried ``poll_seconds``
later; after ``MAX_STEP_ERRORS`` in a row the warrant ends ``failed`` with the
error in its epitaph, so one bad target never holds a dog (or the kennel).
"""
from __future__ import annotations

from leash.core.base.clock import iso, now_seconds, parse_iso
from leash.core.base.statefile import write_json
from leash.core.state.warrants.epitaph import answered, health_check
from leash.core.state.warrants.outcome import DEFAULT_TIMEOUTS, complete, finish
from leash.core.store.records_warrants import DogRecord, DogState, PardonRequest
from leash.core.warrants.speech import Speaker, after_echo, without_input_box

FINAL_SCREEN_LINES = 200
# When tmux trims a pane's history (at history-limit it drops a tenth of it at
# once), the absolute line recorded at send time no longer points at the
# message. The dog then finds where it sent the message by what the pane
# showed just before: its last non-empty lines at send time. A trim can only
# have happened once the history came within a tenth of its limit.
ANCHOR_SCAN_LINES = 3000
# An interactive agent redraws its screen in place: its answer appears above the
# row the cursor was on when the check was sent. The dog first reads what
# follows the check's own echo among the pane's last rows (the screen and a
# little history); only when no whole echo is there does it fall back to
# reading from the position recorded at send time.
ECHO_SCAN_LINES = 400
BEFORE_TAIL_LINES = 12
TRIM_ZONE = 0.9
HANDS_OFF_ATTEMPTS = 3
MAX_STEP_ERRORS = 5


class TargetGone(Exception):
    """The target session ended while the dog watched it."""


class Dog:
    def __init__(self, claim, state: dict | DogState | None = None, *, tmux, timeouts=DEFAULT_TIMEOUTS,
                 poll_seconds: float = 1.0, pardon_on_activity: bool = False, hands_off=None,
                 defer_finish: bool = False, speaker=None):
        if state is not None:  # (queue, state): a file queue whose claim the caller holds
            claim = _HeldByCaller(claim, state)
        self.claim = claim
        self.state = claim.state
        self.tmux = tmux
        # speaker.deliver(target, text) -> Delivery: how the check reaches the pane (core.warrants.speech)
        self.speaker = speaker if speaker is not None else Speaker(tmux)
        self.timeouts = [float(t) for t in timeouts]
        self.poll_seconds = poll_seconds
        self.pardon_on_activity = pardon_on_activity
        # hands_off(names, tmux_session_id=, now=) -> the entity that protects the target, or None
        self.hands_off = hands_off or (lambda names, **_: None)
        # With defer_finish the verdict ends tick() and the writing (epitaph, ack
        # log, move) waits for settle(), so a kennel can start the next dog meanwhile.
        self.defer_finish = defer_finish
        self.verdict: dict | None = None
        # the largest history size seen since the message (in memory: it changes every poll)
        self._history_seen = self.state.history_seen or 0
        self._step_errors = 0
        self._hands_off_failures = 0

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def target(self) -> str:
        """The target as filed (a name, or an id)."""
        return self.state.warrant["target"]

    @property
    def address(self) -> str | None:
        """The tmux session id the dog works on; None: no session at filing."""
        return self.state.warrant.get("target_id")

    def _save(self) -> None:
        self.claim.save()

    def _message(self) -> str:
        w = self.state.warrant
        attempt = self.state.attempt
        return health_check(self.target, self.timeouts[attempt - 1], w.get("reason", ""),
                            w.get("requester", ""), attempt, len(self.timeouts), warrant_id=w.get("id", ""))

    # ------------------------------------------------------------ steps
    def tick(self, now: float | None = None) -> float | None:
        moment = now_seconds(now)
        state = self.state.state
        if state == "complete":  # a kennel died while finishing: finish the finishing
            self.claim.complete(self.state.outcome or "", now=moment, timeouts=self.timeouts)
            return None
        request = self.claim.pardon_request()
        if request is not None and state in ("received", "interrogating", "evaluating", "executing", "pardoned"):
            self._finish("pardoned", moment, by=request.source or "operator", note=request.reason or "")
            return None
        try:
            delay = self._step(state, moment)
        except Exception as exc:  # noqa: BLE001 - whatever it is, it must not hold the dog
            return self._step_failed(exc, moment)
        self._step_errors = 0
        return delay

    def _step_failed(self, exc: Exception, moment: float) -> float | None:
        self._step_errors += 1
        if self._step_errors < MAX_STEP_ERRORS:
            return self.poll_seconds
        self.state.error = f"{exc.__class__.__name__}: {exc}"
        self._finish("failed", moment)
        return None

    def _step(self, state: str, moment: float) -> float | None:
        if state == "received":
            if "target_id" not in self.state.warrant:  # filed before ids were kept: bind it now
                found = self.tmux.resolve(self.target)
                self.state.warrant["target_id"] = found["id"] if found else None
            if self.address is None:
                self.state.attempt = 0
                self._finish("already_dead", moment)
                return None
            try:
                return self._interrogate(1, moment)
            except Exception:
                if not self._alive():  # the target is not there: nothing was sent
                    self.state.attempt = 0
                    self._finish("already_dead", moment)
                    return None
                raise
        if state == "interrogating":
            return self._wait(moment)
        if state == "evaluating":
            return self._evaluate(moment)
        if state == "executing":
            return self._execute(moment)
        if state == "pardoned":
            self._finish("pardoned", moment)
            return None
        return None

    def _alive(self) -> bool:
        if self.address is None:
            return False
        try:
            return self.tmux.has_session(self.address)
        except Exception:
            return False

    def _interrogate(self, attempt: int, moment: float) -> float:
        self.state.attempt = attempt
        self.state.attempts = len(self.timeouts)  # shown as attempt n/N
        address = self.address
        if address is None:  # bound to no session: nothing to speak to
            raise TargetGone()
        marks, tail = self.tmux.mark(address, tail=60)
        size, limit = marks["history"], marks["limit"]
        self.state.baseline = marks["position"]
        self.state.history_seen = self._history_seen = size
        # Digests, not text: the pane may show secrets, and only equality is needed.
        self.state.before_tail = [line_digest(line) for line in tail if line.strip()][-BEFORE_TAIL_LINES:]
        self.state.trimmed = bool(limit) and size >= TRIM_ZONE * limit
        delivery = self.speaker.deliver(address, self._message()).as_dict()
        self.state.delivery = delivery
        if not delivery["delivered"]:
            self.state.undelivered = [*(self.state.undelivered or []), {"attempt": attempt, "why": delivery["why"]}]
        timeout = self.timeouts[attempt - 1]
        self.state.update(state="interrogating", last_message_at=iso(moment), next_timeout=iso(moment + timeout),
                          timeout_seconds=timeout)
        self._save()
        return min(self.poll_seconds, timeout)

    def _delivered(self) -> bool:
        """Whether this attempt's check reached the pane (a state from before
        deliveries were confirmed counts as delivered, as it was then)."""
        return (self.state.delivery or {}).get("delivered", True)

    def _answer(self) -> str | None:
        """"alive"/"activity"/None; raises TargetGone when the session has ended."""
        if not self._delivered():
            if not self._alive():
                raise TargetGone()
            return None  # nothing was asked: there is nothing to hear
        try:
            lines = self._since_message()
        except Exception:
            if not self._alive():  # only ask tmux about the session when reading it failed
                raise TargetGone() from None
            return None
        return answered(lines, self._message(), pardon_on_activity=self.pardon_on_activity)

    def _since_message(self) -> list[str]:
        """What the pane showed after the message: after its echo on the
        screen, else from the position recorded when it was sent."""
        after = after_echo(self.tmux.recent(self.address, ECHO_SCAN_LINES), self._message())
        if after is not None:
            return without_input_box(after)
        if not self.state.trimmed:
            marks, since = self.tmux.read_since(self.address, int(self.state.baseline or 0),
                                                history=self._history_seen)
            history, limit = marks["history"], marks["limit"]
            if history >= self._history_seen and not (limit and history >= TRIM_ZONE * limit):
                self._history_seen = history
                return since
            self.state.trimmed = True  # kept in the state: a resumed dog must know it too
            self._save()
        recent = self.tmux.capture(self.address, ANCHOR_SCAN_LINES)
        return after_block(recent, self.state.before_tail or [])

    def _deadline(self) -> float:
        return parse_iso(self.state.next_timeout or "")

    def _wait(self, moment: float) -> float | None:
        return self._judge(moment, gate_open=True)

    def _evaluate(self, moment: float) -> float | None:
        return self._judge(moment, gate_open=False)

    def _judge(self, moment: float, *, gate_open: bool) -> float | None:
        """Look at the pane: an answer pardons; an open gate waits for its
        deadline; a closed one (evaluating) asks again or goes to execution."""
        try:
            answer = self._answer()
        except TargetGone:
            self._finish("already_dead", moment)
            return None
        if answer is not None:
            return self._pardon(moment)
        if gate_open:
            remaining = self._deadline() - moment
            if remaining > 0:
                return min(self.poll_seconds, remaining)
            self.state.state = "evaluating"
            self._save()
        if self.state.attempt < len(self.timeouts):
            return self._interrogate(self.state.attempt + 1, moment)
        if not self._delivered():
            # The last check never reached the agent: silence proves nothing, so nothing is killed.
            self._finish("undelivered", moment)
            return None
        self.state.state = "executing"
        self._save()
        return self._execute(moment)

    def _pardon(self, moment: float) -> float | None:
        sent = parse_iso(self.state.last_message_at) if self.state.last_message_at else moment
        self.state.update(state="pardoned", wait_seconds=round(max(0.0, moment - sent), 3))
        self._finish("pardoned", moment)
        return None

    def _execute(self, moment: float) -> float | None:
        if not self._alive():
            # a kill that happened before a crash, or a session that ended itself
            self._finish("executed" if self.state.kill_sent else "already_dead", moment)
            return None
        try:
            blocked = self._protected_by(moment)
        except Exception as exc:  # noqa: BLE001 - the locks cannot be read: never kill now
            self._hands_off_failures += 1
            if self._hands_off_failures < HANDS_OFF_ATTEMPTS:
                return self.poll_seconds
            blocked = f"hands-off locks cannot be read ({exc.__class__.__name__}: {exc})"
        if blocked:
            self.state.blocked_by = blocked
            self._finish("blocked_hands_off", moment)
            return None
        try:
            from leash.core.base.secrets import mask  # the pane may show a secret: stored masked, like all else

            self.state.final_screen = mask("\n".join(self.tmux.capture(self.address, FINAL_SCREEN_LINES)))
        except Exception as exc:
            self.state.final_screen = f"(could not capture the pane: {exc})"
        self.state.kill_sent = True
        self._save()
        try:
            self.tmux.kill(self.address)
        except Exception as exc:
            self.state.kill_error = str(exc)
        self._finish("failed" if self._alive() else "executed", moment)
        return None

    def _protected_by(self, moment: float) -> str | None:
        """The hands-off entity that covers the target under the name filed,
        its name now or its id; raises when the locks cannot be read."""
        try:
            found = self.tmux.resolve(self.address)
        except Exception:  # tmux could not say: the name filed and the id still count
            found = None
        names = [self.target]
        if found and found["name"] != self.target:
            names.append(found["name"])
            self.state.target_name = found["name"]
        if self.address is not None and self.address not in names:
            names.append(self.address)
        return self.hands_off(names, tmux_session_id=self.address, now=moment)

    def _finish(self, outcome: str, moment: float, *, by: str | None = None, note: str = "") -> None:
        self.verdict = {"outcome": outcome, "now": moment, "by": by, "note": note}
        if not self.defer_finish:
            self.settle()

    def settle(self) -> None:
        """Write what the verdict decided (see ``finish``)."""
        if self.verdict is not None and self.state.state != "complete":
            if self.state.state == "pardoned":
                # written here, not at the verdict, so a kennel's dog leaves the pool
                # first; a kennel that dies before this line finds the answer again
                self._save()
            v = self.verdict
            self.claim.complete(v["outcome"], now=v["now"], timeouts=self.timeouts, by=v["by"], note=v["note"])


class _HeldByCaller:
    """A claim over a ``WarrantQueue`` whose flock the caller holds (and releases)."""

    def __init__(self, queue, state: dict | DogState):
        self.queue = queue
        self.state = state if isinstance(state, DogState) else DogState.of(state)

    def save(self) -> None:
        write_json(self.queue.active_path(self.state.id), self.state.as_dict())

    def pardon_request(self) -> PardonRequest | None:
        return PardonRequest.of(self.queue.pardon_request(self.state.id))

    def complete(self, outcome: str, *, now: float, timeouts=(), by: str | None = None, note: str = "") -> DogRecord:
        stored = self.state.as_dict()
        if self.state.state == "complete":  # sealed by a kennel that died before filing it away
            done = complete(self.queue, stored, now=now, resumed=True)
        else:
            done = finish(self.queue, stored, outcome, now=now, timeouts=timeouts, by=by, note=note)
        self.state.update(**done)  # sealed: its outcome and epitaph, as filed
        return DogRecord.of(done)


def line_digest(line: str) -> str:
    import hashlib

    return hashlib.sha256(line.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def after_block(lines: list[str], block: list[str]) -> list[str]:
    """The lines after the last place where ``block`` (the digests of
    non-empty lines, in order) stands in ``lines``; all of them when it is not
    there any more (it was trimmed away, so everything left came after it)."""
    if not block:
        return lines
    legacy = not all(len(entry) == 24 and all(c in "0123456789abcdef" for c in entry) for entry in block)
    block = [line_digest(entry) for entry in block] if legacy else block  # a state from before digests
    text = [(i, line_digest(line)) for i, line in enumerate(lines) if line.strip()]
    width = len(block)
    for start in range(len(text) - width, -1, -1):
        if [line for _, line in text[start:start + width]] == block:
            return lines[text[start + width - 1][0] + 1:]
    return lines
