"""Records that hold records give back the stored JSON they were read from:
a page of halts keeps every halt's keys in their order (``acknowledged_at``
only where it was), a condition's change its settings; a dog's state, which
the dog changes, is stored with the keys it was read with and each field set
since; and leashd's tagged JSON names every record class, wherever it is
defined."""
from __future__ import annotations

import json

from leash.core.store.records import KINDS
from leash.core.store.records_halts import HaltConfigChange, HaltListing, HaltRecord
from leash.core.store.records_warrants import DogState, UnreadableWarrant, WarrantListing, WarrantRecord
from leash.core.store.remote import decode, encode

PAGE = {"total_count": 2, "halts": [
    {"halt_id": "h1", "halt_type": "security", "severity": "critical", "description": "a token",
     "triggered_at": "2030-03-17T17:46:40.000000Z", "acknowledged": True,
     "acknowledged_at": "2030-03-17T17:46:41.000000Z", "resolution": "dismissed", "session_id": "s1",
     "task_id": None, "condition_name": "secrets_exposure"},
    {"halt_id": "h2", "halt_type": "scope", "severity": "high", "description": "out of scope",
     "triggered_at": "2030-03-17T17:46:42.000000Z", "acknowledged": False, "session_id": "s2", "task_id": "t",
     "condition_name": None}], "unacknowledged_count": 1}


def test_a_page_of_halts_holds_halt_records_and_gives_back_its_json_byte_for_byte():
    page = HaltListing.of(json.loads(json.dumps(PAGE)))
    assert all(isinstance(halt, HaltRecord) for halt in page.halts)
    assert [(h.halt_id, h.resolution, h.extra) for h in page.halts] == [
        ("h1", "dismissed", {"acknowledged_at": "2030-03-17T17:46:41.000000Z"}), ("h2", None, {})]
    assert json.dumps(page.as_json()) == json.dumps(PAGE)
    assert decode(encode(page)) == page  # through leashd's tagged JSON, the same record


def test_a_condition_change_holds_its_settings_as_records():
    before = {"enabled": True, "severity": "high", "threshold": {"max_attempts": 3}, "auto_escalate": False,
              "escalate_after_minutes": None}
    answer = {"updated": True, "previous_values": before, "current_values": {**before, "enabled": False}}
    change = HaltConfigChange.of(answer)
    assert (change.previous_values.enabled, change.current_values.enabled) == (True, False)
    assert change.current_values.threshold == {"max_attempts": 3}
    assert json.dumps(change.as_json()) == json.dumps(answer)


def test_the_warrants_listing_holds_each_kind_of_record():
    listing = WarrantListing.of({"pending": [{"id": "w1", "target": "agent-1", "reason": "wedged"}], "active": [],
                                 "completed": [], "quarantined": ["warrants/w2.json.corrupt"],
                                 "unreadable": [{"file": "warrants/w3.json", "problem": "no target"}]})
    assert listing.pending == [WarrantRecord.of({"id": "w1", "target": "agent-1", "reason": "wedged"})]
    assert listing.unreadable == [UnreadableWarrant.of({"file": "warrants/w3.json", "problem": "no target"})]
    assert listing.as_dict()["unreadable"] == [{"file": "warrants/w3.json", "problem": "no target"}]


def test_a_dog_state_is_stored_with_its_keys_then_each_field_set_since():
    claimed = {"id": "w1", "warrant": {"id": "w1", "target": "agent-1"}, "state": "received", "attempt": 0,
               "last_message_at": None, "kennel": {"pid": 1, "host": "h"}}
    state = DogState.of(dict(claimed))
    state.update(state="interrogating", attempt=1, next_timeout="2030-03-17T17:47:40.000000Z", pane_width=80)
    state.trimmed = True
    stored = state.as_dict()
    assert list(stored) == [*claimed, "pane_width", "next_timeout", "trimmed"]
    assert (stored["state"], stored["attempt"], stored["pane_width"]) == ("interrogating", 1, 80)
    assert "outcome" not in stored and stored["last_message_at"] is None  # never set: not stored; given: kept
    assert DogState.of(stored) == DogState.of(json.loads(json.dumps(stored)))


def test_every_record_class_is_named_for_tagged_json():
    assert {"StopRecord", "HaltListing", "HaltConditionConfig", "DogState", "WarrantListing", "SpendTotal",
            "LoopLimits"} <= set(KINDS)
