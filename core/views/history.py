"""What ``leash log`` filters by: a session by any of its names, events by
their logged names or short aliases.

A session's history is logged under several names: a stop and a warrant
under the name they were filed by (the tmux session's, often), a halt, an
approval and an interrupt under the agent's session id, a shared store's
lines under ``HOST/NAME``. ``session_names(backend, name)`` is every name the
session ``name`` answers to (the hooks' records join them: agent session id,
tmux session name, each with and without its host; a tmux id finds its
session), so one
``leash log --session`` shows the whole history.

``resolve_events(text)`` turns ``--event`` into the logged event names: a
name as logged (``stop_ack``, or ``stop-ack``), or an alias of ``ALIASES``
(``stop`` is ``stop_ack``; ``halt`` every ``halt_*`` line). An unknown one
raises ``UnknownEvent`` naming the valid ones.

Failure: sessions that cannot be read add no names (the name given is still matched).
"""
from __future__ import annotations

from leash.core.state.acklog import EVENTS

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

ALIASES: dict[str, tuple[str, ...]] = {
    "stop": ("stop_ack",),
    "fleet": ("fleet_stop", "fleet_resume"),
    "lock": ("hands_off", "release"),
    "halt": tuple(e for e in EVENTS if e.startswith("halt_")),
    "warrant": tuple(e for e in EVENTS if e.startswith("warrant_")) + ("epitaph",),
    "approval": tuple(e for e in EVENTS if e.startswith("approval_")),
    "loop": ("loop_tripped", "loop_reset"),
    "budget": tuple(e for e in EVENTS if e.startswith("budget_")),
    "refused": ("tamper_blocked", "daemon_refused", "operator_refused"),
}


class UnknownEvent(ValueError):
    def __init__(self, text: str):
        super().__init__(f"unknown event {text!r}: one of {', '.join(EVENTS)}; or an alias: "
                         f"{', '.join(ALIASES)} (leash log --help)")


def event_help() -> str:
    """The events and aliases ``--event`` takes, for ``leash log --help``."""
    def shown(alias: str, events: tuple[str, ...]) -> str:
        family = [e for e in events if e.startswith(alias + "_")]
        if len(family) < 3:
            return "|".join(events)
        return "|".join([alias + "_*"] + [e for e in events if e not in family])

    aliases = "; ".join(f"{alias} = {shown(alias, events)}" for alias, events in ALIASES.items())
    return f"only this event: {', '.join(EVENTS)}; or an alias: {aliases}"


def resolve_events(text: str) -> tuple[str, ...]:
    """The logged events ``text`` names (``UnknownEvent`` when none)."""
    word = text.strip().lower()
    if word in ALIASES:
        return ALIASES[word]
    logged = word.replace("-", "_")
    if logged in EVENTS:
        return (logged,)
    raise UnknownEvent(text)


def session_names(backend: Backend, name: str, *, now: float | None = None) -> set[str]:
    """Every name the session ``name`` (an agent session id, a tmux session
    name or id, with or without ``HOST/``) answers to, ``name`` among them."""
    names = {name}
    try:
        records = backend.sessions.all(now=now)
    except Exception:  # unreadable sessions: the name given still matches
        return names
    for session_id, record in records.items():
        tmux_names = {str(record.tmux_session or "")} - {""}
        tmux_names |= {bare.partition("/")[2] for bare in tmux_names if "/" in bare}
        # A tmux id ($N) finds its session but is not added: tmux hands ids out again.
        if name in {session_id, record.tmux_session_id} | tmux_names:
            names |= {session_id} | tmux_names
    if name.startswith("$") or "/" not in name:
        return names
    names.add(name.partition("/")[2])  # HOST/NAME: a stop filed by the bare name holds it too
    return names
