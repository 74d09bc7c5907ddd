"""Uncertainty: the seed's 0-10 scale."""
from __future__ import annotations

from leash.core.policy.halts.conditions.registry import Finding, condition

CRITICAL_FROM = 9  # the seed's scale: 9-10 HALT immediately, 7-8 HALT and ask


@condition("uncertainty_scale", "uncertainty", "high")
def uncertainty_scale(ctx, threshold):
    """Fires when ``uncertainty_score`` is at or above ``threshold`` (7); a
    score of 9 or 10 is critical (the seed's "HALT immediately")."""
    score = ctx.uncertainty_score
    limit = threshold.get("threshold", 7)
    if score is None or score < limit:
        return None
    level = "critical" if score >= CRITICAL_FROM else None
    return Finding(f"Uncertainty {score:g}/10 is at or above the threshold of {limit:g}", severity=level)
