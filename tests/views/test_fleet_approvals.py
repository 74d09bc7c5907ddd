"""The fleet view's approvals (``core.fleet.view``): the waiting ones oldest
first, each naming its session as the Sessions panel does, with its age and
time left; the summary's count and soonest deadline; a backend without an
approval store shows none."""
from __future__ import annotations

from leash.core.store.select import backend_for

from ..support.console import CONSOLE_NOW, CONSOLE_TMUX


def approvals(home):
    return backend_for(home).approvals


def test_the_view_lists_approvals_oldest_first_named_as_the_sessions_panel_names_them(home):
    from leash.core.views.fleet import view

    store = approvals(home)
    backend_for(home).sessions.observe("claude-in-tmux", now=CONSOLE_NOW - 50, tool="Bash",
                                       tmux_session="agent-answers")
    newer = store.request("claude-headless", "Bash", {"command": "make deploy"}, timeout_s=300, now=CONSOLE_NOW - 10)
    older = store.request("claude-in-tmux", "Bash", {"command": "git push"}, kind="ask", rule="Bash(git push*)",
                          timeout_s=300, now=CONSOLE_NOW - 280)
    shown = view(home, tmux_sessions=CONSOLE_TMUX, now=CONSOLE_NOW)
    rows = shown["approvals"]
    assert [row["id"] for row in rows] == [older.id, newer.id]
    assert [row["session"] for row in rows] == ["agent-answers", "claude-headless"]
    assert rows[0]["key"] == f"approval:{older.id}" and rows[0]["rule"] == "Bash(git push*)"
    assert (rows[0]["age"], rows[0]["left"]) == (280.0, 20.0)
    assert shown["summary"]["approvals"] == 2
    assert shown["summary"]["approval_deadline"] == CONSOLE_NOW + 20


class OtherApprovals:
    """A file backend whose approval store is ``approvals`` (None: it has none)."""

    def __init__(self, backend, approvals):
        self._backend, self._approvals = backend, approvals

    def __getattr__(self, name):
        if name == "approvals":
            if self._approvals is None:
                raise AttributeError(name)
            return self._approvals
        return getattr(self._backend, name)


class Failing:
    def __init__(self, error: Exception):
        self.error = error

    def pending(self, *, now=None):
        raise self.error


def test_approvals_that_cannot_be_read_are_a_problem_not_a_broken_view(home):
    from leash.core.store.approvals import ApprovalsUnreadable
    from leash.core.store.files import FileBackend
    from leash.core.store.remote import RemoteStoreError
    from leash.core.views.fleet import view

    for error, said in ((ApprovalsUnreadable("torn and no log"), "approvals unreadable (torn and no log)"),
                        (RemoteStoreError("leash daemon: no such store: 'approvals'"),  # a daemon from before
                         "approvals unreadable (leash daemon: no such store: 'approvals')")):
        shown = view(backend=OtherApprovals(FileBackend(home), Failing(error)), now=CONSOLE_NOW)
        assert shown["approvals"] == [] and shown["problems"] == [said]
