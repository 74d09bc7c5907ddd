"""What each console key does: the confirmation it asks for and the core call it makes.

An ``Operation`` describes one state change on one row: the modal's title,
body and fields, and ``run(confirmed)`` — a call into the core whose result is
on disk for every other process (the CLI, the hooks, the kennel) at once. The
console decides nothing here: whether a halt may be dismissed, which stop a
resume lifts, how long a lock lasts — the core answers all of it.
"""
from __future__ import annotations

from typing import Callable, NamedTuple


class Operation(NamedTuple):
    title: str
    body: str
    run: Callable  # (Confirmed) -> str, the message shown when it is done
    text_label: str | None = "Reason (optional)"
    extra_label: str | None = None
    extra_value: str = ""
    caution: bool = False
    confirm_label: str = "Confirm"


class Refusal(Exception):
    """The key does not apply to the selected row; the message says why."""


def _hours(text: str, default: float) -> float:
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise Refusal(f"hours must be a number, got {text!r}") from None
    if value <= 0:
        raise Refusal("hours must be more than 0")
    return value


class Operations:
    """Builds the operation for a key press, given the home and who is acting."""

    def __init__(self, home, source: str):
        from core.stop import StopProtocol

        self.home = home
        self.source = source
        self.protocol = StopProtocol(home)

    # ------------------------------------------------------------ sessions
    def stop(self, row: dict) -> Operation:
        name = row["name"]

        def run(c):
            self.protocol.stops.stop(name, source=self.source, reason=c.text)
            return f"stopped {name}"
        return Operation(f"Stop {name}?", f"Every tool call of {name} is refused until it is resumed.", run,
                         confirm_label="Stop")

    def fleet_stop(self) -> Operation:
        def run(c):
            self.protocol.stops.stop_fleet(source=self.source, reason=c.text or "fleet stop from the console")
            return "fleet stopped"
        return Operation("Stop the whole fleet?", "Every agent's next tool call is refused until the fleet "
                         "is resumed.", run, confirm_label="Stop all")

    def resume(self, row: dict) -> Operation:
        names = [row["name"]] + row.get("agents", [])
        covering = self.protocol.stops.covering(names)
        if covering is None:
            raise Refusal(f"{row['name']} is not stopped")
        kind, name = covering
        if kind == "fleet":
            def run(c):
                self.protocol.stops.resume_fleet(source=self.source, reason=c.text)
                return "fleet resumed"
            return Operation("Resume the fleet?", f"{row['name']} is held by the fleet stop; resuming lifts it for "
                             "every session (sessions stopped one by one stay stopped).", run,
                             confirm_label="Resume fleet")

        def run(c):
            self.protocol.stops.resume(name, source=self.source, reason=c.text)
            return f"resumed {name}"
        return Operation(f"Resume {name}?", f"Lift the stop on {name}.", run, confirm_label="Resume")

    def warrant(self, row: dict) -> Operation:
        from core.warrants import WarrantQueue

        if not row.get("in_tmux"):
            raise Refusal(f"{row['name']} is not a tmux session: a warrant needs a pane to interrogate")
        target = row["tmux_session"]

        def run(c):
            warrant, created = WarrantQueue(self.home, self.protocol.acklog).file(
                target, reason=c.text or "filed from the console", requester=self.source)
            return f"warrant {warrant['id']} filed" if created else f"{target} already has a live warrant"
        return Operation(f"File a death warrant for {target}?", "A dog interrogates the session three times "
                         "and kills it if it never answers ALIVE.", run, text_label="Reason",
                         confirm_label="File warrant")

    def hands_off(self, row: dict | None) -> Operation:
        """On a session: lock it, asking for hours. Elsewhere: ask which entity
        (a name or ``path:<glob>``) to lock for the default time."""
        default = self.protocol.default_hours()
        if row is not None and "name" in row:
            entity = row["name"]

            def run(c):
                lock = self.protocol.hands_off(entity, hours=_hours(c.extra, default), reason=c.text,
                                               source=self.source)
                return f"{entity} is hands-off until {lock['expires_at'][:19]}"
            return Operation(f"Lock {entity} hands-off?", "Its tool calls are refused (and no warrant kills it) "
                             "until the lock expires or is released.", run, extra_label="Hours",
                             extra_value=f"{default:g}", confirm_label="Lock")

        def run(c):
            if not c.extra:
                raise Refusal("name the entity to lock")
            lock = self.protocol.hands_off(c.extra, reason=c.text, source=self.source)
            return f"{c.extra} is hands-off until {lock['expires_at'][:19]}"
        return Operation("Lock an entity hands-off?", f"A name (an agent, a session) or path:<glob>, for "
                         f"{default:g} hours.", run, extra_label="Entity", confirm_label="Lock")

    # ------------------------------------------------------------ locks
    def release(self, row: dict) -> Operation:
        entity = row["entity"]

        def run(c):
            self.protocol.release(entity, c.text, self.source)
            return f"released {entity}"
        return Operation(f"Release {entity}?", "The lock is removed now.", run, confirm_label="Release")

    # ------------------------------------------------------------ halts
    def halt(self, row: dict, resolution: str) -> Operation:
        from core.halts import api

        caution = resolution == "dismissed" and api.dismissal_needs_caution(row["severity"])
        verb = {"resolved": "Acknowledge", "dismissed": "Dismiss", "escalated": "Escalate"}[resolution]

        def run(c):
            result = api.acknowledge_halt({"session_token": row["session_id"], "halt_id": row["halt_id"],
                                           "resolution": resolution, "resolution_notes": c.text or None,
                                           "continue_with_caution": c.caution, "acknowledged_by": self.source},
                                          home=self.home, source=self.source)
            tail = "the session may resume" if result["session_can_resume"] else "the session stays held"
            done = {"resolved": "acknowledged", "dismissed": "dismissed", "escalated": "escalated"}[resolution]
            return f"{done} {row.get('condition_name') or row['halt_type']}: {tail}"
        effect = {"resolved": "The halt is resolved; the session resumes when no other halt holds it.",
                  "dismissed": "Proceed anyway: the halt is dismissed and logged.",
                  "escalated": "Hand it to a human: the session pauses (nothing runs) until it is resolved."}
        body = f"{row['severity']} {row.get('condition_name') or row['halt_type']} on {row['session_id']}:\n" \
               f"{row['description']}\n\n{effect[resolution]}"
        return Operation(f"{verb} this halt?", body, run, text_label="Note (optional)", caution=caution,
                         confirm_label=verb)

    # ------------------------------------------------------------ warrants
    def pardon(self, row: dict) -> Operation:
        from core.warrants import WarrantQueue

        def run(c):
            result, _ = WarrantQueue(self.home, self.protocol.acklog).pardon(row["id"], source=self.source,
                                                                             reason=c.text)
            return f"pardoned {row['target']}" if result == "pardoned" else f"pardon sent to the dog of {row['target']}"
        return Operation(f"Pardon {row.get('target')}?", "The warrant is cancelled and the session lives.", run,
                         confirm_label="Pardon")

    # ------------------------------------------------------------ breakers
    def loop_reset(self, row: dict) -> Operation:
        from core import loopguard

        def run(c):
            loopguard.reset(name=row["name"], home=self.home, source=self.source, reason=c.text)
            return f"reset breaker {row['name']}"
        return Operation(f"Reset breaker {row['name']}?", "Its recorded boots are forgotten; the next "
                         "restart-interrupted boot auto-resumes again.", run, confirm_label="Reset")
