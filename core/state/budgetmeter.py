"""Reading what a session spent since the last reading, per model: the meter's
half of the budget (``core.state.budget`` charges what it finds).

``read_source`` reads one file of a session (a Claude Code transcript or one
of its subagents', a Codex CLI rollout) from the state the meter kept for it
(``BudgetUnit.meter``) and answers the new state and what to charge. The
state keeps, per model, the file's counts and dollars as read (``seen``) and
what was charged for it (``charged``): a file rewritten or truncated is read
again from its first byte (``core.state.meterread``'s ``reset``) and
charges only where its new totals pass what was charged — never twice, never
less than was spent. Each message is priced alone (``core.policy.prices``),
as its provider bills it; the dollars are summed per model.

``gemini_reading`` does the same for one Gemini CLI ``AfterModel`` payload:
a response's last chunk is counted once, by its key (the session and the
payload's time; the last ``GEMINI_KEYS_KEPT`` keys are kept).

Failure: a file that does not exist charges nothing and keeps its state;
another ``OSError`` is raised to the caller, which reports it. Lines that do
not parse are counted in the state (``skipped``), never fatal. A read is
bounded (``READS_PER_CALL`` blocks of ``core.state.meterread``'s
``MAX_READ_BYTES``): a larger file is read on over the next calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from leash.core.policy.prices import price
from leash.core.policy.usagelines import COUNTS, TokenUsage, gemini_usage
from leash.core.state.meterread import MeterCursor, read_new

READS_PER_CALL = 4  # blocks of MAX_READ_BYTES one call reads of one file (1 GiB), the rest next time
GEMINI_SOURCE = "gemini"
GEMINI_KEYS_KEPT = 64
FIGURES = (*COUNTS, "requests")  # a model's counts in a meter state, then its dollars apart


@dataclass
class Charge:
    """What one model's new spend comes to: ``counts`` in ``FIGURES`` order."""

    model: str
    usd: float = 0.0
    estimated: bool = False
    counts: list[int] = field(default_factory=lambda: [0] * len(FIGURES))

    def add(self, other: Charge) -> None:
        self.usd += other.usd
        self.estimated = self.estimated or other.estimated
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]


@dataclass
class SourceReading:
    """One source read: its new meter ``state``, the ``charges`` it adds, the
    lines it could not read this time, and whether it found any spend."""

    state: dict
    charges: list[Charge]
    skipped: int = 0
    found: bool = False


def _model_figures(table: dict, model: str) -> dict:
    return table.setdefault(model, {"counts": [0] * len(FIGURES), "usd": 0.0, "estimated": False})


def _add_usage(table: dict, usage: TokenUsage, *, overrides: dict, now: float) -> None:
    priced = price(usage, overrides=overrides, when=now)
    figures = _model_figures(table, usage.model)
    figures["counts"] = [a + b for a, b in zip(figures["counts"], [*usage.counts(), 1], strict=True)]
    figures["usd"] += float(priced.usd)
    figures["estimated"] = figures["estimated"] or priced.estimated


def _owed(seen: dict, charged: dict) -> list[Charge]:
    """What ``seen`` passes ``charged`` by, per model and figure (never below 0);
    ``charged`` is raised to match."""
    owed = []
    for model, figures in seen.items():
        done = _model_figures(charged, model)
        counts = [max(0, now - then) for now, then in zip(figures["counts"], done["counts"], strict=True)]
        usd = max(0.0, figures["usd"] - done["usd"])
        done["counts"] = [max(now, then) for now, then in zip(figures["counts"], done["counts"], strict=True)]
        done["usd"] = max(figures["usd"], done["usd"])
        done["estimated"] = done["estimated"] or figures["estimated"]
        if usd > 0 or any(counts):
            owed.append(Charge(model, usd, figures["estimated"], counts))
    return owed


def read_source(path: str, state: dict | None, *, cli: str, overrides: dict, now: float) -> SourceReading:
    """Read ``path`` on from ``state`` (None the first time); see the module's docstring."""
    state = dict(state or {})
    cursor = MeterCursor.from_json(state["cursor"]) if state.get("cursor") else None
    seen: dict = state.get("seen") or {}
    charged: dict = state.get("charged") or {}
    skipped = 0
    found = False
    for _ in range(READS_PER_CALL):
        read = read_new(path, cursor, cli=cli)
        if read.missing:
            break
        if read.reset:
            seen = {}  # the whole file again: its totals are read anew, and charged where they pass
        for usage in read.usages:
            _add_usage(seen, usage, overrides=overrides, now=now)
            found = True
        cursor, skipped = read.cursor, skipped + read.skipped_lines
        if not read.more:
            break
    owed = _owed(seen, charged)
    state.update(seen=seen, charged=charged, skipped=int(state.get("skipped", 0)) + skipped, read_at=now, cli=cli)
    if cursor is not None:
        state["cursor"] = cursor.to_json()
    if found:
        state["found_at"] = now
    return SourceReading(state, owed, skipped, found and bool(owed))


def gemini_reading(payload: dict, state: dict | None, *, overrides: dict, now: float) -> SourceReading:
    """One ``AfterModel`` payload against the Gemini source's ``state``."""
    state = dict(state or {})
    usage = gemini_usage(payload)
    if usage is None:
        return SourceReading(state, [])
    if not isinstance(usage, TokenUsage):  # a payload shaped like usage whose counts are not counts
        state["skipped"] = int(state.get("skipped", 0)) + 1
        return SourceReading(state, [], skipped=1)
    keys = list(state.get("keys") or [])
    if usage.key and usage.key in keys:
        return SourceReading(state, [])
    keys = (keys + [usage.key])[-GEMINI_KEYS_KEPT:]
    table: dict = {}
    _add_usage(table, usage, overrides=overrides, now=now)
    figures = table[usage.model]
    state.update(keys=keys, read_at=now, found_at=now, cli=GEMINI_SOURCE)
    return SourceReading(state, [Charge(usage.model, figures["usd"], figures["estimated"], figures["counts"])],
                         found=True)
