"""Halt conditions' registry and the shapes they share: ``Condition``,
``Finding``, the ``@condition`` decorator and the severity order. Rule modules
import these from here, so loading a rule never goes back through the
package that loads it. Nothing here fails: registration only stores.
"""
from __future__ import annotations

from collections.abc import Callable

SEVERITY_RANK = {"low": 0, "medium": 1, "high": 2, "critical": 3}
# A pending halt of this severity or above stops the session's tool calls; below
# it (medium, low) the halt is recorded and shown but the agent carries on.
BLOCKING_FROM = "high"
BLOCKING_SEVERITIES = tuple(s for s, rank in SEVERITY_RANK.items() if rank >= SEVERITY_RANK[BLOCKING_FROM])


def blocks(severity: str) -> bool:
    """Whether a pending halt of ``severity`` stops the session's tool calls."""
    return SEVERITY_RANK.get(severity, -1) >= SEVERITY_RANK[BLOCKING_FROM]


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
