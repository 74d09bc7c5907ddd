"""How a warrant ends: its state sealed with an outcome and epitaph, the
outcome's ack-log lines, the ``<id>.done`` report, and the state filed into
``dogs/completed``.

Every backend's claim seals this way (``seal``, ``log_outcome``); the file
backend's claim also files it (``finish``, ``complete``). ``complete`` is safe
to run again after a crash at any point: ack-log lines already written are not
written twice, and each file step is an atomic replace or an unlink that
tolerates the file being gone already.
"""
from __future__ import annotations

import os

from leash.core.base.clock import iso, parse_iso
from leash.core.base.statefile import write_json
from leash.core.state.warrants.epitaph import epitaph

# Seconds each health-check attempt waits for an answer, first to last.
DEFAULT_TIMEOUTS = (60.0, 120.0, 240.0)
OUTCOME_EVENT = {"pardoned": "warrant_pardoned", "executed": "warrant_executed",
                 "blocked_hands_off": "warrant_blocked", "undelivered": "warrant_undelivered"}


def finish(queue, state: dict, outcome: str, *, now: float, timeouts, by: str | None = None,
           note: str = "") -> dict:
    """Seal the dog's state with its outcome and epitaph, then ``complete`` it.
    Call it holding the warrant's claim."""
    seal(state, outcome, now=now, timeouts=timeouts, by=by, note=note)
    write_json(queue.active_path(state["id"]), state)
    return complete(queue, state, now=now)


def seal(state: dict, outcome: str, *, now: float, timeouts, by: str | None = None, note: str = "") -> dict:
    """The dog's state with its outcome, epitaph and the source and reason its
    log lines will carry (every backend's claim seals this way)."""
    stamp = iso(now)
    from leash.core.base.secrets import mask

    text = mask(epitaph(outcome, state, at=stamp, timeouts=list(timeouts), by=by))
    reasons = {"pardoned": "operator pardon" if by else f"responded at attempt {state.get('attempt')}",
               "executed": "no answer after every attempt",
               "blocked_hands_off": f"target is hands-off ({state.get('blocked_by', '')}); not killed — "
                                    "an operator must decide",
               "undelivered": "the health check could not be delivered to the pane "
                              f"({(state.get('delivery') or {}).get('why', '')}); not killed — an operator must look"}
    state.update(state="complete", outcome=outcome, epitaph=text, completed_at=stamp,
                 log_source=by or "kennel", log_reason=note or reasons.get(outcome, outcome))
    if by:
        state["pardoned_by"] = by
    return state


def complete(queue, state: dict, *, now: float, resumed: bool = False) -> dict:
    """Log the outcome and epitaph, write ``<id>.done``, move the state to
    ``dogs/completed``. Safe to run again after a crash at any point: lines
    already in the ack log are not written twice."""
    warrant = state["warrant"]
    if not (resumed and _already_logged(queue, warrant.get("id"))):
        log_outcome(queue.acklog, state, now=now)
    started = parse_iso(state["started_at"]) if state.get("started_at") else now
    write_json(os.path.join(queue.active_dir, f"{state['id']}.done"), {
        "dog_id": state["id"], "warrant_id": warrant.get("id"), "target": warrant.get("target"),
        "outcome": state["outcome"], "duration": f"{max(0.0, now - started):g}s"})
    queue.ensure_dirs()
    if os.path.exists(queue.active_path(state["id"])):
        os.replace(queue.active_path(state["id"]), queue.completed_path(state["id"]))
    try:
        os.unlink(queue.pardon_path(state["id"]))
    except FileNotFoundError:
        pass
    return state


def log_outcome(acklog, state: dict, *, now: float) -> None:
    """A sealed state's ack-log lines: its outcome's event (when it has one), then its epitaph."""
    warrant = state["warrant"]
    event = OUTCOME_EVENT.get(state["outcome"])
    if event:
        acklog.append(event, source=state.get("log_source", "kennel"), session_id=warrant.get("target", ""),
                      reason=state.get("log_reason", ""), now=now, warrant_id=warrant.get("id"),
                      attempt=state.get("attempt"))
    acklog.append("epitaph", source=state.get("log_source", "kennel"), session_id=warrant.get("target", ""),
                  reason=state["epitaph"], now=now, warrant_id=warrant.get("id"), outcome=state["outcome"])


def _already_logged(queue, warrant_id: str | None) -> bool:
    return any(line.get("warrant_id") == warrant_id for line in queue.acklog.read(event="epitaph").entries)


def finish_without_dog(queue, state: dict, *, source: str, reason: str, now: float) -> dict:
    """An operator's pardon of a warrant no dog is working."""
    return finish(queue, state, "pardoned", now=now, timeouts=DEFAULT_TIMEOUTS, by=source, note=reason)
