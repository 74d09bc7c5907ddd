"""The approvals store's contract, on every backend of the store contract
(the file backend and the shared PostgreSQL store, with one role and with
two): open, answer (the first answer wins), close, look up by id or prefix,
list; every change an ack-log line first, the state their fold; changes seen
from another process; two operators answering at once."""
from __future__ import annotations

import os
import threading

import pytest

from leash.core.store.approvals import AmbiguousApproval, ApprovalClosed, UnknownApproval
from leash.core.store.records import ApprovalRecord

from ..support.backends import make_backend
from ..support.changes import changes_after

# ``backend`` and ``second_backend`` (conftest.py): every backend the store contract runs on, and a second
# client of the same store.
NOW = 1_900_000_000.0
SECRET = "AKIAZ7Q3R5T2W8Y4U6PL"  # the shape of an AWS access key id, not a real one
PUSH = {"command": "git push origin main"}


def approval_lines(store) -> list[dict]:
    """The approval lines of the log, each as its stored fields."""
    return [line.as_dict() for line in store.acklog.read() if line.event.startswith("approval_")]


def test_an_approval_waits_until_the_first_answer(backend):
    opened = backend.approvals.request("s1", "Bash", PUSH, timeout_s=300, now=NOW)
    assert isinstance(opened, ApprovalRecord)
    assert (opened.session_id, opened.tool, opened.kind, opened.rule, opened.status) == \
        ("s1", "Bash", "permission", "", "waiting")
    assert (opened.summary, opened.detail) == ("Bash: git push origin main", "git push origin main")
    assert opened.deadline > opened.requested_at and opened.host
    assert [a.id for a in backend.approvals.pending()] == [opened.id]

    answered = backend.approvals.answer(opened.id[:6], allow=True, by="ops@h", via="cli", note="fine", now=NOW + 1)
    assert (answered.status, answered.by, answered.via, answered.note) == ("allowed", "ops@h", "cli", "fine")
    with pytest.raises(ApprovalClosed, match=r"already allowed by ops@h via cli"):
        backend.approvals.answer(opened.id, allow=False, by="other@h", via="console", now=NOW + 2)
    with pytest.raises(ApprovalClosed, match="allowed by ops@h"):
        backend.approvals.close(opened.id, "timeout", now=NOW + 3)
    assert backend.approvals.pending() == []
    assert backend.approvals.get(opened.id).status == "allowed"
    assert [a.id for a in backend.approvals.recent(5)] == [opened.id]


def test_every_change_is_an_ack_log_line_with_who_and_how(backend):
    first = backend.approvals.request("s1", "Bash", {"command": f"aws s3 cp x y --key {SECRET}"}, kind="ask",
                                      rule="Bash(aws *)", timeout_s=60, now=NOW)
    second = backend.approvals.request("s2", "Write", {"file_path": "/w/a.py", "content": "x"}, timeout_s=60,
                                       now=NOW + 1)
    third = backend.approvals.request("s3", "Bash", PUSH, timeout_s=60, now=NOW + 2)
    backend.approvals.answer(first.id, allow=False, by="ops@h", via="console", message="no keys", now=NOW + 3)
    backend.approvals.close(second.id, "timeout", now=NOW + 4)
    backend.approvals.close(third.id, "withdrawn", via="pane", now=NOW + 5)

    lines = approval_lines(backend)
    assert [line["event"] for line in lines] == ["approval_requested"] * 3 + [
        "approval_denied", "approval_timeout", "approval_withdrawn"]
    assert all(SECRET not in str(line) for line in lines)
    denied = lines[3]
    assert (denied["approval"], denied["session_id"], denied["tool"], denied["source"], denied["via"],
            denied["message"]) == (first.id, "s1", "Bash", "ops@h", "console", "no keys")
    assert denied["summary"] == first.summary and SECRET not in first.summary
    assert (lines[4]["source"], lines[4]["via"], lines[5]["via"]) == ("leash", "leash", "pane")
    assert [(a.id, a.status) for a in backend.approvals.recent(3)] == [
        (third.id, "withdrawn"), (second.id, "timeout"), (first.id, "denied")]


def test_unknown_and_ambiguous_ids_say_so(backend):
    made = [backend.approvals.request("s1", "Bash", PUSH, timeout_s=60, now=NOW + n) for n in range(17)]
    with pytest.raises(UnknownApproval):
        backend.approvals.get("no-such-id")
    with pytest.raises(UnknownApproval):
        backend.approvals.answer("no-such-id", allow=True, by="ops", via="cli")
    prefixes = {}
    for approval in made:
        prefixes.setdefault(approval.id[0], []).append(approval.id)
    shared = next(letter for letter, ids in prefixes.items() if len(ids) > 1)  # 17 ids over 16 letters
    with pytest.raises(AmbiguousApproval, match="ambiguous"):
        backend.approvals.answer(shared, allow=True, by="ops", via="cli")
    assert [a.id for a in backend.approvals.pending()] == [a.id for a in made]  # oldest first
    with pytest.raises(ValueError):
        backend.approvals.answer(made[0].id, allow=True, by="ops", via="by-pigeon")


def test_two_operators_answering_at_once_one_wins(backend, second_backend):
    opened = backend.approvals.request("s1", "Bash", PUSH, timeout_s=60, now=NOW)
    outcomes: dict[str, object] = {}
    start = threading.Barrier(2)

    def answer(store, who: str, allow: bool) -> None:
        start.wait()
        try:
            outcomes[who] = store.approvals.answer(opened.id, allow=allow, by=who, via="cli")
        except ApprovalClosed as exc:
            outcomes[who] = exc

    threads = [threading.Thread(target=answer, args=(store, who, allow))
               for store, who, allow in ((backend, "ann@h", True), (second_backend, "bob@h", False))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    (winner,) = [who for who, got in outcomes.items() if isinstance(got, ApprovalRecord)]
    (loser,) = [got for got in outcomes.values() if isinstance(got, ApprovalClosed)]
    assert f"by {winner} via cli" in str(loser)
    assert [line["event"] for line in approval_lines(backend)].count("approval_requested") == 1
    assert len(approval_lines(backend)) == 2  # one request, one answer


def test_the_state_is_the_fold_of_the_log(backend):
    opened = backend.approvals.request("s1", "Bash", PUSH, timeout_s=60, now=NOW)
    answered = backend.approvals.request("s2", "Bash", PUSH, timeout_s=60, now=NOW + 1)
    backend.approvals.answer(answered.id, allow=True, by="ops@h", via="cli", now=NOW + 2)
    if backend.name == "file":
        os.remove(os.path.join(backend.home, "approvals.json"))
    else:  # a row that lost its shape (the owner's hand: the runtime role cannot) is rebuilt from the log
        with backend.db.owner_session() as conn, conn.transaction():
            conn.execute("""UPDATE log_state SET state = '{"waiting": 3}' WHERE store = 'approvals'""")
    fresh = make_backend(backend.name, backend.home, url=getattr(backend, "url", None))
    try:
        assert [a.id for a in fresh.approvals.pending()] == [opened.id]
        assert fresh.approvals.get(answered.id).by == "ops@h"
    finally:
        if hasattr(fresh, "close"):
            fresh.close()


OPEN_ELSEWHERE = ("import sys; from leash.core.store.select import backend_for; "
                  "backend_for(sys.argv[1]).approvals.request('far', 'Bash', {'command': 'ls'}, timeout_s=60)")


def test_an_approval_opened_elsewhere_shows_up_in_changes(backend):
    seen = changes_after(backend, OPEN_ELSEWHERE, "approvals")
    assert "approvals" in {change.store for change in seen}
    assert [a.session_id for a in backend.approvals.pending()] == ["far"]
