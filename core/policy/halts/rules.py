"""The halt lifecycle's rules: which findings of a halting check are recorded
as halts, and which resolutions need care.

A session's state from its halts (``paused`` while one is escalated or timed
out, ``halted`` while a pending halt of a blocking severity is unanswered,
``active`` otherwise) is one query both backends run
(``core.state.halts.store.state_sql``). Nothing here fails.
"""
from __future__ import annotations


def dismissal_needs_caution(severity: str) -> bool:
    """The seed: dismissing a critical halt requires ``continue_with_caution``."""
    return severity == "critical"


# Medium findings are recorded as halts only when at least this many fire together.
MEDIUMS_RECORDED_FROM = 2


def to_auto_record(fired, *, record_high: bool | None) -> list:
    """The findings of a halting check recorded as halts: every critical one,
    high ones when ``record_high``, medium ones when two or more fired."""
    mediums = sum(1 for f in fired if f.severity == "medium")
    return [f for f in fired if f.severity == "critical" or (f.severity == "high" and record_high)
            or (f.severity == "medium" and mediums >= MEDIUMS_RECORDED_FROM)]
