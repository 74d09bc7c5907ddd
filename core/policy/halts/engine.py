"""Evaluate every enabled halt condition against a check context.

``evaluate`` runs the registered rules with their configured thresholds and
returns what fired, each with its effective severity (the configured one,
raised — never lowered — by the finding). A rule that raises is itself a
finding: the seed's "if check logic fails, return should_halt=true with
description 'Halt check failed: [error]'", at critical severity.
"""
from __future__ import annotations

from leash.core.policy.halts.conditions import SEVERITY_RANK, Finding, conditions_for

HALTING_FROM = "medium"  # low: "can proceed with caution"; medium and up halt


class Fired:
    __slots__ = ("name", "halt_type", "severity", "finding")

    def __init__(self, name: str, halt_type: str, severity: str, finding: Finding):
        self.name, self.halt_type, self.severity, self.finding = name, halt_type, severity, finding


# Findings of the pure rules (``Condition.pure``) kept for calls judged again: by
# the call's own inputs and the very config object the thresholds came from.
FINDINGS_KEPT = 512
KEPT_INPUT_CHARS = 64 * 1024  # larger calls are judged afresh: memory stays bounded
_findings: dict = {}
_MISSING = object()


def call_key(ctx) -> tuple | None:
    """Everything a pure rule reads of one call, or None when that cannot be
    pinned down (a command read afresh, e.g. a glob matched against the files)."""
    call = ctx.tool_call()
    if call.reading is not None and not call.reading_kept:
        return None
    edits = tuple((e["file"], e["old"], e["new"]) for e in ctx.edits)
    if sum(map(len, ctx.commands)) + sum(len(e[1]) + len(e[2]) for e in edits) > KEPT_INPUT_CHARS:
        return None
    proposed = ctx.proposed_changes
    return (call.reading, tuple(ctx.commands), edits, ctx.cwd, ctx.environment, tuple(ctx.target_files),
            ctx.production_approved,
            (tuple(proposed["files_to_modify"]), proposed.get("has_tests"), proposed.get("has_rollback_plan"))
            if proposed is not None else None)


def _pure_finding(condition, ctx, key: tuple, config: dict, threshold: dict):
    kept = _findings.get((condition.name, key), _MISSING)
    if kept is not _MISSING and kept[0] is config:  # (the thresholds it was found with)
        return kept[1]
    finding = condition.rule(ctx, threshold)
    if len(_findings) >= FINDINGS_KEPT:
        _findings.clear()
    _findings[(condition.name, key)] = (config, finding)
    return finding


def evaluate(ctx, config: dict[str, dict]) -> list[Fired]:
    """Rules in registry order (those that can fire on this call:
    ``conditions_for``); ``config`` maps condition name -> its row
    (``enabled``, ``severity``, ``threshold``, ``halt_type``). A pure rule's
    finding for the same call under the same config is reused."""
    fired: list[Fired] = []
    key = call_key(ctx)
    for name, condition in conditions_for(ctx).items():
        row = config.get(name, {})
        if not row.get("enabled", True):
            continue
        severity = row.get("severity") or condition.severity
        try:
            threshold = row.get("threshold") or {}
            finding = _pure_finding(condition, ctx, key, config, threshold) if condition.pure and key is not None \
                else condition.rule(ctx, threshold)
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
