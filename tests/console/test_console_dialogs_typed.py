"""Every confirmation dialog typed at as a person types, in a real terminal.

The console runs in a tmux pane at 80x24 (``tests/support/console_terminal.py``);
each test presses the key that opens a dialog and types its reason in the
same burst (nothing drawn yet), confirms the way the dialog's hint says
(ctrl+y, or Enter to the button and Enter), sometimes keeps typing past the
close, and reads the result from the ack log: exactly the action asked for,
with the reason as typed; no fleet stop, no interrupt, no second action; and
the dashboard on top again (no log screen, no second dialog).

One console serves the whole module, one dialog after another; each test
starts from the dashboard and reads only the log lines it caused.
"""
from __future__ import annotations

import shutil
import time

import pytest

from ..support.console_terminal import run_console, seed_live_fleet, start_console, stop_servers

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

LOG_WAIT_SECONDS = 5.0


class Typed(str):
    """Text typed literally in a burst (a plain str is a tmux key name)."""


@pytest.fixture(scope="module")
def console_pane(tmp_path_factory):
    from leash.core.store.select import backend_for

    folder = tmp_path_factory.mktemp("dialogs")
    home, socket = folder / "home", folder / "tmux.sock"
    seed_live_fleet(home)
    try:
        term = start_console(socket, home)
        term.backend = backend_for(home)
        yield term
    finally:
        stop_servers(socket)


@pytest.fixture
def terminal(console_pane):
    """The module's console, started again if a test before ended it (a stray ``q``)."""
    if not console_pane.alive():
        backend = console_pane.backend
        console_pane = run_console(console_pane.socket, console_pane.home)
        console_pane.backend = backend
    return console_pane


def burst(term, *items: str) -> None:
    """Keys and typed text in one tmux call: they arrive together, as a fast typist's do."""
    args: list[str] = []
    for item in items:
        if args:
            args.append(";")
        args += ["send-keys", "-t", "console"] + (["-l", item] if isinstance(item, Typed) else [item])
    term.tmux(*args)


def log_lines(term) -> list:
    return list(term.backend.acklog.read())


def action_of(line) -> tuple[str, str, str]:
    """A log line as (event, what it acted on, what the operator typed):
    the session, else the lock's entity; the approval's note or message, else the reason."""
    return (line.event, line.session_id or line.extra.get("entity") or "",
            line.extra.get("note") or line.extra.get("message") or line.reason)


def run_dialog(term, on: str | tuple[str, str], opening: str, reason: str, confirm: tuple[str, ...],
               expected: list[tuple[str, str, str]], *, before: tuple[str, ...] = ()) -> str:
    """From the dashboard, on panel ``on`` (its number; or its number and the
    words of the row to select), open a dialog with ``opening``, typing
    ``reason`` in the same burst (and ``before`` first: fields typed ahead of
    it), then ``confirm``; return the screen once the log holds as many new
    lines as ``expected`` (or the wait ran out), after checking they are
    exactly ``expected``."""
    term.back_to_dashboard()
    if isinstance(on, str):
        term.show_panel(on)
    else:
        term.select(*on)
    start = len(log_lines(term))
    burst(term, opening, *before, Typed(reason))
    # A dialog that never shows the reason fails here, saying what the screen
    # holds, not after waiting out the log for what was never asked.
    term.wait_for(reason, 3.0)
    burst(term, *confirm)
    deadline = time.monotonic() + LOG_WAIT_SECONDS
    while len(log_lines(term)) - start < len(expected) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # anything more the burst did has reached the log by now
    new = [action_of(line) for line in log_lines(term)[start:] if line.event != "epitaph"]  # a pardon's record
    assert new == expected
    return term.wait_for(term.on_dashboard, 3.0)


def test_stop_a_session_typed_reason_then_enter_enter(terminal):
    screen = run_dialog(terminal, ("1", "agent-chatty"), "s", "stop it, yes", ("Enter", "Enter", Typed("lsaw")),
                        [("stop_ack", "agent-chatty", "stop it, yes")])
    assert "Stop agent-chatty?" not in screen


def test_fleet_stop_then_fleet_resume(terminal):
    run_dialog(terminal, "1", "S", "stop it, yes", ("C-y", Typed("stop it, yes")),
               [("fleet_stop", "*", "stop it, yes")])
    run_dialog(terminal, ("1", "agent-answers"), "u", "all clear, yes", ("C-y",),
               [("fleet_resume", "*", "all clear, yes")])


# Each dialog: the panel (and the row's words) it is opened on, its key, the
# reason typed in the same burst, how it is confirmed (and what is typed past
# the close), and the log lines it makes.
DIALOGS = [
    pytest.param(("1", "claude-legacy"), "u", "right repository now, yes", ("C-y", Typed("lsu")),
                 [("resume", "claude-legacy", "right repository now, yes")], id="resume-a-stopped-session"),
    pytest.param(("2", "agent-chatty"), "a", "key rotated already", ("C-y", Typed("key rotated already")),
                 [("halt_ack", "claude-c044", "key rotated already")], id="acknowledge-a-critical-halt"),
    pytest.param(("2", "secrets_exposure"), "d", "a test token, yes", ("Tab", "Space", "C-y"),
                 [("halt_dismiss", "claude-2b91", "a test token, yes")], id="dismiss-a-critical-halt-with-caution"),
    pytest.param(("2", "agent-answers"), "e", "needs a human, yes", ("C-y",),
                 [("halt_escalate", "claude-7f3a", "needs a human, yes")], id="escalate-a-halt"),
    pytest.param(("3", "agent-silent"), "p", "it answered, yes", ("Enter", "Enter"),
                 [("warrant_pardoned", "agent-silent", "it answered, yes")], id="pardon-a-warrant"),
    # its first y once refused it: no reason yet
    pytest.param(("1", "agent-answers"), "w", "stuck, yes: in a loop", ("C-y",),
                 [("warrant_filed", "agent-answers", "stuck, yes: in a loop")], id="file-a-warrant"),
    pytest.param(("1", "agent-silent"), "h", "stay put, yes really: no more deploys", ("C-y", Typed("stay put")),
                 [("hands_off", "agent-silent", "stay put, yes really: no more deploys")],
                 id="lock-a-session-hands-off"),
]


@pytest.mark.parametrize("on, opening, reason, confirm, expected", DIALOGS)
def test_a_dialog_typed_at_in_one_burst_does_exactly_what_was_asked(terminal, on, opening, reason, confirm,
                                                                     expected):
    run_dialog(terminal, on, opening, reason, confirm, expected)


def test_lock_an_entity_from_the_locks_panel(terminal):
    run_dialog(terminal, "4", "h", "docs frozen, yes", ("C-y",), [("hands_off", "path:docs/**", "docs frozen, yes")],
               before=(Typed("path:docs/**"), "Enter", "Enter"))


# The same, from the Locks and Approvals panels (and a cancel, which records nothing).
AFTER_THE_LOCK = [
    pytest.param(("4", "infra"), "r", "release is out, yes", ("C-y",),
                 [("release", "path:infra/prod/**", "release is out, yes")], id="release-a-lock"),
    pytest.param(("7", "Edit"), "y", "only this once", ("C-y", Typed("only this once")),
                 [("approval_allowed", "claude-7f3a", "only this once")], id="allow-an-approval"),
    pytest.param(("7", "rm -rf"), "n", "not now, no", ("Enter", "Enter", Typed("nyl")),
                 [("approval_denied", "claude-c044", "not now, no")], id="deny-an-approval"),
    pytest.param(("1", "agent-chatty"), "w", "no, not yet", ("C-n", Typed("lsaw")), [],
                 id="cancel-with-ctrl-n-records-nothing"),
]


@pytest.mark.parametrize("on, opening, reason, confirm, expected", AFTER_THE_LOCK)
def test_an_answer_a_release_or_a_cancel_typed_in_one_burst(terminal, on, opening, reason, confirm, expected):
    run_dialog(terminal, on, opening, reason, confirm, expected)
