"""The caps on the shared store (a real PostgreSQL): a raise or leashd's
tick on one host while another host's meter charges the same counter. Each
acts on the counter as the meter left it (its row locked), so no charge is
lost under a raise or a hold."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest

from leash.core.store.postgres import PostgresBackend
from leash.core.store.records_budget import BudgetCounterRecord
from leash.core.views import metering as engine

NOW = 1_795_000_000.0  # a Tuesday, mid-day UTC
DAY = "2026-11-18"
WAIT_SECONDS = 10.0


def config(limit: float) -> dict:
    return {"budget": {"cap": [{"name": "daily", "scope": "fleet", "period": "day", "limit_usd": limit,
                                "warn_at": [], "resume_at_reset": False, "account": "", "stale_after": 10,
                                "on_stale": "warn"}], "accounts": {}, "prices": {}}}


@pytest.fixture
def shared(postgres_cluster, tmp_path):
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    made = []
    for host in ("a", "b"):
        folder = tmp_path / f"home-{host}"
        folder.mkdir(mode=0o700)
        made.append(PostgresBackend(url, home=str(folder), host=host))
    yield url, made
    for backend in made:
        backend.close()


def counter(used: float) -> BudgetCounterRecord:
    return BudgetCounterRecord(cap="daily", bucket="fleet", period=DAY, period_end=NOW + 3600, unit="usd", used=used,
                               estimated=False, raised_to=None, warned=[], held_since=None, held_use=None,
                               released_at=None, released_by=None, updated_at=NOW)


def while_a_meter_charges(url: str, backend, act):
    """Run ``act`` while ``backend``'s unit holds the counter at 0.9 (after 0.5)
    uncommitted; commit once ``act`` waits on the row; ``act``'s result."""
    with backend.budget.unit(now=NOW) as unit:
        unit.put_counter(counter(0.5))
    result: dict = {}
    charged = threading.Event()
    release = threading.Event()

    def meter():
        with backend.budget.unit(now=NOW) as unit:
            found = unit.counter("daily", "fleet", DAY)
            unit.put_counter(BudgetCounterRecord.of({**found.as_dict(), "used": 0.9}))
            charged.set()
            release.wait(WAIT_SECONDS)

    def other_host():
        result["value"] = act()

    charging = threading.Thread(target=meter)
    charging.start()
    assert charged.wait(WAIT_SECONDS)
    acting = threading.Thread(target=other_host)
    acting.start()
    deadline = time.monotonic() + WAIT_SECONDS
    with psycopg.connect(url, autocommit=True) as watch:
        while not watch.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]:
            assert time.monotonic() < deadline, "the other host never waited for the counter's row"
            time.sleep(0.01)
    release.set()
    charging.join(WAIT_SECONDS)
    acting.join(WAIT_SECONDS)
    return result.get("value")


def test_a_raise_on_another_host_keeps_the_spend_a_meter_was_charging(shared):
    url, (here, there) = shared
    while_a_meter_charges(url, here, lambda: engine.raise_cap(there, "daily", to=5.0, reason="more", source="op",
                                                              config=config(1.0), now=NOW))
    (found,) = here.budget.counters()
    assert (found.used, found.raised_to) == (0.9, 5.0)


def test_a_tick_on_another_host_holds_with_the_spend_a_meter_was_charging(shared):
    url, (here, there) = shared
    done = while_a_meter_charges(url, here, lambda: engine.tick(there, config=config(0.1), now=NOW))
    assert done == ["held daily fleet"]
    (found,) = here.budget.counters()
    assert (found.used, found.held, found.held_use) == (0.9, True, 0.9)
