"""One fleet cap across two hosts (a real PostgreSQL, two ``leash daemon``
processes on their own homes and host names): an agent on each host spends
(its hooks over that leashd's agent socket, its transcript the captured Claude
Code session), together they reach the cap, and both hosts deny the next
PreToolUse with the budget hold; ``leash budget raise`` on one host releases both."""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from leash.core.store.postgres import PostgresBackend

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code_transcript" / "session.jsonl"
WAIT_SECONDS = 15.0
LIMIT_USD = 0.04
# One host's session spends about $0.028 (the capture at the table's price): under the cap alone, over it together.
CONFIG = ('[daemon]\nhost = "{host}"\n[store]\nurl = "{url}"\n'
          f'[[budget.cap]]\nname = "fleet-day"\nscope = "fleet"\nperiod = "day"\nlimit_usd = {LIMIT_USD}\n')


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT_SECONDS
    while not (found := condition()):
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_SECONDS} s"
        time.sleep(0.05)
    return found


@pytest.fixture
def store(postgres_cluster, tmp_path):
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    reader = PostgresBackend(url, home=tmp_path / "reader", host="reader")  # what the test reads the store by
    yield url, reader
    reader.close()


@pytest.fixture
def homes(store, tmp_path):
    url, _ = store
    homes, processes = {}, []
    try:
        for host in ("a", "b"):
            home = homes[host] = tmp_path / f"home-{host}"
            home.mkdir(mode=0o700)
            (home / "config.toml").write_text(CONFIG.format(host=host, url=url))
            processes.append(daemon_process(home, "--no-kennel"))
        yield homes
    finally:
        for process in processes:
            stop(process)


def hook(home, event: str, session: str, transcript, **more) -> str:
    """One hook of a Claude Code session, sent to ``home``'s leashd; its stdout."""
    agent, _ = sockets(home)
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": "/", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "hook_event_name": event, **more}
    verb = {"PreToolUse": "pre-tool-use", "PostToolUse": "post-tool-use"}[event]
    (reply,) = exchange(agent, hook_request(verb, payload))
    return reply["stdout"]


def denial(stdout: str) -> str | None:
    """The hook's stdout when it denies the call (a mirror takes a notice in within moments)."""
    return stdout if '"deny"' in stdout else None


def leash(home, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(leash_argv() + ["--home", str(home), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


@pytest.mark.heavy("two leashd processes metering into one PostgreSQL, ~7 s; make test keeps the fleet cap's "
                   "arithmetic and its hold on one store (tests/views/test_metering.py, "
                   "tests/store/test_budget_store.py)")
def test_two_hosts_reach_one_fleet_cap_together_and_both_hold_and_a_raise_on_one_releases_both(
        homes, store, tmp_path):
    _, reader = store
    transcripts = {}
    for host in homes:
        transcripts[host] = tmp_path / f"{host}.jsonl"
        shutil.copy(FIXTURE, transcripts[host])
    assert '"deny"' not in hook(homes["a"], "PreToolUse", "sa", transcripts["a"])
    hook(homes["a"], "PostToolUse", "sa", transcripts["a"], tool_response={})
    (one,) = wait_for(lambda: reader.budget.totals("host"), "host a's spend")
    assert 0 < one.usd < LIMIT_USD and reader.budget.holds() == []  # one host alone is under the cap
    assert '"deny"' not in hook(homes["b"], "PreToolUse", "sb", transcripts["b"])
    hook(homes["b"], "PostToolUse", "sb", transcripts["b"], tool_response={})
    (hold,) = wait_for(reader.budget.holds, "the fleet cap's hold")
    assert hold.cap == "fleet-day" and hold.bucket == "fleet" and hold.used > LIMIT_USD
    spent = {row.key: row.usd for row in reader.budget.totals("host")}
    assert set(spent) == {"a", "b"} and spent["a"] == pytest.approx(spent["b"])  # the same capture on each host
    assert hold.used == pytest.approx(sum(spent.values()))
    for host, session in (("a", "sa"), ("b", "sb")):
        (row,) = json.loads(leash(homes[host], "budget", "--json").stdout)  # each host sees the one hold
        assert row["held"], (host, row)
        refusal = wait_for(lambda h=homes[host], s=session: denial(hook(h, "PreToolUse", s, tmp_path / "next.jsonl")),
                           f"host {host}'s refusal")
        assert "budget cap 'fleet-day' is reached" in refusal, (host, refusal)
    leash(homes["b"], "budget", "raise", "fleet-day", "--to", "1", "--reason", "both hosts may go on")
    assert reader.budget.holds() == []
    for host, session in (("a", "sa"), ("b", "sb")):
        wait_for(lambda h=homes[host], s=session: not denial(hook(h, "PreToolUse", s, tmp_path / "next.jsonl")),
                 f"host {host}'s release")
