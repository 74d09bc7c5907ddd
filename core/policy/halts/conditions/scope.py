"""Scope: out of scope, ambiguous requirements, conflicting instructions, unauthorized production."""
from __future__ import annotations

import os
import re

from leash.core.base.lazy_re import lazy
from leash.core.policy.halts.conditions.registry import Finding, condition

# Markers of underspecified requirements. Hedges soften what is wanted;
# placeholders admit it is not decided yet. Matched as whole words/phrases,
# case-insensitively, in user_instructions and the operation.
HEDGES = ("maybe", "perhaps", "possibly", "probably", "somehow", "something like", "or something",
          "some kind of", "sort of", "kind of", "i think", "i guess", "not sure", "unsure", "might",
          "could be", "whatever", "etc", "and so on", "and stuff", "or whatever", "if possible",
          "as needed", "as appropriate", "somewhere", "some of", "a few", "various", "either way")
PLACEHOLDERS = ("tbd", "tbc", "todo", "???", "to be decided", "to be determined", "fill in", "xxx")
_MARKER = lazy(r"(?<![\w?])(" + "|".join(re.escape(m) for m in sorted(HEDGES + PLACEHOLDERS, key=len,
                                                                               reverse=True)) + r")(?![\w?])",
                     re.IGNORECASE)
DEFAULT_MIN_MARKERS = 2
MAX_CONFLICTS_SHOWN = 20

# Negations and antonym verbs used to find instruction pairs that cancel out.
_NEGATIONS = ("do not", "don't", "dont", "never", "must not", "mustn't", "should not", "shouldn't", "cannot",
              "can't", "no longer", "refrain from", "not")
_FILLER = ("please", "always", "make sure to", "make sure you", "be sure to", "you must", "you should", "must",
           "should", "you", "we", "to", "the", "a", "an", "any", "all")
ANTONYMS = {"enable": "disable", "add": "remove", "include": "exclude", "increase": "decrease", "allow": "deny",
            "show": "hide", "create": "delete", "keep": "drop", "install": "uninstall", "open": "close",
            "start": "stop", "lock": "unlock", "use": "avoid", "commit": "revert", "merge": "split",
            "raise": "lower", "expand": "collapse", "import": "export", "permit": "forbid"}
_INVERSE = {v: k for k, v in ANTONYMS.items()}

PRODUCTION_TAGS = lazy(
    r"(?:^|[\s=:/@._-])(prod|production|prd|live)(?:$|[\s=:/@._-])", re.IGNORECASE)


def _normal(text: str) -> str:
    text = text.lower().replace("’", "'")
    text = re.sub(r"[^\w' ]+", " ", text)
    return " ".join(text.split())


def polarity_and_core(instruction: str) -> tuple[bool, str]:
    """(positive?, core words) of one instruction after normalisation."""
    text = f" {_normal(instruction)} "
    positive = True
    for negation in sorted(_NEGATIONS, key=len, reverse=True):
        if f" {negation} " in text:
            positive = not positive
            text = text.replace(f" {negation} ", " ", 1)
            break
    words = [w for w in text.split() if w not in _FILLER]
    if words and words[0] in _INVERSE:
        words[0], positive = _INVERSE[words[0]], not positive
    return positive, " ".join(words)


def conflicting_pairs(instructions: list[str]) -> list[tuple[str, str]]:
    """Instruction pairs with the same core and opposite polarity, found by
    grouping on the core (linear, not every pair compared)."""
    groups: dict[str, list[tuple[int, str, bool]]] = {}
    for index, text in enumerate(instructions):
        positive, core = polarity_and_core(text)
        if core:
            groups.setdefault(core, []).append((index, text, positive))
    pairs = []
    for members in groups.values():
        positives = [m for m in members if m[2]]
        negatives = [m for m in members if not m[2]]
        for first, second in ((a, b) for a in positives for b in negatives):
            pairs.append((first[1], second[1]) if first[0] < second[0] else (second[1], first[1]))
            if len(pairs) >= MAX_CONFLICTS_SHOWN:
                return pairs
    return pairs


def scope_patterns(boundary: str) -> list[str]:
    """Globs of a scope boundary: separated by commas, semicolons or whitespace."""
    return [p for p in re.split(r"[,;\s]+", boundary) if p] if boundary.strip() else []


@condition("out_of_scope", "scope", "high", write_or_exec=True)
def out_of_scope(ctx, threshold):
    """Fires when ``scope_boundary`` lists path globs (``src/billing/**,
    tests/**``; ``*`` stays in a directory, ``**`` crosses them) and a file to
    change matches none of them, paths taken relative to the cwd. An empty
    boundary means no limit."""
    from leash.core.base.globs import compile_glob, path_candidates

    patterns = scope_patterns(ctx.scope_boundary)
    if not patterns:
        return None
    compiled = [(p, compile_glob(p)) for p in patterns]
    outside = []
    for path in ctx.files_to_change:
        absolute, relative = path_candidates(path, ctx.cwd)
        relative = relative if relative is not None else (None if os.path.isabs(path) else os.path.normpath(path))
        if not any(c.match(absolute if p.startswith("/") else (relative or "")) for p, c in compiled):
            outside.append(path)
    if not outside:
        return None
    return Finding(f"Operation exceeds the scope boundary ({ctx.scope_boundary}): {', '.join(outside)}",
                   context={"file_paths": outside})


@condition("ambiguous_requirements", "scope", "medium")
def ambiguous_requirements(ctx, threshold):
    """Fires when ``user_instructions`` hold at least
    ``min_markers`` (default 2) markers of underspecification — hedges such as
    "maybe", "somehow", "or something", "not sure", "etc." — or any placeholder
    ("TBD", "TODO", "???", "to be decided"). The marker lists are in
    ``core/policy/halts/conditions/scope.py``."""
    texts = ctx.user_instructions
    markers = [m.group(1).lower() for text in texts for m in _MARKER.finditer(text)]
    placeholders = [m for m in markers if m in PLACEHOLDERS]
    needed = threshold.get("min_markers", DEFAULT_MIN_MARKERS)
    if not placeholders and len(markers) < needed:
        return None
    return Finding(f"Requirements allow more than one interpretation (markers: {', '.join(sorted(set(markers)))})")


@condition("conflicting_instructions", "scope", "high")
def conflicting_instructions(ctx, threshold):
    """Fires when two ``user_instructions`` negate each other after
    normalisation: lower-cased, punctuation and filler words ("please",
    "always", "make sure to", "must", ...) removed, one negation ("do not",
    "never", "avoid", "stop", ...) flips the polarity and antonym verbs
    ("enable"/"disable", "add"/"remove", "use"/"avoid", ...) are folded; two
    instructions with the same remaining words and opposite polarity
    conflict ("Use tabs" / "Never use tabs", "Enable caching" / "Disable
    caching")."""
    pairs = conflicting_pairs(ctx.user_instructions)
    if not pairs:
        return None
    shown = [f'"{a}" vs "{b}"' for a, b in pairs]
    return Finding(f"User instructions contradict each other: {'; '.join(shown)}",
                   annotations={"conflicting_instructions": [x for pair in pairs for x in pair]})


def production_mentions(ctx) -> list[str]:
    from leash.core.policy.halts.conditions.environment import environment_of, short_words

    hits = []
    for command, words in short_words(ctx):
        if "production" in environment_of(" ".join(words)):
            hits.append(" ".join(command.argv)[:200])
    return hits


def read_only_command(command) -> bool:
    from leash.core.policy.halts.conditions.security import READ_ONLY_PROGRAMS

    if command.program in ("kubectl", "oc", "helm"):
        verb = _verb_after_global_options(command.argv[1:])
        return verb in ("get", "describe", "logs", "top", "explain", "version", "status", "list", "history")
    return command.program in READ_ONLY_PROGRAMS


# Global options of kubectl/oc/helm that take a value in the next word.
_VALUE_OPTIONS = {"--context", "--kube-context", "-n", "--namespace", "--kubeconfig", "-s", "--server", "--cluster",
                  "--user", "--as", "--token"}


def _verb_after_global_options(words: list[str]) -> str:
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in _VALUE_OPTIONS  # "--context=prod" carries its value
            continue
        return word
    return ""


@condition("unauthorized_production", "scope", "critical", pure=True, write_or_exec=True)
def unauthorized_production(ctx, threshold):
    """Fires when the change targets production without approval: the
    ``environment`` is prod/production/live, or a command names a production
    target (a word such as ``--env=prod``, ``production``, ``prod-db``), and
    the call changes something (files to change, or a command that is not
    read-only), and ``production_approved`` is not true."""
    if ctx.production_approved:
        return None
    in_production = bool(PRODUCTION_TAGS.search(f" {ctx.environment} ")) if ctx.environment else False
    mentions = production_mentions(ctx)
    if not in_production and not mentions:
        return None  # (nothing below can fire: which commands change things is not asked)
    changing_commands = [" ".join(c.argv)[:200] for c in ctx.simple_commands() if not read_only_command(c)]
    mentioned = [c for c in mentions if c in changing_commands]
    if in_production and (ctx.files_to_change or changing_commands):
        what = ", ".join(ctx.files_to_change + changing_commands)
        return Finding(f"Production change without approval in environment {ctx.environment!r}: {what}")
    if mentioned:
        return Finding(f"Production change without approval: {'; '.join(mentioned)}")
    return None
