"""Time as leash stores and compares it.

Every rule that depends on time takes a keyword-only ``now=`` (unix seconds) so
tests inject the clock instead of sleeping; this module turns those seconds into
the ISO-8601 UTC strings the state files carry, and back.

Parsing is strict about shape but forgiving about zone: a timestamp without a
zone is taken as UTC. A string that is not a timestamp raises ``ValueError``.
"""
from __future__ import annotations

import math
import time

# datetime costs the hook ~2.5 ms to import; the common shapes are done by hand.
_EPOCH_DAYS = 719468  # days from 0000-03-01 to 1970-01-01 in the proleptic calendar


def now_seconds(now: float | None = None) -> float:
    """The injected time when given, else the wall clock."""
    return time.time() if now is None else float(now)


def _split(seconds: float) -> tuple[time.struct_time, int]:
    """(UTC fields, microseconds), rounded as ``datetime.fromtimestamp`` rounds."""
    frac, whole = math.modf(seconds)
    micro = round(frac * 1e6)
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    elif micro < 0:
        whole, micro = whole - 1, micro + 1_000_000
    return time.gmtime(whole), micro


def iso(seconds: float) -> str:
    """``2026-11-21T19:31:00.123456Z`` for a unix time."""
    fields, micro = _split(seconds)
    return time.strftime("%Y-%m-%dT%H:%M:%S", fields) + f".{micro:06d}Z"


_PARSED: dict[str, float] = {}  # leashd reads the same few stamps on every call (a session's last_seen)
_PARSED_KEPT = 4096


def parse_iso(text: object) -> float:
    """Unix seconds for an ISO-8601 timestamp; zone-less means UTC."""
    if not isinstance(text, str):
        raise ValueError(f"not a timestamp: {text!r}")
    known = _PARSED.get(text)
    if known is not None:
        return known
    seconds = _parse_iso(text)
    if len(_PARSED) >= _PARSED_KEPT:
        _PARSED.clear()
    _PARSED[text] = seconds
    return seconds


def _parse_iso(text: str) -> float:
    text = text.strip()
    if not (text[:4].isascii() and text[:4].isdigit()):
        raise ValueError(f"not a timestamp: {text!r}")
    quick = _parse_utc(text)
    if quick is not None:
        return quick
    from datetime import datetime, timezone

    stamp = datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.timestamp()


def _parse_utc(text: str) -> float | None:
    """``YYYY-MM-DDTHH:MM:SS[.ffffff][Z]`` (what leash writes); None for any other shape."""
    body = text[:-1] if text.endswith("Z") else text
    if len(body) not in (19, 26) or body[4] != "-" or body[7] != "-" or body[10] != "T" \
            or body[13] != ":" or body[16] != ":" or (len(body) == 26 and body[19] != "."):
        return None
    parts = (body[0:4], body[5:7], body[8:10], body[11:13], body[14:16], body[17:19], body[20:26] or "0")
    if not all(part.isascii() and part.isdigit() for part in parts):
        return None
    year, month, day, hour, minute, second, micro = (int(part) for part in parts)
    if not (1 <= month <= 12 and 1 <= day <= _days_in(year, month) and hour < 24 and minute < 60 and second < 60):
        raise ValueError(f"not a timestamp: {text!r}")
    return _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second + micro / 1e6


def _days_in(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 (H. Hinnant's algorithm, proleptic Gregorian)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - _EPOCH_DAYS


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
    fields, micro = _split(seconds)
    return time.strftime("%Y%m%dT%H%M%S", fields) + f".{micro:06d}Z"
