"""The tests ``make test`` leaves to ``make e2e`` (``@pytest.mark.heavy(reason)``,
tests/conftest.py): left out of a run without ``--heavy``, the only ones run
with it, and never marked without a reason."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from ..conftest import pytest_collection_modifyitems


class Item:
    def __init__(self, nodeid: str, *reason: str, marked: bool = True):
        self.nodeid = nodeid
        self.mark = pytest.mark.heavy(*reason).mark if marked else None

    def get_closest_marker(self, name: str):
        return self.mark if name == "heavy" else None


def run(items: list[Item], *, heavy: bool) -> tuple[list[str], list[str]]:
    deselected: list[str] = []
    config = SimpleNamespace(getoption=lambda name: heavy if name == "--heavy" else None,
                             hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(
                                 item.nodeid for item in items)))
    pytest_collection_modifyitems(config, items)
    return [item.nodeid for item in items], deselected


def suite() -> list[Item]:
    return [Item("light", marked=False), Item("browser", "a real Chromium"), Item("unit", marked=False)]


def test_without_heavy_the_marked_tests_are_left_out():
    assert run(suite(), heavy=False) == (["light", "unit"], ["browser"])


def test_with_heavy_only_the_marked_tests_run():
    assert run(suite(), heavy=True) == (["browser"], ["light", "unit"])


@pytest.mark.parametrize("reason", [(), ("",), ("   ",)], ids=["none", "empty", "blank"])
def test_a_heavy_mark_without_its_reason_stops_the_run(reason):
    with pytest.raises(pytest.UsageError, match="says why"):
        run([Item("light", marked=False), Item("why-not", *reason)], heavy=False)
