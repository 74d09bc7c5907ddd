"""Rules with one definition in the core, read by every part that shows or
applies them: which halt severities block, "attempt n/N" of a warrant (N = the
length of ``[warrants] timeouts``), and how many hours a lock may last."""
from __future__ import annotations

import pytest

from leash.core.policy.halts.conditions.registry import BLOCKING_SEVERITIES, SEVERITY_RANK, blocks
from leash.core.state.warrants import WarrantQueue
from leash.core.state.warrants.records import attempt_label, configured_attempts
from leash.core.views.fleet import view

NOW = 1_790_000_000.0
FIVE_ATTEMPTS = "[warrants]\ntimeouts = [10, 20, 30, 40, 50]\n"


def configure(home, text: str) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_high_and_critical_block_medium_and_low_do_not():
    assert BLOCKING_SEVERITIES == ("high", "critical")
    assert [s for s in SEVERITY_RANK if blocks(s)] == list(BLOCKING_SEVERITIES)
    assert not blocks("no such severity")


def test_attempts_follow_the_configured_timeouts(home):
    configure(home, FIVE_ATTEMPTS)
    assert configured_attempts(str(home)) == 5
    assert attempt_label({"attempt": 2}, 5) == "2/5"
    assert attempt_label({"attempt": 2, "attempts": 4}, 5) == "2/4"  # the dog's own N wins


def test_the_fleet_view_shows_attempt_of_the_configured_count(home):
    configure(home, FIVE_ATTEMPTS)
    WarrantQueue(str(home)).file("worker", reason="stuck", now=NOW)
    rows = view(str(home), tmux_sessions=[], now=NOW)["warrants"]
    assert [row["attempt_label"] for row in rows] == ["0/5"]


def test_hours_are_judged_alike_by_the_cli_the_config_and_a_lock(home, cli):
    from leash.core.base.config import ConfigError, load_config
    from leash.core.base.hours import MAX_HOURS
    from leash.core.views.protocol import StopProtocol

    too_long = MAX_HOURS + 1
    said = cli("hands-off", "db", "--hours", str(too_long))
    assert said.code == 2 and "at most" in said.err
    with pytest.raises(ValueError, match="at most"):
        StopProtocol(str(home)).hands_off("db", hours=too_long)
    configure(home, f"[hands_off]\ndefault_hours = {too_long}\n")
    with pytest.raises(ConfigError, match="at most"):
        load_config(str(home))


def test_a_session_is_protected_by_its_names_and_its_agents_entities():
    from leash.core.base.identity import protecting_entities

    agents = [{"session_id": "agent-1", "entity": "billing"}, {"session_id": "agent-2"}, {"entity": "billing"}]
    assert protecting_entities(["worker", "agent-1"], agents) == ["worker", "agent-1", "billing", "agent-2"]
