"""Commands that stop leash's processes or its tmux: the part of ``supervisor_tampering`` about signals.

* ``tmux_action``: ``tmux kill-server``, ``kill-session`` or
  ``rename-session`` (or any prefix tmux accepts of eight letters or more,
  ``kill-ser``), ``rename``, and any tmux command on leash's own socket
  (``$LEASH_HOME/tmux.sock``, ``LEASH_TMUX_SOCKET``, or a socket under the
  home);
* ``signal_action``: ``kill`` of every process (``-1``), of the kennel's pid
  from ``kennel.json``, or of a pid read from leash's state (``kill $(jq .pid
  ~/.leash/kennel.json)``); ``pkill``/``killall``/``skill`` naming a process
  in ``supervisor_names`` or the home, or every process of a user (``-u``);
  ``systemctl``/``service``/``launchctl``/``supervisorctl`` stopping one.

Nothing here raises; an unreadable ``kennel.json`` only means no pid to guard.
"""
from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False  # for the type checker only: the hook path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

TMUX_ACTIONS = ("kill-server", "kill-session", "rename-session")
TMUX_PREFIX_MIN = 8  # tmux accepts a unique prefix: "kill-ser" is the shortest that names one of these
KILLERS = frozenset({"kill", "pkill", "killall", "skill", "systemctl", "service", "launchctl", "supervisorctl"})
SERVICE_STOPS = frozenset({"stop", "restart", "kill", "disable", "mask", "unload", "remove", "bootout"})
SHOWN = 200
PATH_MAX = 4096


def tmux_action(command, home: str, env: Mapping[str, str]) -> str | None:
    argv = command.argv
    sockets = {os.path.realpath(os.path.join(home, "tmux.sock"))}
    if env.get("LEASH_TMUX_SOCKET"):
        sockets.add(os.path.realpath(env["LEASH_TMUX_SOCKET"]))
    for index, word in enumerate(argv[1:], 1):
        if word == "rename" or any(len(word) >= TMUX_PREFIX_MIN and action.startswith(word) for action in TMUX_ACTIONS):
            return " ".join(argv[:index + 2])
        if word in ("-S", "-L") and index + 1 < len(argv):
            target = argv[index + 1]
            path = os.path.realpath(os.path.join(command.cwd or "/", target)) if word == "-S" else target
            if path in sockets or (word == "-S" and _under(path, os.path.realpath(home))):
                return f"tmux {word} {target} (leash's own tmux server)"
    return None


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def kennel_pid(home: str) -> str | None:
    try:
        with open(os.path.join(home, "kennel.json"), encoding="utf-8") as handle:
            pid = json.load(handle).get("pid")
        return str(int(pid)) if pid else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


class Signalled:
    """What a signalling command names, and how to tell whether it names leash."""

    __slots__ = ("command", "argv", "shown", "home", "mentions")

    def __init__(self, command, names: tuple[str, ...], home: str):
        self.command, self.home = command, home
        self.shown = " ".join(command.argv)[:SHOWN]
        self.argv = [w for w in command.argv if len(w) <= PATH_MAX]
        self.mentions = [re.compile(rf"(?<![\w-]){re.escape(n.lower())}(?![\w-])") for n in names]

    def about_leash(self, text: str) -> bool:
        return any(m.search(text.lower()) for m in self.mentions) or self.home in text


def _kill_targets(argv: list[str]) -> list[str]:
    words = argv[1:]
    if words and words[0].startswith("-") and words[0] != "--":
        words = words[2:] if words[0] in ("-s", "-n") else words[1:]
    return words[1:] if words[:1] == ["--"] else words


def _kill(seen: Signalled) -> str | None:
    words = _kill_targets(seen.argv)
    if "-1" in words:
        return f"{seen.shown} (every process of the user, leash's among them)"
    pid = kennel_pid(seen.home)
    if pid and pid in words:
        return f"{seen.shown} (the kennel's pid, from kennel.json)"
    if any(seen.about_leash(body) or "kennel" in body for body in seen.command.substitutions):
        return f"{seen.shown} (a pid read from leash's state)"
    return None


def _pkill(seen: Signalled) -> str | None:
    every_user_process = any(w in ("-u", "--user", "-U") for w in seen.argv[1:])
    return seen.shown if seen.about_leash(" ".join(seen.argv[1:])) or every_user_process else None


def _service_stop(seen: Signalled) -> str | None:
    words = seen.argv[1:]
    return seen.shown if any(w in SERVICE_STOPS for w in words) and seen.about_leash(" ".join(words)) else None


SIGNALLERS: dict[str, Callable[[Signalled], str | None]] = {
    "kill": _kill, "pkill": _pkill, "killall": _pkill, "skill": _pkill,
    "systemctl": _service_stop, "service": _service_stop, "launchctl": _service_stop, "supervisorctl": _service_stop,
}


def signal_action(command, names: tuple[str, ...], home: str) -> str | None:
    judge = SIGNALLERS.get(command.program)
    return judge(Signalled(command, names, home)) if judge is not None else None
