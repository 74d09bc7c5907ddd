"""What the shell reader finds: ``SimpleCommand``, ``Reading``, and the ``Scope`` a shell runs in.

The shell reader (``core.shellread``) fills these; every rule reads them.
The bounds that keep a hostile line linear live here too, so each part of
the reader checks the same numbers. Nothing here fails.
"""
from __future__ import annotations

from leash.core.policy.shellresolve import Substitutions

MAX_DEPTH = 8
MAX_SIMPLE_COMMANDS = 1_000
MAX_WORDS = 16_000
MAX_EXPANDED_WORDS = 4096
MAX_GLOB_ENTRIES = 20_000
MAX_PATTERN_CHARS = 4096  # longer words are never brace- or glob-expanded
MAX_UNSEEN = 50  # notes of what the reader could not see, kept per reading


class SimpleCommand:
    """One simple command as it would run.

    ``argv``: words after expansion; ``dynamic``: per word, True when part of
    it is computed (an unknown variable, a command's output); ``redirects``:
    ``(op, target)`` with ``op`` normalised (``>``, ``>>``, ``<``, ``<>``,
    ``<<``, ``<<<``); ``via``: wrappers and shells it was found behind,
    outermost first; ``cwd``: where it runs (None when not known);
    ``pipeline``: commands joined by ``|`` share it; ``within``: the id of the
    command substitution it runs in (0 at top level) and ``feeds``: the ids of
    the substitutions in its own words; ``stdin_args``: xargs adds words it
    cannot see; ``overflow_dirs``: directories whose glob or brace expansion
    was cut short; ``heredoc``: the text of a here-document on its stdin;
    ``written``: the words as written (``~``, ``$HOME``, ``*`` unexpanded),
    leading assignments and wrappers included; ``sources``: per word of
    ``argv``, the id of the command substitution the word is wholly made of
    (0 for any other word); ``resolved``: the program a computed program word
    resolves to (``core.shellresolve``), else None; ``computed_redirects``:
    redirection targets that are computed (their value is not the path)."""

    __slots__ = ("argv", "dynamic", "redirects", "via", "cwd", "pipeline", "within", "feeds", "stdin_args",
                 "overflow_dirs", "heredoc", "substitutions", "line", "written", "sources", "resolved",
                 "computed_redirects")

    def __init__(self, argv, dynamic, redirects, via, cwd, pipeline, within, feeds, substitutions, line=""):
        self.argv, self.dynamic, self.redirects, self.via = argv, dynamic, redirects, via
        self.cwd, self.pipeline, self.within, self.feeds = cwd, pipeline, within, feeds
        self.substitutions = substitutions
        self.stdin_args = False
        self.overflow_dirs: list[str] = []
        self.heredoc: str | None = None
        self.line = line
        self.written: list[str] = list(argv)  # the words as written, before expansion (quotes removed)
        self.sources: list[int] = [0] * len(argv)
        self.resolved: str | None = None
        self.computed_redirects: list[str] = []

    @property
    def program(self) -> str:
        if self.resolved is not None:
            return self.resolved
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""

    def __repr__(self) -> str:
        return f"SimpleCommand({self.argv!r}, redirects={self.redirects!r}, via={self.via!r}, cwd={self.cwd!r})"


class Reading:
    """The result of reading one or more command lines."""

    __slots__ = ("commands", "unseen", "incomplete", "listed_files", "subs")

    def __init__(self):
        self.commands: list[SimpleCommand] = []
        self.subs = Substitutions(self.commands)  # what each command substitution ran, for resolving
        self.unseen: list[str] = []
        self.incomplete: str | None = None
        self.listed_files = False  # a glob was matched against the file system

    def pipelines(self) -> list[list[SimpleCommand]]:
        """Commands grouped by pipeline, in order (nested pipelines included)."""
        groups: dict[int, list[SimpleCommand]] = {}
        for command in self.commands:
            groups.setdefault(command.pipeline, []).append(command)
        return list(groups.values())


class Scope:
    """What a running shell knows: its directory, variables and depth."""

    __slots__ = ("cwd", "vars", "depth", "via", "within", "dirs")

    def __init__(self, cwd, variables, depth, via, within, dirs=()):
        self.cwd, self.vars, self.depth, self.via, self.within = cwd, variables, depth, via, within
        self.dirs = list(dirs)

    def subshell(self, *, via=None, within=None) -> Scope:
        return Scope(self.cwd, dict(self.vars), self.depth + 1, self.via if via is None else via,
                     self.within if within is None else within, self.dirs)
