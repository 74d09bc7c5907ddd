"""Misuse of the halt and lock commands is a usage error: exit 2 and one
line saying what to give instead. A context that is no JSON object, an empty
entity to release, a condition name leash does not know (the line lists
those it does), a halt ID prefix too short or shared by several halts (the
line says how many). Dismissing a critical halt without ``--caution`` is a
refusal (exit 1) that says to add it."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from leash.core.state.halts import api as halts

NOW = 1_800_000_000.0


def one_line(result, code: int) -> str:
    assert result.code == code, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("leash: error: "), result
    assert "Traceback" not in result.err
    return lines[0]


def record(home, severity: str = "high", session: str = "s1") -> str:
    return halts.record_halt({"session_token": session, "halt_type": "security", "severity": severity,
                              "description": f"a {severity} halt"}, home=home, now=NOW)["halt_id"]


def test_a_context_that_is_no_json_object_is_a_usage_error(cli):
    line = one_line(cli("halts", "record", "--session", "s1", "--type", "security", "--severity", "high",
                        "--description", "d", "--context", "[1]"), 2)
    assert "--context" in line and "JSON object" in line


def test_releasing_an_empty_entity_is_a_usage_error(cli):
    for entity in ("", "   "):
        line = one_line(cli("release", entity), 2)
        assert "release needs an ENTITY" in line


def test_an_unknown_condition_is_a_usage_error_listing_the_known_ones(cli):
    for argv in (("halts", "config", "nope"), ("halts", "config", "nope", "--enabled", "false")):
        line = one_line(cli(*argv), 2)
        assert "no condition 'nope'" in line
        assert "secrets_exposure" in line and "three_strikes" in line
    assert cli("halts", "config", "secrets_exposure").code == 0


def test_a_short_halt_id_prefix_is_a_usage_error(cli, home):
    halt_id = record(home)
    for given in (halt_id[:6], ""):
        line = one_line(cli("halts", "ack", given), 2)
        assert "shorter than 8 characters" in line
    assert cli("halts", "ack", halt_id[:8]).code == 0


def test_an_ambiguous_halt_id_prefix_names_how_many_match(cli, home):
    ids = [record(home, session=f"s{n}") for n in range(3)]
    shared = "abcdef12-3456-4"
    with sqlite3.connect(Path(home) / "halts.db") as db:  # two halts whose IDs share their first 15 characters
        for n, halt_id in enumerate(ids[:2]):
            db.execute("UPDATE halt_events SET id = ? WHERE id = ?", (f"{shared}{n}{halt_id[16:]}", halt_id))
    for prefix in (shared[:8], shared):
        line = one_line(cli("halts", "ack", prefix), 2)
        assert f"halt ID prefix '{prefix}' matches 2 halts" in line
    assert cli("halts", "ack", f"{shared}1").code == 0  # one more character names one
    missing = one_line(cli("halts", "ack", "0000000000"), 1)
    assert "no halt 0000000000" in missing


def test_dismissing_a_critical_halt_without_caution_says_add_caution(cli, home):
    critical = record(home, "critical")
    line = one_line(cli("halts", "dismiss", critical), 1)
    assert "add --caution" in line and "continue_with_caution" not in line
    assert cli("halts", "dismiss", critical, "--caution").code == 0
