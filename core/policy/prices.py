"""What a model call cost, in US dollars, from the price table the
``genai-prices`` package ships (never a table written here), with the
operator's ``[budget.prices]`` overrides winning over it.

``price(usage)`` prices one call's tokens (``TokenUsage`` of
``core.policy.usagelines``, or anything with its fields):

- a model in ``[budget.prices]`` (its name, or a pattern with ``*``, case
  ignored; the exact name before a pattern, the longest pattern first) at
  those rates: USD per million tokens, cache rates defaulting to the input
  rate, reasoning billed as output;
- a model the table knows at the table's own calculation (``genai_prices``:
  its cache read and write rates, its tiers by a request's input size, the
  price in effect at ``when``);
- any other model at the most expensive rate, for each kind of token, of its
  provider in the table, ``estimated``: the provider given, else guessed from
  the model's name (``claude-*`` Anthropic, ``gpt-*``, ``o1``... and
  ``*codex*`` OpenAI, ``gemini-*`` Google), else the one the table matches
  the name to, else the CLI's (claude, codex, gemini); a provider the table
  does not know, or none: the most expensive rate of the whole table.

The usage's counts are apart: ``input`` are input tokens neither written to
nor read from the cache, ``cache_write`` and ``cache_read`` those that were,
``output`` every output token, reasoning included, and ``reasoning`` the part
of ``output`` that was reasoning. Reasoning is billed at the table's reasoning
rate where a model has one and as output where it has none (``Priced.
reasoning_as_output``); a ``reasoning`` larger than ``output`` cannot be part
of it and is billed on top.

What this cannot see: 1-hour cache writes (priced at the table's cache write
rate, Anthropic's 5-minute one: under-counted), batch, priority or fast-mode
rates (a request's context the meter does not report: standard rates),
server tools (web searches), a provider's discounts or negotiated prices, and
a table that is out of date (``table_date()`` says how old it is; an override
mends a price). Tiers are by one request's input: price calls one by one.

The table is the package's shipped data only: nothing here fetches or
updates prices (the package's ``UpdatePrices`` is never started, and a
snapshot another library set in the process is not used). ``genai_prices``
imports pydantic and an HTTP client (~0.2 s): it is imported on first use,
never on the hook path (leashd and the CLI only).
"""
from __future__ import annotations

import datetime
import fnmatch
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from leash.core.policy.usagelines import TokenUsage as Usage

if TYPE_CHECKING:
    from genai_prices.data_snapshot import DataSnapshot
    from genai_prices.types import ModelInfo, ModelPrice, Provider
    from genai_prices.types import Usage as TableUsage

MILLION = Decimal(1_000_000)
PACKAGE = "genai-prices"
CLI_PROVIDERS = {"claude": "anthropic", "codex": "openai", "gemini": "google"}
_NAME_PROVIDERS = ((re.compile(r"claude-"), "anthropic"), (re.compile(r"(gpt-|o\d|.*codex)"), "openai"),
                   (re.compile(r"gemini-"), "google"))
# The table's rate keys for each kind of token; several: the most expensive counts for an unknown model.
_RATE_KEYS = {"input": ("input_mtok",), "output": ("output_mtok", "output_reasoning_mtok"),
              "cache_write": ("cache_write_mtok", "cache_write_1h_mtok"), "cache_read": ("cache_read_mtok",)}


@dataclass(frozen=True)
class Rates:
    """USD per million tokens of each kind."""

    input: Decimal
    output: Decimal
    cache_write: Decimal
    cache_read: Decimal

    def cost(self, usage: Usage) -> Decimal:
        output = all_output(usage)
        return (usage.input * self.input + usage.cache_write * self.cache_write
                + usage.cache_read * self.cache_read + output * self.output) / MILLION


@dataclass(frozen=True)
class Priced:
    """What a call cost: ``usd``; ``estimated`` when the table does not know the
    model; the table's model (or the override's name, or "" for an estimate)
    and the provider priced under ("" for the whole table); ``basis``:
    ``override``, ``table``, ``provider-max`` or ``table-max``; the table's date."""

    usd: Decimal
    estimated: bool
    model: str
    provider: str
    basis: str
    table_date: str
    reasoning_as_output: bool


def price(usage: Usage, *, provider: str | None = None, overrides: Mapping[str, Mapping] | None = None,
          when: float | None = None) -> Priced:
    """What ``usage`` cost at ``when`` (unix seconds; None: now), ``provider``
    (a table provider id such as ``anthropic``) given or guessed."""
    moment = datetime.datetime.now(datetime.UTC) if when is None else datetime.datetime.fromtimestamp(
        when, datetime.UTC)
    dated = table_date(now=moment.timestamp())
    named, rates = override_for(usage.model, overrides or {})
    guessed = provider or guess_provider(usage.model)
    if rates is not None:
        return Priced(rates.cost(usage), False, named, guessed or "", "override", dated, True)
    found = _in_table(usage.model, provider, guessed, usage.cli)
    if found is not None:
        table_provider, model = found
        calculation = model.calc_price(_table_usage(usage), table_provider, genai_request_timestamp=moment)
        separate = getattr(calculation.model_price, "output_reasoning_mtok", None) is not None
        return Priced(calculation.total_price, False, model.id, table_provider.id, "table", dated, not separate)
    fallback = guessed or CLI_PROVIDERS.get(usage.cli, "")
    if fallback and _provider(fallback) is not None:
        return Priced(most_expensive(fallback, when=moment.timestamp()).cost(usage), True, "", fallback,
                      "provider-max", dated, True)
    return Priced(most_expensive(None, when=moment.timestamp()).cost(usage), True, "", "", "table-max", dated, True)


def all_output(usage: Usage) -> int:
    """Every output token: ``output``, with ``reasoning`` added only when it is
    larger (it then cannot be a part of ``output`` and was counted apart)."""
    return usage.output + usage.reasoning if usage.reasoning > usage.output else usage.output


def guess_provider(model: str) -> str:
    """The provider a model's name says (``claude-*`` -> ``anthropic``...); "" when it says none."""
    name = model.lower().strip()
    for pattern, provider in _NAME_PROVIDERS:
        if pattern.match(name):
            return provider
    return ""


def override_for(model: str, overrides: Mapping[str, Mapping]) -> tuple[str, Rates | None]:
    """(the ``[budget.prices]`` name that prices ``model``, its rates), or ("", None)."""
    name = model.lower()
    keys = {key.lower(): key for key in overrides}
    chosen = keys.get(name)
    if chosen is None:
        patterns = sorted((key for key in keys if "*" in key and fnmatch.fnmatchcase(name, key)), key=len,
                          reverse=True)
        chosen = keys[patterns[0]] if patterns else None
    if chosen is None:
        return "", None
    given = overrides[chosen]
    input_rate = Decimal(str(given["input"]))
    return chosen, Rates(input=input_rate, output=Decimal(str(given["output"])),
                         cache_write=Decimal(str(given.get("cache_write", given["input"]))),
                         cache_read=Decimal(str(given.get("cache_read", given["input"]))))


def most_expensive(provider: str | None, *, when: float | None = None) -> Rates:
    """The most expensive standard rate of each kind among ``provider``'s models
    in the table (every provider's for None), as in effect at ``when``: a tiered
    rate at its top tier; a kind no model prices at the input rate found. Raises
    LookupError for a provider the table does not know."""
    moment = datetime.datetime.now(datetime.UTC) if when is None else datetime.datetime.fromtimestamp(
        when, datetime.UTC)
    return _most_expensive_in(provider, moment.replace(second=0, microsecond=0))


@functools.lru_cache(maxsize=64)
def _most_expensive_in(provider: str | None, moment: datetime.datetime) -> Rates:
    """``most_expensive`` for a minute (the whole table takes ~30 ms to go through;
    a price changes at a date or a time of day, never within a minute)."""
    if provider is None:
        providers = list(_snapshot().providers)
    else:
        found = _provider(provider)
        if found is None:
            raise LookupError(f"the price table knows no provider {provider!r}")
        providers = [found]
    best: dict[str, Decimal] = {}
    for each in providers:
        for model in each.models:
            prices = model.get_prices(moment)
            for kind, keys in _RATE_KEYS.items():
                for key in keys:
                    rate = _top_rate(prices, key)
                    if rate is not None and rate > best.get(kind, Decimal(-1)):
                        best[kind] = rate
    input_rate = best.get("input", Decimal(0))
    return Rates(input=input_rate, output=best.get("output", input_rate),
                 cache_write=best.get("cache_write", input_rate), cache_read=best.get("cache_read", input_rate))


def table_version() -> str:
    """``genai-prices 0.2.3``: the package whose data prices are read from."""
    from importlib.metadata import version

    return f"{PACKAGE} {version(PACKAGE)}"


def table_date(*, now: float | None = None) -> str:
    """The table's date (``YYYY-MM-DD``): the newest date a price in it took
    effect by ``now`` (None: the wall clock). genai-prices publishes no date for
    its data; the newest change it records is the best it shows of its age
    (a table can be newer than that, never older). Prices it holds for later
    dates (changes announced ahead) are left out."""
    today = (datetime.datetime.now(datetime.UTC) if now is None
             else datetime.datetime.fromtimestamp(now, datetime.UTC)).date()
    dates = [start for start in _start_dates() if start <= today]
    return max(dates).isoformat() if dates else ""


@functools.cache
def _start_dates() -> tuple[datetime.date, ...]:
    from genai_prices.types import StartDateConstraint

    found: set[datetime.date] = set()
    for provider in _snapshot().providers:
        for model in provider.models:
            conditions = model.prices if isinstance(model.prices, list) else []
            constraints = [price.constraint for price in conditions]
            constraints += [variant.constraint for variant in model.price_variants or []]
            found.update(each.start_date for each in constraints if isinstance(each, StartDateConstraint))
    return tuple(sorted(found))


@functools.cache
def _snapshot() -> DataSnapshot:
    """The package's shipped table, in a snapshot of leash's own (never one ``UpdatePrices`` fetched)."""
    from genai_prices.data import providers
    from genai_prices.data_snapshot import DataSnapshot

    return DataSnapshot(providers=providers, from_auto_update=False)


def _provider(provider_id: str) -> Provider | None:
    from genai_prices.data_snapshot import find_provider_by_id

    return find_provider_by_id(_snapshot().providers, provider_id)


def _in_table(model: str, given: str | None, guessed: str, cli: str) -> tuple[Provider, ModelInfo] | None:
    """The table's provider and model for ``model``: under the provider ``given``
    only; else under the one its name says, the one the table matches the name
    to (None), the CLI's."""
    if not model:
        return None
    attempts = [given] if given else list(dict.fromkeys([guessed or None, None, CLI_PROVIDERS.get(cli)]))
    for provider_id in attempts:
        if provider_id == "":
            continue
        try:
            return _snapshot().find_provider_model(model, None, provider_id, None)
        except LookupError:
            continue
    return None


def _table_usage(usage: Usage) -> TableUsage:
    """The table's usage: its input counts every input token, its output every output token."""
    from genai_prices.types import Usage as TableUsage

    output = all_output(usage)
    return TableUsage(input_tokens=usage.input + usage.cache_write + usage.cache_read,
                      cache_write_tokens=usage.cache_write, cache_read_tokens=usage.cache_read,
                      output_tokens=output, output_reasoning_tokens=usage.reasoning)


def _top_rate(prices: ModelPrice, key: str) -> Decimal | None:
    from genai_prices.types import TieredPrices

    rate = getattr(prices, key, None)
    if isinstance(rate, TieredPrices):
        return max([rate.base, *(tier.price for tier in rate.tiers)])
    return rate if isinstance(rate, Decimal) else None
