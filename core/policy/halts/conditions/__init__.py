"""The registry of halt conditions.

Each condition is a small function registered with ``@condition(name,
halt_type, severity)``; it receives the ``CheckContext`` and the threshold
object from ``halt_conditions_config`` and returns a ``Finding`` when it fires
(None otherwise). Its docstring states its rule. ``budget`` is the one whose
evidence is outside the call (the budget store): the gate records it. A finding may raise the
severity above the configured one (a destructive command is critical whatever
its condition's default), never lower it.
"""
from __future__ import annotations

from leash.core.policy.halts.conditions.registry import REGISTRY, SEVERITY_RANK, Condition, Finding, condition

__all__ = ["REGISTRY", "SEVERITY_RANK", "Condition", "Finding", "condition", "load_all"]


_loaded = False


def load_all() -> dict[str, Condition]:
    """Import every rule module once; returns the registry."""
    global _loaded
    if _loaded:  # (every check asks: seven import statements each time cost more than some rules)
        return REGISTRY
    from leash.core.policy.halts.conditions import (  # noqa: F401
        budget,
        code_safety,
        environment,
        execution,
        scope,
        security,
        supervisor,
        uncertainty,
    )

    _loaded = True
    return REGISTRY
