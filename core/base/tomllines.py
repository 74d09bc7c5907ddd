"""Where a key sits in a config.toml's text, for messages that name its line.

tomllib gives the data without positions; these find, in the text, the line a
key is set on (under its table, as a dotted key, inside an inline table, in
the n-th ``[[notify.route]]``), word tomllib's own errors as one line, and
offer the known name a misspelt one was meant to be. They never raise: a key
that cannot be found is at line 0 (the message then names the file only).
"""
from __future__ import annotations

import re

DECODE_HINTS = {  # tomllib's words, and what usually causes them
    "Invalid value": "Invalid value (a string needs quotes; a boolean is true or false)",
}


def key_parts(text: str) -> list[str]:
    """A TOML key (``a.b``, ``"a b".c``, ``'x'``) split at its dots, quotes off."""
    parts, current, quote = [], "", ""
    for char in text.strip():
        if quote:
            if char == quote:
                quote = ""
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [part for part in parts if part]


_KEY_PART = r"(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')"  # a bare, "basic" or 'literal' key
_HEADER = re.compile(r"^\s*\[\[?\s*((?:[^\]\"']|\"[^\"]*\"|'[^']*')+?)\s*\]\]?")
_ASSIGN = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")


def line_of(text: str, table: str, key: str) -> int:
    """The line where ``key`` is set inside ``[table]`` (1-based; 0 when it
    cannot be found): under its table's header, as a dotted key
    (``gate.read_only_tools = ...``) or inside an inline table
    (``gate = {read_only_tools = ...}``: the line that opens it)."""
    wanted = key_parts(f"{table}.{key}" if table else key)
    current: list[str] = []
    near = 0  # the closest line found short of the key itself: its table, or an inline table holding it
    for number, line in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        found = _HEADER.match(line)
        if found:
            current = key_parts(found.group(1))
            if current == wanted:
                return number
            if current and wanted[:len(current)] == current and not near:
                near = number
            continue
        found = _ASSIGN.match(line)
        if not found:
            continue
        full = current + key_parts(found.group(1))
        if full == wanted:
            return number
        if full and wanted[:len(full)] == full:
            near = number  # an inline table (or a value) that holds the key
    return near


def decode_error(path: str, text: str, exc: Exception) -> str:
    """The one line for a file tomllib cannot parse: the file, the line, the key set there, what is wrong."""
    message = str(exc)
    lines = text.splitlines()
    found = re.search(r"at line (\d+)", message)
    if found:
        line = int(found.group(1))
    else:  # "at end of document": blame the last assignment, the one left open
        line = max((n for n, t in enumerate(lines, 1) if "=" in t), default=len(lines))
    reason = re.sub(r"\s*\((at line \d+, column \d+|at end of document)\)", "", message)
    reason = DECODE_HINTS.get(reason, reason)
    key = key_at(lines, line)
    where = f"{path}:{line}" if line else str(path)
    return f"{where}: key '{key}': {reason}" if key else f"{where}: {reason}"


def key_at(lines: list[str], line: int) -> str:
    """The dotted key set on ``line`` (its table included), or its table header."""
    if not 0 < line <= len(lines):
        return ""
    table = ""
    for source in lines[:line - 1]:
        header = re.match(r"^\s*\[+\s*([^\]]+?)\s*\]", source)
        if header:
            table = header.group(1).replace(" ", "")
    source = lines[line - 1]
    header = re.match(r"^\s*\[+\s*([^\]]*)", source)
    if header:
        return header.group(1).strip()
    left = source.split("=", 1)[0].strip() if "=" in source else source.strip()
    return f"{table}.{left}" if table and left else left


def array_table_line(text: str, header: str, number: int, key: str) -> int:
    """The line of ``key`` in the ``number``-th ``[[header]]`` table (its header's line when
    ``key`` is "" or not set there; 0 when there is no such table)."""
    wanted = "[[" + header.replace(" ", "") + "]]"
    seen, found = 0, 0
    for line_number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            if seen == number:
                break
            if stripped.replace(" ", "").startswith(wanted):
                seen += 1
                found = line_number if seen == number else found
            continue
        if seen == number and key and re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
            return line_number
    return found


def route_line(text: str, number: int, key: str) -> int:
    """The line of ``key`` in the ``number``-th ``[[notify.route]]`` table (its header when not set there)."""
    return array_table_line(text, "notify.route", number, key)


def did_you_mean(name: str, known) -> str:
    """`` (did you mean 'timeouts'?)`` when ``name`` is a near miss of one of ``known``; "" when none is near."""
    from difflib import get_close_matches  # only when a key is unknown

    close = get_close_matches(name, sorted(str(k) for k in known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
