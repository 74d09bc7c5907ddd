"""The stores a backend builds on first use, declared once for every backend.

The halt, warrant, breaker, reply, kennel, approval and budget stores import
what the hook path never needs (the halt engine's rules, the dog's speech,
sqlite3), so a backend builds each the first time it is asked for and keeps it. A backend
says how to build one (``_make(name)``); ``LazyStores`` gives the typed
properties the ``Backend`` protocol reads. A store set before first use (in
``__dict__``: leashd's halt store, kept open) is the one given.
"""
from __future__ import annotations

TYPE_CHECKING = False  # the protocols are for the type checker only: the hook path imports the backends
if TYPE_CHECKING:
    from typing import Any

    from leash.core.store.protocols_budget import ApprovalStore, BudgetStore
    from leash.core.store.protocols_halts import HaltStore
    from leash.core.store.protocols_work import BreakerStore, KennelRegistry, ReplyLedger, WarrantStore


class LazyStores:
    def _make(self, name: str) -> Any:
        """The store ``name``, built now (each backend says how)."""
        raise NotImplementedError

    def _built(self, name: str) -> Any:
        if name not in self.__dict__:
            self.__dict__[name] = self._make(name)
        return self.__dict__[name]

    @property
    def halts(self) -> HaltStore:
        return self._built("halts")

    @property
    def warrants(self) -> WarrantStore:
        return self._built("warrants")

    @property
    def breakers(self) -> BreakerStore:
        return self._built("breakers")

    @property
    def replies(self) -> ReplyLedger:
        return self._built("replies")

    @property
    def kennels(self) -> KennelRegistry:
        return self._built("kennels")

    @property
    def approvals(self) -> ApprovalStore:
        return self._built("approvals")

    @property
    def budget(self) -> BudgetStore:
        return self._built("budget")
