"""The storage backends the tests run on: every kind the store contract
covers (``BACKENDS``, made by ``make_backend``; the ``backend`` and
``second_backend`` fixtures in conftest.py take each in turn), and
``ProtocolOnly``, a backend seen through its protocol alone."""
from __future__ import annotations

import contextlib

from leash.core.store import protocols, protocols_halts, protocols_work

# postgres-roles: the schema's owner and leash's runtime role are two roles ([store] owner_url),
# so every store works with the runtime role's grants alone.
BACKENDS = ["file", "postgres", "postgres-roles"]


def make_backend(kind: str, home, *, url: str | None = None, owner_url: str = ""):
    """A backend of ``kind`` ("file" or "postgres") on ``home``."""
    if kind == "file":
        from leash.core.store.files import FileBackend

        return FileBackend(home)
    if kind == "postgres":
        from leash.core.store.postgres import PostgresBackend

        return PostgresBackend(url, home=home, host="h1", owner_url=owner_url)
    raise ValueError(kind)


def _members(protocol: type) -> set[str]:
    named = {name for klass in protocol.__mro__ if klass.__module__.startswith(protocols.__name__)
             for name in list(vars(klass)) + list(getattr(klass, "__annotations__", {})) if not name.startswith("_")}
    return named


class ProtocolOnly:
    """``target`` seen through ``protocol``: any other attribute (a registry,
    a path, a queue, a connection) raises ``AttributeError``. Stores, units
    of work and claims it hands out are seen through their protocols too."""

    def __init__(self, target, protocol: type):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_protocol", protocol)
        object.__setattr__(self, "_allowed", _members(protocol))

    def __getattr__(self, name: str):
        if name not in self._allowed:
            raise AttributeError(f"{self._protocol.__name__} has no {name!r}")
        value = getattr(self._target, name)
        wrap = WRAPPED.get((self._protocol, name))
        return wrap(value) if wrap else value


def _store(protocol):
    return lambda store: ProtocolOnly(store, protocol)


def _unit_maker(make):
    @contextlib.contextmanager
    def unit(**options):
        with make(**options) as opened:
            yield ProtocolOnly(opened, protocols_halts.HaltUnit)
    return unit


def _claims(take):
    def claim(**options):
        found = take(**options)
        if found is None:
            return None
        if isinstance(found, list):
            return [ProtocolOnly(c, protocols_work.Claim) for c in found]
        return ProtocolOnly(found, protocols_work.Claim)
    return claim


WRAPPED = {
    (protocols.Backend, "acklog"): _store(protocols.AckLogStore),
    (protocols.Backend, "stops"): _store(protocols.StopStore),
    (protocols.Backend, "locks"): _store(protocols.LockStore),
    (protocols.Backend, "sessions"): _store(protocols.SessionStore),
    (protocols.Backend, "halts"): _store(protocols_halts.HaltStore),
    (protocols.Backend, "warrants"): _store(protocols_work.WarrantStore),
    (protocols.Backend, "breakers"): _store(protocols_work.BreakerStore),
    (protocols.Backend, "replies"): _store(protocols_work.ReplyLedger),
    (protocols.Backend, "kennels"): _store(protocols_work.KennelRegistry),
    (protocols_halts.HaltStore, "unit"): _unit_maker,
    (protocols_halts.HaltStore, "reading"): _unit_maker,
    (protocols_work.WarrantStore, "claim_next"): _claims,
    (protocols_work.WarrantStore, "claim_orphans"): _claims,
}
