"""Which command lines run one of leash's operator verbs.

The part of ``supervisor_tampering`` that reads leash's own command line.

``leash_words(command)`` gives the words a simple command hands to leash when
it runs leash in any form — ``leash``/``leashd`` (by name, by path, or
through a program word that resolves to it: ``"$(which leash)"``,
``$(readlink -f $(command -v leash))``, see ``core.shellresolve``),
``python -m leash[.console[.cli]]``, ``python .../console/cli/__main__.py``, ``uv run
leash`` and the other runners — else None. ``operator_action(words, ...)``
says why those words are an operator's action (``leash resume``, a computed
verb, the console), or None when they only read (``status``, ``log``,
``why``, ``halts list`` ...). ``computed_program_action(command)`` covers a
program word the reader cannot resolve at all (``$(find-the-binary) resume
s1``, ``$L halts ack X``): followed by an operator verb, it is taken for
leash. Nothing here raises.
"""
from __future__ import annotations

from leash.core.base.lazy_re import lazy

# Verbs that only read; everything else a human runs to lift or change a hold.
READ_ONLY_VERBS = frozenset({"status", "log", "why", "halts", "warrant", "loop", "doctor", "install", "completion",
                             "hook", "reply", "demo", "help", "approvals"})
OPERATOR_VERBS = frozenset({"resume", "release", "stop", "hands-off", "kennel", "daemon", "store", "serve"})
OPERATOR_SUBVERBS = {"halts": frozenset({"ack", "dismiss", "escalate"}), "warrant": frozenset({"pardon", "file"}),
                     "loop": frozenset({"reset"}), "approvals": frozenset({"allow", "deny"})}
LEASH_PROGRAMS = ("leash", "leashd")
RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "pipx"})
_GLOBAL_VALUES = frozenset({"--home", "--source"})
_QUIET = frozenset({"--version", "-h", "--help"})
_LEASH_MODULES = lazy(r"^(?:leash(?:\.console(?:\.cli)?)?|console(?:\.cli)?)$")
COMPUTED_SHOWN = 60


def _python_words(argv: list[str]) -> list[str] | None:
    """What ``python ... -m leash ...`` or ``python .../console/cli/__main__.py ...`` gives leash."""
    for index, word in enumerate(argv[1:-1], 1):
        if word == "-m" and _LEASH_MODULES.match(argv[index + 1]):
            return argv[index + 2:]
        if not word.startswith("-"):
            return argv[index + 1:] if word.endswith(("console/cli/__main__.py", "console/cli.py")) else None
    return None


def _runner_words(argv: list[str]) -> list[str] | None:
    """What ``uv run leash ...`` (and poetry, pipenv, pdm, hatch, pipx) gives leash."""
    if "run" not in argv:
        return None
    rest = argv[argv.index("run") + 1:]
    while rest and rest[0].startswith("-"):
        rest = rest[1:]
    return rest[1:] if rest and rest[0].rsplit("/", 1)[-1] in LEASH_PROGRAMS else None


def leash_words(command) -> list[str] | None:
    """The words given to leash when the command runs it in any form, else None."""
    argv, program = command.argv, command.program
    if program in LEASH_PROGRAMS:
        return argv[1:]
    if program.startswith("python") or program == "pypy3":
        return _python_words(argv)
    if program in RUNNERS:
        return _runner_words(argv)
    return None


def _verb_index(words: list[str]) -> int:
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in _GLOBAL_VALUES else 1
    return index


def _first_operand(words: list[str]) -> str | None:
    return next((w for w in words if not w.startswith("-")), None)


def _halts_action(rest: list[str]) -> str | None:
    if _first_operand(rest) == "config" and any(w.startswith("--") and w not in ("--json", "--home") for w in rest):
        return "leash halts config (changing a condition)"
    return None


def _doctor_action(rest: list[str]) -> str | None:
    return "leash doctor --repair" if "--repair" in rest else None


def _install_action(rest: list[str]) -> str | None:
    """Only ``--check`` (and ``--help``) only looks: any other install rewrites
    the wiring and the record ``--check`` and ConfigChange compare it with."""
    if "--uninstall" in rest:
        return "leash install --uninstall"
    return None if any(word in ("--check", "--help", "-h") for word in rest) else "leash install (rewiring)"


_OPTION_ACTIONS = {"halts": _halts_action, "doctor": _doctor_action, "install": _install_action}


def verb_action(verb: str, rest: list[str], stdin_args: bool = False) -> str | None:
    """Why ``leash VERB REST...`` is an operator's action, or None."""
    if verb in OPERATOR_VERBS:
        return None if verb == "serve" and "--read-only" in rest else f"leash {verb}"
    subverbs = OPERATOR_SUBVERBS.get(verb, frozenset())
    sub = _first_operand(rest)
    if sub in subverbs:
        return f"leash {verb} {sub}"
    special = _OPTION_ACTIONS.get(verb)
    action = special(rest) if special is not None else None
    if action is None and stdin_args and subverbs and sub is None:
        return f"xargs supplies the action of leash {verb}"
    return action


def operator_action(words: list[str], dynamic: list[bool], stdin_args: bool) -> str | None:
    """Why these leash words are an operator's action, or None when they only read."""
    index = _verb_index(words)
    if index >= len(words):
        if stdin_args:
            return "xargs supplies leash's verb"
        return None if any(w in _QUIET for w in words) else "the console (every operator action)"
    if dynamic[index] or any(dynamic[index + 1:index + 2]):
        return "a computed leash verb"
    return verb_action(words[index], words[index + 1:], stdin_args)


def computed_program_action(command) -> str | None:
    """A program word the reader cannot resolve, followed by leash's operator
    verb (or by ``-m leash``): taken for leash. None otherwise."""
    if not command.argv or not command.dynamic[0] or command.resolved is not None:
        return None
    words, dynamic = command.argv[1:], command.dynamic[1:]
    shown = command.argv[0][:COMPUTED_SHOWN]
    python = _python_words(command.argv)
    if python is not None:
        action = operator_action(python, dynamic[len(words) - len(python):], command.stdin_args)
        return f"{action} (through {shown})" if action else None
    index = _verb_index(words)
    if index >= len(words) or dynamic[index]:
        return None
    action = verb_action(words[index], words[index + 1:])
    return f"{action} (through {shown}, a program leash cannot resolve)" if action else None


def runs_operator_verb(command) -> str | None:
    """Why the command is an operator's action of leash, or None."""
    words = leash_words(command)
    if words is not None:
        return operator_action(words, command.dynamic[len(command.argv) - len(words):], command.stdin_args)
    return computed_program_action(command)
