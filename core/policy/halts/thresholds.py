"""The threshold keys each halt condition reads, with their types and ranges.

A condition's threshold is a JSON object stored in ``halt_conditions_config``.
A value of the wrong type or out of range does not make a condition stricter,
it breaks it: ``{"max_attempts": "five"}`` makes the rule raise, which the
engine (failing safe) turns into a critical halt on every tool call, and
``-1`` makes it fire on every call. So:

* ``validate(name, threshold)`` is what ``leash halts config`` (and
  ``update_halt_config``) runs before anything is stored: an unknown key, a
  wrong type or an out-of-range value raises ``HaltInputError`` naming it;
* ``effective(name, stored)`` is what the engine reads: a stored threshold
  with every unknown or invalid key dropped (the rule then uses its default)
  and the problems listed, so one bad row in halts.db never halts every call;
  ``leash doctor`` reports those problems.

``SPECS`` is keyed by condition name; a condition that is not in it takes no
threshold keys. ``ESCALATE_AFTER_MAX_MINUTES`` bounds ``escalate_after_minutes``
(a time past the calendar's end would break every later check).
"""
from __future__ import annotations

import json
import math

from leash.core.policy.halts.context import HaltInputError

ESCALATE_AFTER_MAX_MINUTES = 525_600  # one year
LIST_MAX_ITEMS = 1000
TEXT_MAX_CHARS = 256


class Spec:
    """One threshold key: its kind (``bool``, ``int``, ``number``, ``names``),
    default, inclusive range (numbers) or item count (lists), and meaning."""

    __slots__ = ("kind", "default", "low", "high", "meaning")

    def __init__(self, kind: str, default: object, meaning: str, low: float = 0, high: float = 0):
        self.kind, self.default, self.meaning, self.low, self.high = kind, default, meaning, low, high

    def problem(self, value: object) -> str:
        """Why ``value`` is not acceptable ("" when it is)."""
        if self.kind == "bool":
            return "" if isinstance(value, bool) else "must be true or false"
        if self.kind == "names":
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                return "must be a list of non-empty strings"
            if not self.low <= len(value) <= self.high:
                return f"must have {self.low:g} to {self.high:g} items"
            if any(len(v) > TEXT_MAX_CHARS for v in value):
                return f"items must be at most {TEXT_MAX_CHARS} characters"
            return ""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be {'a whole number' if self.kind == 'int' else 'a number'}"
        if self.kind == "int" and not isinstance(value, int):
            return "must be a whole number"
        if not math.isfinite(value) or not self.low <= value <= self.high:
            return f"must be between {self.low:g} and {self.high:g}"
        return ""

    def describe(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "names":
            return f"list of {self.low:g} to {self.high:g} names"
        return f"{'whole number' if self.kind == 'int' else 'number'} {self.low:g} to {self.high:g}"


SPECS: dict[str, dict[str, Spec]] = {
    "modifying_unread_code": {"requires_read": Spec("bool", True, "false: edits of unread files pass")},
    "breaking_changes": {"requires_tests_pass": Spec("bool", True, "false: removals pass even without tests")},
    "three_strikes": {"max_attempts": Spec("int", 3, "failures of one task that halt", 1, 100)},
    "repeated_errors": {"similarity_threshold": Spec("number", 0.8, "similarity that makes two errors the same",
                                                     0.1, 1.0)},
    "cascading_failures": {"max_chain_length": Spec("int", 3, "failures in a chain that halt", 2, 100)},
    "ambiguous_requirements": {"min_markers": Spec("int", 2, "hedges that make instructions ambiguous", 1, 100)},
    "unknown_commands": {"allow": Spec("names", [], "programs added to the known list", 0, LIST_MAX_ITEMS)},
    "uncertainty_scale": {"threshold": Spec("number", 7, "uncertainty score that halts", 1, 10)},
    "supervisor_tampering": {"supervisor_names": Spec("names", ["leash", "leashd", "kennel", "leash.console.cli"],
                                                      "process names of the supervisor", 1, LIST_MAX_ITEMS)},
}


def _problems(name: str, threshold: object) -> list[tuple[str, str]]:
    """(key, why) for each key of ``threshold`` that ``name`` cannot use."""
    if not isinstance(threshold, dict):
        return [("", "a threshold must be a JSON object")]
    specs = SPECS.get(name, {})
    found = []
    for key, value in threshold.items():
        spec = specs.get(key)
        if spec is None:
            known = ", ".join(sorted(specs)) or "none"
            found.append((key, f"is not a threshold of {name} (its keys: {known})"))
        else:
            why = spec.problem(value)
            if why:
                found.append((key, f"{why}, got {json.dumps(value)[:60]}"))
    return found


def validate(name: str, threshold: object) -> dict:
    """``threshold`` when ``name`` may store it; ``HaltInputError`` (one line) otherwise."""
    found = _problems(name, threshold)
    if found or not isinstance(threshold, dict):  # (a threshold that is not an object is a problem found)
        key, why = found[0]
        raise HaltInputError(f"threshold {name}.{key} {why}" if key else f"threshold of {name}: {why}")
    return threshold


def validate_escalate_after(value: object) -> object:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not 0 <= value <= ESCALATE_AFTER_MAX_MINUTES):
        raise HaltInputError(f"escalate_after_minutes must be whole minutes from 0 to {ESCALATE_AFTER_MAX_MINUTES} "
                             f"(one year) or none, got {value!r}")
    return value


def effective(name: str, stored: object) -> tuple[dict, list[str]]:
    """(the threshold the rule may read, what was wrong with the stored one).
    An invalid value is replaced by its default, an unknown key left out."""
    specs = SPECS.get(name, {})
    found = _problems(name, stored)
    if not isinstance(stored, dict):
        return {k: _copy(spec.default) for k, spec in specs.items()}, [f"{name} threshold: {found[0][1]}"]
    usable = dict(stored)
    for key, _ in found:
        usable.pop(key)
        if key in specs:
            usable[key] = _copy(specs[key].default)
    return usable, [f"{name}.{key} {why}" for key, why in found]


def _copy(value: object) -> object:
    return list(value) if isinstance(value, list) else value


def effective_escalate_after(stored: object) -> object:
    """A stored ``escalate_after_minutes`` that is not valid reads as none."""
    try:
        return validate_escalate_after(stored)
    except HaltInputError:
        return None
