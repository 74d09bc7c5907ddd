"""What each console key does: the confirmation it asks for and the core call it makes.

An ``Operation`` describes one state change on one row: the modal's title,
body and fields (its text field has the focus first, so what the operator
types after the key is the reason), and ``run(confirmed)`` — a
call into the backend's stores (``leash.core.store``) whose result is in the
store for every other process (the CLI, the hooks, the kennel) at once. An
approval's answer names the path it came by (``via``: the console, or
"serve" in a browser); one that came second is a ``Refused`` naming who
answered first. The console decides nothing here: whether a halt may be
dismissed, which stop a resume lifts, how long a lock lasts — the core
answers all of it.

A dialog names a session as the panel it was opened from does (a halt's
tmux session, not its agent's id, with the id after it). Names and
descriptions in titles, bodies and messages are agent text: each is
put in through ``shown`` (one line, control characters escaped), so it can
neither forge a line of the modal nor reach the terminal as a control.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from leash.console.errors import Refused
from leash.core.base.text import printable

NAME_LIMIT = 80  # characters of a name in a modal's title or a message
DESCRIPTION_LIMIT = 1000  # characters of a halt's description in its modal
INTERRUPT_KEY = "i"
INTERRUPT_LABEL = "Also interrupt the call in flight (i)"
INTERRUPT_NOTE = "Interrupt: Escape in its tmux pane, or SIGINT if headless."
APPROVAL_BODY_LINES = 200  # lines of an approval's command or diff its modal holds (it scrolls; the CLI has all)
APPROVAL_LINE_LIMIT = 66  # characters of each (the modal is 72 wide)
APPROVAL_REST = "leash approvals list --json"  # where the whole of a longer one is
FOCUS_CANCEL = "cancel"  # the modal's Cancel button has the focus first (a modal with no text field)
FOCUS_TEXT = "text"  # its text field has it first: what is typed after the key is the reason


def shown(value: object, limit: int | None = NAME_LIMIT) -> str:
    return printable(value, limit=limit)


class Operation(NamedTuple):
    title: str
    body: str
    run: Callable  # (Confirmed) -> str, the message shown when it is done
    text_label: str | None = "Reason (optional)"
    extra_label: str | None = None
    extra_value: str = ""
    caution: bool = False
    confirm_label: str = "Confirm"
    option_label: str | None = None  # the action's own check box, ``Confirmed.option``
    option_key: str = ""
    focus: str = FOCUS_TEXT


class Operations:
    """Builds the operation for a key press, given the backend and who is
    acting. ``home``: where config.toml is read (default the backend's home)."""

    def __init__(self, backend, source: str, *, home=None, via: str = "console"):
        """``via``: the path an approval's answer names (``console``; ``serve`` in a browser)."""
        self.backend = backend
        self.source = source
        self.home = home if home is not None else backend.home
        self.via = via

    def default_hours(self) -> float:
        """``[hands_off] default_hours`` of config.toml, read at each key press."""
        from leash.core.base.config import load_config

        return load_config(self.home)["hands_off"]["default_hours"]

    # ------------------------------------------------------------ sessions
    def stop(self, row: dict) -> Operation:
        name = row["name"]

        def run(c):
            record = self.backend.stops.stop(name, source=self.source, reason=c.text)
            if not c.option:
                return f"stopped {shown(name)}"
            from leash.core.state.sessions import bound_tmux_ids
            from leash.core.warrants.interrupt import interrupt

            names = [name] + list(row.get("agents", [])) + bound_tmux_ids(record)
            report = interrupt(names, backend=self.backend, source=self.source, reason=c.text, home=self.home)
            return self._interrupted(report, shown(name))
        return Operation(f"Stop {shown(name)}?", f"Every tool call of {shown(name)} is refused until it is resumed.\n"
                         f"{INTERRUPT_NOTE}", run, confirm_label="Stop", option_label=INTERRUPT_LABEL,
                         option_key=INTERRUPT_KEY)

    @staticmethod
    def _interrupted(report, what: str) -> str:
        """The message of a stop that interrupted (``core.interrupt``); a Refused
        naming why when nothing could be (the stop stays filed)."""
        if not report.ok:
            raise Refused(shown(report.failure(what), DESCRIPTION_LIMIT))
        targets = ", ".join(f"{shown(line['session_id'])} ({line['method']})" for line in report.done)
        return f"{what} stopped; interrupted {targets}"

    def resume(self, row: dict) -> Operation:
        names = [row["name"]] + row.get("agents", [])
        covering = self.backend.stops.covering(names)
        if covering is None:
            raise Refused(f"{shown(row['name'])} is not stopped")
        kind, name = covering
        if kind == "fleet":
            def resume_fleet(c) -> str:
                self.backend.stops.resume_fleet(source=self.source, reason=c.text)
                return "fleet resumed"
            return Operation("Resume the fleet?", f"{shown(row['name'])} is held by the fleet stop; resuming lifts "
                             "it for every session (sessions stopped one by one stay stopped).", resume_fleet,
                             confirm_label="Resume fleet")

        def resume_one(c) -> str:
            self.backend.stops.resume(name, source=self.source, reason=c.text)
            return f"resumed {shown(name)}"
        return Operation(f"Resume {shown(name)}?", f"Lift the stop on {shown(name)}.", resume_one,
                         confirm_label="Resume")

    # ------------------------------------------------------------ locks
    def release(self, row: dict) -> Operation:
        entity = row["entity"]

        def run(c):
            self.backend.locks.release(entity, source=self.source, reason=c.text)
            return f"released {shown(entity)}"
        return Operation(f"Release {shown(entity)}?", "The lock is removed now.", run, confirm_label="Release")

    # ------------------------------------------------------------ halts
    def halt(self, row: dict, resolution: str) -> Operation:
        from leash.core.policy.halts.rules import dismissal_needs_caution

        caution = resolution == "dismissed" and dismissal_needs_caution(row["severity"])
        verb = {"resolved": "Acknowledge", "dismissed": "Dismiss", "escalated": "Escalate"}[resolution]

        def run(c):
            result = self.backend.halts.acknowledge(row["halt_id"], row["session_id"], resolution,
                                                    notes=c.text or None, caution=c.caution, source=self.source)
            tail = "the session may resume" if result["session_can_resume"] else "the session stays held"
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
    def pardon(self, row: dict) -> Operation:
        def run(c):
            result, _ = self.backend.warrants.pardon(row["id"], source=self.source, reason=c.text)
            target = shown(row.get("target"))
            return f"pardoned {target}" if result == "pardoned" else f"pardon sent to the dog of {target}"
        return Operation(f"Pardon {shown(row.get('target'))}?", "The warrant is cancelled and the session lives.", run,
                         confirm_label="Pardon")

    # ------------------------------------------------------------ breakers
    def loop_reset(self, row: dict) -> Operation:
        def run(c):
            self.backend.breakers.reset(row["name"], source=self.source, reason=c.text)
            return f"reset breaker {shown(row['name'])}"
        return Operation(f"Reset breaker {shown(row['name'])}?", "Its recorded boots are forgotten; the next "
                         "restart-interrupted boot auto-resumes again.", run, confirm_label="Reset")

    # ------------------------------------------------------------ approvals
    def allow(self, row: dict) -> Operation:
        def run(c):
            record = self._answer(row, allow=True, note=c.text)
            return f"allowed {shown(record.tool)} for {shown(row.get('session'))}"
        return Operation(f"Allow {shown(row.get('tool'))} for {shown(row.get('session'))}?",
                         f"{self._approval_body(row)}\n\nThe call runs now.", run,
                         text_label="Note (optional, for the ack log)", confirm_label="Allow")

    def deny(self, row: dict) -> Operation:
        def run(c):
            record = self._answer(row, allow=False, message=c.text)
            return f"denied {shown(record.tool)} for {shown(row.get('session'))}"
        return Operation(f"Deny {shown(row.get('tool'))} for {shown(row.get('session'))}?",
                         f"{self._approval_body(row)}\n\nThe call is refused; the agent reads the message.", run,
                         text_label="Message to the agent", confirm_label="Deny")

    def _answer(self, row: dict, *, allow: bool, message: str = "", note: str = ""):
        """The store's answer; another's answer first (or an id it does not know) is the operator's to read."""
        from leash.core.store.approvals import ApprovalClosed, UnknownApproval

        try:
            return self.backend.approvals.answer(row["id"], allow=allow, by=self.source, via=self.via,
                                                 message=message, note=note)
        except (ApprovalClosed, UnknownApproval) as exc:
            raise Refused(shown(exc, DESCRIPTION_LIMIT)) from None

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
