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
    """``pure``: the rule reads only the call itself (its commands as the shell
    reader read them, its edits, the context's declared fields) and its
    threshold — no file, clock or environment — so its finding for the same
    call may be reused (``core.halts.engine``). ``write_or_exec``: the rule can
    fire only on a call that writes, edits or runs something (its evidence is
    the commands, the edits or the files to change), so a read-only tool's
    call need not run it (``conditions.conditions_for``)."""

    __slots__ = ("name", "halt_type", "severity", "rule", "pure", "write_or_exec")

    def __init__(self, name: str, halt_type: str, severity: str, rule: Callable, pure: bool = False,
                 write_or_exec: bool = False):
        self.name, self.halt_type, self.severity, self.rule, self.pure = name, halt_type, severity, rule, pure
        self.write_or_exec = write_or_exec

    @property
    def doc(self) -> str:
        return " ".join((self.rule.__doc__ or "").split())


REGISTRY: dict[str, Condition] = {}


def condition(name: str, halt_type: str, severity: str, *, pure: bool = False, write_or_exec: bool = False):
    def register(rule: Callable) -> Callable:
        REGISTRY[name] = Condition(name, halt_type, severity, rule, pure, write_or_exec)
        return rule
    return register
