"""Which agent CLI a process is, read from its name and command line.

leash knows three agent CLIs' processes: Claude Code, Gemini CLI and Codex
CLI. A process is one of them when its name (``/proc/<pid>/comm``) or its
program (the base name of ``argv[0]``) is the CLI's program (``claude``,
``gemini``, ``codex``: the native binaries), or when it is a JavaScript runtime
(``node``, ``nodejs``, ``bun``) whose script (its first word that is not an
option) lies in the CLI's npm package (``claude-code``, ``gemini-cli``) or is
named as its program. What each runs as, measured with the real CLIs
(tests/e2e/agents/PROCESS_FACTS.md):

* Claude Code: the native ``claude`` binary, or ``node .../claude-code/cli.js``;
* Gemini CLI: ``node .../gemini-cli/.../gemini.js`` twice: the CLI relaunches
  itself as a child (more heap), and the child runs the hooks and the tools;
* Codex CLI: npm's ``node .../codex.js`` starts the native ``codex`` binary,
  which runs the hooks and the tools; a terminal UI (unless run with
  ``--no-daemon``) has them run by a background ``codex app-server`` that
  serves every TUI of the user, outlives the one that started it and keeps
  that one's environment (``TMUX_PANE`` included): a "shared server", whose
  pane is nobody's in particular.

A run with no terminal UI ("headless") is told from its command line:
``claude -p``/``--print``, ``gemini -p``/``--prompt``, ``codex exec`` (its
first word that is not an option); its interrupt is SIGINT, where a terminal
UI takes a key in its pane.

What this cannot see: a CLI renamed, bundled into another program or run by
a runtime leash does not list is no agent here (none is recorded for it, and
the daemon cannot tell its processes from the operator's: the separated
profile is the guarantee there).

On the hook path: the standard library only (``os``).
"""
from __future__ import annotations

import os

JS_RUNTIMES = frozenset({"node", "nodejs", "bun"})


class AgentProgram:
    """How one agent CLI's process is known (a plain class: the hook path
    does not import ``typing``)."""

    __slots__ = ("cli", "name", "programs", "packages", "headless_flags", "headless_commands", "server_commands",
                 "ends_its_tools")

    def __init__(self, cli: str, name: str, programs: frozenset[str], packages: tuple[str, ...],
                 headless_flags: frozenset[str], headless_commands: frozenset[str], *,
                 server_commands: frozenset[str] = frozenset(), ends_its_tools: bool = True):
        self.cli = cli  # the session record's ``cli``
        self.name = name  # as a person says it, in refusals
        self.programs = programs  # its native program's name (comm, argv[0])
        self.packages = packages  # a word of the script path a JavaScript runtime runs
        self.headless_flags = headless_flags  # an option that means no terminal UI
        self.headless_commands = headless_commands  # a subcommand that means no terminal UI
        self.server_commands = server_commands  # a subcommand that serves many terminal UIs
        self.ends_its_tools = ends_its_tools  # SIGINT ends the running tool too (Gemini CLI's leaves it running)

    def __repr__(self) -> str:
        return f"AgentProgram({self.cli!r})"


CLAUDE = AgentProgram("claude", "Claude Code", frozenset({"claude"}), ("claude-code",),
                      frozenset({"-p", "--print"}), frozenset())
GEMINI = AgentProgram("gemini", "Gemini CLI", frozenset({"gemini"}), ("gemini-cli",),
                      frozenset({"-p", "--prompt"}), frozenset(), ends_its_tools=False)
CODEX = AgentProgram("codex", "Codex CLI", frozenset({"codex"}), ("@openai/codex",),
                     frozenset(), frozenset({"exec", "e"}), server_commands=frozenset({"app-server"}))
AGENT_PROGRAMS = (CLAUDE, GEMINI, CODEX)
BY_CLI = {program.cli: program for program in AGENT_PROGRAMS}
ANY_AGENT = "its agent CLI"  # said of a process whose CLI is not recorded


def program_of(comm: str, argv: list[str]) -> AgentProgram | None:
    """The agent CLI a process named ``comm`` running ``argv`` is; None when none."""
    program = os.path.basename(argv[0]) if argv else ""
    for known in AGENT_PROGRAMS:
        if comm in known.programs or program in known.programs:
            return known
    if comm not in JS_RUNTIMES and program not in JS_RUNTIMES:
        return None
    script = _script(argv)
    for known in AGENT_PROGRAMS:
        if any(package in script for package in known.packages) or os.path.basename(script) in known.programs:
            return known
    return None


def is_headless(argv: list[str], program: AgentProgram | None = None) -> bool:
    """Whether the CLI runs with no terminal UI (SIGINT is its interrupt)."""
    program = program or program_of("", argv)
    if program is None:
        return False
    words = _words(argv)
    return any(word.partition("=")[0] in program.headless_flags or word in program.headless_commands
               for word in words)


def is_shared_server(argv: list[str], program: AgentProgram | None = None) -> bool:
    """Whether the process serves many terminal UIs (``codex app-server``):
    the pane in its environment is not the session's."""
    program = program or program_of("", argv)
    return program is not None and any(word in program.server_commands for word in _words(argv))


def name_of(cli: object) -> str:
    """``cli``'s name as a person says it (``ANY_AGENT`` when unknown)."""
    known = BY_CLI.get(cli) if isinstance(cli, str) else None
    return known.name if known is not None else ANY_AGENT


def _script(argv: list[str]) -> str:
    """A runtime's script: the first word after it that is not an option."""
    return next((word for word in argv[1:] if not word.startswith("-")), "")


def _words(argv: list[str]) -> list[str]:
    """The CLI's own arguments (after its script when a runtime runs it), up
    to ``--``. A subcommand is any of them equal to one: an option's value is
    not told from a positional word (``codex -m exec`` reads as headless)."""
    if not argv or os.path.basename(argv[0]) not in JS_RUNTIMES:
        words = argv[1:]
    else:
        script = _script(argv)
        words = argv[argv.index(script) + 1:] if script else []
    return words[:words.index("--")] if "--" in words else words
