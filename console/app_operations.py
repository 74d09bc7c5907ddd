"""The main screen's keys that change state, as a mixin of ``LeashApp``.

Each key confirms in ``ConfirmScreen`` and then calls ``console.operations``,
which calls the core; ``run_operation`` is the one path of every key and
palette entry that changes state, and a read-only console refuses there.

``ConsoleOperations`` is ``console.operations.Operations`` with the dialogs
whose rules come from the core: a lock's hours (``core.base.hours``) and
entity (``core.state.handsoff``) checked in the dialog before it closes, a
warrant's reason (``core.state.warrants.records``: the core refuses a warrant
without one) and its number of attempts (``[warrants] timeouts``), and a
fleet stop that records only the reason the operator typed. ``u`` on a
session that no stop holds but a halt does names the keys that acknowledge
it.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from textual import work

from leash.console.keymap import display
from leash.console.operations import (
    FOCUS_CANCEL,
    FOCUS_TEXT,
    INTERRUPT_KEY,
    INTERRUPT_LABEL,
    INTERRUPT_NOTE,
    Operations,
    Refusal,
    shown,
)
from leash.console.screens.confirm import FOCUS_FIELD, Confirmed, ConfirmScreen, Field

# A session that a halt holds (the core's state of its row) and what to say when ``u`` cannot lift it.
HELD_BY_HALT = {"halted": "a pending halt holds it", "paused": "an escalated halt pauses it"}


class Ask(NamedTuple):
    """What a key asks in its dialog and does once confirmed (an ``Operation``
    with fields of its own and a ``check``, the core's rule refusing what was
    typed while the dialog is still open)."""
    title: str
    body: str
    run: Callable  # (Confirmed) -> str, the message shown when it is done
    text_label: str | None = "Reason (optional)"
    fields: tuple[Field, ...] = ()
    caution: bool = False
    confirm_label: str = "Confirm"
    option_label: str | None = None
    option_key: str = ""
    focus: str = FOCUS_CANCEL  # FOCUS_CANCEL, FOCUS_TEXT or FOCUS_FIELD (the first field)
    check: Callable[[Confirmed], str | None] | None = None


def ask_of(operation) -> Ask:
    """An ``Operation`` (console.operations) as an ``Ask``; an ``Ask`` as it is."""
    if isinstance(operation, Ask):
        return operation
    fields = (Field(operation.extra_label, operation.extra_value),) if operation.extra_label else ()
    return Ask(operation.title, operation.body, operation.run, text_label=operation.text_label, fields=fields,
               caution=operation.caution, confirm_label=operation.confirm_label,
               option_label=operation.option_label, option_key=operation.option_key,
               focus=FOCUS_TEXT if operation.focus == FOCUS_TEXT else FOCUS_CANCEL)


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
    hours read by the core's rules before the dialog closes)."""

    def _hours(self, confirmed: Confirmed, default: float) -> float:
        """The hours typed, read by the core's parser (empty: the default shown)."""
        from leash.core.base.hours import parse_hours

        text = confirmed.value("hours")
        return parse_hours(text) if text else default

    def _hours_problem(self, confirmed: Confirmed, default: float) -> str | None:
        return _problem(lambda: self._hours(confirmed, default), "hours ")

    def fleet_stop(self) -> Ask:
        """The reason is the operator's, as typed (none is made up)."""
        def run(c):
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
            raise Refusal(f"{shown(row['name'])} is not a tmux session: a warrant needs a pane to interrogate")
        target = row["tmux_session"]
        attempts = configured_attempts(self.home)

        def run(c):
            warrant, created = self.backend.warrants.file(target, reason=c.text, requester=self.source)
            return f"warrant {shown(warrant['id'])} filed" if created else f"{shown(target)} already has a live warrant"
        times = f"{attempts} time{'s' if attempts != 1 else ''}"
        return Ask(f"File a death warrant for {shown(target)}?", f"A dog interrogates the session {times} "
                   "([warrants] timeouts) and kills it if it never answers ALIVE.", run, text_label="Reason",
                   confirm_label="File warrant", check=lambda c: reason_problem(c.text))

    def hands_off(self, row: dict | None) -> Ask:
        """On a session: lock it, for the hours asked. Elsewhere: the entity to
        lock (a name or ``path:<glob>``; the field has the focus) and its hours.
        The core's parser reads the hours, and its rule the entity, before the
        dialog closes."""
        from leash.core.state.handsoff import validate_entity

        default = self.default_hours()
        hours = Field("Hours", f"{default:g}", "hours")
        if row is not None and "name" in row:
            entity = row["name"]

            def run(c):
                lock = self.backend.locks.lock(entity, hours=self._hours(c, default), reason=c.text,
                                               source=self.source)
                return f"{shown(entity)} is hands-off until {lock['expires_at'][:19]}"
            return Ask(f"Lock {shown(entity)} hands-off?", "Its tool calls are refused (and no warrant kills it) "
                       "until the lock expires or is released.", run, fields=(hours,), confirm_label="Lock",
                       check=lambda c: self._hours_problem(c, default))

        def run(c):
            lock = self.backend.locks.lock(c.value("entity"), hours=self._hours(c, default), reason=c.text,
                                           source=self.source)
            return f"{shown(c.value('entity'))} is hands-off until {lock['expires_at'][:19]}"
        return Ask("Lock an entity hands-off?", "A name (an agent, a session) or path:<glob>, for the hours given.",
                   run, fields=(Field("Entity", "", "entity"), hours), confirm_label="Lock", focus=FOCUS_FIELD,
                   check=lambda c: _problem(lambda: validate_entity(c.value("entity")))
                   or self._hours_problem(c, default))


class OperationKeys:
    def _selected(self, panel: str) -> dict | None:
        row = self.panel(panel).selected()
        if row is None:
            self.notify(f"Select a row in {panel} first.", severity="warning")
        return row

    def run_operation(self, kind: str, row: dict | None = None, *, panel: str | None = None) -> None:
        """Confirm, then change state: the one path of every key and palette
        entry that does. ``panel``: act on that panel's selected row."""
        if self.read_only:
            self.notify("read-only console", severity="warning")
            return
        if panel is not None:
            row = self._selected(panel)
            if row is None:
                return
        try:
            operation = ask_of(self._operation(kind, row))
        except Refusal as exc:
            self.notify(str(exc), severity="warning")
            return
        except Exception as exc:
            self.notify(f"{exc}", severity="error")
            return
        screen = ConfirmScreen(operation.title, operation.body, text_label=operation.text_label,
                               fields=operation.fields, caution=operation.caution,
                               confirm_label=operation.confirm_label, option_label=operation.option_label,
                               option_key=operation.option_key, focus=operation.focus, check=operation.check)

        def done(confirmed) -> None:
            if confirmed is not None:
                self._perform(operation, confirmed)
        self.push_screen(screen, done)

    def _operation(self, kind: str, row: dict | None):
        ops = self.operations
        if kind == "resume":
            return self._resume(row)
        return {
            "stop": lambda: ops.stop(row), "fleet_stop": ops.fleet_stop,
            "fleet_resume": lambda: ops.resume({"name": "*", "agents": []}),
            "acknowledge": lambda: ops.halt(row, "resolved"), "dismiss": lambda: ops.halt(row, "dismissed"),
            "escalate": lambda: ops.halt(row, "escalated"), "pardon": lambda: ops.pardon(row),
            "warrant": lambda: ops.warrant(row), "hands_off": lambda: ops.hands_off(row or None),
            "release": lambda: ops.release(row), "loop_reset": lambda: ops.loop_reset(row),
            "allow": lambda: ops.allow(row), "deny": lambda: ops.deny(row),
        }[kind]()

    def _resume(self, row: dict):
        """Resume what stops the session; when no stop holds it but a halt does
        (the core's state of its row), say which keys acknowledge the halt."""
        try:
            return self.operations.resume(row)
        except Refusal:
            held = HELD_BY_HALT.get(row.get("state", ""))
            if held is None:
                raise
            keys = {action.name: display(action.key) for action in self.key_actions}
            halts, acknowledge = keys["focus_panel('halts')"], keys["acknowledge"]
            raise Refusal(f"{shown(row['name'])} is {row['state']}, not stopped: {held}, and resuming lifts only "
                          f"a stop. Acknowledge the halt: '{halts}' shows Pending halts, then '{acknowledge}' "
                          "acknowledges the selected one.") from None

    @work(thread=True, group="operation")
    def _perform(self, operation, confirmed) -> None:
        try:
            message = operation.run(confirmed)
        except Refusal as exc:
            self.call_from_thread(self.notify, str(exc), severity="warning")
        except Exception as exc:  # the core's refusal (e.g. HaltRefused) is the operator's answer
            self.call_from_thread(self.notify, str(exc), severity="error")
        else:
            self.call_from_thread(self.notify, message)
        self.call_from_thread(self.refresh_view)

    def _row_action(self, kind: str, panel: str) -> None:
        self.run_operation(kind, panel=panel)

    def action_stop(self) -> None:
        self._row_action("stop", "sessions")

    def action_fleet_stop(self) -> None:
        self.run_operation("fleet_stop", None)

    def action_resume(self) -> None:
        self._row_action("resume", "sessions")

    def action_acknowledge(self) -> None:
        self._row_action("acknowledge", "halts")

    def action_dismiss(self) -> None:
        self._row_action("dismiss", "halts")

    def action_escalate(self) -> None:
        self._row_action("escalate", "halts")

    def action_pardon(self) -> None:
        self._row_action("pardon", "warrants")

    def action_warrant(self) -> None:
        self._row_action("warrant", "sessions")

    def action_hands_off(self) -> None:
        if self.focused_panel() == "sessions":
            self._row_action("hands_off", "sessions")
        else:
            self.run_operation("hands_off", None)

    def action_release(self) -> None:
        self._row_action("release", "locks")

    def action_allow(self) -> None:
        self._row_action("allow", "approvals")

    def action_deny(self) -> None:
        self._row_action("deny", "approvals")
