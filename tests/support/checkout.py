"""The checkout under test and how to run its ``leash`` as a process."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def leash_argv() -> list[str]:
    """The command line of ``leash`` run from this checkout (``cwd=ROOT``)."""
    return [sys.executable, "-m", "leash.console.cli"]
