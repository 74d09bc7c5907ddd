"""How long a hands-off lock may last: one rule for the command line's
``--hours``, ``[hands_off] default_hours`` in config.toml and a lock filed
through the API.

Failure: ``hours_problem`` names what is wrong (not a number, not finite, not
positive, over ``MAX_HOURS``); ``parse_hours`` raises ``ValueError`` with that
one line.
"""
from __future__ import annotations

import math

MAX_HOURS = 24 * 3653  # ten years: longer is a typo, and past it the expiry leaves the calendar
HOURS_RULE = f"a positive number of hours, at most {MAX_HOURS} (ten years)"


def hours_problem(value: object) -> str | None:
    """What makes ``value`` unusable as a lock's length, or None."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        return f"must be a positive number, got {value!r}"
    if value > MAX_HOURS:
        return f"must be at most {MAX_HOURS} (ten years), got {value!r}"
    return None


def parse_hours(text: str) -> float:
    """``text`` as hours; ValueError (one line) when it breaks the rule."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a positive number, got {text!r}") from None
    problem = hours_problem(value)
    if problem:
        raise ValueError(problem.replace(repr(value), repr(text)))
    return value
