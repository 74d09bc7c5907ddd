"""leashd's meter on a store shared by many hosts (a real PostgreSQL): its
timer reads the working sessions of its own host only. Another host's
session is that host's leashd's to read (its files are on that machine): two
meters reading one transcript would race over its meter state."""
from __future__ import annotations

import shutil

import pytest

from leash.core.daemon.meter import Meter
from leash.core.store.postgres import PostgresBackend

from ..support.checkout import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code_transcript"
NOW = 1_795_000_000.0


@pytest.fixture
def two_hosts(postgres_cluster, tmp_path):
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    made = {}
    for host in ("a", "b"):
        folder = tmp_path / f"home-{host}"
        folder.mkdir(mode=0o700)
        made[host] = PostgresBackend(url, home=str(folder), host=host)
    yield made
    for backend in made.values():
        backend.close()


def working_session(backend, session_id: str, folder) -> None:
    """A Claude Code session ``backend``'s host runs, working, its transcript a copy of the capture."""
    folder.mkdir()
    shutil.copy(FIXTURE / "session.jsonl", folder / "session.jsonl")
    shutil.copytree(FIXTURE / "session", folder / "session")
    backend.sessions.observe(session_id, now=NOW, transcript_path=str(folder / "session.jsonl"), cli="claude",
                             status="working")


def test_the_timer_meters_the_working_sessions_of_its_own_host_only(two_hosts, tmp_path):
    working_session(two_hosts["a"], "on-a", tmp_path / "a")
    working_session(two_hosts["b"], "on-b", tmp_path / "b")
    meter = Meter(two_hosts["a"].home, two_hosts["a"], clock=lambda: NOW)
    meter.run_once([], [], whole_round=True)
    spent = {row.session_id for row in two_hosts["a"].budget.spend()}
    assert spent == {"on-a"}
    assert set(two_hosts["a"].budget.meters()) == {"on-a"}
