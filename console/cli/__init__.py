"""``leash``: the command line.

Every subcommand calls the core and prints what happened. Exit codes:
0 ok, 1 operation refused (nothing to resume, no such lock), 2 usage or bad
input, 3 a verdict that says no (broken hash chain, unhealthy state).
Errors are one line on stderr, never a traceback: every command raises
``console.errors.Refused`` for a refusal (a ``UsageError`` for bad input),
and it is printed here with its exit code; with ``--json`` stdout also gets
one object saying so (``ok`` false, ``command``, ``exit_code``, ``error``), the
exit code unchanged.

``leash hook ...`` is handed to ``core.hookmain`` before anything else of the
console is imported: the hook path is the standard library and the core. So
is ``leash completion names KIND`` (``console.cli.completion``), which a shell
runs while completing a word.
"""
from __future__ import annotations

import functools
import io
import sys

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):  # ids may hold any bytes; never die printing one
            try:
                stream.reconfigure(errors="backslashreplace")
            except ValueError:
                pass
    from leash.core.hook.main import run_hook_command

    hooked = run_hook_command(argv)
    if hooked is not None:
        return hooked
    from leash.console.cli.completion import run_names  # a shell completing a word: answered at once, never loudly

    named = run_names(argv)
    if named is not None:
        return named
    return dispatch(argv)


@functools.cache
def _parser() -> ArgumentParser:
    """The command line's parser, built once per process: building it takes ~10 ms
    and parsing with it ~0.05 ms, and leashd parses every command line it serves.
    Parsing leaves the parser as it was, so one is shared by every thread."""
    from leash.console.cli.parser import build_parser

    return build_parser()


def dispatch(argv: list[str], *, daemon_home: str | None = None, peer_source: str | None = None) -> int:
    """Run one command line. In the daemon (``daemon_home`` given) it acts on the
    daemon's home as ``peer_source``; elsewhere a command that acts on state goes
    to a running daemon's operator socket (``console.cli.remote``)."""
    from leash.console.cli import handlers, remote
    from leash.console.errors import EXIT_OK, EXIT_REFUSED, Refused, UsageError
    from leash.core.wire.operator import DaemonUnreachable, operator_socket

    args = None
    try:
        args = _parser().parse_args(argv)
        if args.command is None:
            args.command, args.no_kennel = "console", False
        if args.command == "daemon" and daemon_home is None:
            from leash.console.cli.served import run_daemon

            return run_daemon(args, dispatch)
        if daemon_home is not None:
            if args.command in remote.LOCAL_COMMANDS:
                raise UsageError(f"`leash {args.command}` runs where you are, not through the daemon")
            args.home = daemon_home
            if args.command in handlers.ACTING:
                args.source = peer_source  # who the kernel says is asking, never the client's claim
        elif args.command not in remote.LOCAL_COMMANDS:
            path, required = operator_socket(getattr(args, "home", None))
            if path is not None:
                code = remote.forward(argv, path, required=required)  # the daemon says what config.toml says
                if code is not None:
                    return code
        if args.command == "hook":  # the hooks judge a broken config.toml by its own rules (core.hook)
            return handlers.run(args)
        from leash.core.base.config import strictest_when_broken

        with strictest_when_broken():  # a broken config.toml never locks the operator out
            _say_config_notices(args)
            return handlers.run(args)
    except Refused as exc:  # every refusal, bad input too (a UsageError: exit 2)
        return _say_error(str(exc), exc.exit_code, argv, args)
    except DaemonUnreachable as exc:
        return _say_error(str(exc), EXIT_REFUSED, argv, args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the last line of defence against a traceback
        return _say_error(f"{exc.__class__.__name__}: {exc}", EXIT_REFUSED, argv, args)


# Commands that say nothing of config.toml before they run: doctor reports
# every line of it itself; status reports a file that cannot be used itself;
# completion answers a shell that is completing a word.
QUIET_ABOUT_CONFIG = frozenset({"doctor", "completion"})
SAY_OWN_CONFIG_PROBLEM = frozenset({"status"})


def _say_config_notices(args: Namespace) -> None:
    """One ``leash: warning:`` line on stderr for each thing config.toml says
    that the command does not use (``core.base.config.config_notices``): the
    problem of a file that cannot be used, or each key it ignores."""
    from leash.core.base.config import config_notices, config_problem
    from leash.core.base.home import home_problem, resolve_home
    from leash.core.base.text import printable

    if args.command in QUIET_ABOUT_CONFIG:
        return
    home = resolve_home(getattr(args, "home", None))
    if home_problem(home) is not None:  # an unsafe home is refused, its files unread
        return
    if args.command in SAY_OWN_CONFIG_PROBLEM and config_problem(home) is not None:
        return
    for notice in config_notices(home):
        sys.stderr.write(f"leash: warning: {printable(notice)}\n")


def _say_error(message: str, code: int, argv: list[str] | None = None, args: Namespace | None = None) -> int:
    """One line on stderr (a name echoed in it is shown escaped, core.text);
    with ``--json`` also one JSON object on stdout: ``ok`` false, the
    command, the error and the exit code (unchanged). Returns ``code``."""
    from leash.core.base.text import printable

    line = " ".join(message.split())
    sys.stderr.write(f"leash: error: {printable(line)}\n")
    if _wants_json(argv or [], args):
        import json

        sys.stdout.write(json.dumps({"ok": False, "command": _command_of(argv or [], args), "exit_code": code,
                                     "error": line}, ensure_ascii=True) + "\n")
    return code


def _wants_json(argv: list[str], args: Namespace | None) -> bool:
    if args is not None:
        return bool(getattr(args, "json", False))
    words = argv[:argv.index("--")] if "--" in argv else argv
    return "--json" in words


def _command_of(argv: list[str], args: Namespace | None) -> str:
    """The command (and its action) as parsed; before parsing, the first word that is not an option."""
    if args is not None:
        from leash.console.cli.parser import command_name

        return command_name(args)
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if word == "--home":
            rest = rest[1:]
        elif not word.startswith("-"):
            return word
    return ""

