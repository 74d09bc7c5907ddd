"""A snapshot of a home for ``leash status``: what is stopped, locked and seen.

``snapshot`` returns the DESIGN.md shape: ``fleet_stopped``, ``stopped_sessions``,
``hands_off``, ``pending_halts``, ``warrants``, ``loops``, ``sessions``, each a
list of objects with the keys of its file format plus the key it is filed under.
``fleet_stopped`` holds the fleet stop record, or nothing when the fleet runs.

Every store is read through the storage seam (``leash.core.store``); the halts
still come over the caller's connection. Failure: an unreadable stop state is
reported (``stop_state_error``) rather than hidden, since the gate is denying
everything while it lasts.
"""
from __future__ import annotations

from typing import Any

from leash.core.protocol import StopProtocol
from leash.core.stop import StopStateUnreadable


def snapshot(protocol: StopProtocol, *, now: float | None = None, halts_limit: int = 10_000,
             connection=None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "fleet_stopped": [], "stopped_sessions": [], "hands_off": [], "pending_halts": [],
        "warrants": [], "loops": [], "sessions": [],
    }
    from leash.core.store.files import FileBackend

    backend = FileBackend.sharing(protocol)
    try:
        stops = backend.stops.snapshot()
    except StopStateUnreadable as exc:
        result["stop_state_error"] = str(exc)
        stops = {"sessions": {}, "fleet": None}
    if stops["fleet"]:
        result["fleet_stopped"].append(dict(stops["fleet"]))
    for session_id, record in sorted(stops["sessions"].items()):
        result["stopped_sessions"].append({"session_id": session_id, **record})
    for entity, lock in backend.locks.active(now=now).items():
        result["hands_off"].append({"entity": entity, **lock.as_dict()})
    from leash.core.halts import HaltStoreUnavailable, get_session_halts

    try:
        pending = get_session_halts({"pending": True, "limit": halts_limit}, home=protocol.home, now=now,
                                    connection=connection)
        result["pending_halts"] = pending["halts"]
    except HaltStoreUnavailable as exc:
        result["halt_store_error"] = str(exc)
    for warrant in backend.warrants.pending():
        result["warrants"].append({**warrant.as_dict(), "state": "pending", "attempt": 0})
    for dog in backend.warrants.active():
        result["warrants"].append({**dog.get("warrant", {}), **{k: v for k, v in dog.items() if k != "warrant"}})
    from leash.core.config import ConfigError, load_config

    try:
        config = load_config(protocol.home)
    except ConfigError:
        config = {}
    for name in backend.breakers.names():
        result["loops"].append(backend.breakers.describe(name, config=config, now=now).as_dict())
    for session_id, record in backend.sessions.all(now=now).items():
        result["sessions"].append({"session_id": session_id, **record.as_dict()})
    return result


