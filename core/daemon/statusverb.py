"""The agent socket's ``status`` verb: Claude Code's status line, passed on
by ``leash statusline`` (``core.wire.thinstatus``), which runs as the agent's
child as a hook does.

A request is ``{"verb": "status", "payload": "<the status JSON>"}``. leashd
hands the status to the budget engine (``core.views.spendmeter.
observe_status_line``: the subscription windows it reports, the session's
spend read on) and answers the figures the line shows::

    {"usd": 1.24, "estimated": false, "windows": [["5h", 42.0], ["7d", 13.0]],
     "held": ["daily"]}

``usd``: what the session spent as leash metered it (None before any spend);
``windows``: the percentages the status reports, as numbers; ``held``: the
caps whose hold covers the session. The client drops whatever is not
printable from what it shows.

Failure: a payload that is not a JSON object with a ``session_id`` is an error
reply (the line then shows the user's part alone); a status naming another
user's session is refused as its hooks are (``core.daemon.hookverb.
SessionOwners``, logged as ``daemon_refused``); whatever the engine raises is
the caller's (leashd answers ``{"error": ...}``).
"""
from __future__ import annotations

import time

from leash.core.daemon.hookverb import SessionOwners, _parsed
from leash.core.daemon.peers import Peer

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

# Claude Code's ``rate_limits`` keys and the names the line shows them by.
WINDOWS = (("five_hour", "5h"), ("seven_day", "7d"))


class StatusVerb:
    def __init__(self, home: str, backend: Backend, owners: SessionOwners, *, refuse, clock=time.time):
        self.home, self.backend, self.owners = home, backend, owners
        self.refuse = refuse  # refuse(peer, where=, verb=, reason=): logs a refusal
        self.clock = clock

    def reply(self, request: dict, peer: Peer) -> dict:
        """The reply line to a ``status`` request from ``peer``."""
        payload = request.get("payload")
        if not isinstance(payload, str):
            return {"error": "a status request needs a string payload"}
        status = _parsed(payload)
        if not isinstance(status, dict):
            return {"error": "the status line's input is not a JSON object"}
        session_id = status.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            return {"error": "the status line's input names no session_id"}
        intruder = self.owners.intruder(status, peer)
        if intruder:
            self.refuse(peer, where="agent", verb="status", reason=intruder)
            return {"error": f"refused: {intruder}"}
        from leash.core.base.config import load_config
        from leash.core.views.spendmeter import observe_status_line

        config = load_config(self.home)
        observe_status_line(self.backend, session_id, status, config=config, now=self.clock())
        usd, estimated = self.spent(session_id)
        return {"usd": usd, "estimated": estimated, "windows": windows_of(status),
                "held": self.held_caps(session_id, config)}

    def spent(self, session_id: str) -> tuple[float | None, bool]:
        """(USD the session spent, whether any of it was estimated); None before any."""
        rows = self.backend.budget.spend(session_id=session_id)
        if not rows:
            return None, False
        return sum(row.usd for row in rows), any(row.estimated for row in rows)

    def held_caps(self, session_id: str, config: dict) -> list[str]:
        """The names of the caps whose hold covers the session now, as the
        gate judges it (``core.policy.budgethold.covering``)."""
        from leash.core.policy.budgethold import covering

        holds = self.backend.budget.holds()
        if not holds:
            return []
        from leash.core.base.config import host_name
        from leash.core.state.sessions import host_of

        budget = config.get("budget") or {}
        sessions = self.backend.sessions
        record = sessions.get(session_id)
        known = record.as_dict() if record is not None else {}
        entity = str(known.get("entity") or "")
        # Named as the gate and the meter name it: the record's, the store's, this machine's.
        host = host_of(known) or sessions.host or host_name(self.home)
        ids = [session_id, *sessions.lineage(session_id)]
        return sorted({hold.cap for hold in holds
                       if covering([hold], budget.get("cap", []), budget.get("accounts", {}), session_ids=ids,
                                   entity=entity, host=host) is not None})


def windows_of(status: dict) -> list[list]:
    """[[shown name, percent]] of the status's ``rate_limits`` that carry a number."""
    limits = status.get("rate_limits")
    found = []
    for key, name in WINDOWS:
        window = limits.get(key) if isinstance(limits, dict) else None
        percent = window.get("used_percentage") if isinstance(window, dict) else None
        if isinstance(percent, (int, float)) and not isinstance(percent, bool) and percent == percent \
                and abs(percent) != float("inf"):
            found.append([name, float(percent)])
    return found
