"""The main screen's keys that change state, as a mixin of ``LeashApp``.

Each key confirms in ``ConfirmScreen`` and then calls ``console.operations``,
which calls the core; ``run_operation`` is the one path of every key and
palette entry that changes state, and a read-only console refuses there.
"""
from __future__ import annotations

from textual import work

from leash.console.operations import FOCUS_TEXT, Refusal
from leash.console.screens.confirm import ConfirmScreen


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
            operation = self._operation(kind, row)
        except Refusal as exc:
            self.notify(str(exc), severity="warning")
            return
        except Exception as exc:
            self.notify(f"{exc}", severity="error")
            return
        screen = ConfirmScreen(operation.title, operation.body, text_label=operation.text_label,
                               extra_label=operation.extra_label, extra_value=operation.extra_value,
                               caution=operation.caution, confirm_label=operation.confirm_label,
                               option_label=operation.option_label, option_key=operation.option_key,
                               focus_text=operation.focus == FOCUS_TEXT)

        def done(confirmed) -> None:
            if confirmed is not None:
                self._perform(operation, confirmed)
        self.push_screen(screen, done)

    def _operation(self, kind: str, row: dict | None):
        ops = self.operations
        return {
            "stop": lambda: ops.stop(row), "fleet_stop": ops.fleet_stop, "resume": lambda: ops.resume(row),
            "fleet_resume": lambda: ops.resume({"name": "*", "agents": []}),
            "acknowledge": lambda: ops.halt(row, "resolved"), "dismiss": lambda: ops.halt(row, "dismissed"),
            "escalate": lambda: ops.halt(row, "escalated"), "pardon": lambda: ops.pardon(row),
            "warrant": lambda: ops.warrant(row), "hands_off": lambda: ops.hands_off(row or None),
            "release": lambda: ops.release(row), "loop_reset": lambda: ops.loop_reset(row),
            "allow": lambda: ops.allow(row), "deny": lambda: ops.deny(row),
        }[kind]()

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
