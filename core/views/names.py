"""The names something answers to, and the nearest of them to a name nothing does.

``known_names(backend)`` are every name an operator may mean: the agent
session ids, tmux session names and ids and entities the hooks have seen
(``core.base.nameguard.known_names``), the tmux sessions running now on the
server leash uses, the names stops and hands-off locks are filed under.
``unknown(backend, name)`` is None when something answers to ``name``, else
one line saying so, with the look-alike it may be (``nameguard.warning_for``)
and the close matches (``difflib``): "did you mean 'agent-chatty'?".

Failure: a store that cannot be read adds no names (the command that reads it
next says why); tmux that cannot be asked adds none.
"""
from __future__ import annotations

import difflib

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

MATCHES_SHOWN = 3
MATCH_CUTOFF = 0.6  # difflib's own default


def known_names(backend: Backend, *, now: float | None = None) -> set[str]:
    from leash.core.base.nameguard import known_names as seen_names
    from leash.core.state.sessions import tmux_session_names

    names = set(seen_names(backend.sessions.all(now=now)))
    names.update(tmux_session_names(home=backend.home))
    try:
        names.update(backend.stops.current(now=now).sessions)
    except Exception:  # unreadable stop state: the command says so itself
        pass
    try:
        names.update(backend.locks.active(now=now))
    except Exception:  # unreadable locks: likewise
        pass
    return {name for name in names if isinstance(name, str) and name}


def close_matches(name: str, candidates) -> list[str]:
    """The names nearest to ``name`` (at most ``MATCHES_SHOWN``, nearest first)."""
    return difflib.get_close_matches(name, sorted(set(candidates) - {name}), n=MATCHES_SHOWN, cutoff=MATCH_CUTOFF)


def did_you_mean(name: str, candidates) -> str:
    """"; did you mean 'a'?" ("; did you mean 'a' or 'b'?"), or "" when nothing is near."""
    found = close_matches(name, candidates)
    if not found:
        return ""
    quoted = [repr(match) for match in found]
    return "; did you mean " + (quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]) + "?"


def unknown(backend: Backend, name: str, *, now: float | None = None) -> str | None:
    """Why nothing answers to ``name`` (one line, without the remedy), or None when something does."""
    from leash.core.base.nameguard import warning_for

    known = known_names(backend, now=now)
    if name in known:
        return None
    said = (warning_for(name, known) or "").removeprefix("warning: ")
    if said.startswith("nothing answers to this name yet"):
        said = ""  # the plain case: said below, with the names near it
    said = said.removeprefix("nothing answers to this name, ").removeprefix("but ")
    head = f"nothing knows {name!r}: no agent session, tmux session or entity by that name has been seen"
    return head + (f" ({said})" if said else "") + did_you_mean(name, known)
