"""The halt decision has one home, ``core.policy.halts.decision``: both
backends (a home's halts.db and a real PostgreSQL) hand it their rows
(``HaltStorage``) and give the same answers, a rule's config changed
included. Where the deciding code may live: tests/project/test_halt_decision_home.py."""
from __future__ import annotations

import inspect
import json
import re

import pytest

from leash.core.policy.halts import decision, storage
from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.state.halts import HaltRefused
from leash.core.state.halts.rows import FileHaltRows
from leash.core.store.pghalts_unit import PgHaltRows

from ..support.backends import make_backend

NOW = 1_900_000_000.0
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def both(postgres_cluster, home, tmp_path):
    """The file backend and the PostgreSQL one, each with a home of its own."""
    file_backend = make_backend("file", home)
    pg_backend = make_backend("postgres", tmp_path / "pg-home", url=postgres_cluster.url(
        postgres_cluster.fresh_schema()))
    yield {"file": file_backend, "postgres": pg_backend}
    pg_backend.close()


def _unread_edit(session: str) -> dict:
    """The seed's first example: a change to a file the session has not read (critical)."""
    return {"session_token": session, "current_context": {"target_files": ["src/auth.js"], "files_read": []},
            "proposed_changes": {"files_to_modify": ["src/auth.js"]}}


def _scenario(halts) -> list:
    """A check, records, a rule's config changed, acknowledgements allowed and
    refused, a listing: every answer (and refusal) in order."""
    answers: list = []

    def refused(call) -> None:
        try:
            answers.append(call())
        except HaltRefused as exc:
            answers.append(f"refused: {exc}")

    for second in range(3):
        halts.record_attempt("s1", "deploy", error=f"exit {second + 1}", now=NOW + second)
    answers.append(halts.check({"session_token": "s1", "task_id": "deploy",
                                "current_context": {"operation": "deploy"}}, now=NOW + 10).as_json())
    answers.append(halts.check(_unread_edit("s2"), now=NOW + 20).as_json())
    answers.append(halts.configure({"condition_name": "modifying_unread_code", "auto_escalate": True},
                                   now=NOW + 30).as_json())
    answers.append(halts.check(_unread_edit("s3"), now=NOW + 40).as_json())
    answers.append(halts.record({"session_token": "s4", "halt_type": "security", "severity": "critical",
                                 "description": "token ghp_R4nd0mV4lu3Xq9Lm2Pz8Kt6Wb3Yc1Nd5Fh7J in a log",
                                 "task_id": "t1"}, now=NOW + 50).as_json())
    critical = answers[-1]["halt_id"]
    refused(lambda: halts.acknowledge(critical, "s9", "resolved", source="ops", now=NOW + 60))
    refused(lambda: halts.acknowledge(critical, "s4", "dismissed", source="ops", now=NOW + 61))
    refused(lambda: halts.acknowledge(critical, "s4", "escalated", notes="to the lead", source="ops",
                                      now=NOW + 62).as_json())
    refused(lambda: halts.acknowledge(critical, "s4", "escalated", source="ops", now=NOW + 63))
    refused(lambda: halts.acknowledge(critical, "s4", "dismissed", caution=True, source="ops",
                                      now=NOW + 64).as_json())
    refused(lambda: halts.acknowledge(critical, "s4", "resolved", source="ops", now=NOW + 65))
    answers.append([halts.state(session, now=NOW + 70) for session in ("s1", "s2", "s3", "s4")])
    answers.append(halts.listing(HaltQuery.of({"include_acknowledged": True, "severity": "critical"}),
                                 now=NOW + 70).as_json())
    return json.loads(_numbered(json.dumps(answers)))


def _numbered(text: str) -> str:
    """Halt ids (random) as their order of appearance."""
    seen: dict[str, str] = {}
    return UUID.sub(lambda m: seen.setdefault(m.group(0), f"<halt {len(seen) + 1}>"), text)


def test_a_check_a_record_and_acknowledgements_answer_alike_on_both_backends(both):
    file_answers, pg_answers = _scenario(both["file"].halts), _scenario(both["postgres"].halts)
    assert pg_answers == file_answers
    strikes, unread, config, escalated, recorded = file_answers[:5]
    assert strikes["halt_reasons"][0]["condition_name"] == "three_strikes"
    assert all(reason["auto_recorded"] for reason in strikes["halt_reasons"] + unread["halt_reasons"])
    assert config["updated"] is True and escalated["halt_reasons"][0]["halt_id"] == "<halt 5>"
    assert recorded == {"halt_id": "<halt 6>", "recorded_at": "2030-03-17T17:47:30.000000Z",
                        "requires_acknowledgment": True, "escalation_triggered": False}
    assert "ghp_R4nd0m" not in json.dumps(file_answers)  # the description masked before it is stored
    assert file_answers[5:11] == [
        "refused: halt <halt 6> does not belong to session s9",
        "refused: halt <halt 6> is critical: dismissing it needs continue_with_caution",
        {"confirmed": True, "halt_id": "<halt 6>", "acknowledged_at": "2030-03-17T17:47:42.000000Z",
         "session_can_resume": False, "warnings": ["Session s4 is still paused: 0 unacknowledged halts remain."]},
        "refused: halt <halt 6> is already escalated; resolve or dismiss it",
        {"confirmed": True, "halt_id": "<halt 6>", "acknowledged_at": "2030-03-17T17:47:44.000000Z",
         "session_can_resume": True, "warnings": ["Dismissed a critical halt (security): proceed with caution."]},
        "refused: halt <halt 6> was already dismissed at 2030-03-17T17:47:44.000000Z"]
    assert file_answers[11] == ["halted", "halted", "paused", "active"]  # the changed rule escalated s3's halt
    assert [(h["halt_id"], h.get("resolution")) for h in file_answers[12]["halts"]] == [
        ("<halt 4>", None), ("<halt 5>", "escalated"), ("<halt 6>", "dismissed")]


def test_each_backend_check_is_the_decision_over_its_rows(both):
    """The store's check answers what ``decision.check`` answers over that
    store's rows, on the same evidence (a rule's config changed first)."""
    data = {"session_token": "s5", "task_id": "build", "current_context": {"operation": "build"}}
    for name, backend in both.items():
        halts = backend.halts
        halts.configure({"condition_name": "three_strikes", "severity": "critical"}, now=NOW)
        for second in range(3):
            halts.record_attempt("s5", "build", error="exit 2", now=NOW + second)
        through_store = halts.check(data, record=False, now=NOW + 5).as_json()
        if name == "file":
            rows = FileHaltRows(str(backend.home), now=NOW + 5)
            try:
                direct = decision.check(rows, decision.check_input(data), record=False, now=NOW + 5).as_json()
            finally:
                rows.close()
        else:
            with halts.unit(now=NOW + 5) as unit:
                direct = decision.check(PgHaltRows(halts, unit, NOW + 5), decision.check_input(data), record=False,
                                        now=NOW + 5).as_json()
        assert direct == through_store, name
        first = direct["halt_reasons"][0]
        assert (first["condition_name"], first["severity"]) == ("three_strikes", "critical")


def test_each_backend_rows_offer_every_member_of_the_storage_protocol():
    members = {name: member for name, member in vars(storage.HaltStorage).items()
               if callable(member) and not name.startswith("_")}
    assert set(members) == {"condition_config", "stored_attempts", "reset_attempts", "insert", "settle",
                            "note_failed_check"}
    for rows in (FileHaltRows, PgHaltRows):
        for name, member in members.items():
            wanted = list(inspect.signature(member).parameters)
            assert list(inspect.signature(getattr(rows, name)).parameters) == wanted, (rows.__name__, name)
