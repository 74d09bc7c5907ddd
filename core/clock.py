"""Time as leash stores and compares it.

Every rule that depends on time takes a keyword-only ``now=`` (unix seconds) so
tests inject the clock instead of sleeping; this module turns those seconds into
the ISO-8601 UTC strings the state files carry, and back.

Parsing is strict about shape but forgiving about zone: a timestamp without a
zone is taken as UTC. A string that is not a timestamp raises ``ValueError``.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone


def now_seconds(now: float | None = None) -> float:
    """The injected time when given, else the wall clock."""
    return time.time() if now is None else float(now)


def iso(seconds: float) -> str:
    """``2026-11-21T19:31:00.123456Z`` for a unix time."""
    stamp = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> float:
    """Unix seconds for an ISO-8601 timestamp; zone-less means UTC."""
    if not isinstance(text, str):
        raise ValueError(f"not a timestamp: {text!r}")
    stamp = datetime.fromisoformat(text.strip())
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.timestamp()


def compact_stamp(seconds: float) -> str:
    """A filename-safe stamp (``20261121T193100.123456Z``) for quarantined files."""
    stamp = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return stamp.strftime("%Y%m%dT%H%M%S.%fZ")
