"""One finding of ``leash doctor``: its level (``ok``, ``warn``, ``fail`` or
``fixed``), what it is about and a one-line message. Shared by the doctor and
the store checks it runs, so neither imports the other; nothing here fails.
"""
from __future__ import annotations

from typing import NamedTuple


class Finding(NamedTuple):
    level: str  # ok | warn | fail | fixed
    subject: str
    message: str
