"""The shell reader: what a command line would run, read the way bash reads it.

Every rule that looks at a shell command (path locks, halt conditions,
supervisor tampering) reads it through ``read_shell``, which returns the
simple commands the line would run, in order, each with its argv (quotes
removed, variables, ``~``, braces and globs expanded), its redirections and
the working directory it runs in. Nothing is executed.

What it follows: ``;``, ``&&``, ``||``, ``|``, ``&``, newlines, ``( ... )``
and ``{ ...; }``; ``$(...)``, backquotes and ``<(...)`` (their commands run
first, their output is unknown); ``bash -c``/``sh -c`` strings, ``eval``,
here-documents and here-strings fed to a shell, ``echo ... | sh``; wrappers
(``sudo``, ``env``, ``xargs``, ``nohup``, ``timeout``, ``nice`` ...), with
``env -C``/``sudo -D`` changing the directory; ``find -exec``/``-delete``;
``cd``/``pushd``/``popd`` carried across the list (a subshell or a nested
shell keeps its own); assignments (``D=~/x; rm -r $D``, ``export``);
``$HOME``, ``$PWD``, ``$LEASH_HOME`` and the variables of the given
environment; ``$'...'`` quoting; globs and braces expanded against the
working tree.

Bounds, so a huge or hostile line costs linear time: nesting deeper than
``MAX_DEPTH``, more than ``MAX_SIMPLE_COMMANDS`` commands or ``MAX_WORDS``
words stop the reading and set ``Reading.incomplete`` (rules fail closed on
it); brace and glob expansion share a budget of ``MAX_EXPANDED_WORDS`` words
and ``MAX_GLOB_ENTRIES`` directory entries, past which the word is kept as
written and its directory is reported as touched as a whole
(``SimpleCommand.overflow_dirs``). What the reader cannot know (a computed
word, a script file it would run) is listed in ``Reading.unseen``. It never
raises on any input.

The reader is split by concern: ``core.shellcommand`` (what it finds and its
bounds), ``core.shellparse`` (the parser), ``core.shellexpand`` (words),
``core.shelleffects`` (what commands change and run in turn) and
``core.shellresolve`` (what a computed program word runs).
"""
from __future__ import annotations

import os

from leash.core.policy.shellcommand import (
    MAX_DEPTH,
    MAX_EXPANDED_WORDS,
    MAX_GLOB_ENTRIES,
    MAX_SIMPLE_COMMANDS,
    MAX_WORDS,
    Reading,
    Scope,
    SimpleCommand,
)
from leash.core.policy.shelleffects import SHELLS, WRAPPERS

TYPE_CHECKING = False  # ``typing`` is for the type checker only: the hook path does not import it
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["MAX_DEPTH", "MAX_EXPANDED_WORDS", "MAX_GLOB_ENTRIES", "MAX_SIMPLE_COMMANDS", "MAX_WORDS", "SHELLS",
           "WRAPPERS", "Reading", "SimpleCommand", "read_shell", "simple_commands"]


def read_shell(lines, *, cwd: str | None = None, env: Mapping[str, str] | None = None,
               home: str | None = None) -> Reading:
    """Read one command line (or a list of them) into a ``Reading``."""
    from leash.core.policy.shellparse import Reader

    reader = Reader(env or {}, home)
    for line in [lines] if isinstance(lines, str) else lines:
        if reader.reading.incomplete:
            break
        reader.read(line, Scope(os.path.normpath(cwd) if cwd else None, {}, 0, (), 0))
    return reader.reading


def simple_commands(line: str, *, cwd: str | None = None,
                    env: Mapping[str, str] | None = None) -> list[SimpleCommand]:
    """Every simple command ``line`` would run, nested ones included."""
    return read_shell(line, cwd=cwd, env=env).commands
