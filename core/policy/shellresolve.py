"""What a computed program word runs, when the shell reader can tell without running anything.

``"$(which leash)" resume s1`` runs leash: the word is the output of ``which
leash``, a path whose last part is ``leash``. ``substitution_output`` answers
the last part of what a command substitution prints when its one pipeline
is a program that only names its operand — ``which``, ``command -v``/``-V``,
``type -P``/``-p``, ``whence -p``, ``readlink``/``realpath`` (of a word that
resolves in turn: ``$(readlink -f $(which leash))``), ``basename``, ``echo``
and ``printf`` of a plain word — optionally followed by filters that pass a
name through (``head``, ``tail``, ``tr -d``, ``sort``, ``uniq``, ``cat``).
Anything else is None: the word stays unresolved, and the rules that read it
treat it as unknown (see ``core.halts.conditions.supervisor``).

Only the program word's *name* is answered, never the path: ``which`` prints a
path leash cannot know without running it. ``echo``/``printf`` words with a
backslash or ``%`` escape are not resolved (their output is not the word).
Never raises; recursion follows nested substitutions, which the reader bounds
by its nesting depth.
"""
from __future__ import annotations

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

# Programs after the producer in the substitution's pipeline that keep a name as it is.
PASS_THROUGH = frozenset({"head", "tail", "tr", "sort", "uniq", "cat"})
_LOOKUP_FLAGS = {"command": ("-v", "-V"), "type": ("-P", "-p", "-a", "-fP", "-Pa", "-aP", "-pa", "-ap"),
                 "whence": ("-p",)}
_ECHO_OPTIONS = frozenset({"-n", "-e", "-E", "-ne", "-en"})


class Substitutions:
    """The commands of each command substitution of one reading, by its id:
    ``spans[ident] = (first, end)`` indexes into ``commands``."""

    __slots__ = ("commands", "spans")

    def __init__(self, commands: list):
        self.commands = commands
        self.spans: dict[int, tuple[int, int]] = {}

    def output(self, ident: int) -> str | None:
        """The last part of what substitution ``ident`` prints, or None."""
        first, end = self.spans.get(ident, (0, 0))
        inner = [c for c in self.commands[first:end] if c.within == ident]
        if not inner:
            return None
        group = [c for c in inner if c.pipeline == inner[-1].pipeline]
        if len(group) != len(inner) or any(c.program not in PASS_THROUGH for c in group[1:]):
            return None  # more than one pipeline prints: the word is their outputs, split
        producer = PRODUCERS.get(group[0].program)
        found = producer(group[0], self) if producer is not None and group[0].argv else None
        return _last_part(found) if found else None

    def word(self, command, index: int) -> str | None:
        """Word ``index`` of ``command``: as it is, or the output of the
        substitution it is wholly made of; None when computed otherwise."""
        if not command.dynamic[index]:
            return command.argv[index]
        source = command.sources[index] if index < len(command.sources) else 0
        return self.output(source) if source else None


def _last_part(text: str) -> str | None:
    text = text.strip().rstrip("/")
    name = text.rsplit("/", 1)[-1]
    return name if name and not any(c.isspace() for c in name) else None


def _operands(command) -> list[int]:
    return [i for i, w in enumerate(command.argv[1:], 1) if command.dynamic[i] or not w.startswith("-")]


def _named(command, subs: Substitutions) -> str | None:
    """``which NAME``, ``readlink -f WORD``, ``realpath WORD``, ``basename WORD``: the operand."""
    operands = _operands(command)
    return subs.word(command, operands[0]) if operands else None


def _looked_up(command, subs: Substitutions) -> str | None:
    """``command -v NAME``, ``type -P NAME``, ``whence -p NAME``: only with the flag that prints a path."""
    flags = _LOOKUP_FLAGS[command.program]
    if not any(w in flags for w in command.argv[1:] if w.startswith("-")):
        return None
    return _named(command, subs)


def _echoed(command, subs: Substitutions) -> str | None:
    words = command.argv[1:]
    while words and words[0] in _ECHO_OPTIONS:
        words = words[1:]
    if len(words) != 1 or command.dynamic[len(command.argv) - 1] or "\\" in words[0]:
        return None
    return words[0]


def _printed(command, subs: Substitutions) -> str | None:
    words = command.argv[1:]
    if any(command.dynamic[1:]) or not words or any("\\" in w for w in words):
        return None
    if len(words) == 1 and "%" not in words[0]:
        return words[0]
    if len(words) == 2 and words[0] in ("%s", "%s\n"):
        return words[1]
    return None


PRODUCERS: dict[str, Callable[..., str | None]] = {
    "which": _named, "readlink": _named, "realpath": _named, "basename": _named,
    "command": _looked_up, "type": _looked_up, "whence": _looked_up,
    "echo": _echoed, "printf": _printed,
}


def program_name(word: str, dynamic: bool, source: int, subs: Substitutions | None) -> str | None:
    """The name a program word runs: its last part, or what the substitution
    it is made of resolves to; None for a computed word that does not resolve."""
    if not dynamic:
        return word.rsplit("/", 1)[-1]
    return subs.output(source) if subs is not None and source else None

