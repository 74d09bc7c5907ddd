"""Which user a session belongs to, as leashd remembers it: bounded per user,
so a flood of session ids from one user never makes leashd forget another
user's session (which the flooder could then claim and judge for)."""
from __future__ import annotations

from leash.core.daemon.hookverb import SESSIONS_PER_USER_KEPT, SessionOwners
from leash.core.daemon.peers import Peer

OWNER, FLOODER = Peer(100, 1001, 1001), Peer(200, 1002, 1002)


def test_a_flood_of_session_ids_never_evicts_another_users_session():
    owners = SessionOwners()
    assert owners.intruder({"session_id": "victim"}, OWNER) == ""
    for n in range(max(SESSIONS_PER_USER_KEPT, 100_000) + 1):
        owners.intruder({"session_id": f"flood-{n}"}, FLOODER)
    assert "belongs to another user (uid 1001)" in owners.intruder({"session_id": "victim"}, FLOODER)
    assert len(owners.owners) <= SESSIONS_PER_USER_KEPT + 1  # the flooder's own are what it forgets


def test_a_user_past_the_bound_forgets_its_ended_sessions_first():
    owners = SessionOwners(per_user=10)
    for n in range(10):
        owners.intruder({"session_id": f"s{n}"}, OWNER)
    owners.ended("s7")
    owners.intruder({"session_id": "s10"}, OWNER)
    assert not owners.seen("s7") and owners.seen("s0") and owners.seen("s10")
