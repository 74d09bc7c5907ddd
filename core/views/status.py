"""A snapshot of a home for ``leash status``: what is stopped, locked and seen.

``snapshot`` returns the DESIGN.md shape: ``fleet_stopped``, ``stopped_sessions``,
``hands_off``, ``pending_halts``, ``warrants``, ``loops``, ``sessions``, each a
list of objects with the keys of its file format plus the key it is filed under.
``fleet_stopped`` holds the fleet stop record, or nothing when the fleet runs.

Every store is read through the caller's ``Backend`` (``leash.core.store``);
the halts through one unit of work on its halt store (the caller's, when it
holds one open). Failure: an unreadable stop state is reported
(``stop_state_error``) rather than hidden, since the gate is denying everything
while it lasts; so is a halt store that cannot be read (``halt_store_error``).
"""
from __future__ import annotations

from typing import Any

from leash.core.state.stop import StopStateUnreadable


def backend_of(owner=None, backend=None):
    """The backend to read: ``backend`` when given, else the one over
    ``owner`` (a ``StopProtocol``, whose open registries it shares, or a home)."""
    if backend is not None:
        return backend
    from leash.core.store.files import FileBackend
    from leash.core.store.select import backend_for, store_url
    from leash.core.views.protocol import StopProtocol

    if not isinstance(owner, StopProtocol):
        return backend_for(owner)
    if getattr(owner, "backend", None) is None:  # one per command, shared by whatever it reads
        owner.backend = backend_for(owner.home) if store_url(owner.home) else FileBackend.sharing(owner)
    return owner.backend


def snapshot(protocol=None, *, backend=None, now: float | None = None, halts_limit: int = 10_000,
             halts=None, connection=None) -> dict[str, Any]:
    """The state of ``backend`` (default: the one over ``protocol``, a
    ``StopProtocol`` or a home). ``halts``: an open unit of the halt store to
    read pending halts in (``connection``: an open halts.db connection, the
    older way to say the same); none is read when ``halts_limit`` is 0."""
    backend = backend_of(protocol, backend)
    result: dict[str, Any] = {
        "fleet_stopped": [], "stopped_sessions": [], "hands_off": [], "pending_halts": [],
        "warrants": [], "loops": [], "sessions": [],
    }
    try:
        stops = backend.stops.current(now=now)
    except StopStateUnreadable as exc:
        result["stop_state_error"] = str(exc)
    else:
        if stops.fleet is not None:
            result["fleet_stopped"].append(stops.fleet.as_dict())
        for session_id, record in stops.sessions.items():
            result["stopped_sessions"].append({"session_id": session_id, **record.as_dict()})
    for entity, lock in backend.locks.active(now=now).items():
        result["hands_off"].append({"entity": entity, **lock.as_dict()})
    if halts_limit > 0:
        _pending_halts(result, backend, halts, connection, halts_limit, now)
    for warrant in backend.warrants.pending():
        result["warrants"].append({**warrant.as_dict(), "state": "pending", "attempt": 0})
    for dog in backend.warrants.active():
        result["warrants"].append({**dog.get("warrant", {}), **{k: v for k, v in dog.items() if k != "warrant"}})
    config = _config(backend)
    for name in backend.breakers.names():
        result["loops"].append(backend.breakers.describe(name, config=config, now=now).as_dict())
    from leash.core.state.sessions import host_of

    here = host_of_backend(backend)
    result["host"] = here
    shared = bool(getattr(backend.sessions, "host", ""))
    for session_id, record in backend.sessions.all(now=now).items():
        fields = record.as_dict()
        result["sessions"].append({"session_id": session_id, **fields,
                                   "host": host_of(fields) if shared else here})
    return result


def host_of_backend(backend) -> str:
    """This host's name (``LEASH_HOST``, ``[daemon] host``, the hostname)."""
    named = getattr(backend, "host", "")
    if named:
        return named
    from leash.core.base.config import ConfigError
    from leash.core.store.select import host_name

    try:
        return host_name(backend.home)
    except ConfigError:  # a bad config.toml is doctor's to report; the machine still has a name
        import socket

        return socket.gethostname()


def _pending_halts(result: dict, backend, unit, connection, limit: int, now: float | None) -> None:
    from leash.core.state.halts import HaltStoreUnavailable

    try:
        if unit is None and connection is not None:  # a caller that still holds a raw connection
            from leash.core.store.filestores import FileHaltUnit

            unit = FileHaltUnit(connection, backend.home)
        if unit is not None:
            result["pending_halts"] = [halt.as_dict() for halt in unit.pending(limit=limit)]
            return
        with backend.halts.unit(now=now) as opened:
            result["pending_halts"] = [halt.as_dict() for halt in opened.pending(limit=limit)]
    except HaltStoreUnavailable as exc:
        result["halt_store_error"] = str(exc)


def _config(backend) -> dict:
    """config.toml of the backend's home (breakers are described against it); {} when it is bad."""
    from leash.core.base.config import ConfigError, load_config

    try:
        return load_config(backend.home)
    except ConfigError:
        return {}
