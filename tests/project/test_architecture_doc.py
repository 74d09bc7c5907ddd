"""docs/architecture.md shows the layers the layering test holds, names only
files that exist, answers "where does X go" for each kind of addition, and
the README links to it."""
from __future__ import annotations

import re

from ..support.checkout import ROOT
from ..support.layers import CONSOLE_SHARED, FRONT_ENDS, LAYER_TIERS

DOC = ROOT / "docs" / "architecture.md"
ADDITIONS = ("halt condition", "hook event", "store", "panel", "CLI verb", "notification route", "agent CLI")


def section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def table_rows(text: str) -> list[list[str]]:
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|")]
    return [row for row in rows[2:]]  # past the header and its rule


def test_the_layers_table_is_the_layering_tests_own():
    rows = table_rows(section("Layers"))
    shown = tuple(tuple(re.findall(r"`([a-z]+)`", row[1])) for row in rows)
    assert [int(row[0]) for row in rows] == list(range(len(LAYER_TIERS)))
    assert shown == LAYER_TIERS


def test_the_console_tiers_are_named():
    text = section("Layers")
    for front_end in FRONT_ENDS:
        assert f"`{front_end}`" in text
    for module in CONSOLE_SHARED - {"leash.console"}:
        assert f"`{module.replace('leash.', '').replace('.', '/')}.py`" in text


def test_where_does_each_addition_go_is_answered():
    rows = {row[0]: row[1] for row in table_rows(section("Where does X go"))}
    assert sorted(rows) == sorted(ADDITIONS)
    assert all("`" in answer for answer in rows.values())  # each answer names where


def test_every_path_it_names_exists():
    named = set(re.findall(r"`((?:core|console|tests|docs)/[A-Za-z0-9_./-]*)`", DOC.read_text()))
    assert len(named) > 30
    missing = sorted(path for path in named if not (ROOT / path.rstrip("/")).exists())
    assert missing == []


def test_the_readme_links_to_it():
    assert "](docs/architecture.md)" in (ROOT / "README.md").read_text()


def test_each_core_layer_names_its_own_tier():
    from ..support.layers import TIER_OF

    for layer, tier in TIER_OF.items():
        docstring = (ROOT / "core" / layer / "__init__.py").read_text().split('"""')[1]
        said = re.findall(r"tier (\d+) of the layers", docstring)
        assert said == [str(tier)], (layer, said)
