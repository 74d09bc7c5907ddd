"""Execution: three strikes, repeated errors, cascading failures, unknown errors."""
from __future__ import annotations

import re

from leash.core.base.lazy_re import lazy
from leash.core.policy.halts.conditions.registry import Finding, condition

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_SIMILARITY = 0.8
DEFAULT_CHAIN = 3
# Errors are compared pairwise with difflib (quadratic in length), so only the
# latest errors, and only their last characters (where the message usually
# ends), are compared: the work per check is bounded whatever the input holds.
ERRORS_COMPARED = 20
ERROR_CHARS_COMPARED = 2000
RESET_PHRASES = lazy(r"\b(?:try again|start over|retry from scratch|new approach)\b", re.IGNORECASE)
# Phrases that tie one failure to the one before it.
_CHAIN_LINKS = lazy(
    r"during handling of the above exception|the above exception was the direct cause|caused by[: ]|"
    r"as a result of (?:the )?previous|due to (?:a |the )?previous (?:error|failure)|"
    r"because (?:a |the )?previous (?:step|command|error) failed|cascad", re.IGNORECASE)
# Known error categories; an error matching none of them is "unknown".
ERROR_CATEGORIES = {
    "syntax": r"syntax ?error|unexpected (?:token|indent|eof|end of)|parse error|invalid syntax",
    "type": r"type ?error|cannot read propert|is not a function|not callable|unsupported operand|mismatched types",
    "name": r"name ?error|reference ?error|is not defined|undefined (?:variable|name|symbol|reference)|"
            r"cannot find (?:name|symbol)|unresolved",
    "attribute": r"attribute ?error|has no attribute|no member named|undefined method",
    "import": r"import ?error|module ?not ?found|no module named|cannot find module|could not resolve|"
              r"package .* not found|unresolved import",
    "value": r"value ?error|invalid (?:value|argument|literal)|key ?error|index ?error|out of range|"
             r"zero ?division|overflow",
    "file": r"no such file|file ?not ?found|enoent|not a directory|is a directory|file exists",
    "permission": r"permission denied|eacces|eperm|operation not permitted|access denied|forbidden|unauthori[sz]ed",
    "network": r"connection (?:refused|reset|timed out)|econnrefused|timed? ?out|timeout|name or service not known|"
               r"could not resolve host|network is unreachable|ssl|certificate",
    "http": r"\b[45]\d\d\b.*(?:error|not found|bad request|unavailable)|http error|status code [45]\d\d",
    "test": r"assert(?:ion)?(?: ?error)?|expected .* (?:got|but|to)|tests? failed|\bfailed\b.*\btests?\b|"
            r"\d+ failed",
    "build": r"compil(?:e|ation) (?:error|failed)|build failed|linker|undefined symbol|make: \*\*\*|error\[e\d+\]",
    "command": r"command not found|not recognized as|exit (?:code|status) \d+|returned non-zero|killed|"
               r"segmentation fault|core dumped|out of memory|memory ?error|disk full|no space left",
    "git": r"merge conflict|conflict \(content\)|not a git repository|rejected|non-fast-forward|detached head",
    "lock": r"database is locked|deadlock|resource busy|lock (?:held|timeout)",
}
_CATEGORY = {name: lazy(pattern, re.IGNORECASE) for name, pattern in ERROR_CATEGORIES.items()}


def normalise_error(text: str) -> str:
    """An error with its incidental parts (numbers, addresses, paths, ids,
    quoted values) replaced, lower-cased, whitespace folded."""
    text = text.lower()
    text = re.sub(r"0x[0-9a-f]+", "<hex>", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)
    text = re.sub(r"(?:[a-z]:)?(?:/[\w.\-]+){2,}", "<path>", text)
    text = re.sub(r"\d+(?:\.\d+)?", "<n>", text)
    return " ".join(text.split())


def similarity(a: str, b: str) -> float:
    from difflib import SequenceMatcher

    return SequenceMatcher(None, normalise_error(a), normalise_error(b), autojunk=False).ratio()


def recent_errors(ctx) -> list[str]:
    return [e[-ERROR_CHARS_COMPARED:] for e in ctx.all_errors[-ERRORS_COMPARED:]]


def reset_requested(ctx) -> bool:
    return ctx.new_information or any(RESET_PHRASES.search(t) for t in ctx.user_instructions)


@condition("three_strikes", "execution", "high")
def three_strikes(ctx, threshold):
    """Fires when ``attempt_number`` or the stored failure counter for this
    session and task reaches ``max_attempts`` (3). The counter resets, and the
    rule does not fire, on the seed's reset conditions: a new task (another
    ``task_id`` has its own counter), the user giving new information
    (``new_information``) or saying "try again" in ``user_instructions``, and a
    new session (counters are per session)."""
    limit = threshold.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
    if reset_requested(ctx):
        return None
    attempts = max(ctx.attempt_number or 0, ctx.stored_attempts)
    if attempts < limit:
        return None
    return Finding(f"Task has failed {attempts} times. Context may be contaminated.",
                   context={"attempt_number": attempts})


@condition("repeated_errors", "execution", "medium")
def repeated_errors(ctx, threshold):
    """Fires when two of the previous errors (given and stored) are similar:
    ``difflib`` ratio of the normalised messages (numbers, addresses, paths
    and ids replaced) at or above ``similarity_threshold`` (0.8)."""
    limit = threshold.get("similarity_threshold", DEFAULT_SIMILARITY)
    errors = recent_errors(ctx)
    similar: list[str] = []
    for i, first in enumerate(errors):
        for second in errors[i + 1:]:
            if similarity(first, second) >= limit:
                similar += [e for e in (first, second) if e not in similar]
    if not similar:
        return None
    return Finding("Similar errors across attempts suggest fundamental misunderstanding",
                   annotations={"similar_previous_errors": similar})


def chain_length(errors: list[str], limit: float) -> int:
    """The longest failure chain: links inside one error ("caused by",
    "during handling of the above exception"), or consecutive errors that are
    each a different failure."""
    longest = max((1 + len(_CHAIN_LINKS.findall(e)) for e in errors), default=0)
    run = 0
    for i, error in enumerate(errors):
        run = 1 if i == 0 or similarity(errors[i - 1], error) >= limit else run + 1
        longest = max(longest, run)
    return longest


@condition("cascading_failures", "execution", "high")
def cascading_failures(ctx, threshold):
    """Fires when a failure chain reaches ``max_chain_length`` (3): either one
    error reports that many linked failures ("Caused by:", "During handling
    of the above exception ...", "due to previous error"), or that many
    consecutive previous errors are each different from the one before
    (similarity below the repeated-errors threshold) — every fix breaking
    something new."""
    limit = threshold.get("max_chain_length", DEFAULT_CHAIN)
    length = chain_length(recent_errors(ctx), DEFAULT_SIMILARITY)
    if length < limit:
        return None
    return Finding(f"A chain of {length} failures, each causing or following the next")


def error_category(text: str) -> str | None:
    return next((name for name, pattern in _CATEGORY.items() if pattern.search(text)), None)


@condition("unknown_errors", "execution", "medium")
def unknown_errors(ctx, threshold):
    """Fires when the latest error matches none of the known categories
    (syntax, type, name, attribute, import, value, file, permission, network,
    HTTP, test, build, command, git, lock — patterns in
    ``core/policy/halts/conditions/execution.py``)."""
    errors = recent_errors(ctx)
    if not errors or error_category(errors[-1]) is not None:
        return None
    return Finding(f"Error not in known categories: {errors[-1][:200]}")
