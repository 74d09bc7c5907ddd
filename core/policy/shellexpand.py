"""Expansion, the way bash expands a word: variables, ``~``, braces and globs.

``Expander`` is the part of the shell reader that turns a word as written
(its segments: bare text, quoted text, a variable, a command substitution)
into the words it becomes, with a flag for each that says whether part of it
is computed (an unknown variable, a command's output). Braces and globs are
expanded against the working tree within the budgets of
``core.shellcommand`` (``MAX_EXPANDED_WORDS`` words, ``MAX_GLOB_ENTRIES``
directory entries); past them the word stays as written and its directory is
reported in ``overflow``. ``$'...'`` text is decoded by ``decode_ansi_c`` and
``${NAME:-word}`` by ``parameter``. Nothing here raises.
"""
from __future__ import annotations

import os
import re

from leash.core.policy.shellcommand import MAX_EXPANDED_WORDS, MAX_GLOB_ENTRIES, MAX_PATTERN_CHARS, MAX_UNSEEN, Reading

TYPE_CHECKING = False  # ``typing`` is for the type checker only: the hook path does not import it
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Literal

    from leash.core.policy.shellcommand import Scope

# segment kinds of a word as written
BARE, QUOTED, VAR, SUBST = 0, 1, 2, 3
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAGIC = re.compile(r"(?<!\\)(?:\\\\)*[*?\[]")
_SEQUENCE = re.compile(r"(-?\d{1,9})\.\.(-?\d{1,9})(?:\.\.(-?\d{1,9}))?\Z|([A-Za-z])\.\.([A-Za-z])\Z")
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_SPECIAL_CHARS = re.compile(r"([\\*?\[\]{},])")
_EXPANDABLE = re.compile(r"[*?\[{\\]")
GLOB_CHARS = "*?[{"


class Expander:
    """What a reading knows while it expands words: the environment, the
    leash home, the reading, and the budgets used so far."""

    def __init__(self, env: Mapping[str, str], home: str | None):
        self.env = env
        self.home = home
        self.reading = Reading()
        self.words = 0
        self.expanded = 0
        self.entries = 0
        self.next_id = 0

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def stop(self, why: str) -> None:
        if self.reading.incomplete is None:
            self.reading.incomplete = why

    def unseen(self, what: str) -> None:
        if len(self.reading.unseen) < MAX_UNSEEN and what not in self.reading.unseen:
            self.reading.unseen.append(what)

    # ------------------------------------------------------------ variables
    def lookup(self, name: str, scope: Scope) -> str | None:
        if name in scope.vars:
            return scope.vars[name]
        if name == "PWD":
            return scope.cwd
        if name == "LEASH_HOME":
            return self.env.get(name) or self.home
        value = self.env.get(name)
        if value is None and name == "HOME":
            value = os.path.expanduser("~")
        return value if isinstance(value, str) else None

    # ------------------------------------------------------------ expansion
    def expand(self, word: list, scope: Scope, overflow: list[str]) -> list[tuple[str, bool]]:
        """The words ``word`` becomes: (text, dynamic)."""
        if len(word) == 1 and word[0][0] == QUOTED:
            return [(word[0][1], False)]
        if len(word) == 1 and word[0][0] == BARE and not _needs_expansion(word[0][1]):
            return [(word[0][1], False)]
        pieces = [self._segment(index, segment, scope) for index, segment in enumerate(word)]
        pattern = "".join(text for text, _, _ in pieces)
        dynamic = any(computed for _, computed, _ in pieces)
        if not any(magic for _, _, magic in pieces) or len(pattern) > MAX_PATTERN_CHARS:
            return [(_unescape(pattern), dynamic)]
        return self._expanded(pattern, dynamic, scope, overflow)

    def _segment(self, index: int, segment: tuple, scope: Scope) -> tuple[str, bool, bool]:
        """(text with glob characters escaped unless bare, computed, may glob)."""
        kind, text = segment[0], segment[1]
        if kind == BARE:
            if index == 0 and text.startswith("~") and (len(text) == 1 or text[1] == "/"):
                text = _escape(self.lookup("HOME", scope) or "~") + text[1:]
            return text, False, any(c in text for c in GLOB_CHARS)
        if kind == QUOTED:
            return _escape(text), False, False
        if kind == VAR:
            value = self.lookup(text, scope) if len(segment) < 3 else segment[2](self, scope)
            if value is None:
                self.unseen(f"the value of ${text}")
                return _escape("$" + text), True, False
            return _escape(value), False, False
        return _escape("$(" + text + ")"), True, False

    def _expanded(self, pattern: str, dynamic: bool, scope: Scope, overflow: list[str]) -> list[tuple[str, bool]]:
        """Braces, then globs, within the budget."""
        budget = MAX_EXPANDED_WORDS - self.expanded
        alternatives = _braces(pattern, budget) if "{" in pattern else [pattern]
        if alternatives is None:
            overflow.append(_literal_dir(pattern))
            return [(_unescape(pattern), dynamic)]
        out: list[tuple[str, bool]] = []
        for alternative in alternatives:
            matches = self.glob(alternative, scope.cwd, overflow) if _MAGIC.search(alternative) else None
            out += [(m, dynamic) for m in matches] if matches else [(_unescape(alternative), dynamic)]
        self.expanded += len(out)
        return out

    def glob(self, pattern: str, cwd: str | None, overflow: list[str]) -> list[str]:
        """Paths matching ``pattern`` (escapes kept) under ``cwd``, sorted."""
        self.reading.listed_files = True
        absolute = pattern.startswith("/")
        base_dir = "/" if absolute else (cwd or "")
        if not base_dir:
            return []
        found: list[str] | None = [""]
        for part in pattern.split("/"):
            if part and found is not None:
                found = self._glob_part(part, found, base_dir, overflow, pattern)
        if found is None:
            return []
        lead = "/" if absolute else ""
        return [lead + f for f in found if os.path.lexists(os.path.join(base_dir, f))]

    def _glob_part(self, part: str, found: list[str], base_dir: str, overflow: list[str],
                   pattern: str) -> list[str] | None:
        """The paths ``found`` extended by one part of the pattern; None past the budget."""
        if not _MAGIC.search(part):
            literal = _unescape(part)
            return [os.path.join(f, literal) if f else literal for f in found]
        matcher = _segment_regex(part)
        hidden = part.startswith(".")
        grown: list[str] = []
        for prefix in found:
            try:
                entries = os.listdir(os.path.join(base_dir, prefix))
            except OSError:
                continue
            self.entries += len(entries)
            if self.entries > MAX_GLOB_ENTRIES or len(grown) + len(entries) > MAX_EXPANDED_WORDS:
                overflow.append(_literal_dir(pattern))
                return None
            grown += [os.path.join(prefix, e) if prefix else e for e in sorted(entries)
                      if matcher.match(e) and (hidden or not e.startswith("."))]
        return grown


def _needs_expansion(text: str) -> bool:
    return text.startswith("~") or _EXPANDABLE.search(text) is not None


def _escape(text: str) -> str:
    return _SPECIAL_CHARS.sub(r"\\\1", text)


def _unescape(text: str) -> str:
    return _ESCAPED.sub(r"\1", text) if "\\" in text else text


def _literal_dir(pattern: str) -> str:
    """The directory part of ``pattern`` before its first glob or brace."""
    cut = len(pattern)
    for match in re.finditer(r"(?<!\\)[*?\[{]", pattern):
        cut = match.start()
        break
    head = _unescape(pattern[:cut])
    return head.rsplit("/", 1)[0] if "/" in head else "."


def _segment_regex(part: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(part):
        c = part[i]
        if c == "\\" and i + 1 < len(part):
            out.append(re.escape(part[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            close = part.find("]", i + 2)
            if close == -1:
                out.append(r"\[")
            else:
                inner = part[i + 1:close]
                inner = "^" + inner[1:] if inner[:1] in "!^" else inner
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _braces(pattern: str, budget: int) -> list[str] | None:
    """Bash brace expansion of ``pattern`` (escapes kept); None past ``budget``."""
    depth, start = 0, -1
    commas: list[int] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            if depth == 0:
                start, commas = i, []
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = pattern[start + 1:i]
                alternatives = _alternatives(inner, [p - start - 1 for p in commas], budget)
                if alternatives is None:
                    return None
                if alternatives is not False:
                    prefix, suffix = pattern[:start], pattern[i + 1:]
                    out: list[str] = []
                    for alternative in alternatives:
                        rest = _braces(alternative + suffix, budget - len(out))
                        if rest is None:
                            return None
                        out += [prefix + r for r in rest]
                        if len(out) > budget:
                            return None
                    return out
        elif c == "," and depth == 1:
            commas.append(i)
        i += 1
    return [pattern]


def _alternatives(inner: str, commas: list[int], budget: int) -> list[str] | None | Literal[False]:
    if commas:
        if len(commas) + 1 > budget:
            return None
        bounds = [-1] + commas + [len(inner)]
        return [inner[bounds[k] + 1:bounds[k + 1]] for k in range(len(bounds) - 1)]
    match = _SEQUENCE.match(inner)
    if not match:
        return False  # not an expansion: the braces are literal
    if match.group(4):
        low, high = ord(match.group(4)), ord(match.group(5))
        step = 1 if high >= low else -1
        return [chr(c) for c in range(low, high + step, step)]
    low, high = int(match.group(1)), int(match.group(2))
    step = abs(int(match.group(3) or 1)) or 1
    if abs(high - low) // step + 1 > budget:
        return None
    return [str(n) for n in (range(low, high + 1, step) if high >= low else range(low, high - 1, -step))]



def decode_ansi_c(body: str) -> str:
    simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
              "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}

    def one(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] in simple:
            return simple[escape[0]]
        try:
            if escape[0] in "xuU":
                return chr(int(escape[1:], 16))
            return chr(int(escape, 8))
        except ValueError:
            return escape
    return re.sub(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", one, body,
                  flags=re.DOTALL)





def parameter(inner: str) -> tuple:
    """``${...}``: a plain name, or ``${NAME:-word}`` / ``${NAME-word}``."""
    match = _NAME.match(inner)
    if match and match.end() == len(inner):
        return (VAR, inner)
    if match and inner[match.end():match.end() + 2] in (":-", ":=") or (match and inner[match.end():][:1] in "-="):
        name = match.group()
        default = inner[match.end():].lstrip(":")[1:]

        def resolve(reader, scope, name=name, default=default):
            value = reader.lookup(name, scope)
            return value if value else (default if "$" not in default else None)
        return (VAR, name, resolve)
    return (VAR, "{" + inner + "}", lambda reader, scope: None)


