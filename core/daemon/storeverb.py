"""The operator socket's ``store`` verb: a ``RemoteBackend`` call run on the
daemon's backend (``core.store.remote`` is the other side).

Only the methods the store's protocol names may be called (``follow``, claims
and units' lifetimes stay in the daemon). Who acts is the peer: a ``source`` or
``requester`` keyword the method takes is set to the peer's ``user@host``
whatever the client sent. A halt unit's read runs in its own unit (the kept
reader); a transaction's queued steps are applied as one.

leashd says one ``operator`` line for each request that may change state
(``log_fields``: the store and method, so the line says what was done) and
none for a read (``READS``): the console reads dozens of times a refresh, and
those lines would bury the ones that matter.

Failure: an unknown store or method, or arguments that do not fit, is an error
reply; an exception the store raises is ``{"error", "raised": its class name}``
(or its nearest the client knows) for the client to raise again. Nothing a
request carries ends the daemon.
"""
from __future__ import annotations

import inspect

from leash.core.store.remote import ACTOR_PARAMETERS, callable_methods, decode, encode_answer, errors, protocols

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend


# The methods that only read, by store; any other method may change state, and
# a store not named here (the transaction) is all writes.
READS = {
    "acklog": frozenset({"read", "tail", "verify"}),
    "stops": frozenset({"covering", "current", "fleet", "stopped"}),
    "locks": frozenset({"active", "covering", "has_path_locks", "lock_for_path", "lock_of", "view"}),
    "sessions": frozenset({"all", "get", "hosted", "lineage", "predecessor_in_pane"}),
    "halts": frozenset({"config", "find", "listing", "state"}),
    "warrants": frozenset({"active", "completed", "find", "has_pending", "listing", "live_for", "pending"}),
    "breakers": frozenset({"describe", "names", "tripped"}),
    "replies": frozenset({"pending"}),
    "kennels": frozenset({"alive"}),
    "approvals": frozenset({"get", "pending", "recent"}),
    "budget": frozenset({"counters", "holds", "meters", "spend", "totals", "windows"}),
    "unit": frozenset({"check", "files_read", "pending", "pending_counts", "state", "states"}),
}


class StoreVerb:
    def __init__(self, backend: Backend):
        self.backend = backend
        self.allowed = {store: callable_methods(protocol) for store, protocol in protocols().items()}

    @staticmethod
    def log_fields(request: dict) -> dict | None:
        """What leashd's ``operator`` line adds for ``request``: its store and
        method; None (no line) for a read. A request it cannot tell is said."""
        store, method = request.get("store"), request.get("method")
        if isinstance(store, str) and method in READS.get(store, ()):
            return None
        return {"store": store, "method": method}

    def __call__(self, request: dict, *, source: str, send, home: str) -> None:
        store, method = request.get("store"), request.get("method")
        if not isinstance(store, str) or not isinstance(method, str) or store not in self.allowed:
            send({"error": f"no such store: {store!r}"})
            return
        if method not in self.allowed[store] and not (store == "transaction" and method == "$apply"):
            send({"error": f"{store} offers no {method!r} here"})
            return
        args, kwargs = decode(request.get("args") or []), decode(request.get("kwargs") or {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            send({"error": "args must be a list and kwargs an object"})
            return
        try:
            result = self._run(store, method, args, kwargs, source)
        except TypeError as exc:
            send({"error": f"{store}.{method}: {exc}"})
            return
        except Exception as exc:
            send({"error": str(exc), "raised": raised_as(exc)})
            return
        send({"result": encode_answer(store, method, result)})

    def _run(self, store: str, method: str, args: list, kwargs: dict, source: str):
        now = kwargs.pop("$now", None)
        if store == "unit":
            with self.backend.halts.reading(now=now) as unit:
                return _called(getattr(unit, method), args, kwargs, source)
        if store == "transaction":
            (steps,) = args
            with self.backend.transaction(now=now) as step:
                for name, step_args, step_kwargs in steps:
                    if name not in self.allowed["transaction"]:
                        raise ValueError(f"a transaction offers no {name!r}")
                    _called(getattr(step, name), step_args, step_kwargs, source)
            return step.results
        if store == "budget":  # reads only, and its ``by`` is a grouping, not who acts
            return getattr(self.backend.budget, method)(*args, **kwargs)
        return _called(getattr(getattr(self.backend, store), method), args, kwargs, source)


def raised_as(exc: Exception) -> str:
    """The class the client raises again: the exception's own, or the nearest
    one the client knows (the shared store's ``BudgetStoreOffline`` is a ``BudgetUnreadable``)."""
    known = errors()
    return next((cls.__name__ for cls in type(exc).__mro__ if known.get(cls.__name__) is cls),
                exc.__class__.__name__)


def _called(function, args: list, kwargs: dict, source: str):
    """``function(*args, **kwargs)`` with every actor keyword it takes set to the peer."""
    accepted = inspect.signature(function).parameters
    for name in ACTOR_PARAMETERS:
        if name in accepted:
            kwargs[name] = source
    return function(*args, **kwargs)
