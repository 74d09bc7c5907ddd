"""The console on a shared store (a real PostgreSQL): this host's tmux
sessions and the other hosts' agents in one list, a Host column, `/host:NAME`
to see one host, and a bare-name stop shown on every host's session of that
name. ``seed_shared_fleet`` is also what screenshots/render.py shows."""
from __future__ import annotations

import pytest

from leash.core.store.postgres import PostgresBackend

from .conftest import CONSOLE_NOW, CONSOLE_TMUX, console
from .test_console_keys import SIZE, settle

HOSTS = ("web1", "web2")


def seed_shared_fleet(url: str, root) -> dict[str, PostgresBackend]:
    """Two hosts' worth of fleet in one store; returns each host's backend
    (the caller closes them). web1 is the console's host: its tmux sessions are
    ``CONSOLE_TMUX``."""
    backends = {}
    for host in HOSTS:
        folder = root / f"home-{host}"
        folder.mkdir(mode=0o700, exist_ok=True)
        backends[host] = PostgresBackend(url, home=folder, host=host)
    web1, web2 = backends["web1"], backends["web2"]
    moment = CONSOLE_NOW - 30
    for n, tmux in enumerate(CONSOLE_TMUX):
        web1.sessions.observe(f"claude-web1-{n}", now=moment, tool="Bash", tmux_session=f"web1/{tmux['name']}",
                              tmux_session_id=f"web1/${n}", tmux_pane=f"web1/{tmux['panes'][0]['id']}", cwd="/srv")
    for n, name in enumerate(("agent-build", "agent-docs", "agent-silent")):
        web2.sessions.observe(f"claude-web2-{n}", now=moment - 60 * n, tool="Edit", tmux_session=f"web2/{name}",
                              tmux_session_id=f"web2/${n}", tmux_pane=f"web2/%{n}", cwd="/srv")
    web1.stops.stop("web2/agent-docs", source="ops@web1", reason="rewriting the deploy docs by hand",
                    now=moment)
    web1.stops.stop("agent-silent", source="ops@web1", reason="no output on any host", now=moment)
    web2.locks.lock("web2/agent-build", hours=2, source="ops@web2", reason="release branch frozen",
                    now=moment)
    return backends


@pytest.fixture
def shared(postgres_cluster, tmp_path):
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    backends = seed_shared_fleet(url, tmp_path)
    yield backends
    for backend in backends.values():
        backend.close()


def rows(app) -> dict[str, dict]:
    return {row["name"]: row for row in app.view_data["sessions"]}


async def test_the_console_names_each_sessions_host_and_filters_by_host(shared):
    web1 = shared["web1"]
    app = console(web1.home, backend=web1, list_tmux=lambda: CONSOLE_TMUX, clock=lambda: CONSOLE_NOW)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        seen = rows(app)
        assert seen["web1/agent-answers"]["host"] == "web1" and seen["web1/agent-answers"]["in_tmux"]
        assert seen["web2/agent-docs"]["host"] == "web2" and seen["web2/agent-docs"]["state"] == "stopped"
        assert seen["web2/agent-docs"]["agents"] == ["claude-web2-1"] and not seen["web2/agent-docs"]["in_tmux"]
        assert seen["web1/agent-silent"]["state"] == "stopped"  # the bare-name stop: every host's agent-silent
        assert seen["web2/agent-silent"]["state"] == "stopped"
        assert seen["web2/agent-build"]["state"] == "hands-off"
        panel = app.panel("sessions")
        assert [column[0] for column in panel.COLUMNS][:2] == ["name", "host"]
        shown = panel.table.row_count
        await pilot.press("1", "slash", *"host:web2")
        await pilot.pause()
        assert 0 < panel.table.row_count < shown
        assert all(panel.rows[str(key.value)]["host"] in ("web2", "") for key in panel.table.rows)
        await pilot.press("escape")
        await pilot.pause()
        assert panel.table.row_count == shown


async def test_a_home_of_one_host_has_no_host_column(console_app):
    app = console_app(clock=lambda: CONSOLE_NOW)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert all("host" not in row for row in app.view_data["sessions"])
        assert "host" not in [column[0] for column in app.panel("sessions").COLUMNS]
