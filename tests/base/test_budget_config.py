"""config.toml's [budget]: caps, accounts and price overrides read with their
defaults; every value leash cannot use makes the file unusable with one line
naming the file, the line and the key; an unknown key is a warning; the hooks
never pay for [budget] with a costly import."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from leash.core.base.config import (
    ConfigError,
    config_notices,
    config_problem,
    config_warnings,
    load_config,
    strictest_config,
    strictest_when_broken,
)
from leash.core.policy.caps import Cap, caps_of

from ..support.checkout import ROOT, leash_argv

CAP = '[[budget.cap]]\nname = "daily"\nscope = "entity"\nperiod = "day"\nlimit_usd = 20\n'


def write(home, text):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_no_budget_section_means_no_caps(tmp_path):
    write(tmp_path, "[hands_off]\ndefault_hours = 2\n")
    assert load_config(tmp_path)["budget"] == {"cap": [], "accounts": {}, "prices": {}}


def test_caps_accounts_and_prices_are_read_with_their_defaults(tmp_path):
    write(tmp_path, CAP + '\n[budget.accounts.work]\nhosts = ["web1"]\nentities = ["web2/agent-3"]\n\n'
                    '[[budget.cap]]\nname = "five-hours"\nscope = "account"\naccount = "work"\nperiod = "window-5h"\n'
                    'limit_percent = 80\nwarn_at = [0.5]\nresume_at_reset = true\nstale_after = 3\non_stale = "hold"\n'
                    '\n[budget.prices."gpt-4.1"]\ninput = 2\noutput = 8\n'
                    '[budget.prices]\n"claude-*" = {input = 1, output = 2, cache_read = 0.1}\n')
    budget = load_config(tmp_path)["budget"]
    assert config_problem(tmp_path) is None and config_warnings(tmp_path) == []
    assert budget["accounts"] == {"work": {"hosts": ["web1"], "entities": ["web2/agent-3"]}}
    assert budget["prices"] == {"gpt-4.1": {"input": 2, "output": 8},
                                "claude-*": {"input": 1, "output": 2, "cache_read": 0.1}}
    assert caps_of(budget) == (
        Cap(name="daily", scope="entity", period="day", limit_usd=20),
        Cap(name="five-hours", scope="account", period="window-5h", limit_percent=80, warn_at=(0.5,),
            resume_at_reset=True, account="work", stale_after=3.0, on_stale="hold"),
    )
    daily = caps_of(budget)[0]
    defaults = (daily.warn_at, daily.resume_at_reset, daily.stale_after, daily.on_stale)
    assert defaults == ((0.75, 0.95), False, 10, "warn")
    assert (daily.unit, daily.limit, caps_of(budget)[1].unit) == ("usd", 20.0, "percent")


BAD = [  # (text, line, key, words of the reason)
    (CAP.replace("limit_usd = 20\n", "limit_usd = 20\nlimit_percent = 5\n"), 6, "budget.cap[1].limit_percent",
     "both limit_usd and limit_percent"),
    (CAP.replace("limit_usd = 20\n", ""), 1, "budget.cap[1]", "neither limit_usd nor limit_percent"),
    (CAP.replace('"entity"', '"team"'), 3, "budget.cap[1].scope", "must be one of session, entity, host"),
    (CAP.replace('"day"', '"month"'), 4, "budget.cap[1].period", "must be one of day, week, window-5h"),
    (CAP.replace("20", "-1"), 5, "budget.cap[1].limit_usd", "finite number >= 0"),
    (CAP.replace("20", "nan"), 5, "budget.cap[1].limit_usd", "finite number >= 0"),
    (CAP.replace("20", "inf"), 5, "budget.cap[1].limit_usd", "finite number >= 0"),
    (CAP.replace("20", '"20"'), 5, "budget.cap[1].limit_usd", "finite number >= 0"),
    (CAP.replace("20", "true"), 5, "budget.cap[1].limit_usd", "finite number >= 0"),
    ("# caps\n\n" + CAP + "\n" + CAP, 10, "budget.cap[2].name", "already names budget.cap[1]"),
    (CAP.replace('name = "daily"\n', ""), 1, "budget.cap[1]", "needs a name"),
    (CAP.replace('"daily"', '"my cap"'), 2, "budget.cap[1].name", "must be a name"),
    (CAP.replace('scope = "entity"\n', ""), 1, "budget.cap[1]", "needs a scope"),
    (CAP + "warn_at = [0.95, 0.75]\n", 6, "budget.cap[1].warn_at", "ascending fractions"),
    (CAP + "warn_at = [0.5, 1.0]\n", 6, "budget.cap[1].warn_at", "between 0 and 1"),
    (CAP + "warn_at = 0.5\n", 6, "budget.cap[1].warn_at", "a list"),
    (CAP + "resume_at_reset = 1\n", 6, "budget.cap[1].resume_at_reset", "true or false"),
    (CAP.replace('"day"', '"total"') + "resume_at_reset = true\n", 6, "budget.cap[1].resume_at_reset",
     "never resets"),
    (CAP + "stale_after = 0\n", 6, "budget.cap[1].stale_after", "minutes > 0"),
    (CAP + 'on_stale = "kill"\n', 6, "budget.cap[1].on_stale", "must be one of warn, hold"),
    (CAP.replace("limit_usd = 20", "limit_percent = 50"), 5, "budget.cap[1].limit_percent",
     "window-5h or window-7d"),
    (CAP.replace('"day"', '"window-5h"').replace("limit_usd = 20", "limit_percent = 50"), 5,
     "budget.cap[1].limit_percent", "scope must be account or fleet"),
    (CAP.replace('"entity"', '"fleet"').replace('"day"', '"window-7d"').replace("limit_usd = 20",
                                                                               "limit_percent = 101"),
     5, "budget.cap[1].limit_percent", "from 0 to 100"),
    (CAP.replace('"entity"', '"account"'), 1, "budget.cap[1]", "needs account = NAME"),
    (CAP + 'account = "work"\n', 6, "budget.cap[1].account", "only for scope"),
    (CAP.replace('"entity"', '"account"') + 'account = "home"\n', 6, "budget.cap[1].account",
     "no account 'home'"),
    ("[budget]\ncap = 3\n", 2, "budget.cap", "[[budget.cap]] tables"),
    ('[budget.accounts]\nwork = ["web1"]\n', 2, "budget.accounts.work", "must be a table"),
    ('[budget.accounts.work]\nhosts = "web1"\n', 2, "budget.accounts.work.hosts", "list of non-empty names"),
    ('[budget.accounts.a]\nhosts = ["web1"]\n[budget.accounts.b]\nhosts = ["web2", "web1"]\n', 4,
     "budget.accounts.b.hosts", "already in account 'a'"),
    ('[budget.prices."gpt-4.1"]\ninput = 2\noutput = -8\n', 3, 'budget.prices."gpt-4.1".output', ">= 0"),
    ('[budget.prices."gpt-4.1"]\ninput = 2\n', 1, 'budget.prices."gpt-4.1"', "needs output"),
    ('[budget.prices]\nmini = 3\n', 2, "budget.prices.mini", "must be a table"),
]


@pytest.mark.parametrize("text, line, key, reason", BAD)
def test_a_value_leash_cannot_use_names_file_line_and_key(tmp_path, text, line, key, reason):
    write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path}/config.toml:{line}: key '{key}': "), message
    assert reason in message, message
    assert config_problem(tmp_path) == message


@pytest.mark.parametrize("text, line, key, meant", [
    (CAP + "limit_usdd = 3\n", 6, "budget.cap[1].limit_usdd", "limit_usd"),
    ("[budget]\ncaps = []\n", 2, "budget.caps", "cap"),
    ('[budget.accounts.work]\nhost = ["web1"]\n', 2, "budget.accounts.work.host", "hosts"),
    ('[budget.prices.mini]\ninput = 1\noutput = 2\ncache_reads = 0.1\n', 4, "budget.prices.mini.cache_reads",
     "cache_read"),
])
def test_an_unknown_budget_key_is_a_warning_and_the_rest_is_used(tmp_path, text, line, key, meant):
    write(tmp_path, text)
    load_config(tmp_path)
    assert config_problem(tmp_path) is None
    (warning,) = config_warnings(tmp_path)
    assert warning.startswith(f"{tmp_path}/config.toml:{line}: key '{key}': unknown setting, ignored"), warning
    assert f"(did you mean '{meant}'?)" in warning
    assert config_notices(tmp_path) == [warning]


def test_a_broken_budget_lets_operators_run_on_the_strictest_settings_without_its_caps(tmp_path):
    write(tmp_path, CAP + "limit_percent = 5\n")
    with pytest.raises(ConfigError):
        load_config(tmp_path)
    with strictest_when_broken():
        assert load_config(tmp_path) == strictest_config()
    assert strictest_config()["budget"]["cap"] == []  # never a value of the broken file
    (notice,) = config_notices(tmp_path)
    assert notice.startswith(f"config.toml cannot be used: {tmp_path}/config.toml:6: key 'budget.cap[1].limit_percent'")


def test_a_hook_reading_a_budget_imports_nothing_costly(home, tmp_path):
    """[budget] is validated on the hook path: with no dataclasses or price table (typing
    comes with tomllib, for any config.toml)."""
    write(home, CAP + '[budget.prices.mini]\ninput = 1\noutput = 2\n')
    payload = json.dumps({"session_id": "budget", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": str(tmp_path)}).encode()
    done = subprocess.run([sys.executable, "-X", "importtime"] + leash_argv()[1:] + ["hook", "pre-tool-use"],
                          input=payload, capture_output=True, cwd=ROOT, timeout=60)
    modules = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "leash.core.base.budgetconfig" in modules  # the section was read
    assert config_problem(home) is None
    costly = sorted(m for m in modules if m in ("dataclasses", "inspect")
                    or m.split(".")[0] in ("genai_prices", "pydantic", "httpx2"))
    assert costly == []
