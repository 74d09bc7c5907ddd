"""Evaluate every enabled halt condition against a check context.

``evaluate`` runs the registered rules with their configured thresholds and
returns what fired, each with its effective severity (the configured one,
raised — never lowered — by the finding). A rule that raises is itself a
finding: the seed's "if check logic fails, return should_halt=true with
description 'Halt check failed: [error]'", at critical severity.
"""
from __future__ import annotations

from leash.core.halts.conditions import SEVERITY_RANK, Finding, load_all

HALTING_FROM = "medium"  # low: "can proceed with caution"; medium and up halt


class Fired:
    __slots__ = ("name", "halt_type", "severity", "finding")

    def __init__(self, name: str, halt_type: str, severity: str, finding: Finding):
        self.name, self.halt_type, self.severity, self.finding = name, halt_type, severity, finding


def evaluate(ctx, config: dict[str, dict]) -> list[Fired]:
    """Rules in registry order; ``config`` maps condition name -> its row
    (``enabled``, ``severity``, ``threshold``, ``halt_type``)."""
    fired: list[Fired] = []
    for name, condition in load_all().items():
        row = config.get(name, {})
        if not row.get("enabled", True):
            continue
        severity = row.get("severity") or condition.severity
        try:
            finding = condition.rule(ctx, row.get("threshold") or {})
        except Exception as exc:  # fail safe: a broken rule halts rather than waves through
            fired.append(Fired(name, condition.halt_type, "critical",
                               Finding(f"Halt check failed: {name}: {exc.__class__.__name__}: {exc}")))
            continue
        if finding is None:
            continue
        if finding.severity and SEVERITY_RANK[finding.severity] > SEVERITY_RANK[severity]:
            severity = finding.severity
        fired.append(Fired(name, row.get("halt_type") or condition.halt_type, severity, finding))
    return fired


def highest(fired: list[Fired]) -> str:
    return max((f.severity for f in fired), key=SEVERITY_RANK.__getitem__, default="low")


def halts(severity: str) -> bool:
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[HALTING_FROM]


def recommended_action(fired: list[Fired], attempt_number: int | None) -> str:
    top = highest(fired)
    if any(f.name == "three_strikes" for f in fired):
        return "HALT and escalate to user. Recommend fresh session."
    if top == "critical":
        return "HALT immediately and escalate to the operator; do not proceed until the halt is acknowledged."
    if top == "high":
        return "HALT and ask the operator for explicit approval before proceeding."
    if top == "medium":
        return "Halt and confirm with the operator; proceed only if they override."
    if fired:
        return "Proceed with caution."
    if attempt_number == 1:
        return "retry"
    if attempt_number == 2:
        return "try_alternative"
    return "proceed"
