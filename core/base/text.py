"""Text from agents, made safe to put on an operator's terminal.

Session ids, tmux names, reasons, halt descriptions, commands and pane lines
come from agents, and an agent may write anything into them: an escape
sequence that retitles the terminal or clears the screen, a newline that forges
an extra line of ``leash status``, a bidi override that reorders a line.
Everything that shows such text to a person (the CLI and the console) passes it
through ``printable`` first::

    printable("sess\\x1b]0;pwned\\x07")     -> 'sess\\\\x1b]0;pwned\\\\x07'
    printable("a\\n fleet: STOPPED")        -> 'a\\\\n fleet: STOPPED'
    printable("x" * 50, limit=10)           -> 'xxxxxxxxx…'

The result is one line in which these characters are written as escapes, the
way Python's ``repr`` writes them (``\\n``, ``\\t``, ``\\r``, ``\\x1b``,
``\\u202e``, ``\\U000e0001``):
- C0 controls (U+0000–U+001F, newline, tab and carriage return included), DEL
  and the C1 controls (U+0080–U+009F): Unicode category ``Cc``;
- format characters (``Cf``): the bidi embeddings, overrides and isolates
  (U+202A–U+202E, U+2066–U+2069), the direction marks, zero-width characters,
  the byte-order mark, tag characters;
- the line and paragraph separators (U+2028, U+2029) and lone surrogates
  (what an undecodable byte becomes).
Every other character (letters of any script, emoji, spaces, backslashes) is
kept as it is: a backslash is not doubled, so an escape in the output may also
be text the agent typed; what matters is that nothing reaches the terminal as
a control. ``limit`` caps the result's length in characters, ending it with
``…`` when anything was cut, and never cuts an escape in half.

The function is pure and stdlib-only; a string with nothing to escape costs
one ``str.isprintable`` call. It never fails: a value that is not a string is
shown as ``str(value)``.
"""
from __future__ import annotations

import unicodedata

ELLIPSIS = "…"
# Unicode categories a terminal may act on instead of showing: controls, format
# characters (bidi overrides, zero-width), line/paragraph separators, surrogates.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in SHORT_ESCAPES:
        return SHORT_ESCAPES[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _pieces(text: str) -> list[str]:
    return [_escape(c) if unicodedata.category(c) in UNSAFE_CATEGORIES else c for c in text]


def printable(text: object, *, limit: int | None = None) -> str:
    """``text`` as one line with every control and format character escaped,
    at most ``limit`` characters long (ending in ``…`` when cut)."""
    if not isinstance(text, str):
        text = str(text)
    if limit is not None:
        limit = max(1, limit)
        text = text[:limit + 1]  # escaping only lengthens: the rest can never show
    if text.isprintable():  # no control, format or separator character at all
        if limit is None or len(text) <= limit:
            return text
        return text[:limit - 1] + ELLIPSIS
    pieces = _pieces(text)
    if limit is None:
        return "".join(pieces)
    if sum(map(len, pieces)) <= limit:
        return "".join(pieces)
    kept, used = [], 0
    for piece in pieces:
        if used + len(piece) > limit - 1:
            break
        kept.append(piece)
        used += len(piece)
    return "".join(kept) + ELLIPSIS
