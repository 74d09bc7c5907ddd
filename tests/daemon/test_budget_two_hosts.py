"""One fleet cap across two hosts (a real PostgreSQL, two leashd on their own
homes and host names): agents on both hosts spend, together they reach the
cap, and both hosts hold their sessions at the next call; a raise on one
host releases both."""
from __future__ import annotations

import shutil
import time

import pytest

from leash.core.base.config import load_config
from leash.core.views.metering import raise_cap

from ..support.checkout import ROOT
from ..support.daemon import exchange, hook_request, sockets, start_daemon

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code_transcript" / "session.jsonl"
WAIT_SECONDS = 15.0
# One host's session spends about $0.028 (the capture at the table's price): under the cap alone, over it together.
CONFIG = ('[daemon]\nhost = "{host}"\n[store]\nurl = "{url}"\n'
          '[[budget.cap]]\nname = "fleet-day"\nscope = "fleet"\nperiod = "day"\nlimit_usd = 0.04\nwarn_at = [0.9]\n')


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_SECONDS} s"
        time.sleep(0.05)


@pytest.fixture
def hosts(postgres_cluster, tmp_path):
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    started = []
    for host in ("a", "b"):
        home = tmp_path / f"home-{host}"
        home.mkdir(mode=0o700)
        (home / "config.toml").write_text(CONFIG.format(host=host, url=url))
        started.append(start_daemon(home, line_deadline=0.5))
    yield started
    for daemon in started:
        daemon.close()


def call(daemon, event: str, session: str, transcript, **more) -> dict:
    agent, _ = sockets(daemon.home)
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": "/", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, **more}
    (reply,) = exchange(agent, hook_request(event, payload))
    return reply


def test_two_hosts_reach_one_fleet_cap_together_and_both_hold(hosts, tmp_path):
    a, b = hosts
    for host in ("a", "b"):
        shutil.copy(FIXTURE, tmp_path / f"{host}.jsonl")
    assert '"deny"' not in call(a, "pre-tool-use", "sa", tmp_path / "a.jsonl", hook_event_name="PreToolUse")["stdout"]
    call(a, "post-tool-use", "sa", tmp_path / "a.jsonl", hook_event_name="PostToolUse", tool_response={})
    wait_for(lambda: a.backend.budget.spend(session_id="sa"), "host a's spend")
    assert a.backend.budget.holds() == []  # one host alone is under the cap
    call(b, "post-tool-use", "sb", tmp_path / "b.jsonl", hook_event_name="PostToolUse", tool_response={})
    wait_for(lambda: b.backend.budget.holds(), "the fleet cap's hold")
    (hold,) = a.backend.budget.holds()  # one row, seen from either host
    assert hold.bucket == "fleet" and hold.used > 0.04
    hosts_spent = {row["key"] for row in a.backend.budget.totals("host")}
    assert hosts_spent == {"a", "b"}
    for daemon, session in ((a, "sa"), (b, "sb")):
        reply = call(daemon, "pre-tool-use", session, tmp_path / "x.jsonl", hook_event_name="PreToolUse")
        assert "budget cap 'fleet-day' is reached" in reply["stdout"], (daemon.host, reply)
    raise_cap(a.backend, "fleet-day", to=1.0, reason="both hosts may go on", source="ops@a",
              config=load_config(a.home), now=time.time())
    for daemon, session in ((a, "sa"), (b, "sb")):
        reply = call(daemon, "pre-tool-use", session, tmp_path / "x.jsonl", hook_event_name="PreToolUse")
        assert '"deny"' not in reply["stdout"], (daemon.host, reply)
