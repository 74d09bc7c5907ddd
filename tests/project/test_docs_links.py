"""Every relative link in the README and docs/ resolves to a file of the tree."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_resolves():
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_no_pointer_to_a_design_file_outside_the_repository():
    """The design notes leash grew from are not in the repository: code, tests
    and docs point at the docs page that says a thing instead."""
    pointing = []
    for folder in ("core", "console", "tests", "docs", "bench", "contrib"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".md") and "DESIGN" in path.read_text(errors="replace") \
                    and path != Path(__file__):
                pointing.append(str(path.relative_to(ROOT)))
    if "DESIGN" in (ROOT / "README.md").read_text():
        pointing.append("README.md")
    assert pointing == []
