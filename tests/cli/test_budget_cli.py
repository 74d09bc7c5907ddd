"""``leash budget``, ``leash budget raise`` and ``leash costs`` on a home whose
spend was metered from a captured Claude Code transcript: the figures, the
estimated mark, a raise that lifts a hold (and the ones refused), the groupings,
the price table's date, and misuse as usage errors."""
from __future__ import annotations

import json
import shutil
import time

import pytest

from leash.core.store.files import FileBackend
from leash.core.views.spendmeter import meter_session

from ..support.checkout import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "claude_code_transcript"
CAP = '[[budget.cap]]\nname = "daily"\nscope = "fleet"\nperiod = "day"\nlimit_usd = {limit}\n'


@pytest.fixture
def metered(home, tmp_path):
    """A home where session s1 spent the capture's tokens (now), under a daily fleet cap of $0.0001: held."""
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.toml").write_text(CAP.format(limit=0.0001))
    shutil.copy(FIXTURE / "session.jsonl", tmp_path / "s1.jsonl")
    backend = FileBackend(str(home))
    backend.sessions.observe("s1", now=time.time(), transcript_path=str(tmp_path / "s1.jsonl"), cli="claude",
                             entity="ezra")
    from leash.core.base.config import load_config

    meter_session(backend, "s1", config=load_config(str(home)), now=time.time())
    yield backend
    backend.close()


def test_budget_lists_each_cap_with_its_use_hold_and_reset(cli, metered):
    result = cli("budget")
    assert result.code == 0, result
    line = result.out.splitlines()[0]
    assert line.startswith("daily  fleet:fleet  ") and " of $0.0001" in line and "HELD" in line
    assert "resets in" in line
    rows = json.loads(cli("budget", "--json").out)
    assert rows[0]["cap"] == "daily" and rows[0]["held"] is True and rows[0]["used"] > 0.0001


def test_budget_raise_lifts_the_hold_and_logs_it(cli, metered):
    refused = cli("budget", "raise", "daily", "--to", "0.00005", "--reason", "too little")
    assert refused.code == 1 and "not above its use" in refused.err and len(refused.err.strip().splitlines()) == 1
    unknown = cli("budget", "raise", "dialy", "--to", "5", "--reason", "typo")
    assert unknown.code == 1 and "did you mean 'daily'" in unknown.err
    done = cli("budget", "raise", "daily", "--to", "5", "--reason", "a big day", "--source", "ops")
    assert done.code == 0 and "raised daily (fleet" in done.out and "its hold lifted" in done.out
    assert metered.budget.holds() == []
    line = [li for li in metered.acklog.tail(5) if li.event == "budget_raised"][-1]
    assert (line.extra.get("to"), line.reason, line.source) == (5.0, "a big day", "ops")
    assert "HELD" not in cli("budget").out


@pytest.mark.parametrize("argv, problem", [
    (("budget", "raise", "daily", "--reason", "r"), "--to"),
    (("budget", "raise", "daily", "--to", "-3", "--reason", "r"), "positive"),
    (("budget", "raise", "daily", "--to", "nan", "--reason", "r"), "positive"),
    (("budget", "raise", "daily", "--to", "5"), "--reason"),
    (("costs", "--by", "colour"), "--by"),
    (("costs", "--since", "yesterday"), "--since"),
])
def test_misuse_is_a_usage_error_of_one_line(cli, metered, argv, problem):
    result = cli(*argv)
    assert result.code == 2 and problem in result.err and len(result.err.strip().splitlines()) == 1


def test_costs_group_the_spend_and_total_it(cli, metered):
    by_session = cli("costs")
    assert by_session.code == 0 and by_session.out.startswith("s1  $") and "3 requests" in by_session.out
    assert by_session.out.splitlines()[-1].startswith("total  $")
    rows = json.loads(cli("costs", "--by", "model", "--json").out)
    assert [row["key"] for row in rows] == ["claude-opus-4-8"]
    assert rows[0]["input"] > 0 and rows[0]["estimated"] is False
    entity = json.loads(cli("costs", "--by", "entity", "--json").out)
    assert entity[0]["key"] == "ezra"
    assert cli("costs", "--since", "2999-01-01T00:00:00Z").out.startswith("nothing metered since then")


def test_a_model_the_table_does_not_know_is_marked_estimated(cli, home, tmp_path):
    home.mkdir(mode=0o700, exist_ok=True)
    text = (FIXTURE / "session.jsonl").read_text().replace("claude-opus-4-8", "claude-future-9")
    (tmp_path / "x.jsonl").write_text(text)
    backend = FileBackend(str(home))
    backend.sessions.observe("x", now=time.time(), transcript_path=str(tmp_path / "x.jsonl"), cli="claude")
    meter_session(backend, "x", config={"budget": {}}, now=time.time())
    assert cli("costs").out.startswith("x  ~$")
    backend.close()


def test_costs_prices_names_the_table_and_its_date(cli, home):
    result = cli("costs", "--prices")
    assert result.code == 0 and result.out.startswith("prices: genai-prices ") and "table of 20" in result.out


def test_status_json_carries_the_sessions_cost_and_the_caps(cli, metered):
    state = json.loads(cli("status", "--json").out)
    (row,) = [r for r in state["sessions"] if r["session_id"] == "s1"]
    assert row["cost_usd"] > 0 and row["cost_estimated"] is False
    assert state["budget"]["today_usd"] == pytest.approx(row["cost_usd"])
    assert [c["cap"] for c in state["budget"]["held"]] == ["daily"]


def test_why_names_the_budget_hold(cli, metered):
    result = cli("why", "s1")
    assert "budget cap daily reached" in result.out and "leash budget raise daily --to AMOUNT" in result.out


def test_log_event_budget_reads_the_caps_lines(cli, metered):
    cli("budget", "raise", "daily", "--to", "5", "--reason", "more")
    lines = [json.loads(line) for line in cli("log", "--event", "budget", "--json").out.splitlines()]
    assert [line["event"] for line in lines] == ["budget_hold", "budget_raised"]


def no_constants(name: str):
    raise AssertionError(f"{name} is not JSON")


def test_a_cap_that_allows_nothing_reads_as_reached_in_strict_json(cli, metered, home):
    (home / "config.toml").write_text(CAP.format(limit=0))
    rows = json.loads(cli("budget", "--json").out, parse_constant=no_constants)
    assert rows[0]["fraction"] == 1.0 and rows[0]["limit"] == 0
    assert " 100%" in cli("budget").out
    state = json.loads(cli("status", "--json").out, parse_constant=no_constants)
    assert state["budget"]["caps"][0]["fraction"] == 1.0


def test_each_period_says_when_it_resets(cli, home):
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.toml").write_text(
        '[[budget.cap]]\nname = "ever"\nscope = "fleet"\nperiod = "total"\nlimit_usd = 5\n'
        '[[budget.cap]]\nname = "five"\nscope = "fleet"\nperiod = "window-5h"\nlimit_percent = 80\n')
    ever, five = cli("budget").out.splitlines()[:2]
    assert ever.startswith("ever  ") and ever.endswith("  never resets")
    assert five.startswith("five  ") and five.endswith("  reset not known yet (no window reported)")


def test_costs_prices_names_the_package_once_and_its_version_alone_in_json(cli, home):
    from importlib.metadata import version

    said = cli("costs", "--prices").out
    assert said.startswith(f"prices: genai-prices {version('genai-prices')}, table of 20")
    answer = json.loads(cli("costs", "--prices", "--json").out)
    assert (answer["package"], answer["version"]) == ("genai-prices", version("genai-prices"))


def test_without_leashd_budget_says_nothing_is_metered_even_with_a_stale_socket(leash_proc, metered, home):
    import socket

    (home / "run").mkdir(mode=0o700, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as left:  # a killed daemon's socket file: bound, never served
        left.bind(str(home / "run" / "agent.sock"))
    result = leash_proc("budget")
    assert result.code == 0 and result.out.splitlines()[-1].startswith("note: leashd is not running here: "
                                                                       "nothing is being metered")
    assert leash_proc("costs", "--by", "host").code == 0


def test_budget_costs_and_a_raise_run_in_leashd_as_the_peer(leash_proc, metered, daemon, home):
    import os
    import pwd

    from leash.core.base.wellknown import OPERATOR_SOCKET_ENV

    env = {OPERATOR_SOCKET_ENV: str(home / "run" / "operator.sock")}  # the daemon required, as when separated
    listed = leash_proc("budget", env=env)
    assert listed.code == 0 and "HELD" in listed.out and "not running" not in listed.out
    assert leash_proc("costs", "--json", env=env).code == 0
    done = leash_proc("budget", "raise", "daily", "--to", "5", "--reason", "a big day", "--source", "mallory", env=env)
    assert done.code == 0 and "its hold lifted" in done.out, done
    refused = leash_proc("budget", "raise", "daily", "--to", "0.00001", "--reason", "less", env=env)
    assert refused.code == 1 and len(refused.err.strip().splitlines()) == 1
    assert sum("verb=cli" in line for line in daemon.log_stream.lines) == 4
    line = [li for li in metered.acklog.tail(5) if li.event == "budget_raised"][-1]
    assert line.source == f"{pwd.getpwuid(os.getuid()).pw_name}@{daemon.host}"
    assert metered.budget.holds() == []


def test_on_the_shared_store_another_host_reads_the_spend_and_raises_the_cap(cli, postgres_cluster, tmp_path):
    from leash.core.base.config import load_config
    from leash.core.store.select import backend_for

    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    homes = {}
    for host in ("a", "b"):
        homes[host] = tmp_path / f"home-{host}"
        homes[host].mkdir(mode=0o700)
        (homes[host] / "config.toml").write_text(f'[daemon]\nhost = "{host}"\n[store]\nurl = "{url}"\n'
                                                 + CAP.format(limit=0.0001))
    shutil.copy(FIXTURE / "session.jsonl", tmp_path / "s1.jsonl")
    on_a = backend_for(str(homes["a"]))
    try:
        on_a.sessions.observe("s1", now=time.time(), transcript_path=str(tmp_path / "s1.jsonl"), cli="claude")
        meter_session(on_a, "s1", config=load_config(str(homes["a"])), now=time.time())
        b = str(homes["b"])
        assert [row["key"] for row in json.loads(cli("costs", "--home", b, "--by", "host", "--json").out)] == ["a"]
        assert "HELD" in cli("budget", "--home", b).out
        done = cli("budget", "raise", "daily", "--home", b, "--to", "5", "--reason", "from b")
        assert done.code == 0 and "its hold lifted" in done.out, done
        assert on_a.budget.holds() == [] and "HELD" not in cli("budget", "--home", str(homes["a"])).out
    finally:
        on_a.close()


def test_status_says_the_spend_today_each_hold_and_each_sessions_cost(cli, metered):
    said = cli("status").out.splitlines()
    (today,) = [line for line in said if line.startswith("spend today: $")]
    (holds,) = [n for n, line in enumerate(said) if line.startswith("budget holds: 1")]
    assert said[holds + 1].startswith("  daily  fleet:fleet  $0.0") and " of $0.0001" in said[holds + 1]
    assert said[holds + 1].endswith("leash budget raise daily --to AMOUNT --reason ...")
    (session,) = [line for line in said if line.startswith("  s1  ")]
    assert "  cost $0.0" in session


def test_status_of_a_home_without_caps_or_spend_says_nothing_of_budgets(cli, home):
    home.mkdir(mode=0o700, exist_ok=True)
    said = cli("status").out
    assert "spend today" not in said and "budget holds" not in said


def test_status_says_the_fleet_is_held_when_the_gate_cannot_read_the_holds(cli, metered, home):
    (home / "budget-holds.json").write_text("{not json")
    said = cli("status")
    assert "fleet: HELD (budget store unreadable" in said.out, said
    assert "every tool call is held" in said.out
    assert json.loads(cli("status", "--json").out)["budget_holds_error"]
    (home / "config.toml").write_text("")  # no caps: the gate never reads the budget store
    assert "fleet: running" in cli("status").out
