"""``leash doctor``: look at every piece of state, say what is wrong, mend it.

Each check yields ``Finding(level, subject, message)``: ``ok``, ``warn`` (worth
knowing, nothing is broken), ``fail`` (something is broken) or ``fixed`` (it was
broken and ``repair=True`` mended it). The doctor looks at the home and the
settings itself, then asks the backend to examine its stores
(``Backend.examine(repair=)``: for the file backend
``leash.core.store.filecheck``), then at Claude Code's wiring. Repairs follow
the fail-policy table and never delete state: stores that are caches of the
ack log are rebuilt by replaying it, a broken hash chain cannot be mended (the
log is append-only) and stays a failure.

Besides the stores: ``config_broken`` (config.toml cannot be used; the files
are still examined unless it may name the shared store), ``config_warning``
(each key of a usable config.toml that leash ignores), the tmux server
leash uses (``tmux_no_server`` warns, ``tmux_wrong_socket`` fails), and the
home the installed hooks use against this one (``home_mismatch``,
``home_unpinned``: ``core.hook.wiring.home_findings``).

The home itself comes first, and doctor is the one command that runs on an
unsafe home (``core.home.UnsafeHome``): it reports it, ``--repair`` takes the
write bits of others off a home the user owns, and the other checks wait until
the home is safe (no backend is opened on it before).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator

from leash.core.base.config import ConfigError, config_problem, config_warnings
from leash.core.base.finding import Finding
from leash.core.base.home import home_problem, resolve_home
from leash.core.views.protocol import StopProtocol

CONFIG_WARNING = "config_warning"  # something in a usable config.toml that leash ignores

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Literal

    from leash.core.store.protocols import Backend
    from leash.core.store.records import SessionRecord


def examine(protocol: StopProtocol | str | None = None, *, repair: bool = False, now: float | None = None,
            backend: Backend | None = None) -> Iterator[Finding]:
    """Every finding on ``backend`` (default: the one over ``protocol``, a
    ``StopProtocol`` or a home's path; a path when the home is unsafe, since
    no backend can be opened on it until it is repaired)."""
    if backend is not None:
        home = Path(backend.home)
    else:
        home = Path(protocol.home if isinstance(protocol, StopProtocol) else resolve_home(protocol))
    safe = True
    for finding in _check_home(home, repair, now):
        safe = safe and not (finding.subject == "home" and finding.level == "fail")
        yield finding
    if not safe:
        yield Finding("fail", "state", "not examined: leash uses no state in an unsafe home")
        return
    problem = config_problem(home)  # asked, not caught: an operator's command holds the floor (core.base.config)
    if problem is None:
        yield from _config_findings(home)
    else:
        from leash.core.views.status import CONFIG_BROKEN, CONFIG_BROKEN_EFFECT, store_may_be_named

        yield Finding("fail", CONFIG_BROKEN, f"{problem} ({CONFIG_BROKEN_EFFECT}; leashd and every command run "
                                             "on the strictest settings)")
        if backend is None and store_may_be_named(str(home)):
            yield Finding("fail", "state", "not examined: the broken config.toml may name the shared store")
            return
        if backend is None:  # it names no shared store: the home's files are the state
            from leash.core.store.files import FileBackend

            backend = FileBackend.sharing(protocol) if isinstance(protocol, StopProtocol) else FileBackend(str(home))
    if backend is None:
        backend = yield from _shared_store(str(home), repair)
    if backend is None:
        from leash.core.views.status import backend_of

        backend = backend_of(protocol if isinstance(protocol, StopProtocol) else str(home))
    if backend is not False:
        yield from backend.examine(repair=repair, now=now)
    from leash.core.notify.state import findings as notify_findings

    yield from notify_findings(str(home), backend=backend, now=now)  # the routes' health, who sends
    if backend is not False:
        yield from _meter_findings(backend)
        if problem is None:
            yield from _window_findings(str(home), backend, now=now)
    yield from _tmux_findings(str(home), backend)
    from leash.core.hook.installcheck import doctor_findings
    from leash.core.hook.wiring import home_findings

    for level, subject, message in doctor_findings() + home_findings(str(home)):
        yield Finding(level, subject, message)


METER_FILES_NAMED = 10  # files with unreadable usage lines named one by one; the rest counted


def _meter_findings(backend: Backend) -> Iterator[Finding]:
    """The spend meter's unreadable lines, once per file (``core.views.metering``
    skips them and counts them in the file's meter state)."""
    try:
        meters = backend.budget.meters()
    except Exception as exc:  # the store's own findings say why it cannot be read
        yield Finding("warn", "budget meter", f"not read: {exc}")
        return
    skipped = [(int(state.skipped or 0), source, session) for session, sources in meters.items()
               for source, state in sources.items() if int(state.skipped or 0) > 0]
    for count, source, session in sorted(skipped, reverse=True)[:METER_FILES_NAMED]:
        yield Finding("warn", "budget meter", f"{count} line(s) of {source} (session {session}) hold no usage "
                                              "leash can read; skipped, the rest counted")
    if len(skipped) > METER_FILES_NAMED:
        yield Finding("warn", "budget meter", f"and {len(skipped) - METER_FILES_NAMED} more files with unreadable "
                                              "usage lines")


def _window_findings(home: str, backend: Backend, *, now: float | None) -> Iterator[Finding]:
    """A cap over a subscription window counts nothing until that window's
    reset is reported (Claude Code's status line): each such cap, once."""
    import time

    from leash.core.base.config import load_config
    from leash.core.policy.caps import caps_of

    caps = [cap for cap in caps_of(load_config(home).get("budget") or {}) if cap.period.startswith("window-")]
    if not caps:
        return
    moment = time.time() if now is None else now
    try:
        windows = backend.budget.windows()
    except Exception:  # _meter_findings said the store cannot be read
        return
    open_windows = {(w.bucket, w.window) for w in windows if w.resets_at is not None and float(w.resets_at) > moment}
    for cap in caps:
        known = ((cap.account, cap.period) in open_windows if cap.scope == "account"
                 else any(window == cap.period for _, window in open_windows))
        if not known:
            whose = f"account {cap.account}'s" if cap.scope == "account" else "any"
            yield Finding("warn", "budget cap", f"cap {cap.name} counts nothing yet: no {cap.period} reset of "
                                                f"{whose} sessions is known (Claude Code's status line reports it; "
                                                "`leash install` wires it); it waits for one")


def _config_findings(home: Path) -> Iterator[Finding]:
    """A usable config.toml: valid, or a warning for each thing in it leash
    ignores (an unknown key, a ``[console.keys]`` binding the console cannot
    use), as every command says it on stderr."""
    warnings = config_warnings(home)
    for warning in warnings:
        yield Finding("warn", CONFIG_WARNING, warning)
    if not warnings:
        yield Finding("ok", "config.toml", "valid" if (home / "config.toml").exists() else "absent; defaults in use")


def _tmux_findings(home: str, backend: Backend | Literal[False]) -> Iterator[Finding]:
    """The tmux server leash uses (``core.views.status.tmux_problem``): a wrong
    socket path fails (the kennel and interrupts cannot reach the agents' panes),
    no server running is a warning; nothing is said when nothing expects tmux."""
    from leash.core.base.tmux import resolve_socket
    from leash.core.views.status import TMUX_WRONG_SOCKET, tmux_problem

    sessions: list[SessionRecord] = []
    if backend is not False:
        try:
            here = backend.sessions.host
            sessions = [record for name, record in backend.sessions.all().items()
                        if not here or name.startswith(here + "/") or "/" not in name]
        except Exception:  # the stores' own findings say why they cannot be read
            sessions = []
    problem = tmux_problem(home, sessions)
    if problem is not None:
        yield Finding("fail" if problem["kind"] == TMUX_WRONG_SOCKET else "warn", problem["kind"], problem["message"])
        return
    try:
        socket = resolve_socket(home=home)
    except ConfigError:
        return  # config_broken says so
    if socket is not None or any(s.tmux_pane for s in sessions):
        yield Finding("ok", "tmux", f"the server at {socket or 'tmux default socket'} answers")


def _shared_store(home: str, repair: bool):
    """The shared store the home names, opened to be looked at as it is; None
    for a home of files; False when it cannot be opened (said as a finding)."""
    from leash.core.store.pg import StoreOffline
    from leash.core.store.select import StoreSelectionError, backend_for, store_url

    try:
        if not store_url(home):
            return None
        return backend_for(home, schema="as-is")  # examine reports the schema, and upgrades it with repair
    except ConfigError:
        return None  # said above; the files are what can be examined
    except (StoreOffline, StoreSelectionError) as exc:
        yield Finding("fail", "store", str(exc))
        return False


def _check_home(home: Path, repair: bool, now: float | None = None) -> Iterator[Finding]:
    problem = home_problem(str(home))
    fixed = False
    if problem is not None:
        text, repairable = problem
        if repair and repairable:
            os.chmod(home, 0o700)
            fixed = True
            yield Finding("fixed", "home", f"{home} was {text}; now 700")
        else:
            hint = ("leash doctor --repair makes it 700" if repairable
                    else "leash cannot mend this: fix it by hand or choose another home")
            yield Finding("fail", "home", f"{home} is {text}; every command refuses it ({hint})")
            return
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        if repair:
            os.chmod(home, 0o700)
            yield Finding("fixed", "home", f"{home} was mode {mode:o}; now 700")
        else:
            yield Finding("warn", "home", f"{home} is mode {mode:o}; others can read agent state (repair: 700)")
    elif not fixed:
        yield Finding("ok", "home", str(home))
    for entry in home.iterdir():
        if entry.is_file() and not entry.is_symlink() and not entry.name.endswith(".lock"):
            file_mode = stat.S_IMODE(entry.stat().st_mode)
            if file_mode & 0o077:
                if repair:
                    os.chmod(entry, 0o600)
                    yield Finding("fixed", entry.name, f"mode {file_mode:o}; now 600")
                else:
                    yield Finding("warn", entry.name, f"mode {file_mode:o}; expected 600")
