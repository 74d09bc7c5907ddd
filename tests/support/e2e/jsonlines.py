"""What both agent CLIs print headless: one JSON event per line."""
from __future__ import annotations

import json


def json_objects(text: str) -> list[dict]:
    """The JSON objects among ``text``'s lines (other lines — warnings, blank ones — are skipped)."""
    found = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found
