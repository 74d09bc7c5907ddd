"""What an operator does: the dialog each action asks and the core call it makes.

Every front end (the Textual console, ``leash serve``'s browser, the CLI)
asks here. An ``Operation`` is one state change on one row: what its dialog
asks — the title, the body, the text field (its label: a reason, a note, a
message), the other ``Field``s, the caution box, the confirm label, the
action's own check box (``option``) and which field has the focus first —
the ``check`` that refuses what was typed while the dialog is still open
(the core's rule: a lock's hours and entity, a warrant's reason), and
``run(confirmed)``: a call into the backend's stores (``leash.core.store``)
whose result is in the store for every other process (the CLI, the hooks,
the kennel) at once. ``Confirmed`` is what the operator typed and ticked.

``Operations.ask(kind, row)`` builds the operation for a key press or a
palette entry; what does not apply to the row is a ``Refused``
(``console.errors``) naming why. An approval's answer names the path it
came by (``via``: the console, or "serve" in a browser); one that came
second is a ``Refused`` naming who answered first. The console decides
nothing here: whether a halt may be dismissed, which stop a resume lifts,
how long a lock lasts — the core answers all of it.

A dialog names a session as the panel it was opened from does (a halt's
tmux session, not its agent's id, with the id after it). Names and
descriptions in titles, bodies and messages are agent text: each is
put in through ``shown`` (one line, control characters escaped), so it can
neither forge a line of the modal nor reach the terminal as a control.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple

from leash.console.errors import Refused
from leash.core.base.text import printable

if TYPE_CHECKING:
    from leash.core.store.protocols import Backend
    from leash.core.warrants.interrupt import InterruptReport

NAME_LIMIT = 80  # characters of a name in a modal's title or a message
DESCRIPTION_LIMIT = 1000  # characters of a halt's description in its modal
OPTION_KEY = "i"  # ticks a dialog's own check box (outside a field: in one it is a letter)
INTERRUPT_LABEL = f"Also interrupt the call in flight ({OPTION_KEY})"
INTERRUPT_NOTE = "Interrupt: Escape in its tmux pane, or SIGINT if headless."
APPROVAL_BODY_LINES = 200  # lines of an approval's command or diff its modal holds (it scrolls; the CLI has all)
APPROVAL_LINE_LIMIT = 66  # characters of each (the modal is 72 wide)
APPROVAL_REST = "leash approvals list --json"  # where the whole of a longer one is
FOCUS_CANCEL = "cancel"  # the Cancel button has the focus first (a dialog with no text field)
FOCUS_TEXT = "text"  # the text field has it first: what is typed after the key is the reason
FOCUS_FIELD = "field"  # the first of ``fields`` has it (a lock's entity, a cap's new limit)
# A session that a halt holds (the core's state of its row) and what to say when ``u`` cannot lift it.
HELD_BY_HALT = {"halted": "a pending halt holds it", "paused": "an escalated halt pauses it"}


def shown(value: object, limit: int | None = NAME_LIMIT) -> str:
    return printable(value, limit=limit)


class Field(NamedTuple):
    """A text field of the dialog besides the text one: its label, first value
    and name (``Confirmed.value(name)`` reads it), and what it shows while empty."""
    label: str
    value: str = ""
    name: str = "extra"
    placeholder: str = ""


class Confirmed(NamedTuple):
    """What the operator typed and ticked in a dialog."""
    text: str = ""
    caution: bool = False
    option: bool = False  # the action's own check box, ticked
    values: tuple[tuple[str, str], ...] = ()  # (name, value) of every field

    def value(self, name: str) -> str:
        return dict(self.values).get(name, "")


class Operation(NamedTuple):
    """What an action asks in its dialog and does once confirmed."""
    title: str
    body: str
    run: Callable[[Confirmed], str]  # the message shown when it is done
    text_label: str | None = "Reason (optional)"
    fields: tuple[Field, ...] = ()
    caution: bool = False
    confirm_label: str = "Confirm"
    option: str | None = None  # the label of the action's own check box (``OPTION_KEY`` ticks it), or None
    focus: str = FOCUS_TEXT  # FOCUS_TEXT (the text field) or FOCUS_FIELD (the first field) has the focus first
    check: Callable[[Confirmed], str | None] | None = None  # a one-line refusal of what was typed, or None


def _problem(rule: Callable[[], object], prefix: str = "") -> str | None:
    """The core's one-line refusal of what was typed (``rule`` raises ValueError), or None."""
    try:
        rule()
    except ValueError as exc:
        return f"{prefix}{exc}"
    return None


class Operations:
    """Builds the operation for a key press, given the backend and who is
    acting. ``home``: where config.toml is read (default the backend's home)."""

    def __init__(self, backend: Backend, source: str, *, home: str | os.PathLike[str] | None = None,
                 via: str = "console", keys: Mapping[str, str] | None = None,
                 more: Mapping[str, Callable[[dict], Operation]] | None = None) -> None:
        """``via``: the path an approval's answer names (``console``; ``serve``
        in a browser). ``keys``: the key each action is on, as the front end
        shows it (to name the keys that acknowledge a halt). ``more``: the
        front end's own operations on a row, by kind (the console's cap raise)."""
        self.backend = backend
        self.source = source
        self.home = home if home is not None else backend.home
        self.via = via
        self.keys = dict(keys or {})
        self.more = dict(more or {})

    def ask(self, kind: str, row: dict | None) -> Operation:
        """The operation of ``kind`` on ``row``: every key and palette entry
        that changes state asks here (``Refused`` when it does not apply)."""
        if kind == "fleet_stop":
            return self.fleet_stop()
        if kind == "fleet_resume":
            return self.resume({"name": "*", "agents": []})
        if kind == "hands_off":
            return self.hands_off(row or None)
        on_row: dict[str, Callable[[dict], Operation]] = {
            "stop": self.stop, "resume": self.resume_held, "pardon": self.pardon, "warrant": self.warrant,
            "acknowledge": lambda r: self.halt(r, "resolved"), "dismiss": lambda r: self.halt(r, "dismissed"),
            "escalate": lambda r: self.halt(r, "escalated"), "release": self.release,
            "loop_reset": self.loop_reset, "allow": self.allow, "deny": self.deny, **self.more,
        }
        if row is None:
            raise Refused(f"{kind} needs a row: select one first")
        return on_row[kind](row)

    def default_hours(self) -> float:
        """``[hands_off] default_hours`` of config.toml, read at each key press."""
        from leash.core.base.config import load_config

        hands_off = load_config(self.home)["hands_off"]
        assert isinstance(hands_off, dict)
        return float(hands_off["default_hours"])

    # ------------------------------------------------------------ sessions
    def stop(self, row: dict) -> Operation:
        name = row["name"]

        def run(c: Confirmed) -> str:
            record = self.backend.stops.stop(name, source=self.source, reason=c.text)
            if not c.option:
                return f"stopped {shown(name)}"
            from leash.core.state.sessions import bound_tmux_ids
            from leash.core.warrants.interrupt import interrupt

            names = [name] + list(row.get("agents", [])) + bound_tmux_ids(record.as_dict())
            report = interrupt(names, backend=self.backend, source=self.source, reason=c.text, home=self.home)
            return self._interrupted(report, shown(name))
        return Operation(f"Stop {shown(name)}?", f"Every tool call of {shown(name)} is refused until it is resumed.\n"
                         f"{INTERRUPT_NOTE}", run, confirm_label="Stop", option=INTERRUPT_LABEL)

    def fleet_stop(self) -> Operation:
        """The reason is the operator's, as typed (none is made up)."""
        def run(c: Confirmed) -> str:
            self.backend.stops.stop_fleet(source=self.source, reason=c.text)
            if not c.option:
                return "fleet stopped"
            from leash.core.warrants.interrupt import interrupt_fleet

            report = interrupt_fleet(backend=self.backend, source=self.source, reason=c.text, home=self.home)
            return self._interrupted(report, "the fleet")
        return Operation("Stop the whole fleet?", "Every agent's next tool call is refused until the fleet is "
                         f"resumed.\n{INTERRUPT_NOTE}", run, confirm_label="Stop all", option=INTERRUPT_LABEL)

    @staticmethod
    def _interrupted(report: InterruptReport, what: str) -> str:
        """The message of a stop that interrupted (``core.interrupt``); a Refused
        naming why when nothing could be (the stop stays filed)."""
        if not report.ok:
            raise Refused(shown(report.failure(what), DESCRIPTION_LIMIT))
        targets = ", ".join(f"{shown(line.session_id)} ({line.extra['method']})" for line in report.done)
        return f"{what} stopped; interrupted {targets}"

    def resume(self, row: dict) -> Operation:
        names = [row["name"]] + row.get("agents", [])
        covering = self.backend.stops.covering(names)
        if covering is None:
            raise Refused(f"{shown(row['name'])} is not stopped")
        kind, name = covering
        if kind == "fleet":
            def resume_fleet(c: Confirmed) -> str:
                self.backend.stops.resume_fleet(source=self.source, reason=c.text)
                return "fleet resumed"
            return Operation("Resume the fleet?", f"{shown(row['name'])} is held by the fleet stop; resuming lifts "
                             "it for every session (sessions stopped one by one stay stopped).", resume_fleet,
                             confirm_label="Resume fleet")
        stopped = str(name)

        def resume_one(c: Confirmed) -> str:
            self.backend.stops.resume(stopped, source=self.source, reason=c.text)
            return f"resumed {shown(stopped)}"
        return Operation(f"Resume {shown(stopped)}?", f"Lift the stop on {shown(stopped)}.", resume_one,
                         confirm_label="Resume")

    def resume_held(self, row: dict) -> Operation:
        """Resume what stops the session; when no stop holds it but a halt does
        (the core's state of its row), say which keys acknowledge the halt."""
        try:
            return self.resume(row)
        except Refused:
            held = HELD_BY_HALT.get(row.get("state", ""))
            if held is None:
                raise
            halts, acknowledge = self.keys.get("focus_halts", "2"), self.keys.get("acknowledge", "a")
            raise Refused(f"{shown(row['name'])} is {row['state']}, not stopped: {held}, and resuming lifts only "
                          f"a stop. Acknowledge the halt: '{halts}' shows Pending halts, then '{acknowledge}' "
                          "acknowledges the selected one.") from None

    # ------------------------------------------------------------ locks
    def hands_off(self, row: dict | None) -> Operation:
        """On a session: lock it, for the hours asked (the reason has the focus,
        the hours keep the default unless changed). Elsewhere: the entity to
        lock (a name or ``path:<glob>``; the field has the focus) and its hours.
        The core's parser reads the hours, and its rule the entity, before the
        dialog closes."""
        from leash.core.state.handsoff import validate_entity

        default = self.default_hours()
        hours = Field("Hours", f"{default:g}", "hours", f"empty: {default:g} ([hands_off] default_hours)")
        if row is not None and "name" in row:
            entity = row["name"]
            return Operation(f"Lock {shown(entity)} hands-off?", "Its tool calls are refused (and no warrant kills "
                             "it) until the lock expires or is released.", self._lock(lambda c: entity, default),
                             fields=(hours,), confirm_label="Lock", check=lambda c: self._hours_problem(c, default))
        return Operation("Lock an entity hands-off?", "A name (an agent, a session) or path:<glob>, for the hours "
                         "given.", self._lock(lambda c: c.value("entity"), default),
                         fields=(Field("Entity", "", "entity", "a name or path:<glob> (required)"), hours),
                         confirm_label="Lock", focus=FOCUS_FIELD,
                         check=lambda c: _problem(lambda: validate_entity(c.value("entity")))
                         or self._hours_problem(c, default))

    def _lock(self, entity_of: Callable[[Confirmed], str], default: float) -> Callable[[Confirmed], str]:
        """The run of a lock dialog: ``entity_of`` what was confirmed, for the hours typed."""
        def run(c: Confirmed) -> str:
            entity = entity_of(c)
            lock = self.backend.locks.lock(entity, hours=self._hours(c, default), reason=c.text, source=self.source)
            return f"{shown(entity)} is hands-off until {lock.expires_at[:19]}"
        return run

    @staticmethod
    def _hours(confirmed: Confirmed, default: float) -> float:
        """The hours typed, read by the core's parser (empty: the default shown)."""
        from leash.core.base.hours import parse_hours

        text = confirmed.value("hours")
        return parse_hours(text) if text else default

    def _hours_problem(self, confirmed: Confirmed, default: float) -> str | None:
        return _problem(lambda: self._hours(confirmed, default), "hours ")

    def release(self, row: dict) -> Operation:
        entity = row["entity"]

        def run(c: Confirmed) -> str:
            self.backend.locks.release(entity, source=self.source, reason=c.text)
            return f"released {shown(entity)}"
        return Operation(f"Release {shown(entity)}?", "The lock is removed now.", run, confirm_label="Release")

    # ------------------------------------------------------------ halts
    def halt(self, row: dict, resolution: str) -> Operation:
        from leash.core.policy.halts.rules import dismissal_needs_caution

        caution = resolution == "dismissed" and dismissal_needs_caution(row["severity"])
        verb = {"resolved": "Acknowledge", "dismissed": "Dismiss", "escalated": "Escalate"}[resolution]

        def run(c: Confirmed) -> str:
            result = self.backend.halts.acknowledge(row["halt_id"], row["session_id"], resolution,
                                                    notes=c.text or None, caution=c.caution, source=self.source)
            tail = "the session may resume" if result.session_can_resume else "the session stays held"
            done = {"resolved": "acknowledged", "dismissed": "dismissed", "escalated": "escalated"}[resolution]
            return f"{done} {shown(row.get('condition_name') or row['halt_type'])}: {tail}"
        effect = {"resolved": "The halt is resolved; the session resumes when no other halt holds it.",
                  "dismissed": "Proceed anyway: the halt is dismissed and logged.",
                  "escalated": "Hand it to a human: the session pauses (nothing runs) until it is resolved."}
        body = f"{shown(row['severity'])} {shown(row.get('condition_name') or row['halt_type'])} on " \
               f"{self._halt_session(row)}:\n{shown(row['description'], DESCRIPTION_LIMIT)}\n\n{effect[resolution]}"
        return Operation(f"{verb} this halt?", body, run, text_label="Note (optional)", caution=caution,
                         confirm_label=verb)

    @staticmethod
    def _halt_session(row: dict) -> str:
        """The halt's session as the halts panel names it (its tmux session), its agent's id after it."""
        named = row.get("session") or row["session_id"]
        return shown(named) if named == row["session_id"] else f"{shown(named)} (agent {shown(row['session_id'])})"

    # ------------------------------------------------------------ warrants
    def warrant(self, row: dict) -> Operation:
        """A reason is asked for (the core files no warrant without one), and the
        body says how many times the dog asks (``[warrants] timeouts``)."""
        from leash.core.state.warrants.records import configured_attempts, reason_problem

        if not row.get("in_tmux"):
            raise Refused(f"{shown(row['name'])} is not a tmux session: a warrant needs a pane to interrogate")
        target, name = row["tmux_session"], row["name"]  # filed on the tmux session, named as the panel names it
        attempts = configured_attempts(self.home)

        def run(c: Confirmed) -> str:
            warrant, created = self.backend.warrants.file(target, reason=c.text, requester=self.source)
            return f"warrant {shown(warrant.id)} filed" if created else f"{shown(target)} already has a live warrant"
        times = f"{attempts} time{'s' if attempts != 1 else ''}"
        on = "" if name == target else f" (tmux session {shown(target)})"
        return Operation(f"File a death warrant for {shown(name)}?", f"A dog interrogates the session{on} {times} "
                         "([warrants] timeouts) and kills it if it never answers ALIVE.", run, text_label="Reason",
                         confirm_label="File warrant", check=lambda c: reason_problem(c.text))

    def pardon(self, row: dict) -> Operation:
        def run(c: Confirmed) -> str:
            result, _ = self.backend.warrants.pardon(row["id"], source=self.source, reason=c.text)
            target = shown(row.get("target"))
            return f"pardoned {target}" if result == "pardoned" else f"pardon sent to the dog of {target}"
        return Operation(f"Pardon {shown(row.get('target'))}?", "The warrant is cancelled and the session lives.",
                         run, confirm_label="Pardon")

    # ------------------------------------------------------------ breakers
    def loop_reset(self, row: dict) -> Operation:
        def run(c: Confirmed) -> str:
            self.backend.breakers.reset(row["name"], source=self.source, reason=c.text)
            return f"reset breaker {shown(row['name'])}"
        return Operation(f"Reset breaker {shown(row['name'])}?", "Its recorded boots are forgotten; the next "
                         "restart-interrupted boot auto-resumes again.", run, confirm_label="Reset")

    # ------------------------------------------------------------ approvals
    def allow(self, row: dict) -> Operation:
        return self._answer(row, allow=True)

    def deny(self, row: dict) -> Operation:
        return self._answer(row, allow=False)

    def _answer(self, row: dict, *, allow: bool) -> Operation:
        """Allow (what is typed is a note for the ack log) or deny (a message to
        the agent) the approval of ``row``. The store's answer decides: another's
        answer first (or an id it does not know) is a ``Refused`` to read."""
        from leash.core.store.approvals import ApprovalClosed, UnknownApproval

        verb, effect, label = ("Allow", "The call runs now.", "Note (optional, for the ack log)") if allow else \
            ("Deny", "The call is refused; the agent reads the message.", "Message to the agent")
        session = shown(row.get("session"))

        def run(c: Confirmed) -> str:
            note, message = (c.text, "") if allow else ("", c.text)
            try:
                record = self.backend.approvals.answer(row["id"], allow=allow, by=self.source, via=self.via,
                                                       message=message, note=note)
            except (ApprovalClosed, UnknownApproval) as exc:
                raise Refused(shown(exc, DESCRIPTION_LIMIT)) from None
            return f"{'allowed' if allow else 'denied'} {shown(record.tool)} for {session}"
        return Operation(f"{verb} {shown(row.get('tool'))} for {session}?", f"{self._approval_body(row)}\n\n{effect}",
                         run, text_label=label, confirm_label=verb)

    @staticmethod
    def _approval_body(row: dict) -> str:
        """Who asks, why it asks (a rule, or Claude Code's own prompt), and the
        command or diff: the whole of it up to ``APPROVAL_BODY_LINES`` (the
        dialog scrolls), and past that how many lines are cut and where they are."""
        why = f"ask rule {row['rule']}" if row.get("kind") == "ask" and row.get("rule") else "a permission prompt"
        lines = str(row.get("detail") or row.get("summary") or "").rstrip("\n").split("\n")
        shown_lines = [shown(line.expandtabs(4), APPROVAL_LINE_LIMIT) for line in lines[:APPROVAL_BODY_LINES]]
        if len(lines) > APPROVAL_BODY_LINES:
            shown_lines.append(f"… {len(lines) - APPROVAL_BODY_LINES} more lines cut here: {APPROVAL_REST} "
                               "shows the whole call")
        return f"{shown(row.get('session'))} asks ({why}):\n" + "\n".join(shown_lines)
