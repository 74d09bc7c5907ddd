"""``leash``'s argument parser: every subcommand, its options and the checks
of their values. A bad argument raises ``UsageError`` with one line (exit 2)."""
from __future__ import annotations

from leash.console.errors import UsageError

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from typing import Any, Callable, NoReturn

    from leash.core.store.records import ChainAnchor

ACTION_JSON = "print one JSON object: what happened (or the error), with the exit code"


def build_parser() -> ArgumentParser:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:  # one line, not usage + error
            raise UsageError(f"{message} (see '{self.prog} --help')")

        # words left over name the command they follow
        def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
            parsed, extras = self.parse_known_args(args, namespace)
            if extras:
                named = command_name(parsed)
                raise UsageError(f"unrecognized arguments: {' '.join(extras)} "
                                 f"(see '{self.prog}{' ' + named if named else ''} --help')")
            return parsed

    class VersionAction(argparse.Action):
        """``--version``: the installed version, looked up only when asked
        (reading the package's metadata cost every command 20 ms of its start)."""

        def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_: Any) -> None:
            super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0,
                             help="show the program's version number and exit")

        def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                     option_string: Any = None) -> None:
            print(f"leash {_version()}")
            parser.exit()

    common = Parser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS, help="state home (default $LEASH_HOME or ~/.leash)")
    acting = Parser(add_help=False, parents=[common])
    acting.add_argument("--source", default=None, help="who is acting, for the ack log (default $USER@host)")

    parser = Parser(prog="leash", parents=[common],
                    description="Human-in-the-loop control for fleets of AI coding agents.")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser("console", parents=[common], help="the live dashboard (also: leash with no command)")
    p.add_argument("--no-kennel", action="store_true", help="do not run a kennel inside the console")
    p.add_argument("--read-only", action="store_true", help="keys that would change state do nothing")
    p = sub.add_parser("demo", parents=[common], help="a throwaway fleet on a private tmux server, then the console")
    p.add_argument("--keep", action="store_true", help="keep the demo's home afterwards")
    p = sub.add_parser("serve", parents=[common], help="the console in a browser, on 127.0.0.1 only, behind a token")
    p.add_argument("--port", type=_whole, default=8000, help="port on 127.0.0.1 (0: any free one; default 8000)")
    p.add_argument("--read-only", action="store_true", help="serve consoles whose keys change nothing")
    p.add_argument("--token-file", metavar="FILE", help="the token to require (default $LEASH_HOME/serve.token)")
    p.add_argument("--max-clients", type=_whole, default=4, metavar="N", help="consoles at once (default 4)")
    p.add_argument("--no-kennel", action="store_true", help="do not run a kennel inside the served consoles")

    p = sub.add_parser("status", parents=[common], help="what is stopped, locked and seen")
    p.add_argument("--json", action="store_true", help="print the machine-readable snapshot")

    p = sub.add_parser("why", parents=[common], help="every rule that holds a session now, and what lifts it")
    p.add_argument("session", help="agent session id or tmux session name")
    p.add_argument("--json", action="store_true", help="print the rules as JSON")
    p = sub.add_parser("completion", parents=[common],
                       help="print shell completion for bash, zsh or fish ('names KIND': what it completes)")
    p.add_argument("shell", choices=["bash", "zsh", "fish", "names"],
                   help="the shell; 'names' prints the session names, warrant ids or locked entities it offers")
    p.add_argument("kind", nargs="?", choices=["sessions", "warrants", "entities"], help="with 'names': which")

    p = sub.add_parser("stop", parents=[acting], help="stop a session (or --all: the fleet)")
    p.add_argument("session", nargs="?", help="agent session id or tmux session name")
    p.add_argument("--all", action="store_true", help="stop every session (fleet stop)")
    p.add_argument("--reason", default="", help="why; shown to the agent and kept in the ack log")
    p.add_argument("--entity", help="also lock this entity hands-off (full stop)")
    p.add_argument("--hours", type=_hours, help="length of the --entity lock (default 24)")
    p.add_argument("--interrupt", action="store_true",
                   help="also cancel the call in flight: Escape in its tmux pane, or SIGINT to a headless Claude Code")
    p.add_argument("--force", action="store_true",
                   help="file it even though nothing knows the name yet (a session about to start)")
    p.add_argument("--json", action="store_true", help=ACTION_JSON)

    p = sub.add_parser("resume", parents=[acting], help="lift a session's stop (or --all: the fleet stop)")
    p.add_argument("session", nargs="?")
    p.add_argument("--all", action="store_true", help="lift the fleet stop")
    p.add_argument("--reason", default="")
    p.add_argument("--json", action="store_true", help=ACTION_JSON)

    p = sub.add_parser("hands-off", parents=[acting], help="lock an entity (name or path:<glob>) hands-off")
    p.add_argument("entity")
    p.add_argument("--hours", type=_hours, help="how long (default [hands_off] default_hours, 24)")
    p.add_argument("--reason", default="")
    p.add_argument("--session", default=None, help="the session this lock belongs to, if any")
    p.add_argument("--json", action="store_true", help=ACTION_JSON)

    p = sub.add_parser("release", parents=[acting], help="remove a hands-off lock")
    p.add_argument("entity")
    p.add_argument("--reason", default="")
    p.add_argument("--json", action="store_true", help=ACTION_JSON)

    p = sub.add_parser("log", parents=[common], help="read the ack log; 'leash log verify' checks its chain")
    p.add_argument("action", nargs="?", choices=["verify"], help="verify: check the hash chain")
    from leash.core.views.history import event_help

    p.add_argument("--session", help="only this session, by any of its names (agent session id, tmux session name, "
                                     "HOST/NAME): its whole history")
    p.add_argument("--event", help=event_help())
    p.add_argument("--source", help="only actions by this source")
    p.add_argument("--since", type=_since, help="only lines at or after this ISO-8601 time")
    p.add_argument("--json", action="store_true", help="print the stored JSON lines")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new lines as they arrive")
    p.add_argument("--anchor", type=_anchor, metavar="SEQ:HASH",
                   help="verify: a head kept outside the home (from [acklog] anchor_command)")

    p = sub.add_parser("doctor", parents=[common], help="check every state file; --repair mends them")
    p.add_argument("--repair", action="store_true")
    p.add_argument("--json", action="store_true", help="one JSON object: every finding, and the exit code")

    p = sub.add_parser("loop", parents=[common], help="restart-loop breakers for supervised gateways")
    loop = p.add_subparsers(dest="loop_command", metavar="ACTION", parser_class=Parser, required=True)
    q = loop.add_parser("check-and-record", parents=[acting],
                        help="record a restart-interrupted boot; exit 3 when tripped (skip auto-resume)")
    q.add_argument("name", nargs="?", default="gateway")
    q.add_argument("--max", dest="max_restarts", type=int, help="boots that trip the breaker (<= 0 disables)")
    q.add_argument("--window", dest="window_seconds", type=_positive, help="sliding window in seconds")
    q.add_argument("--max-gap", dest="max_gap_seconds", type=_non_negative,
                   help="also chain boots whose gaps stay under this many seconds (0: off)")
    q.add_argument("--json", action="store_true", help=ACTION_JSON)
    q = loop.add_parser("status", parents=[common], help="every breaker: boots, threshold, tripped")
    q.add_argument("--json", action="store_true")
    q = loop.add_parser("reset", parents=[acting], help="clear a breaker (logged as loop_reset)")
    q.add_argument("name")
    q.add_argument("--reason", default="")
    q.add_argument("--json", action="store_true", help=ACTION_JSON)

    from leash.console.cli.halts import add_parsers as add_halts_parsers

    add_halts_parsers(sub, common, acting, Parser, _whole)

    from leash.console.cli.approvals import add_parsers as add_approvals_parsers

    add_approvals_parsers(sub, common, acting, Parser)

    from leash.console.cli.budget import add_parsers as add_budget_parsers

    add_budget_parsers(sub, common, acting, Parser, _positive, _since)

    p = sub.add_parser("warrant", parents=[common], help="death warrants: file, list, pardon")
    warrant = p.add_subparsers(dest="warrant_command", metavar="ACTION", parser_class=Parser, required=True)
    q = warrant.add_parser("file", parents=[acting], help="ask the kennel to interrogate (and maybe kill) a session")
    q.add_argument("target", help="tmux session name or id ($N); bound to the session's id when filed")
    q.add_argument("--reason", required=True)
    q.add_argument("--requester", help="who files it (default: --source)")
    q.add_argument("--json", action="store_true", help=ACTION_JSON)
    q = warrant.add_parser("list", parents=[common], help="pending, active and finished warrants")
    q.add_argument("--json", action="store_true")
    q = warrant.add_parser("pardon", parents=[acting], help="cancel a warrant at any time")
    q.add_argument("warrant_id", metavar="ID|TARGET", help="a warrant id, an id prefix, or its target's name")
    q.add_argument("--reason", default="")
    q.add_argument("--json", action="store_true", help=ACTION_JSON)

    p = sub.add_parser("kennel", parents=[common], help="run the dogs that work the warrant queue")
    p.add_argument("--dogs", type=_whole, help="pool size (default [warrants] dogs, 5)")
    p.add_argument("--until-idle", action="store_true", help="exit when no warrant is pending or active")

    p = sub.add_parser("reply", parents=[common], help="record a message in the built-in reply ledger")
    p.add_argument("direction", choices=["in", "out"], help="in: a correspondent wrote; out: a reply was sent")
    p.add_argument("--channel", required=True)
    p.add_argument("--key", required=True, help="the conversation (contact, thread id)")

    p = sub.add_parser("install", parents=[common],
                       help="wire leash's hooks into an agent CLI's settings (Claude Code, Gemini CLI, Codex CLI)")
    p.add_argument("--agent", choices=("claude", "gemini", "codex"), default="claude",
                   help="which CLI (default claude); gemini: .gemini/settings.json, the folder trusted; codex: "
                        "~/.codex/config.toml with the hooks trusted (the default for codex is --user)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--project", metavar="DIR",
                       help="DIR/.claude/settings.json (the default: the current directory)")
    where.add_argument("--user", action="store_true", help="~/.claude/settings.json")
    where.add_argument("--managed", action="store_true",
                       help="Claude Code's managed settings (/etc/claude-code/managed-settings.json), which project "
                            "and user settings cannot override")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="report missing, disabled or broken wiring; exit 3 if any")
    what.add_argument("--uninstall", action="store_true", help="remove leash's hooks only")
    p.add_argument("--socket", metavar="PATH", help="pin leashd's agent socket in each hook command "
                                                    "(LEASH_SOCKET=PATH): an unreachable daemon then denies")
    p.add_argument("--transport", choices=("command", "http"), default="command",
                   help="Claude Code only: http wires the hooks as type \"http\" to leashd's loopback listener "
                        "([daemon] http_port), no process per call; needs Claude Code 2.1.295+ (onFailure)")
    p.add_argument("--sandbox", action="store_true",
                   help="Claude Code only: also write its sandbox settings, so the agent's Bash commands cannot "
                        "read or write leash's home, its sockets, tmux's sockets or the CLIs' settings "
                        "(needs bubblewrap and socat)")

    p = sub.add_parser("store", parents=[common], help="the shared store: 'leash store copy' moves a home into it")
    store = p.add_subparsers(dest="store_command", metavar="ACTION", parser_class=Parser, required=True)
    q = store.add_parser("copy", parents=[common], help="copy a home's stores into an empty PostgreSQL store")
    q.add_argument("--from", dest="source", required=True, metavar="FILEHOME", help="the home to copy")
    q.add_argument("--to", dest="target", required=True, metavar="URL",
                   help="postgresql://... (the password from PGPASSWORD, PGPASSFILE or [store] password_file)")

    p = sub.add_parser("notify", parents=[common], help="notifications from leashd: 'leash notify test'")
    notify = p.add_subparsers(dest="notify_command", metavar="ACTION", parser_class=Parser, required=True)
    q = notify.add_parser("test", parents=[common],
                          help="send a test message through each [[notify.route]]; exit 1 when any failed")
    q.add_argument("--route", type=_whole, metavar="N", help="only route N (1-based, in config.toml's order)")

    p = sub.add_parser("setup", parents=[common], help="'leash setup separated': the separated profile on this host")
    setup = p.add_subparsers(dest="setup_command", metavar="PROFILE", parser_class=Parser, required=True)
    q = setup.add_parser("separated", parents=[common],
                         help="a leash user owning the home, leashd's unit, managed hooks pinned to its agent socket")
    q.add_argument("--agent-user", dest="agent_users", action="append", default=[], metavar="U",
                   help="a user agents run as: checked that it can run leash's hook (repeatable)")
    q.add_argument("--operator", dest="operators", action="append", default=None, metavar="NAME",
                   help="a user or group allowed on the operator socket (repeatable; default: the sudo user)")
    q.add_argument("--user", default="leash", help="the user leashd runs as (made when missing; default leash)")
    q.add_argument("--state-home", default="/var/lib/leash", metavar="DIR",
                   help="leashd's state home (default /var/lib/leash)")
    q.add_argument("--run-dir", default="/run/leash", metavar="DIR", help="where the sockets go (default /run/leash)")
    q.add_argument("--undo", action="store_true", help="remove what setup made (the state home is kept)")

    p = sub.add_parser("daemon", parents=[common],
                       help="leashd: the control daemon of this home (agent and operator sockets, the kennel)")
    p.add_argument("--no-kennel", action="store_true", help="run no kennel in the daemon ([daemon] kennel = false)")

    p = sub.add_parser("statusline", parents=[common],
                       help="Claude Code's status line (stdin: its status JSON): the user's line, then leash's "
                            "spend, subscription windows and holds from leashd (leash install wires it)")
    p.add_argument("--user-command", metavar="CMD", help="the user's own statusLine command, run first with the "
                                                         "same stdin; its output is printed first, unchanged")
    p.add_argument("--inherited", action="store_true",
                   help="CMD is the user settings' statusLine (leash install --uninstall then removes leash's)")

    p = sub.add_parser("hook", parents=[common], help="Claude Code hook commands (stdin: the hook's JSON)")
    p.add_argument("event", help="pre-tool-use, post-tool-use, post-tool-use-failure, post-tool-batch, "
                                 "user-prompt-submit, stop, session-start, session-end, notification, "
                                 "permission-request, config-change (an unknown one exits 1)")
    return parser


SUB_COMMANDS = ("halts_command", "warrant_command", "approvals_command", "loop_command", "store_command",
                "notify_command", "setup_command")


def command_name(args: Namespace) -> str:
    """``stop``, ``halts ack``, ``warrant pardon``...: the command and its action as parsed."""
    words = [getattr(args, "command", None) or ""]
    words += [getattr(args, attribute) for attribute in SUB_COMMANDS if getattr(args, attribute, None)]
    return " ".join(word for word in words if word)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("leash")
    except PackageNotFoundError:
        return "unknown"


def _anchor(text: str) -> ChainAnchor:
    import argparse

    from leash.core.store.records import ChainAnchor

    seq, _, digest = text.partition(":")
    if not seq.isdigit() or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise argparse.ArgumentTypeError(f"an anchor is SEQ:HASH (a line number and its 64-hex hash), got {text!r}")
    return ChainAnchor.of({"seq": int(seq), "hash": digest})


def _hours(text: str) -> float:
    import argparse

    from leash.core.base.hours import parse_hours

    try:
        return parse_hours(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--hours {exc}") from None


def _whole(text: str) -> int:
    import argparse

    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return int(text)


def _positive(text: str) -> float:
    return _number(text, lambda v: v > 0, "a positive number")


def _non_negative(text: str) -> float:
    return _number(text, lambda v: v >= 0, "a number >= 0")


def _number(text: str, ok: Callable[[float], bool], what: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not ok(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def _since(text: str) -> float:
    from leash.core.base.clock import parse_iso

    try:
        return parse_iso(text)
    except ValueError:
        import argparse

        raise argparse.ArgumentTypeError(
            f"--since must be an ISO-8601 time such as 2026-11-21T19:00:00Z, got {text!r}") from None
