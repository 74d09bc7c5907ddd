"""Every console key, driven with Pilot: the key changes the state on disk (read
back through the core, as any other process would) or cancels cleanly."""
from __future__ import annotations

import time

from leash.core import StopProtocol
from leash.core.state.acklog import AckLog
from leash.core.state.halts import api as halts
from leash.core.state.warrants import WarrantQueue

from ..support.console import confirm, open_dialog, running, select, settle


def pending_halts(home):
    return halts.get_session_halts({"pending": True}, home=home)["halts"]


async def test_stop_then_resume_a_session(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await confirm(pilot, app, "s", on=("sessions", "agent-answers"))
        assert StopProtocol(home).stops.snapshot()["sessions"]["agent-answers"]["source"] == "ops@test"
        assert StopProtocol(home).is_stopped("claude-7f3a")  # the agent inside that tmux session
        await confirm(pilot, app, "u")
        assert "agent-answers" not in StopProtocol(home).stops.snapshot()["sessions"]


async def test_cancel_changes_nothing(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        before = (home / "stop_ack_log.jsonl").read_bytes()
        for key, cancel in (("s", "ctrl+n"), ("S", "escape"), ("w", "ctrl+n"), ("h", "escape")):
            await open_dialog(pilot, app, key, on=("sessions", "agent-silent"))
            await pilot.press(cancel)
            await settle(pilot, app)
            assert app.screen.__class__.__name__ != "ConfirmScreen"
        assert (home / "stop_ack_log.jsonl").read_bytes() == before


async def test_every_dialog_opens_with_the_cursor_in_its_field_where_y_and_n_are_letters(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        # One dialog of each shape; tests/console/test_console_dialogs_typed.py types into every one.
        for panel, row, key, field in (("sessions", "agent-silent", "S", "confirm-text"),
                                       ("halts", "halt:", "a", "confirm-text"),
                                       ("locks", "path:", "h", "confirm-entity"),
                                       ("approvals", "approval:", "n", "confirm-text")):
            if panel == "approvals":  # (its one row selected)
                await pilot.press("7")
            else:
                await select(pilot, app, panel, row)
            await pilot.press(key, *"yes, no", "i")
            assert app.screen.__class__.__name__ == "ConfirmScreen", key
            assert app.focused.id == field, key
            assert app.focused.value == "yes, noi", key  # letters, the option's key too, are text here
            assert not app.screen.query("#confirm-option") or not app.screen.query_one("#confirm-option").value
            await pilot.press("escape")
            await settle(pilot, app)
        assert StopProtocol(home).stops.snapshot()["fleet"] is None


async def test_enter_moves_to_the_confirm_button_and_there_y_n_and_i_are_keys(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await select(pilot, app, "sessions", "agent-silent")
        await pilot.press("s", *"quiet", "enter")
        assert app.focused.id == "confirm-ok"
        hint = str(app.screen.query_one("#confirm-hint").render())
        assert "y or ctrl+y Stop" in hint and "i ticks the box" in hint, hint
        await pilot.press("i")
        assert app.screen.query_one("#confirm-option").value is True
        await pilot.press("i", "n")  # untick, then n on a button cancels
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "DashboardScreen"
        await pilot.press("s", *"quiet", "enter", "enter")  # Enter on the button confirms
        await settle(pilot, app)
        assert StopProtocol(home).stops.snapshot()["sessions"]["agent-silent"]["reason"] == "quiet"


async def test_fleet_stop_with_a_reason(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("S", *"maintenance window", "ctrl+y")
        await settle(pilot, app)
        fleet = StopProtocol(home).stops.snapshot()["fleet"]
        assert fleet["reason"] == "maintenance window" and fleet["source"] == "ops@test"


async def test_acknowledge_escalate_and_dismiss_halts(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        high = next(h for h in pending_halts(home) if h["severity"] == "high")
        await confirm(pilot, app, "e", on=("halts", high["halt_id"]))
        assert halts.session_state(home, "claude-c044") == "paused"
        await confirm(pilot, app, "a", *"looked at it", on=("halts", high["halt_id"]))
        assert halts.session_state(home, "claude-c044") == "active"
        events = [line["event"] for line in AckLog(home).read().entries]
        assert events[-2:] == ["halt_escalate", "halt_ack"]


async def test_dismissing_a_critical_halt_asks_for_caution(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        critical = next(h for h in pending_halts(home) if h["severity"] == "critical")
        await open_dialog(pilot, app, "d", on=("halts", critical["halt_id"]))
        assert app.screen.query("#confirm-caution")
        await pilot.press("ctrl+y")  # refused: caution not ticked
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        await pilot.press("tab", "space")  # to the box, ticked
        assert app.screen.query_one("#confirm-caution").value is True
        await pilot.press("ctrl+y")
        await settle(pilot, app)
        assert critical["halt_id"] not in {h["halt_id"] for h in pending_halts(home)}
        assert AckLog(home).read().entries[-1]["event"] == "halt_dismiss"


async def test_pardon_a_warrant(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await confirm(pilot, app, "p", on=("warrants", "warrant:"))
        (done,) = WarrantQueue(home).completed()
        assert done["outcome"] == "pardoned" and done["pardoned_by"] == "ops@test"


async def test_file_a_warrant(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await confirm(pilot, app, "w", *"loops on the same file", on=("sessions", "agent-chatty"))
        assert [w["target"] for w in WarrantQueue(home).pending()] == ["agent-chatty"]


async def test_hands_off_a_session_and_release_it(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await open_dialog(pilot, app, "h", on=("sessions", "agent-answers"))
        app.screen.query_one("#confirm-hours").value = "2"
        await pilot.press("ctrl+y")
        await settle(pilot, app)
        protocol = StopProtocol(home)
        assert protocol.is_hands_off("agent-answers")
        await confirm(pilot, app, "r", on=("locks", "agent-answers"))
        assert not protocol.is_hands_off("agent-answers")


async def test_hands_off_an_entity_from_the_locks_panel(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("4")
        await confirm(pilot, app, "h", *"path:src/billing/**")
        assert StopProtocol(home).is_hands_off("path:src/billing/**")


async def test_keys_that_do_not_apply_do_nothing(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("1")
        for key in ("a", "d", "e", "p", "r"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen.__class__.__name__ != "ConfirmScreen"
        assert app.check_action("acknowledge", ()) is False
        await pilot.press("2")
        assert app.check_action("acknowledge", ()) is True


async def test_resume_of_a_running_session_is_refused_without_a_modal(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await select(pilot, app, "sessions", "agent-answers")
        await pilot.press("u")
        await pilot.pause()
        assert app.screen.__class__.__name__ != "ConfirmScreen"


async def test_focus_keys_and_tab(console_app):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        for key, panel in zip("123456", ("sessions", "halts", "warrants", "locks", "loops", "acklog"), strict=True):
            await pilot.press(key)
            assert app.focused.panel == panel
        await pilot.press("1", "tab")
        assert app.focused.panel == "halts"


async def test_screens_open_and_close(console_app):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.press("l")
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "AckLogScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "DashboardScreen"  # the main screen


async def test_peek_shows_the_pane(console_app):
    class FakeTmux:
        def capture(self, name, lines):
            return [f"last line of {name}"]

        def list_sessions(self):
            from ..support.console import CONSOLE_TMUX

            return CONSOLE_TMUX

    app = console_app(tmux=FakeTmux(), clock=time.time)
    async with running(app) as pilot:
        await select(pilot, app, "sessions", "agent-chatty")
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "PeekScreen"
        assert "last line of agent-chatty" in str(app.screen.query_one("#peek-body").render())


async def test_filter_narrows_the_focused_panel(console_app):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("1", "slash")
        await pilot.press(*"silent")
        await pilot.pause()
        assert app.panel("sessions").table.row_count == 1
        await pilot.press("escape")
        await pilot.pause()
        assert app.panel("sessions").table.row_count == 4  # three in tmux and the stopped claude-legacy


async def test_quit(console_app):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code in (0, None)


async def test_keys_can_be_remapped(console_app, home):
    (home / "config.toml").write_text('[console.keys]\nstop = "x"\n')
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await confirm(pilot, app, "x", on=("sessions", "agent-answers"))
        assert StopProtocol(home).is_stopped("agent-answers")


async def test_palette_lists_actions_for_rows(console_app):
    from leash.console.tui.palette import LeashCommands

    app = console_app(clock=time.time)
    async with running(app):
        names = [name for name, _, _ in LeashCommands(app.screen)._entries()]
        assert "Stop session agent-silent" in names
        assert "Pardon warrant agent-silent" in names
        assert any(n.startswith("Acknowledge halt secrets_exposure") for n in names)
        assert "Release path:infra/prod/**" in names
        assert "Reset breaker gateway" in names


async def test_new_critical_halt_executed_warrant_and_tripped_breaker_raise_alerts(console_app, home):
    from leash.core.state import loopguard
    from leash.core.state.warrants.outcome import finish

    app = console_app(clock=time.time)
    rings = []
    app.bell = lambda: rings.append(1)
    async with running(app) as pilot:
        assert rings == []  # what was there at start is not news
        halts.record_halt({"session_token": "s9", "halt_type": "security", "severity": "critical",
                           "description": "sudo rm -rf /"}, home=home)
        for t in (1, 2, 3):
            loopguard.record_restart_interrupted_boot(now=time.time() - t, home=home, name="worker")
        queue = WarrantQueue(home)
        queue.file("agent-chatty", reason="stuck")
        state, fd = queue.claim_next(owner={"pid": 0, "host": "t"})
        finish(queue, state, "executed", now=time.time(), timeouts=[1, 1, 1])
        queue.release(state["id"], fd)
        app.refresh_view()
        await settle(pilot, app)
        titles = [n.title for n in app._notifications]
        assert any(t.startswith("Critical halt") for t in titles)
        assert any(t.startswith("Warrant executed") for t in titles)
        assert any(t.startswith("Restart-loop breaker tripped: worker") for t in titles)
        assert len(rings) == 3


async def test_a_new_row_takes_its_place_and_the_cursor_stays_on_its_row(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        high = next(h for h in pending_halts(home) if h["severity"] == "high")
        await select(pilot, app, "halts", high["halt_id"])
        halts.record_halt({"session_token": "s7", "halt_type": "security", "severity": "critical",
                           "description": "a newer critical halt"}, home=home)
        app.refresh_view()
        await settle(pilot, app)
        panel = app.panel("halts")
        shown = sorted(panel.rows, key=lambda key: panel.table.get_row_index(key))
        severities = [panel.rows[key]["severity"] for key in shown]
        assert severities == ["critical", "critical", "high"]
        assert panel.selected()["halt_id"] == high["halt_id"]


# ---------------------------------------------------------------- found at 80x24 and larger
def _second_rows(home):
    """A second row in every panel: a lock, a breaker, a warrant, an approval (the seeded fleet has one each),
    and the demo's caps and spend (the Budget panel's rows)."""
    from leash.console.tui.demo import budget_config, seed_budget
    from leash.core.store.select import backend_for

    from ..support.console import CONSOLE_NOW

    backend = backend_for(home)
    backend.locks.lock("zed", hours=1, reason="second lock", source="ops@test", now=CONSOLE_NOW - 60)
    backend.breakers.record_boot("worker", window_seconds=60, now=CONSOLE_NOW - 5)
    backend.warrants.file("agent-chatty", reason="second warrant", requester="ops@test", now=CONSOLE_NOW - 5)
    backend.approvals.request("claude-c044", "Bash", {"command": "make"}, timeout_s=300, now=CONSOLE_NOW - 5)
    with open(home / "config.toml", "a") as config:
        config.write(budget_config())
    seed_budget(home, now=CONSOLE_NOW)


async def test_home_and_end_move_the_cursor_to_the_first_and_last_row_in_every_panel(console_app, home):
    from leash.console.tui.keymap import PANELS

    _second_rows(home)
    app = console_app()
    async with running(app, (80, 24)) as pilot:
        # Settled once per panel: a press returns once the screen has handled
        # the key, and home and end move the cursor in the key's own handler.
        for index, panel in enumerate(PANELS, start=1):
            await pilot.press(str(index))
            await settle(pilot, app)
            table = app.panel(panel).table
            assert table.row_count >= 2, panel
            await pilot.press("end")
            assert table.cursor_row == table.row_count - 1, panel
            await pilot.press("home")
            assert table.cursor_row == 0, panel
            await pilot.press("end")
            assert table.cursor_row == table.row_count - 1, panel
        await pilot.press("l")  # the ack-log screen's table too
        await settle(pilot, app)
        table = app.screen.query_one("#acklog-table")
        assert table.row_count >= 2 and table.cursor_row == table.row_count - 1
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1


async def test_the_lock_dialog_starts_in_its_entity_field_and_asks_for_hours(console_app, home):
    from leash.core.base.hours import parse_hours

    app = console_app(clock=time.time)
    async with running(app, (80, 24)) as pilot:
        await pilot.press("4", "h")
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        assert app.focused.id == "confirm-entity"  # the entity: what the dialog asks for
        await pilot.press(*"path:src/auth/**")
        assert app.screen.query_one("#confirm-entity").value == "path:src/auth/**"  # y and n are letters here
        hours = app.screen.query_one("#confirm-hours")
        for bad in ("nan", "-1"):
            hours.value = bad
            app.screen.query_one("#confirm-ok").press()
            await settle(pilot, app)
            assert app.screen.__class__.__name__ == "ConfirmScreen", bad  # refused: the dialog stays
            try:
                parse_hours(bad)
            except ValueError as exc:
                core_says = str(exc)
            notice = str(app.screen.query_one("#confirm-notice").render())
            assert core_says in notice and "\n" not in notice.strip(), notice
            assert not StopProtocol(home).is_hands_off("path:src/auth/**")
        hours.value = "2"
        app.screen.query_one("#confirm-ok").press()
        await settle(pilot, app)
        assert app.screen.__class__.__name__ != "ConfirmScreen"
        from leash.core.base.clock import parse_iso
        from leash.core.store.select import backend_for

        lock = backend_for(home).locks.active()["path:src/auth/**"]
        assert parse_iso(lock.expires_at) - parse_iso(lock.locked_at) == 2 * 3600  # the hours typed


async def test_a_session_lock_refuses_bad_hours_with_the_cores_words(console_app, home):
    app = console_app(clock=time.time)
    async with running(app, (80, 24)) as pilot:
        await select(pilot, app, "sessions", "agent-answers")
        await pilot.press("h")
        await settle(pilot, app)
        await pilot.press("shift+tab", "ctrl+u", *"nan", "ctrl+y")  # from the reason up to the hours
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        assert "must be a positive number, got 'nan'" in str(app.screen.query_one("#confirm-notice").render())
        assert not StopProtocol(home).is_hands_off("agent-answers")


async def test_resume_on_a_halted_session_points_at_acknowledging_its_halt(console_app, home):
    app = console_app()
    async with running(app, (80, 24)) as pilot:
        await select(pilot, app, "sessions", "agent-chatty")
        assert app.panel("sessions").selected()["state"] == "halted"  # a pending halt, no stop
        before = len(app._notifications)
        await pilot.press("u")
        await settle(pilot, app)
        assert app.screen.__class__.__name__ != "ConfirmScreen"
        (notice,) = list(app._notifications)[before:]
        assert "halt" in notice.message and "acknowledge" in notice.message.lower()
        assert "2" in notice.message and "'a'" in notice.message, notice.message  # the keys that acknowledge


async def test_the_halts_table_names_sessions_as_the_sessions_panel_does(console_app, home):
    app = console_app()
    async with running(app):
        sessions = app.panel("sessions").rows
        named = {agent: row["name"] for row in sessions.values() for agent in row["agents"]}
        table = app.panel("halts").table
        shown = {str(key.value): table.get_cell(key, "session").plain for key in table.rows}
        for key, row in app.panel("halts").rows.items():
            assert shown[key] == named[row["session_id"]], (shown[key], row["session_id"])
        assert set(shown.values()) == {"agent-silent", "agent-chatty"}


async def test_a_breaker_shows_the_window_its_supervisor_passes(console_app, home):
    from leash.core.store.select import backend_for

    from ..support.console import CONSOLE_NOW

    breakers = backend_for(home).breakers
    for t in (CONSOLE_NOW - 250, CONSOLE_NOW - 150, CONSOLE_NOW - 10):
        breakers.check_and_record("nightly", max_restarts=5, window_seconds=300, now=t)
    app = console_app()
    async with running(app):
        row = app.panel("loops").rows["loop:nightly"]
        assert (row["window_seconds"], row["max_restarts"], row["in_loop"]) == (300, 5, 3)
        cells = app.panel("loops").table.get_row("loop:nightly")
        assert cells[1].plain == "3/5" and cells[2].plain == "300s"


def test_escalation_triggered_is_said_only_when_it_was(cli, home):
    plain = cli("halts", "record", "--session", "s1", "--type", "security", "--severity", "critical",
                "--description", "a critical halt that is not escalated")
    assert plain.code == 0 and "escalation triggered" not in plain.out, plain
    escalated = cli("halts", "record", "--session", "s1", "--type", "security", "--severity", "high",
                    "--description", "an escalated one", "--auto-escalate")
    assert escalated.code == 0 and "(escalation triggered)" in escalated.out, escalated


async def test_a_fleet_stop_from_the_console_records_only_the_operators_reason(console_app, home):
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await confirm(pilot, app, "S")
        fleet = StopProtocol(home).stops.snapshot()["fleet"]
        assert fleet is not None and fleet["reason"] == "", fleet  # no reason the console made up
        assert AckLog(home).read().entries[-1]["reason"] == ""


async def test_a_warrant_needs_the_reason_the_core_asks_for_and_names_the_configured_attempts(console_app, home):
    (home / "config.toml").write_text("[warrants]\ntimeouts = [30, 60, 90, 120, 240]\n")
    app = console_app(clock=time.time)
    async with running(app) as pilot:
        await open_dialog(pilot, app, "w", on=("sessions", "agent-chatty"))
        body = str(app.screen.query_one("#confirm-body").render())
        assert "5 times" in body and "three" not in body, body
        await pilot.press("ctrl+y")  # no reason: the core refuses a warrant without one
        await settle(pilot, app)
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        assert "a warrant needs a reason" in str(app.screen.query_one("#confirm-notice").render())
        assert WarrantQueue(home).pending() == []
        await pilot.press(*"yes: loops on the same file", "ctrl+y")  # the y that opened typing is text
        await settle(pilot, app)
        assert [(w["target"], w["reason"]) for w in WarrantQueue(home).pending()] == \
            [("agent-chatty", "yes: loops on the same file")]


async def test_an_executed_warrants_alert_gives_the_cores_reason_and_the_records_attempts(console_app, home):
    from leash.core.state.warrants.outcome import finish

    app = console_app(clock=time.time)
    async with running(app) as pilot:
        queue = WarrantQueue(home)
        queue.file("agent-chatty", reason="stuck")
        state, fd = queue.claim_next(owner={"pid": 0, "host": "t"})
        state.update(attempt=5, attempts=5)  # a dog that ran with five timeouts
        finish(queue, state, "executed", now=time.time(), timeouts=[1, 1, 1, 1, 1])
        queue.release(state["id"], fd)
        app.refresh_view()
        await settle(pilot, app)
        (alert,) = [n for n in app._notifications if n.title.startswith("Warrant executed")]
        done = next(d for d in queue.completed() if d["id"] == state["id"])
        assert alert.message == f"{done['log_reason']} (attempt 5/5)", alert.message
        assert "3" not in alert.message


async def test_the_sessions_panel_names_each_sessions_cli(console_app, home):
    """Claude Code, Gemini CLI and Codex CLI sessions side by side in one console."""
    from leash.core.state.sessions import SessionRegistry

    from ..support.console import CONSOLE_NOW

    registry = SessionRegistry(str(home))
    for session_id, cli in (("gemini-01", "gemini"), ("codex-01", "codex")):
        registry.observe(session_id, now=CONSOLE_NOW - 30, tool="Bash", cli=cli, cwd="/work/x", status="thinking")
    app = console_app()
    async with running(app):
        table = app.panel("sessions").table
        columns = [str(column.label) for column in table.columns.values()]
        cli = columns.index("CLI")
        shown = {str(table.get_row(key)[0]).rstrip(" ·"): str(table.get_row(key)[cli]) for key in table.rows}
        assert shown["gemini-01"] == "gemini" and shown["codex-01"] == "codex"
        assert shown["agent-answers"] == "claude"
