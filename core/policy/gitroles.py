"""What a ``git`` command line writes: the verbs that rewrite the work tree.

``git_roles(argv, cwd)`` gives (path, role, subtree) for ``git ...``: ``clean``
writes its pathspecs or the cwd; ``checkout``/``restore``/``stash`` their
pathspecs or the whole work tree; ``reset --hard|--merge|--keep``, ``switch``,
``merge``, ``pull``, ``rebase``, ``cherry-pick``, ``revert``, ``am``,
``bisect``, ``submodule update`` and ``worktree remove`` the whole tree;
``rm``/``mv`` their operands (not with ``--cached``); ``apply`` the cwd
(unless it only checks or reports). Any other verb reads its path-like
operands. ``-C DIR`` and ``--work-tree`` are followed, and an alias the line
sets (``git -c alias.co=checkout co .``) is expanded. The work tree is the
nearest directory with ``.git`` (``core.project.git_toplevel``).

``git_command_form(words, readable, aliases, external=)`` gives the git
command a line runs, for the ask rules: ``git VERB ARGS`` with git's global
options (``-C``, ``-c``, ``--git-dir``, ``--no-pager``, ``-P`` ...) taken
off, ``send-pack``/``http-push``/``subtree push`` as ``push``, and an alias
expanded when the line or the call set it (``-c alias.p=push``, ``git config
alias.p push``). Git runs its own commands and ``git-VERB`` programs before
any alias, so only another verb is an alias, and one leash was not shown
(git's configuration files) leaves the verb unread. Never raises.
"""
from __future__ import annotations

import os
import shlex

from leash.core.base.project import git_toplevel
from leash.core.policy.argwords import absolute, operands, path_like

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

# What `git --list-cmds=main` lists (git 2.39), and the commands newer gits
# added: git runs these itself, never an alias of the same name.
GIT_COMMANDS = frozenset("""
add add--interactive am annotate apply archive backfill bisect bisect--helper blame branch bugreport bundle
cat-file check-attr check-ignore check-mailmap check-ref-format checkout checkout--worker checkout-index cherry
cherry-pick clean clone column commit commit-graph commit-tree config count-objects credential credential-cache
credential-cache--daemon credential-store daemon describe diagnose diff diff-files diff-index diff-pairs diff-tree
difftool difftool--helper env--helper fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg
for-each-ref for-each-repo format-patch fsck fsck-objects fsmonitor--daemon gc get-tar-commit-id grep hash-object
help hook http-backend http-fetch http-push imap-send index-pack init init-db instaweb interpret-trailers
last-modified log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index
merge-octopus merge-one-file merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs merge-resolve
merge-subtree merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes pack-objects pack-redundant
pack-refs patch-id pickaxe prune prune-packed pull push quiltimport range-diff read-tree rebase receive-pack refs
reflog remote remote-ext remote-fd remote-ftp remote-ftps remote-http remote-https repack replace replay repo
request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack sh-i18n--envsubst shell
shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace submodule
submodule--helper subtree switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
update-server-info upload-archive upload-archive--writer upload-pack var verify-commit verify-pack verify-tag
version web--browse whatchanged worktree write-tree
""".split())
PUSH_COMMANDS = frozenset({"send-pack", "http-push"})  # plumbing that pushes as `git push` does
# Global options that take the next word as their value, and those that take it after "=" only.
_FORM_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"})
COMPUTED_WORD = "a word of it is computed"
MAX_ALIAS_DEPTH = 8  # git refuses alias loops; leash stops expanding here

_GIT_WHOLE_TREE = frozenset({"switch", "merge", "pull", "rebase", "cherry-pick", "revert", "am", "bisect"})
_GIT_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_VERB_VALUES = ("-e", "--exclude", "-b", "-B", "--orphan", "-s", "--source", "-m", "--message", "-C", "-c", "-X")
_CHECK_ONLY = ("--check", "--stat", "--numstat", "--summary", "--cached")
_HARD_RESETS = ("--hard", "--merge", "--keep")


class GitLine:
    """A git command line: the verb, its words, where it runs and its work tree."""

    __slots__ = ("verb", "rest", "cwd", "whole", "paths", "after")

    def __init__(self, verb: str, rest: list[str], cwd: str | None, tree: str | None):
        self.verb, self.rest, self.cwd = verb, rest, cwd
        self.whole = tree or git_toplevel(cwd) or cwd or "."
        self.after = rest[rest.index("--") + 1:] if "--" in rest else None
        given = self.after if self.after is not None else operands([verb] + rest, _VERB_VALUES)
        self.paths = [absolute(p, cwd) for p in given]

    @property
    def here(self) -> str:
        return self.cwd or "."


def _written(items) -> list[tuple[str, str, bool]]:
    return [(p, "write", True) for p in items]


def _clean(line: GitLine) -> list:
    return _written(line.paths or [line.here])


def _checkout(line: GitLine) -> list:
    if line.after is not None:
        return _written(line.paths)
    existing = [p for p in line.paths if os.path.lexists(p)]
    if existing:
        return _written(existing)
    only_new_branch = any(w in ("-b", "-B", "--orphan") for w in line.rest) and not line.paths
    return [] if only_new_branch or (not line.paths and not line.rest) else _written([line.whole])


def _restore(line: GitLine) -> list:
    return _written(line.paths)


def _reset(line: GitLine) -> list:
    return _written([line.whole]) if any(w in _HARD_RESETS for w in line.rest) else []


def _stash(line: GitLine) -> list:
    if line.rest[:1] and line.rest[0] in ("list", "show", "branch"):
        return []
    return _written(line.paths if line.after else [line.whole])


def _moved(line: GitLine) -> list:
    return [] if "--cached" in line.rest else _written(line.paths)


def _apply(line: GitLine) -> list:
    return [] if any(w in _CHECK_ONLY for w in line.rest) else _written([line.here])


def _whole_tree(line: GitLine) -> list:
    return _written([line.whole])


def _submodule(line: GitLine) -> list:
    return _written([line.whole]) if "update" in line.rest else _read(line)


def _worktree(line: GitLine) -> list:
    return _written([line.whole]) if "remove" in line.rest else _read(line)


def _read(line: GitLine) -> list:
    cwd = line.cwd
    return [(p, "read", False) for p in line.paths if path_like(os.path.relpath(p, cwd) if cwd else p, cwd)]


VERBS: dict[str, Callable[[GitLine], list]] = {
    "clean": _clean, "checkout": _checkout, "restore": _restore, "reset": _reset, "stash": _stash, "rm": _moved,
    "mv": _moved, "apply": _apply, "submodule": _submodule, "worktree": _worktree,
    **{verb: _whole_tree for verb in _GIT_WHOLE_TREE},
}


def _global_options(argv: list[str], cwd: str | None) -> tuple[int, str | None, str | None]:
    """(index of the verb, the directory git runs in, the work tree given)."""
    index, tree = 1, None
    while index < len(argv) and argv[index].startswith("-"):
        word = argv[index]
        if word in _GIT_GLOBAL_VALUES and index + 1 < len(argv):
            if word == "-C":
                cwd = absolute(argv[index + 1], cwd)
            elif word == "--work-tree":
                tree = absolute(argv[index + 1], cwd)
            index += 2
            continue
        if word.startswith("--work-tree="):
            tree = absolute(word.split("=", 1)[1], cwd)
        index += 1
    return index, cwd, tree


def _line_alias(options: list[str], verb: str) -> list[str] | None:
    """What ``-c alias.VERB=VALUE`` among the line's options makes the verb
    run (None: git runs the verb itself, or no such alias is read)."""
    if verb in GIT_COMMANDS:
        return None
    values = [options[i + 1].partition("=")[2] for i in range(len(options) - 1)
              if options[i] == "-c" and options[i + 1].partition("=")[0].lower() == f"alias.{verb.lower()}"]
    if not values or values[-1].startswith("!"):
        return None
    try:
        return shlex.split(values[-1])
    except ValueError:
        return None


def git_roles(argv: list[str], cwd: str | None) -> list[tuple[str, str, bool]]:
    for _ in range(MAX_ALIAS_DEPTH):  # `git -c alias.co=checkout co .` writes as `git checkout .`
        index, where, tree = _global_options(argv, cwd)
        if index >= len(argv):
            return []
        expansion = _line_alias(argv[1:index], argv[index])
        if expansion is None:
            break
        argv = [*argv[:index], *expansion, *argv[index + 1:]]
    line = GitLine(argv[index], argv[index + 1:], where, tree)
    return VERBS.get(line.verb, _read)(line)


class GitAliases:
    """Git aliases a call sets before a line runs: ``names`` maps an alias
    (lower case) to its value, None when computed; ``any_name`` when a
    computed name may have set any alias."""

    __slots__ = ("names", "any_name")

    def __init__(self, names: dict[str, str | None] | None = None, any_name: bool = False):
        self.names, self.any_name = dict(names or {}), any_name

    def copy(self) -> GitAliases:
        return GitAliases(self.names, self.any_name)

    def set(self, key: str, value: str | None, *, key_read: bool = True) -> None:
        """Record ``key`` (``alias.NAME``, any case) set to ``value``."""
        if not key_read and ("$" in key or "`" in key):
            self.any_name = True
        elif key.lower().startswith("alias."):
            self.names[key[len("alias."):].lower()] = value


def _set_by_option(option: str, value: str, read: bool, aliases: GitAliases) -> None:
    if option == "-c":
        key, _, setting = value.partition("=")
        aliases.set(key, setting if read else None, key_read=read)
    elif option == "--config-env":
        aliases.set(value.partition("=")[0], None, key_read=read)  # its value is in a variable


def _first_unread(readable: list[bool], start: int) -> int:
    return next((i for i in range(start, len(readable)) if not readable[i]), len(readable))


def _verb_at(words: list[str], readable: list[bool], aliases: GitAliases) -> int:
    """Index of the verb after git's global options (recording the aliases
    they set), or -1 when a computed word stands where an option or the verb is."""
    index = 1
    while index < len(words):
        word = words[index]
        if not readable[index]:
            return -1
        if not word.startswith("-") or word == "-":
            return index
        option, equals, value = word.partition("=")
        if word in _FORM_VALUES and index + 1 < len(words):
            _set_by_option(word, words[index + 1], readable[index + 1], aliases)
            index += 2
            continue
        if equals and option in _FORM_VALUES:
            _set_by_option(option, value, True, aliases)
        index += 1
    return index


def git_command_form(words: list[str], readable: list[bool], aliases: GitAliases, *,
                     external: Callable[[str], bool]) -> tuple[list[str], int, str]:
    """(``['git', VERB, *args]`` as git runs the line, how many leading words
    are read, why the rest is not — "" when all are). ``readable`` says, per
    word, whether leash knows it; ``external(verb)``: a ``git-VERB`` program
    git would run."""
    aliases = aliases.copy()  # what -c sets holds for this line only
    for _ in range(MAX_ALIAS_DEPTH):
        index = _verb_at(words, readable, aliases)
        if index < 0:
            return ["git"], 1, "a word before git's command is computed or comes from xargs' input"
        if index >= len(words):
            return list(words), _first_unread(readable, 0), ""
        verb, rest, rest_read = words[index], words[index + 1:], readable[index + 1:]
        if verb == "subtree" and rest[:1] == ["push"] and rest_read[0]:
            verb, rest, rest_read = "push", rest[1:], rest_read[1:]
        if verb in PUSH_COMMANDS:
            verb = "push"
        if verb in GIT_COMMANDS or external(verb):
            form = ["git", verb, *rest]
            known = _first_unread([True, True, *rest_read], 0)
            return form, known, "" if known == len(form) else COMPUTED_WORD
        value = aliases.names.get(verb.lower(), "")
        if not value:
            if verb.lower() in aliases.names:
                return ["git"], 1, f"git {verb} is an alias to a computed value"
            why = "an alias a computed -c may set" if aliases.any_name else \
                "no git command: an alias from git's configuration, which leash does not read"
            return ["git"], 1, f"git {verb} is {why}"
        if value.startswith("!"):
            return [], 0, f"git {verb} is an alias that runs a shell command"
        try:
            expansion = shlex.split(value)
        except ValueError:
            return ["git"], 1, f"git {verb} is an alias leash cannot split"
        words, readable = ["git", *expansion, *rest], [True] * (1 + len(expansion)) + rest_read
    return ["git"], 1, f"git's aliases nest more than {MAX_ALIAS_DEPTH} deep"


def git_config_sets(words: list[str], known: int, aliases: GitAliases) -> None:
    """Record the alias ``git config [--global ...] [set] alias.NAME VALUE``
    (``words``: the form ``['git', 'config', ...]``, read up to ``known``) sets."""
    index, operands = 2, []
    while index < len(words):
        word = words[index]
        if index >= known:
            operands.append((word, False))
        elif word in ("-f", "--file", "--blob", "--type", "--default", "--comment"):
            index += 1
        elif word.startswith(("--get", "--unset", "--rename", "--remove", "--list", "--edit")) or \
                word in ("-l", "-e", "get", "unset", "list", "edit", "rename-section", "remove-section"):
            return  # reads or removes: nothing is set
        elif not word.startswith("-") and not (word == "set" and not operands):
            operands.append((word, True))
        index += 1
    if len(operands) >= 2:
        (key, key_read), (value, value_read) = operands[0], operands[1]
        aliases.set(key, value if value_read else None, key_read=key_read)
