"""The checkout's own source read as syntax trees, each file parsed once per
test process (the layering and import-cycle tests walk the same files; they
only read the trees)."""
from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))
