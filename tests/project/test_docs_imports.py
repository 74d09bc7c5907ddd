"""Every ``from leash… import …`` line in the README and docs/ imports: a page
never shows a reader a name that is not there."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
IMPORT = re.compile(r"^\s*from (leash(?:\.\w+)*) import ([\w, ]+?)\s*(?:#.*)?$", re.MULTILINE)


def imports_in(text: str) -> list[tuple[str, list[str]]]:
    return [(module, [name.strip() for name in names.split(",") if name.strip()])
            for module, names in IMPORT.findall(text)]


def test_the_reader_finds_import_lines():
    found = imports_in("text\n```python\nfrom leash.core import A, B   # two\n    from leash.x.y import z\n```\n")
    assert found == [("leash.core", ["A", "B"]), ("leash.x.y", ["z"])]


def test_every_import_line_in_the_docs_imports():
    missing = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for module_name, names in imports_in(page.read_text()):
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                missing.append(f"{page.relative_to(ROOT)}: {module_name}: {exc}")
                continue
            missing += [f"{page.relative_to(ROOT)}: {module_name} has no {name}"
                        for name in names if not hasattr(module, name)]
    assert missing == []
