"""What the dashboard's keys that change state ask, and what they do once confirmed.

Each key (and palette entry) asks ``ConsoleOperations.ask(kind, row)`` for its
dialog, an ``Ask``; the app confirms it in ``ConfirmScreen``
(``confirm_screen``), runs it off the UI thread, and says how it went with an
``OperationDone`` message. What does not apply to the row is a ``Refused``
(``console.errors``) naming why.

``ConsoleOperations`` is ``console.operations.Operations`` with the dialogs
whose rules come from the core: a lock's hours (``core.base.hours``) and
entity (``core.state.handsoff``) checked in the dialog before it closes, a
warrant's reason (``core.state.warrants.records``: the core refuses a warrant
without one) and its number of attempts (``[warrants] timeouts``), and a
fleet stop that records only the reason the operator typed, a cap raised
(``screens.budgetraise``: its new limit and reason). ``u`` on a
session that no stop holds but a halt does names the keys that acknowledge
it.
"""
from __future__ import annotations

from typing import Callable

from textual.message import Message
from textual.notifications import SeverityLevel

from leash.console.errors import Refused
from leash.console.operations import (
    INTERRUPT_KEY,
    INTERRUPT_LABEL,
    INTERRUPT_NOTE,
    Operation,
    Operations,
    shown,
)
from leash.console.tui.ask import Ask as Ask
from leash.console.tui.keymap import KeyAction, display
from leash.console.tui.screens.confirm import FOCUS_FIELD, Confirmed, ConfirmScreen, Field

# A session that a halt holds (the core's state of its row) and what to say when ``u`` cannot lift it.
HELD_BY_HALT = {"halted": "a pending halt holds it", "paused": "an escalated halt pauses it"}


class OperationDone(Message):
    """A confirmed operation has run: what to say (``severity`` "warning" for a refusal, "error" for a failure)."""

    def __init__(self, said: str, severity: SeverityLevel = "information") -> None:
        super().__init__()
        self.said, self.severity = said, severity


def ask_of(operation: Operation | Ask) -> Ask:
    """An ``Operation`` (console.operations) as an ``Ask``; an ``Ask`` as it is."""
    if isinstance(operation, Ask):
        return operation
    fields = (Field(operation.extra_label, operation.extra_value),) if operation.extra_label else ()
    return Ask(operation.title, operation.body, operation.run, text_label=operation.text_label, fields=fields,
               caution=operation.caution, confirm_label=operation.confirm_label,
               option_label=operation.option_label, option_key=operation.option_key, focus=operation.focus)


def confirm_screen(ask: Ask) -> ConfirmScreen:
    """The dialog that confirms ``ask``."""
    return ConfirmScreen(ask.title, ask.body, text_label=ask.text_label, fields=ask.fields, caution=ask.caution,
                         confirm_label=ask.confirm_label, option_label=ask.option_label, option_key=ask.option_key,
                         focus=ask.focus, check=ask.check)


def _problem(rule: Callable[[], object], prefix: str = "") -> str | None:
    """The core's one-line refusal of what was typed (``rule`` raises ValueError), or None."""
    try:
        rule()
    except ValueError as exc:
        return f"{prefix}{exc}"
    return None


class ConsoleOperations(Operations):
    """``Operations`` with the dialogs that ask more than a reason: a fleet stop,
    a warrant (its reason required by the core) and a lock (its entity and
    hours read by the core's rules before the dialog closes). ``keys``: the
    keymap, to name the keys that acknowledge a halt."""

    def __init__(self, backend, source: str, *, home=None, keys: tuple[KeyAction, ...] = ()) -> None:
        super().__init__(backend, source, home=home)
        self.keys = {action.name: display(action.key) for action in keys}

    def ask(self, kind: str, row: dict | None) -> Ask:
        """The dialog of ``kind`` on ``row``: every key and palette entry that
        changes state asks here (``Refused`` when it does not apply)."""
        if kind == "fleet_stop":
            return self.fleet_stop()
        if kind == "fleet_resume":
            return ask_of(self.resume({"name": "*", "agents": []}))
        if kind == "hands_off":
            return self.hands_off(row or None)
        if kind == "raise_cap" and row is not None:
            from leash.console.tui.screens.budgetraise import raise_ask

            return raise_ask(self.backend, row, source=self.source, home=self.home)
        on_row: dict[str, Callable[[dict], Operation | Ask]] = {
            "stop": self.stop, "resume": self._resume, "pardon": self.pardon, "warrant": self.warrant,
            "acknowledge": lambda r: self.halt(r, "resolved"), "dismiss": lambda r: self.halt(r, "dismissed"),
            "escalate": lambda r: self.halt(r, "escalated"), "release": self.release,
            "loop_reset": self.loop_reset, "allow": self.allow, "deny": self.deny,
        }
        if row is None:
            raise Refused(f"{kind} needs a row: select one first")
        return ask_of(on_row[kind](row))

    def _resume(self, row: dict) -> Operation:
        """Resume what stops the session; when no stop holds it but a halt does
        (the core's state of its row), say which keys acknowledge the halt."""
        try:
            return self.resume(row)
        except Refused:
            held = HELD_BY_HALT.get(row.get("state", ""))
            if held is None:
                raise
            halts, acknowledge = self.keys.get("focus_panel('halts')", "2"), self.keys.get("acknowledge", "a")
            raise Refused(f"{shown(row['name'])} is {row['state']}, not stopped: {held}, and resuming lifts only "
                          f"a stop. Acknowledge the halt: '{halts}' shows Pending halts, then '{acknowledge}' "
                          "acknowledges the selected one.") from None

    def _hours(self, confirmed: Confirmed, default: float) -> float:
        """The hours typed, read by the core's parser (empty: the default shown)."""
        from leash.core.base.hours import parse_hours

        text = confirmed.value("hours")
        return parse_hours(text) if text else default

    def _hours_problem(self, confirmed: Confirmed, default: float) -> str | None:
        return _problem(lambda: self._hours(confirmed, default), "hours ")

    def fleet_stop(self) -> Ask:
        """The reason is the operator's, as typed (none is made up)."""
        def run(c: Confirmed) -> str:
            self.backend.stops.stop_fleet(source=self.source, reason=c.text)
            if not c.option:
                return "fleet stopped"
            from leash.core.warrants.interrupt import interrupt_fleet

            report = interrupt_fleet(backend=self.backend, source=self.source, reason=c.text, home=self.home)
            return self._interrupted(report, "the fleet")
        return Ask("Stop the whole fleet?", "Every agent's next tool call is refused until the fleet is resumed.\n"
                   f"{INTERRUPT_NOTE}", run, confirm_label="Stop all", option_label=INTERRUPT_LABEL,
                   option_key=INTERRUPT_KEY)

    def warrant(self, row: dict) -> Ask:
        """A reason is asked for (the core files no warrant without one), and the
        body says how many times the dog asks (``[warrants] timeouts``)."""
        from leash.core.state.warrants.records import configured_attempts, reason_problem

        if not row.get("in_tmux"):
            raise Refused(f"{shown(row['name'])} is not a tmux session: a warrant needs a pane to interrogate")
        target, name = row["tmux_session"], row["name"]  # filed on the tmux session, named as the panel names it
        attempts = configured_attempts(self.home)

        def run(c: Confirmed) -> str:
            warrant, created = self.backend.warrants.file(target, reason=c.text, requester=self.source)
            return f"warrant {shown(warrant['id'])} filed" if created else f"{shown(target)} already has a live warrant"
        times = f"{attempts} time{'s' if attempts != 1 else ''}"
        on = "" if name == target else f" (tmux session {shown(target)})"
        return Ask(f"File a death warrant for {shown(name)}?", f"A dog interrogates the session{on} {times} "
                   "([warrants] timeouts) and kills it if it never answers ALIVE.", run, text_label="Reason",
                   confirm_label="File warrant", check=lambda c: reason_problem(c.text))

    def hands_off(self, row: dict | None) -> Ask:
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

            def lock_session(c: Confirmed) -> str:
                lock = self.backend.locks.lock(entity, hours=self._hours(c, default), reason=c.text,
                                               source=self.source)
                return f"{shown(entity)} is hands-off until {lock['expires_at'][:19]}"
            return Ask(f"Lock {shown(entity)} hands-off?", "Its tool calls are refused (and no warrant kills it) "
                       "until the lock expires or is released.", lock_session, fields=(hours,), confirm_label="Lock",
                       check=lambda c: self._hours_problem(c, default))

        def lock_entity(c: Confirmed) -> str:
            lock = self.backend.locks.lock(c.value("entity"), hours=self._hours(c, default), reason=c.text,
                                           source=self.source)
            return f"{shown(c.value('entity'))} is hands-off until {lock['expires_at'][:19]}"
        return Ask("Lock an entity hands-off?", "A name (an agent, a session) or path:<glob>, for the hours given.",
                   lock_entity, fields=(Field("Entity", "", "entity", "a name or path:<glob> (required)"), hours),
                   confirm_label="Lock", focus=FOCUS_FIELD,
                   check=lambda c: _problem(lambda: validate_entity(c.value("entity")))
                   or self._hours_problem(c, default))
