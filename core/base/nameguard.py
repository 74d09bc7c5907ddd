"""A stop filed under a name nothing answers to: a warning, never a refusal.

A stop may be filed before its session is seen (an operator stops an agent
about to start), so an unknown name is filed as asked. But a name that only
looks like a known one — a Cyrillic ``а`` for a Latin ``a``, a bidi override,
a tmux target with ``:`` or ``.`` (tmux never names a session so) — holds
nothing the operator meant to hold, and the operator must hear of it at once.

``warning_for(name, known)`` says why in one line, or None. ``known`` are the
names something answers to: agent session ids, tmux session names and ids the
hooks have seen, entities, and the tmux sessions running now.

The look-alike rule is deterministic and small, not Unicode's whole
confusables table: compatibility decomposition (NFKD), combining marks
dropped, case folded, and a table of the Cyrillic and Greek letters that look
like Latin ones mapped to them. A look-alike outside that table is reported
only as "nothing answers to this name".

Failure: none; it only reads the names it is given.
"""
from __future__ import annotations

import unicodedata

TARGET_SEPARATORS = ":."  # tmux splits a target at these; no session name holds them
# Cyrillic and Greek letters drawn like Latin ones (lower case; text is folded first).
HOMOGLYPHS = str.maketrans({
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "ɡ": "g", "ӏ": "l", "ԛ": "q", "ԝ": "w",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "γ": "y", "ζ": "z",
})


def skeleton(name: str) -> str:
    """What ``name`` looks like: NFKD, no combining marks or format characters,
    folded case, homoglyphs mapped to Latin."""
    decomposed = unicodedata.normalize("NFKD", name)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) and unicodedata.category(c) != "Cf")
    return kept.casefold().translate(HOMOGLYPHS)


def warning_for(name: str, known: set[str]) -> str | None:
    """Why a stop of ``name`` may hold nothing meant (one line), or None."""
    if name in known:
        return None
    hidden = [c for c in name if unicodedata.category(c) == "Cf"]
    if hidden:
        return (f"warning: the name holds {len(hidden)} invisible formatting character(s) "
                f"(such as {ascii(hidden[0])}); nothing answers to it")
    looks = skeleton(name)
    twins = sorted(other for other in known if other != name and skeleton(other) == looks)
    if twins:
        return f"warning: nothing answers to this name, but it looks like {twins[0]!r}: check the spelling"
    if any(c in name for c in TARGET_SEPARATORS) and "/" not in name:
        return ("warning: nothing answers to this name, and tmux never names a session with ':' or '.' "
                "(it was filed; it holds an agent session of that id if one appears)")
    return "warning: nothing answers to this name yet (it was filed, and holds the session if one appears)"


def known_names(sessions: dict) -> set[str]:
    """The names the sessions the hooks have seen answer to: their ids, tmux
    session names and ids (as the store keeps them, and without a host), and
    entities."""
    names: set[str] = set()
    for session_id, record in sessions.items():
        names.add(session_id)
        for key in ("tmux_session", "tmux_session_id", "entity"):
            value = getattr(record, key, None)  # a SessionRecord's field
            if isinstance(value, str) and value:
                names.update({value, value.partition("/")[2] or value})
    return names
