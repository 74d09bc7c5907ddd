"""Prices from genai-prices' shipped table: a known model as the table
calculates it, [budget.prices] overrides winning, an unknown model at its
provider's most expensive rates (or the whole table's), estimated; the table's
date; nothing fetched from the network, and no snapshot but the shipped one."""
from __future__ import annotations

import datetime
import subprocess
import sys
import textwrap
from calendar import timegm
from dataclasses import replace
from decimal import Decimal

import genai_prices
import pytest
from genai_prices.data import providers as table_providers

from leash.core.policy.prices import guess_provider, most_expensive, price, table_date, table_version
from leash.core.policy.usagelines import TokenUsage

from ..support.checkout import ROOT

WHEN = float(timegm((2026, 11, 28, 12, 0, 0, 0, 0, 0)))
MOMENT = datetime.datetime.fromtimestamp(WHEN, datetime.UTC)


def Tokens(model: str, **counts) -> TokenUsage:  # the model first, as the tests read best
    return TokenUsage(model=model, **{"cli": "", **counts})


CALL = Tokens("claude-opus-4-5-20251101", input=1_000, output=500, cache_write=2_000, cache_read=10_000, cli="claude")


def the_tables_own(usage: TokenUsage, provider: str, model: str | None = None) -> Decimal:
    """genai-prices' own calculation for the same call (its input counts the cached tokens too)."""
    return genai_prices.calc_price(
        genai_prices.Usage(input_tokens=usage.input + usage.cache_write + usage.cache_read,
                           cache_write_tokens=usage.cache_write, cache_read_tokens=usage.cache_read,
                           output_tokens=usage.output, output_reasoning_tokens=usage.reasoning),
        model or usage.model, provider_id=provider, genai_request_timestamp=MOMENT).total_price


@pytest.mark.parametrize("usage, provider", [
    (CALL, "anthropic"),
    (Tokens("gpt-5", input=3_000, output=1_200, cache_read=40_000, reasoning=800, cli="codex"), "openai"),
    (Tokens("gemini-2.5-pro", input=250_000, output=9_000, reasoning=4_000, cli="gemini"), "google"),
    (Tokens("claude-sonnet-4-5", input=150_000, output=2_000, cache_read=100_000, cli="claude"), "anthropic"),
])
def test_a_known_model_costs_what_the_table_calculates(usage, provider):
    priced = price(usage, when=WHEN)
    assert priced.usd == the_tables_own(usage, provider) and priced.usd > 0
    assert (priced.estimated, priced.provider, priced.basis) == (False, provider, "table")
    assert priced.model and usage.model.startswith(priced.model)


def test_a_known_model_costs_its_rates_times_its_tokens():
    # claude-opus-4-5 in the table: USD 5 input, 6.25 cache write, 0.5 cache read, 25 output per million tokens.
    rates = next(m for p in table_providers if p.id == "anthropic" for m in p.models
                 if m.id == "claude-opus-4-5").get_prices(MOMENT)
    assert (rates.input_mtok, rates.cache_write_mtok, rates.cache_read_mtok, rates.output_mtok) == (5, 6.25, 0.5, 25)
    # 1,000 x 5 + 2,000 x 6.25 + 10,000 x 0.5 + 500 x 25 = 35,000 millionths of a dollar.
    assert price(CALL, when=WHEN).usd == Decimal("0.035")


def test_reasoning_is_part_of_output_and_billed_as_output_where_the_table_has_no_rate_for_it():
    thinking = replace(CALL, reasoning=400)
    priced = price(thinking, when=WHEN)
    assert priced.usd == price(CALL, when=WHEN).usd  # inside the 500 output tokens: not billed again
    assert priced.reasoning_as_output
    beyond = replace(CALL, output=100, reasoning=500)  # more than the output: counted apart, billed on top
    assert price(beyond, when=WHEN).usd == price(replace(CALL, output=600), when=WHEN).usd


def test_an_override_wins_over_the_table_and_its_cache_rates_default_to_its_input_rate():
    overrides = {"Claude-Opus-4-5-20251101": {"input": 1, "output": 2, "cache_read": 0.25}}
    priced = price(CALL, overrides=overrides, when=WHEN)
    # 1,000 x 1 + 2,000 x 1 (cache write: the input rate) + 10,000 x 0.25 + 500 x 2
    assert priced.usd == Decimal("0.0065")
    assert (priced.estimated, priced.basis, priced.model) == (False, "override", "Claude-Opus-4-5-20251101")


def test_an_exact_override_wins_over_a_pattern_and_a_longer_pattern_over_a_shorter():
    overrides = {"claude-*": {"input": 100, "output": 100}, "claude-opus-*": {"input": 1, "output": 1},
                 "claude-opus-4-5-20251101": {"input": 0, "output": 0}}
    assert price(CALL, overrides=overrides, when=WHEN).usd == 0
    del overrides["claude-opus-4-5-20251101"]
    assert price(CALL, overrides=overrides, when=WHEN).model == "claude-opus-*"
    assert price(replace(CALL, model="claude-haiku-9"), overrides=overrides, when=WHEN).model == "claude-*"
    assert price(replace(CALL, model="gpt-5"), overrides=overrides, when=WHEN).basis == "table"


def anthropic_models():
    return [m for p in table_providers if p.id == "anthropic" for m in p.models]


def test_an_unknown_claude_model_costs_anthropics_most_expensive_rates_and_is_estimated():
    unknown = replace(CALL, model="claude-zenith-9-20270101")
    priced = price(unknown, when=WHEN)
    assert (priced.estimated, priced.provider, priced.basis, priced.model) == (True, "anthropic", "provider-max", "")
    # each kind's rate: the highest any Anthropic model has (a tiered rate at its top tier)
    def top(key):
        rates = []
        for model in anthropic_models():
            rate = getattr(model.get_prices(MOMENT), key, None)
            if isinstance(rate, Decimal):
                rates.append(rate)
            elif rate is not None:  # tiered
                rates += [rate.base, *(tier.price for tier in rate.tiers)]
        return max(rates)
    expected = (unknown.input * top("input_mtok") + unknown.output * top("output_mtok")
                + unknown.cache_write * max(top("cache_write_mtok"), top("cache_write_1h_mtok"))
                + unknown.cache_read * top("cache_read_mtok")) / Decimal(1_000_000)
    assert priced.usd == expected
    # no Anthropic model in the table costs more for the same call
    known = [the_tables_own(unknown, "anthropic", model.id) for model in anthropic_models()]
    assert priced.usd >= max(known) > 0


def test_a_provider_is_guessed_from_the_model_name_then_the_cli():
    assert [guess_provider(name) for name in ("claude-x", "gpt-9", "o7-mini", "gpt-5-codex", "gemini-4", "llama")] \
        == ["anthropic", "openai", "openai", "openai", "google", ""]
    nameless = Tokens("", input=1_000_000, cli="gemini")
    priced = price(nameless, when=WHEN)
    assert (priced.estimated, priced.provider) == (True, "google")
    assert priced.usd == most_expensive("google", when=WHEN).input


def test_an_unknown_provider_costs_the_whole_tables_most_expensive_rates():
    mystery = Tokens("mystery-model-1", input=1_000_000, output=1_000_000)
    priced = price(mystery, when=WHEN)
    assert (priced.estimated, priced.provider, priced.basis) == (True, "", "table-max")
    every = most_expensive(None, when=WHEN)
    assert priced.usd == every.input + every.output
    for provider in ("anthropic", "openai", "google"):
        assert every.output >= most_expensive(provider, when=WHEN).output
    with pytest.raises(LookupError):
        most_expensive("no-such-provider", when=WHEN)


def test_the_tables_date_is_its_newest_price_change_by_then():
    dated = table_date(now=WHEN)
    day = datetime.date.fromisoformat(dated)
    assert day <= MOMENT.date()
    before = float(timegm((day.year, day.month, day.day, 0, 0, 0, 0, 0, 0))) - 1
    assert table_date(now=before) < dated  # a price in the table took effect that day
    assert price(CALL, when=WHEN).table_date == dated
    assert table_version() == f"genai-prices {genai_prices.__version__}"


def test_a_snapshot_set_by_another_library_is_not_used():
    from genai_prices.data_snapshot import DataSnapshot, set_custom_snapshot

    set_custom_snapshot(DataSnapshot(providers=[], from_auto_update=True))
    try:
        assert price(CALL, when=WHEN).usd == Decimal("0.035")
    finally:
        set_custom_snapshot(None)


def test_pricing_reaches_no_network_and_starts_no_thread():
    code = textwrap.dedent("""
        import socket, threading
        def refuse(*args, **kwargs):
            raise SystemExit("network used")
        socket.socket.connect = socket.socket.connect_ex = refuse
        socket.create_connection = socket.getaddrinfo = refuse
        from leash.core.policy.prices import most_expensive, price, table_date
        from leash.core.policy.usagelines import TokenUsage
        for model in ("claude-opus-4-5", "claude-zenith-9", "gpt-5", "mystery"):
            assert price(TokenUsage("claude", model, input=10, output=10)).usd > 0
        most_expensive(None)
        assert table_date()
        print(threading.active_count())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]
