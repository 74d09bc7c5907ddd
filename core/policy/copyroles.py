"""What copies and archives write and read.

The programs: ``cp``/``install``/``ln``/``rsync``/``scp``, ``tar``, ``unzip``, ``7z``, ``patch``.

* a copy writes its destination (and, into an existing directory, the names
  the sources get there) and reads its sources; ``-t DIR`` and
  ``--target-directory`` name the destination; ``install -d`` writes every
  operand; a remote destination (``host:path``) writes nothing here;
  ``rsync --remove-source-files`` writes its sources too;
* ``tar`` extracting (``x`` in a bundled or old-style option word,
  ``--extract``, ``--get``) writes the directories it extracts into —
  every ``-C DIR``, ``-CDIR``, ``--directory DIR`` and ``--directory=DIR``
  anywhere on the line, or the cwd — as whole subtrees; creating or
  appending writes the archive (``-f``, ``--file``, ``--file=``) and reads
  the operands it packs (relative to the ``-C`` before them); listing reads
  the archive; ``unzip``/``7z x`` write their target directory; ``patch``
  writes the file it names, or the directory it works in.

The handlers fill an ``core.argroles.Args``. Never raises on any input.
"""
from __future__ import annotations

import os

from leash.core.policy.argwords import VALUE_OPTIONS, is_dir

_TAR_VALUES = frozenset({"-C", "--directory", "-f", "--file", "-T", "--files-from", "-X", "--exclude-from",
                         "-b", "--blocking-factor", "-H", "--format", "-I", "--use-compress-program", "-V",
                         "--label", "-g", "--listed-incremental", "--exclude", "--transform", "--owner",
                         "--group", "--mode", "--strip-components", "-K", "--starting-file", "-N", "--newer"})
_TAR_CREATE = frozenset({"--create", "--append", "--update", "--concatenate"})
_TAR_EXTRACT = frozenset({"--extract", "--get"})
_PATCH_VALUES = ("-i", "--input", "-o", "--output", "-p", "-d", "-D", "-r", "-F", "-B", "-V", "-z")


# ------------------------------------------------------------ copies
def _target_directory(argv: list[str]) -> str | None:
    given = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-t", "--target-directory")), None)
    return given or next((w.split("=", 1)[1] for w in argv if w.startswith("--target-directory=")), None)


def _destination(args, found: list[str]) -> tuple[str, list[str]] | None:
    """(destination, sources) of a copy, or None when it names no destination."""
    target_dir = _target_directory(args.argv)
    if target_dir is not None:
        return target_dir, found
    if args.program == "ln" and len(found) == 1:
        return os.path.basename(found[0].rstrip("/")) or ".", found
    if len(found) >= 2:
        return found[-1], found[:-1]
    return None


def copy_roles(args) -> None:
    argv, program = args.argv, args.program
    found = args.operands(_copy_values(program))
    if program == "install" and any(w in ("-d", "--directory") for w in argv):
        args.write(found, tree=True)
        return
    named = _destination(args, found)
    if named is None:
        args.read(found)
        return
    destination, sources = named
    args.read(sources)
    if ":" in destination.split("/")[0] and program in ("rsync", "scp", "rcp"):
        return  # a remote destination
    args.write([destination])
    if is_dir(destination, args.cwd):
        args.write([os.path.join(destination, os.path.basename(s.rstrip("/"))) for s in sources if s.strip("/")])
    if program == "rsync" and "--remove-source-files" in argv:
        args.write(sources)


def _copy_values(program: str) -> tuple:
    return VALUE_OPTIONS.get(program, ()) + ("-t", "--target-directory")


# ------------------------------------------------------------ archives
def archive_roles(args) -> None:
    ARCHIVERS.get(args.program, _tar)(args)


def _unzip(args) -> None:
    if "-l" not in args.argv and "-t" not in args.argv:
        args.write([_directory_option(args.argv) or "."], tree=True)


def _seven_zip(args) -> None:
    if args.argv[1:2] in (["x"], ["e"]):
        attached = next((w[2:] for w in args.argv[2:] if w.startswith("-o") and len(w) > 2), None)
        args.write([attached or _directory_option(args.argv) or "."], tree=True)


def _patch(args) -> None:
    files = args.operands(_PATCH_VALUES)
    if files:
        args.write(files[:1])
    else:
        args.write([_directory_option(args.argv) or "."], tree=True)


def _directory_option(argv: list[str]) -> str | None:
    """The last ``-C``/``--directory``/``-d`` value: where the program writes."""
    found = None
    for index, word in enumerate(argv[:-1]):
        if word in ("-C", "--directory", "-d"):
            found = argv[index + 1]
    return found


class TarLine:
    """A tar command line read once: its mode letters, archive, directories and operands."""

    __slots__ = ("letters", "long", "archive", "directories", "packed")

    def __init__(self, argv: list[str]):
        self.letters = ""
        self.archive: str | None = None
        self.long: set[str] = set()
        self.directories: list[str] = []
        self.packed: list[str] = []  # operands, joined to the -C before them
        words, index = argv[1:], 0
        if words and not words[0].startswith("-"):  # old style: "tar xzf ARCHIVE ..."
            self.letters = words[0]
            index = 1
            if "f" in words[0] and len(words) > 1:
                self.archive, index = words[1], 2
        while index < len(words):
            index = self._word(words, index)

    def _word(self, words: list[str], index: int) -> int:
        word = words[index]
        value = words[index + 1] if index + 1 < len(words) else None
        if word.startswith("--"):
            return self._long(word, value, index)
        if word.startswith("-") and len(word) > 1:
            return self._short(word, value, index)
        self.packed.append(os.path.join(self.directories[-1], word) if self.directories else word)
        return index + 1

    def _long(self, word: str, value: str | None, index: int) -> int:
        name, equals, given = word.partition("=")
        self.long.add(name)
        if not equals and name in _TAR_VALUES and value is not None:
            given, index = value, index + 1
        if name == "--directory" and given:
            self.directories.append(given)
        elif name == "--file" and given:
            self.archive = given
        return index + 1

    def _short(self, word: str, value: str | None, index: int) -> int:
        if word.startswith("-C"):  # -C DIR or -CDIR
            directory = word[2:] or value
            if directory:
                self.directories.append(directory)
            return index + (1 if word[2:] else 2)
        self.letters += word[1:]
        if word in _TAR_VALUES or word[-1:] == "f":
            if word[-1:] == "f" and value is not None:
                self.archive = value
            return index + 2
        return index + 1

    @property
    def extracts(self) -> bool:
        return "x" in self.letters or bool(self.long & _TAR_EXTRACT)

    @property
    def creates(self) -> bool:
        return any(c in self.letters for c in "cru") or bool(self.long & _TAR_CREATE)


def _tar(args) -> None:
    line = TarLine(args.argv)
    if line.extracts:
        args.write(line.directories or ["."], tree=True)
    if line.archive:
        (args.write if line.creates else args.read)([line.archive])
    if line.creates:
        args.read(line.packed)


ARCHIVERS = {"unzip": _unzip, "7z": _seven_zip, "patch": _patch, "tar": _tar, "bsdtar": _tar}
