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
    return (line.event, line.session_id or line.get("entity") or "",
            line.get("note") or line.get("message") or line.reason)


def run_dialog(term, opening: str, reason: str, confirm: tuple[str, ...], expected: list[tuple[str, str, str]],
               *, before: tuple[str, ...] = ()) -> str:
    """Open a dialog with ``opening``, typing ``reason`` in the same burst (and
    ``before`` first: fields typed ahead of it), then ``confirm``; return the
    screen once the log holds as many new lines as ``expected`` (or the wait
    ran out), after checking they are exactly ``expected``."""
    start = len(log_lines(term))
    burst(term, opening, *before, Typed(reason))
    try:
        shown = reason in term.wait_for(lambda screen: reason in screen, 3.0)
    except AssertionError:
        shown = False
    burst(term, *confirm)
    deadline = time.monotonic() + LOG_WAIT_SECONDS
    while len(log_lines(term)) - start < len(expected) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # anything more the burst did has reached the log by now
    new = [action_of(line) for line in log_lines(term)[start:] if line.event != "epitaph"]  # a pardon's record
    assert new == expected
    assert shown, "the reason never showed in the dialog's field"
    return term.wait_for(term.on_dashboard, 3.0)


def test_stop_a_session_typed_reason_then_enter_enter(terminal):
    terminal.back_to_dashboard()
    terminal.select("1", "agent-chatty")
    screen = run_dialog(terminal, "s", "stop it, yes", ("Enter", "Enter", Typed("lsaw")),
                        [("stop_ack", "agent-chatty", "stop it, yes")])
    assert "Stop agent-chatty?" not in screen


def test_fleet_stop_then_fleet_resume(terminal):
    terminal.back_to_dashboard()
    terminal.show_panel("1")
    run_dialog(terminal, "S", "stop it, yes", ("C-y", Typed("stop it, yes")), [("fleet_stop", "*", "stop it, yes")])
    terminal.select("1", "agent-answers")
    run_dialog(terminal, "u", "all clear, yes", ("C-y",), [("fleet_resume", "*", "all clear, yes")])


def test_resume_a_stopped_session(terminal):
    terminal.back_to_dashboard()
    terminal.select("1", "claude-legacy")
    run_dialog(terminal, "u", "right repository now, yes", ("C-y", Typed("lsu")),
               [("resume", "claude-legacy", "right repository now, yes")])


def test_acknowledge_a_critical_halt(terminal):
    terminal.back_to_dashboard()
    terminal.select("2", "agent-chatty")
    run_dialog(terminal, "a", "key rotated already", ("C-y", Typed("key rotated already")),
               [("halt_ack", "claude-c044", "key rotated already")])


def test_dismiss_a_critical_halt_with_caution(terminal):
    terminal.back_to_dashboard()
    terminal.select("2", "secrets_exposure")
    run_dialog(terminal, "d", "a test token, yes", ("Tab", "Space", "C-y"),
               [("halt_dismiss", "claude-2b91", "a test token, yes")])


def test_escalate_a_halt(terminal):
    terminal.back_to_dashboard()
    terminal.select("2", "agent-answers")
    run_dialog(terminal, "e", "needs a human, yes", ("C-y",), [("halt_escalate", "claude-7f3a", "needs a human, yes")])


def test_pardon_a_warrant(terminal):
    terminal.back_to_dashboard()
    terminal.select("3", "agent-silent")
    run_dialog(terminal, "p", "it answered, yes", ("Enter", "Enter"), [("warrant_pardoned", "agent-silent",
                                                                       "it answered, yes")])


def test_file_a_warrant(terminal):
    terminal.back_to_dashboard()
    terminal.select("1", "agent-answers")
    run_dialog(terminal, "w", "stuck, yes: in a loop", ("C-y",),  # its first y once refused it: no reason yet
               [("warrant_filed", "agent-answers", "stuck, yes: in a loop")])


def test_lock_a_session_hands_off(terminal):
    terminal.back_to_dashboard()
    terminal.select("1", "agent-silent")
    run_dialog(terminal, "h", "stay put, yes really: no more deploys", ("C-y", Typed("stay put")),
               [("hands_off", "agent-silent", "stay put, yes really: no more deploys")])


def test_lock_an_entity_from_the_locks_panel(terminal):
    terminal.back_to_dashboard()
    terminal.show_panel("4")
    run_dialog(terminal, "h", "docs frozen, yes", ("C-y",), [("hands_off", "path:docs/**", "docs frozen, yes")],
               before=(Typed("path:docs/**"), "Enter", "Enter"))


def test_release_a_lock(terminal):
    terminal.back_to_dashboard()
    terminal.select("4", "infra")
    run_dialog(terminal, "r", "release is out, yes", ("C-y",),
               [("release", "path:infra/prod/**", "release is out, yes")])


def test_allow_an_approval(terminal):
    terminal.back_to_dashboard()
    terminal.select("7", "Edit")
    run_dialog(terminal, "y", "only this once", ("C-y", Typed("only this once")),
               [("approval_allowed", "claude-7f3a", "only this once")])


def test_deny_an_approval(terminal):
    terminal.back_to_dashboard()
    terminal.select("7", "rm -rf")
    run_dialog(terminal, "n", "not now, no", ("Enter", "Enter", Typed("nyl")),
               [("approval_denied", "claude-c044", "not now, no")])


def test_cancel_with_ctrl_n_records_nothing(terminal):
    terminal.back_to_dashboard()
    terminal.select("1", "agent-chatty")
    run_dialog(terminal, "w", "no, not yet", ("C-n", Typed("lsaw")), [])
