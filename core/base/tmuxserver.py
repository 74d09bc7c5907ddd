"""Which tmux server leash uses, and whether it answers.

``resolve_socket`` picks the server: an explicit socket path, else
``$LEASH_TMUX_SOCKET``, else ``[tmux] socket`` in config.toml, else None
(tmux's default). ``server_problem()`` says in one line why that server
cannot be reached (``NO_SERVER``: nothing runs there; ``WRONG_SOCKET``: the
path cannot be a tmux server's, or tmux runs elsewhere), or None: ``leash
status``, ``leash doctor`` and the console show it instead of a column of
sessions quietly outside tmux. ``socket_state`` probes one socket path.

Failure: nothing here raises for a socket that cannot be reached: that is
the answer. A config.toml that cannot be read makes the server unknown, and
``server_problem`` says so. No libtmux: a stat and a connect per socket.
"""
from __future__ import annotations

import os

SOCKET_ENV = "LEASH_TMUX_SOCKET"


def resolve_socket(socket: str | None = None, *, home=None) -> str | None:
    if socket:
        return socket
    if os.environ.get(SOCKET_ENV):
        return os.environ[SOCKET_ENV]
    if home is not None:
        from leash.core.base.config import load_config

        configured = load_config(home)["tmux"]["socket"]
        if configured:
            return os.path.expanduser(configured)
    return None


# ``server_problem``'s answers begin with one of these.
NO_SERVER = "no tmux server running"
WRONG_SOCKET = "wrong tmux socket path"
PROBE_SECONDS = 0.5  # a live server accepts at once; this only bounds a wedged one
SOCKETS_SHOWN = 3


def default_socket(environ=None) -> str:
    """The socket tmux itself uses without ``-S``: the server of ``$TMUX``
    when inside tmux, else ``$TMUX_TMPDIR`` (or /tmp) ``/tmux-UID/default``."""
    environ = os.environ if environ is None else environ
    inside = environ.get("TMUX", "")
    if inside:
        return inside.split(",")[0]
    return os.path.join(environ.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}", "default")


def socket_state(path: str) -> str:
    """``live`` (a server accepts), ``missing`` (nothing there), ``no-folder``
    (its folder is not there either), ``stale`` (a socket no server answers:
    the one that made it ended), ``not-socket``, ``denied`` (not ours to
    connect to). Never raises; one connect at most."""
    import socket as sockets
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing" if os.path.isdir(os.path.dirname(path) or ".") else "no-folder"
    except PermissionError:
        return "denied"
    except OSError:
        return "missing"
    if not stat.S_ISSOCK(mode):
        return "not-socket"
    probe = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    probe.settimeout(PROBE_SECONDS)
    try:
        probe.connect(path)
    except PermissionError:
        return "denied"
    except (ConnectionRefusedError, FileNotFoundError):
        return "stale"
    except OSError:
        return "stale"
    finally:
        probe.close()
    return "live"


def server_problem(socket: str | None = None, *, home=None, seen_sockets=(), environ=None) -> str | None:
    """Why the tmux server leash uses (``socket``, else ``$LEASH_TMUX_SOCKET``,
    else ``[tmux] socket`` of ``home``'s config, else tmux's default) cannot
    be reached — one line beginning ``NO_SERVER`` (nothing runs there: no
    session is in tmux, or its server ended) or ``WRONG_SOCKET`` (the path
    cannot be a tmux server's, or tmux runs elsewhere: ``seen_sockets``, the
    servers the hooks saw agents' panes on, or tmux's default server) — or
    None when a server answers there. Cheap (a stat and a connect per socket
    looked at), never raises: what the console, ``leash status`` and ``leash
    doctor`` show instead of a column of sessions quietly not in tmux."""
    environ = os.environ if environ is None else environ
    try:
        named = socket or environ.get(SOCKET_ENV) or _configured_socket(home)
    except Exception as exc:  # a config.toml leash cannot use: which server is meant is unknown
        return f"{WRONG_SOCKET}: [tmux] socket cannot be read ({exc})"
    source = ("given" if socket else f"${SOCKET_ENV}" if environ.get(SOCKET_ENV)
              else "[tmux] socket" if named else "tmux's default")
    path = named or default_socket(environ)
    state = socket_state(path)
    if state == "live":
        return None
    elsewhere = [other for other in dict.fromkeys([*seen_sockets, default_socket(environ)])
                 if other and other != path and socket_state(other) == "live"][:SOCKETS_SHOWN]
    hint = f"; tmux runs at {', '.join(elsewhere)}" if elsewhere else ""
    said = f"{path} ({source})"
    if state == "no-folder" and named:  # tmux makes its default folder with its first server
        return f"{WRONG_SOCKET}: {said}: its folder does not exist{hint}"
    if state == "not-socket":
        return f"{WRONG_SOCKET}: {said} is not a socket{hint}"
    if state == "denied":
        return f"{WRONG_SOCKET}: {said}: permission denied (another user's server?){hint}"
    if state == "stale":  # the right path, once: its server ended
        return f"{NO_SERVER} at {said}: the socket is left from a server that ended{hint}"
    if elsewhere and (named or [s for s in seen_sockets if s in elsewhere]):
        return f"{WRONG_SOCKET}: {said}: nothing there{hint}"
    return f"{NO_SERVER} at {said}{hint}"


def _configured_socket(home) -> str | None:
    if home is None:
        return None
    from leash.core.base.config import load_config

    configured = load_config(home)["tmux"]["socket"]
    return os.path.expanduser(configured) if configured else None
