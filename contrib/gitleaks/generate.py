#!/usr/bin/env python3
"""Generate ``core/base/gitleaks_rules.py`` from gitleaks' default ruleset.

Usage: ``python contrib/gitleaks/generate.py [--toml FILE] [--version V] [--out FILE]``
(defaults: ``contrib/gitleaks/gitleaks.toml``, the version in
``contrib/gitleaks/VERSION``, ``core/base/gitleaks_rules.py``).

gitleaks writes its rules for Go's RE2; leash runs them with Python's ``re``
(compiled with ``re.ASCII``, as RE2's ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are
ASCII). The conversion:

* an inline flag group ``(?i)`` anywhere becomes a scoped group ``(?i:...)``
  that runs to the end of the enclosing group, closed and reopened around each
  ``|`` of that group (RE2's flags cover the later alternatives too);
* ``\\z`` becomes ``\\Z``, ``(?<name>`` becomes ``(?P<name>``, ``\\Q...\\E``
  becomes the escaped literal, ``\\x{HHHH}`` becomes ``\\uHHHH``;
* POSIX classes (``[[:alnum:]]``) are spelled out as ranges, and ``[ & ~ |``
  inside a class are escaped (Python reads them as set operations to come);
* a ``{`` that does not start a repeat is a literal, as RE2 reads it;
* a leading lazy ``[\\w.-]{0,50}?`` (gitleaks' "up to 50 characters of the
  identifier before the keyword") is dropped: it never decides whether a rule
  matches or what the secret is, and it made every position cost a 50-step
  backtrack. How many characters it could take is kept as the rule's ``lead``,
  so an allowlist that reads the whole match still sees them;
* gitleaks ends a secret at a quote, backtick, whitespace, ``;``, an escaped
  newline or the end of the text. In shell commands (and in the descriptions
  leash writes about them) a secret also ends at ``) ] } , < > | &``
  (``K=sk_test_...&&run``, ``(... sk_test_...)``), so those end it too.

A rule that uses what ``re`` has no equivalent for (``\\p{...}`` Unicode
classes, the ``U`` flag), or whose converted pattern does not compile, is
dropped and counted. Rules that apply only to some file paths (``path = ...``)
are dropped too: a command or an edit's text has no path to test them against.
Allowlists are kept when they can be decided from the text alone (their
regexes and stopwords); one that needs a path or a commit is dropped.
"""
from __future__ import annotations

import argparse
import os
import pprint
import re
import sys
import tomllib
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_TOML = os.path.join(HERE, "gitleaks.toml")
DEFAULT_OUT = os.path.join(ROOT, "core", "halts", "gitleaks_rules.py")
VERSION_FILE = os.path.join(HERE, "VERSION")

POSIX_CLASSES = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": r"\x00-\x7f", "blank": r"\t ", "cntrl": r"\x00-\x1f\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": r"!-/:-@\[-`{-~",
    "space": r"\t\n\v\f\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
SUPPORTED_FLAGS = set("ims")
FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([):])")
REPEAT = re.compile(r"\{\d+(?:,\d*)?\}")


class Unconvertible(ValueError):
    """A pattern that uses RE2 syntax Python's ``re`` cannot express."""


def convert(pattern: str) -> str:
    """The Python ``re`` spelling of an RE2 pattern."""
    out: list[str] = []
    scopes: list[list[str]] = [[]]  # per open group: the inline flag scopes opened inside it
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i, piece = _escape(pattern, i)
        elif char == "[":
            i, piece = _char_class(pattern, i)
        elif char == "(":
            i, piece = _open_group(pattern, i, scopes)
        elif char == ")":
            if len(scopes) == 1:
                raise Unconvertible("unbalanced )")
            piece, i = ")" * len(scopes.pop()) + ")", i + 1
        elif char == "|":
            active = scopes[-1]
            piece, i = ")" * len(active) + "|" + "".join(f"(?{flags}:" for flags in active), i + 1
        elif char == "{":
            repeat = REPEAT.match(pattern, i)
            piece = repeat.group(0) if repeat else "\\{"
            i = repeat.end() if repeat else i + 1
        else:
            piece, i = char, i + 1
        out.append(piece)
    if len(scopes) != 1:
        raise Unconvertible("unbalanced (")
    return "".join(out) + ")" * len(scopes[0])


def _check_flags(on: str, off: str) -> None:
    unsupported = set(on + off) - SUPPORTED_FLAGS
    if unsupported:
        raise Unconvertible(f"flag {''.join(sorted(unsupported))}")


def _open_group(pattern: str, i: int, scopes: list[list[str]]) -> tuple[int, str]:
    if not pattern.startswith("(?", i):
        scopes.append([])
        return i + 1, "("
    for named in ("(?P<", "(?<"):
        if pattern.startswith(named, i):
            scopes.append([])
            return i + len(named), "(?P<"
    flag_group = FLAG_GROUP.match(pattern, i)
    if not flag_group:
        raise Unconvertible(f"group syntax {pattern[i:i + 4]!r}")
    on, off, end = flag_group.group(1), flag_group.group(2) or "", flag_group.group(3)
    _check_flags(on, off)
    flags = on + (f"-{off}" if off else "")
    if end == ":":
        scopes.append([])
        return flag_group.end(), f"(?{flags}:"
    if not flags:
        return flag_group.end(), ""
    scopes[-1].append(flags)
    return flag_group.end(), f"(?{flags}:"


def _escape(pattern: str, i: int, in_class: bool = False) -> tuple[int, str]:
    if i + 1 >= len(pattern):
        raise Unconvertible("trailing backslash")
    letter = pattern[i + 1]
    if letter in "pPC":
        raise Unconvertible(f"\\{letter} (Unicode classes)")
    if letter == "z" and not in_class:
        return i + 2, r"\Z"
    if letter == "Q":
        end = pattern.find(r"\E", i + 2)
        literal = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
        return (len(pattern) if end < 0 else end + 2), re.escape(literal)
    if letter == "x" and pattern.startswith("{", i + 2):
        end = pattern.index("}", i + 3)
        return end + 1, f"\\U{int(pattern[i + 3:end], 16):08x}"
    return i + 2, pattern[i:i + 2]


def _char_class(pattern: str, i: int) -> tuple[int, str]:
    out = ["["]
    i += 1
    if pattern.startswith("^", i):
        out.append("^")
        i += 1
    first = True
    while True:
        if i >= len(pattern):
            raise Unconvertible("unterminated [")
        char = pattern[i]
        if char == "]" and not first:
            out.append("]")
            return i + 1, "".join(out)
        first = False
        if char == "\\":
            i, piece = _escape(pattern, i, in_class=True)
            out.append(piece)
            continue
        if pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2:end] if end > 0 else ""
            if name not in POSIX_CLASSES:
                raise Unconvertible(f"POSIX class [:{name}:]")
            out.append(POSIX_CLASSES[name])
            i = end + 2
            continue
        doubled_dash = char == "-" and (pattern.startswith("-", i + 1) or pattern[i - 1] == "-")
        out.append("\\" + char if char in "[]&~|" or doubled_dash else char)
        i += 1


def compiles(source: str) -> str | None:
    """None when ``source`` compiles cleanly under re.ASCII, else why not."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            re.compile(source, re.ASCII)
        except (re.error, FutureWarning, DeprecationWarning) as exc:
            return str(exc)
    return None


def convert_allowlist(allowlist: dict) -> tuple | None:
    """(target, regexes, stopwords), or None when it needs a path or commit."""
    needs_context = bool(allowlist.get("paths") or allowlist.get("commits"))
    if needs_context and (allowlist.get("condition", "OR").upper() == "AND"
                          or not (allowlist.get("regexes") or allowlist.get("stopwords"))):
        return None
    regexes = []
    for regex in allowlist.get("regexes", []):
        source = convert(regex)
        problem = compiles(source)
        if problem:
            raise Unconvertible(f"allowlist regex: {problem}")
        regexes.append(source)
    stopwords = tuple(sorted({w.lower() for w in allowlist.get("stopwords", [])}))
    return allowlist.get("regexTarget", "secret"), tuple(regexes), stopwords


LAZY_PREFIX = r"[\w.-]{0,50}?"
LAZY_PREFIX_CHARS = 50


def strip_lazy_prefix(source: str) -> tuple[str, int]:
    """(source without its leading lazy ``[\\w.-]{0,50}?`` prefixes, how many
    characters they could have taken). Such a prefix only moves where a match
    starts, never whether there is one or what its secret is, and costs a
    backtracking attempt of up to 50 characters at every position."""
    lead = 0
    while True:
        if source.startswith(LAZY_PREFIX):
            source = source[len(LAZY_PREFIX):]
        elif source.startswith("(?i:" + LAZY_PREFIX):
            source = "(?i:" + source[len("(?i:" + LAZY_PREFIX):]
        else:
            return source, lead
        lead += LAZY_PREFIX_CHARS


SECRET_END = r"""[\x60'"\s;]|\\[nr]|$"""
SECRET_END_IN_COMMANDS = r"""[\x60'"\s;)\]},<>|&]|\\[nr]|$"""


def convert_rule(rule: dict) -> tuple:
    source, lead = strip_lazy_prefix(convert(rule["regex"]))
    source = source.replace(SECRET_END, SECRET_END_IN_COMMANDS)
    problem = compiles(source)
    if problem:
        raise Unconvertible(problem)
    allowlists = tuple(a for a in (convert_allowlist(a) for a in rule.get("allowlists", [])) if a is not None)
    keywords = tuple(sorted({k.lower() for k in rule.get("keywords", [])}))
    if not keywords:
        raise Unconvertible("no keywords to prefilter on")
    return (rule["id"], rule.get("description", ""), source, int(rule.get("secretGroup", 0)), keywords,
            float(rule.get("entropy", 0.0)), allowlists, lead)


def generate(config: dict) -> tuple[list[tuple], tuple, dict[str, list[str]]]:
    """(rules, global allowlist, {reason dropped: [rule ids]})."""
    rules, dropped = [], {}
    for rule in config.get("rules", []):
        if "path" in rule or "regex" not in rule:
            dropped.setdefault("path-scoped", []).append(rule["id"])
            continue
        try:
            rules.append(convert_rule(rule))
        except Unconvertible as exc:
            dropped.setdefault(f"unconvertible ({exc})", []).append(rule["id"])
    global_allowlist = convert_allowlist(config.get("allowlist", {})) or ("secret", (), ())
    return rules, global_allowlist, dropped


HEADER = '''"""gitleaks' default secret rules, as data for ``core/base/secrets.py``.

Generated by contrib/gitleaks/generate.py from gitleaks {version}
config/gitleaks.toml (MIT, (c) Zachary Rice; see contrib/gitleaks/LICENSE).
Do not edit: regenerate. {count} rules converted from RE2 to Python ``re``
(compile with re.ASCII); {dropped} dropped ({reasons}).

RULES: (id, description, regex, secret group (0: the first non-empty group),
keywords (lowercase; the rule runs only where one occurs), entropy (a secret at
or below it is no finding; 0: no test), allowlists, lead). An allowlist is
(target: "secret" | "match" | "line", regexes, stopwords): a finding is allowed
when a regex is found in the target or a stopword in the lowercased secret.
lead: how many [\\\\w.-] characters before the match gitleaks' own pattern
would include in it (a dropped lazy prefix); "match" allowlists read them.
"""
'''


def render(rules: list[tuple], global_allowlist: tuple, dropped: dict[str, list[str]], version: str) -> str:
    reasons = "; ".join(f"{reason}: {', '.join(ids)}" for reason, ids in sorted(dropped.items()))
    count = sum(len(ids) for ids in dropped.values())
    parts = [HEADER.format(version=version, count=len(rules), dropped=count, reasons=reasons or "none"),
             f"GITLEAKS_VERSION = {version!r}\n",
             f"GLOBAL_ALLOWLIST = {pprint.pformat(global_allowlist, width=120, compact=True)}\n",
             "RULES = (\n"]
    for rule in rules:
        parts.append("    " + pprint.pformat(rule, width=116, compact=True).replace("\n", "\n    ") + ",\n")
    parts.append(")\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toml", default=DEFAULT_TOML)
    parser.add_argument("--version", default=None, help="the gitleaks release the toml comes from")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    version = args.version
    if version is None:
        with open(VERSION_FILE, encoding="utf-8") as handle:
            version = handle.readline().strip()
    with open(args.toml, "rb") as handle:
        config = tomllib.load(handle)
    rules, global_allowlist, dropped = generate(config)
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(render(rules, global_allowlist, dropped, version))
    for reason, ids in sorted(dropped.items()):
        print(f"dropped {len(ids)} rule(s), {reason}: {', '.join(ids)}")
    print(f"wrote {len(rules)} rules from gitleaks {version} to {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
