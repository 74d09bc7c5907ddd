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


def human_duration(seconds: float | None) -> str:
    """Seconds under a minute, minutes under an hour, then hours and minutes,
    then days and hours: "42s", "5m", "3h07m", "2d04h"."""
    if seconds is None:
        return "-"
    seconds = int(abs(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def compact_stamp(seconds: float) -> str:
    """A filename-safe stamp (``20261121T193100.123456Z``) for quarantined files."""
    stamp = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return stamp.strftime("%Y%m%dT%H%M%S.%fZ")
