"""The registry of halt conditions.

Each condition is a small function registered with ``@condition(name,
halt_type, severity)``; it receives the ``CheckContext`` and the threshold
object from ``halt_conditions_config`` and returns a ``Finding`` when it fires
(None otherwise). Its docstring states its rule. A finding may raise the
severity above the configured one (a destructive command is critical whatever
its condition's default), never lower it.
"""
from __future__ import annotations

from collections.abc import Callable

SEVERITY_RANK = {"low": 0, "medium": 1, "high": 2, "critical": 3}


class Finding:
    __slots__ = ("description", "severity", "annotations", "context")

    def __init__(self, description: str, *, severity: str | None = None,
                 annotations: dict[str, list[str]] | None = None, context: dict | None = None):
        self.description = description
        self.severity = severity
        self.annotations = annotations or {}
        self.context = context or {}


class Condition:
    __slots__ = ("name", "halt_type", "severity", "rule")

    def __init__(self, name: str, halt_type: str, severity: str, rule: Callable):
        self.name, self.halt_type, self.severity, self.rule = name, halt_type, severity, rule

    @property
    def doc(self) -> str:
        return " ".join((self.rule.__doc__ or "").split())


REGISTRY: dict[str, Condition] = {}


def condition(name: str, halt_type: str, severity: str):
    def register(rule: Callable) -> Callable:
        REGISTRY[name] = Condition(name, halt_type, severity, rule)
        return rule
    return register


def load_all() -> dict[str, Condition]:
    """Import every rule module once; returns the registry."""
    from leash.core.halts.conditions import (code_safety, environment, execution, scope, security,  # noqa: F401
                                       supervisor, uncertainty)

    return REGISTRY
