"""A wrong or dead tmux socket is reported in the console, not shown as a
column of sessions quietly outside tmux."""
from __future__ import annotations

import time

from leash.core.base.home import ensure_home
from leash.core.base.tmux import Tmux
from leash.core.state.sessions import SessionRegistry

from ..support.console import console, running

SIZE = (120, 35)


async def test_a_dead_tmux_socket_is_a_problem_the_summary_shows(home, tmp_path, monkeypatch):
    dead = tmp_path / "gone.sock"
    monkeypatch.setenv("LEASH_TMUX_SOCKET", str(dead))
    SessionRegistry(ensure_home(str(home))).observe("agent-1", now=time.time(), tool="Bash", tmux_pane="%1",
                                       tmux_session="work", cwd=str(tmp_path), status="thinking")
    app = console(home, tmux=Tmux(home=str(home)))
    async with running(app, SIZE):
        problems = app.view_data["problems"]
        assert any(p.startswith("tmux unreachable (") and str(dead) in p for p in problems), problems
        assert "TMUX UNREACHABLE" in str(app.dashboard.query_one("SummaryBar").render())


async def test_a_fleet_of_headless_agents_needs_no_tmux(home, tmp_path, monkeypatch):
    monkeypatch.delenv("LEASH_TMUX_SOCKET", raising=False)
    SessionRegistry(ensure_home(str(home))).observe("headless-1", now=time.time(), tool="Bash", cwd=str(tmp_path),
                                       status="thinking")
    app = console(home, tmux=Tmux(str(tmp_path / "gone.sock"), home=str(home)))
    async with running(app, SIZE):
        assert not any(p.startswith("tmux unreachable") for p in app.view_data["problems"])
