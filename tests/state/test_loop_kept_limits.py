"""A breaker keeps the limits its supervisor passed: after boots recorded
with ``--window 600``, ``leash loop check-and-record`` without options
checks and prunes by 600 s, not by the default 60 s; an option given, or
config.toml's ``[loop.NAME]``, still decides."""
from __future__ import annotations

import json
import time

from leash.core.store.filestores import FileBreakers


def boots_of(home, name: str) -> list[float]:
    return json.loads((home / name / "restart_loop.json").read_text())["boots"]


def limits_of(home, name: str) -> dict:
    return json.loads((home / name / "restart_loop.limits.json").read_text())


def test_a_call_without_options_keeps_the_stored_window(cli, home):
    now = time.time()
    breakers = FileBreakers(str(home))
    for age in (400, 200):  # two boots a supervisor recorded with a 10-minute window
        assert breakers.check_and_record("gw", max_restarts=3, window_seconds=600, now=now - age) is False
    tripped = cli("loop", "check-and-record", "gw")
    assert tripped.code == 3, tripped  # the third boot in 600 s trips
    assert len(boots_of(home, "gw")) == 3  # none pruned by a 60 s window
    assert limits_of(home, "gw")["window_seconds"] == 600
    status = cli("loop", "status", "--json").json()
    assert status[0]["window_seconds"] == 600 and status[0]["tripped"] is True


def test_the_cli_window_is_kept_for_the_next_call(cli, home):
    assert cli("loop", "check-and-record", "gw", "--window", "600", "--max", "2").code == 0
    assert cli("loop", "check-and-record", "gw").code == 3  # --max 2 and the 600 s window kept
    assert limits_of(home, "gw") == {"window_seconds": 600, "max_gap_seconds": 0, "max_restarts": 2}


def test_an_option_or_the_config_still_decides(cli, home):
    now = time.time()
    breakers = FileBreakers(str(home))
    for age in (400, 200):
        breakers.check_and_record("gw", max_restarts=3, window_seconds=600, now=now - age)
    assert cli("loop", "check-and-record", "gw", "--window", "60").code == 0  # given: the old boots go
    assert len(boots_of(home, "gw")) == 1
    (home / "config.toml").write_text("[loop.gw]\nmax_restarts = 1\n")
    assert cli("loop", "check-and-record", "gw").code == 3  # config.toml's threshold over the stored 3
    assert limits_of(home, "gw")["window_seconds"] == 60
