"""The daemon's side of the CLI: ``leash daemon`` and its ``cli`` verb.

A subcommand forwarded by ``console.cli.remote`` runs here with the peer's user as
``source`` (``--source`` from the client is not believed) and the daemon's own
home (``--home`` from the client is ignored). Output is routed to the
requesting connection by thread (``ThreadRoutedStream``), so requests run
concurrently. The command line's ``dispatch`` is handed in, not imported, so
the CLI and this module do not import each other.

Failure: a request whose ``argv`` is not a list of strings gets an error reply;
whatever the subcommand does ends as its exit code (``dispatch`` never raises;
argparse's ``--help``/``--version`` exits are caught).
"""
from __future__ import annotations

import sys
import threading

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any, Callable

    Dispatch = Callable[..., int]  # leash.console.cli.dispatch


class ThreadRoutedStream:
    """A stand-in for sys.stdout/sys.stderr: a thread serving a client writes to
    that client; every other thread writes to the real stream."""

    def __init__(self, real: Any, kind: str, routes: threading.local):
        self._real, self._kind, self._routes = real, kind, routes

    def write(self, text: str) -> int:
        route = getattr(self._routes, "send", None)
        if route is None:
            return self._real.write(text)
        route({self._kind: text})
        return len(text)

    def flush(self) -> None:
        if getattr(self._routes, "send", None) is None:
            self._real.flush()

    def isatty(self) -> bool:
        if getattr(self._routes, "send", None) is None:
            return self._real.isatty()
        return bool(getattr(self._routes, "tty", False))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


_routes = threading.local()
_install_mutex = threading.Lock()


def _route_output() -> None:
    with _install_mutex:
        if not isinstance(sys.stdout, ThreadRoutedStream):
            sys.stdout = ThreadRoutedStream(sys.stdout, "out", _routes)
        if not isinstance(sys.stderr, ThreadRoutedStream):
            sys.stderr = ThreadRoutedStream(sys.stderr, "err", _routes)


def cli_verb(dispatch: Dispatch) -> Callable[..., None]:
    """The operator socket's ``cli`` verb, running subcommands with ``dispatch``."""
    def verb(request: dict, *, source: str, send: Callable[[dict], None], home: str) -> None:
        run_for_peer(dispatch, request, source=source, send=send, home=home)

    return verb


def run_for_peer(dispatch: Dispatch, request: dict, *, source: str, send: Callable[[dict], None], home: str) -> None:
    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
        send({"error": "cli needs argv, a list of strings"})
        return
    _route_output()
    _routes.send, _routes.tty = send, bool(request.get("tty"))
    try:
        code = dispatch(argv, daemon_home=home, peer_source=source)
    except SystemExit as exc:  # --help and --version exit from argparse
        from leash.console.errors import EXIT_USAGE

        code = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    finally:
        _routes.send = None
    send({"exit": code})


def run_daemon(args: Namespace, dispatch: Dispatch) -> int:
    """``leash daemon``: start, serve until SIGTERM/SIGINT, exit 0."""
    from leash.console.errors import Refused, UsageError
    from leash.core.base.config import ConfigError
    from leash.core.base.home import UnsafeHome
    from leash.core.daemon.service import Daemon, DaemonRunning
    from leash.core.store.pg import StoreOffline
    from leash.core.store.select import StoreSelectionError

    try:
        daemon = Daemon(getattr(args, "home", None), operator_verbs={"cli": cli_verb(dispatch)},
                        kennel=False if args.no_kennel else None)
        daemon.start()
    except (UnsafeHome, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    except (DaemonRunning, StoreOffline, StoreSelectionError) as exc:
        raise Refused(str(exc)) from None
    daemon.serve_forever()
    return 0
