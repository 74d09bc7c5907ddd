"""The console on a shared store (a real PostgreSQL): this host's tmux
sessions and the other hosts' agents in one list, a Host column, `/host:NAME`
to see one host, and a bare-name stop shown on every host's session of that
name. ``seed_shared_fleet`` (tests/support/console.py) is also what screenshots/render.py shows."""
from __future__ import annotations

import pytest

from ..support.console import CONSOLE_NOW, CONSOLE_TMUX, SIZE, console, seed_shared_fleet, settle


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
