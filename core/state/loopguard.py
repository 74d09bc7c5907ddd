"""Auto-resume restart-loop breaker (hermes-agent's ``gateway/restart_loop_guard``).

A supervised agent gateway (launchd ``KeepAlive``, systemd ``Restart=``) that is
killed by something its own session does comes back, auto-resumes that session,
and is killed again — a respawn loop no one is watching. The supervisor (or the
gateway at boot) records each restart-interrupted boot here and asks whether
the loop is tripped; when it is, it skips auto-resume for that boot, which
breaks the cycle and puts a human back in the loop.

State: ``<home>/<name>/restart_loop.json`` = ``{"boots": [<unix seconds>, ...]}``,
hermes's own file and format (``name="gateway"`` is hermes's path); beside it
``restart_loop.limits.json`` keeps the limits the supervisor passed with its
newest boot (``max_restarts``, ``window_seconds``, ``max_gap_seconds``), which
``describe`` reports over config.toml's ``[loop.NAME]`` and the defaults, and
which a later boot recorded without a limit of its own keeps (``limits_for``:
what the call gives, else config.toml's ``[loop.NAME]``, else the stored
limit, else the default), so ``--window 600`` once is not pruned to 60 s by
the next call without it. A name is
a plain file name (letters, digits, ``.``, ``_``, ``-``; no leading dot) that is
not one leash uses in the home (``core.home.RESERVED_NAMES``: ``stops.json``,
``warrants``, ``*.lock`` ...); any other name is refused with ``ValueError``,
so a breaker can never put a directory where a state file belongs.

Rules:
* sliding window (the default): tripped when at least ``max_restarts`` boots
  fall in the last ``window_seconds`` (boots at 1000, 1005, 1010 trip 3/60;
  1000, 1070, 1140 never do);
* ``max_gap_seconds`` > 0 also chains boots whose gaps stay under it, the first
  gap measured from now, so a slow crash cycle trips too (1000, 1150, 1300 trip
  with a 300 s gap);
* ``max_restarts <= 0`` disables the breaker; at most ``MAX_BOOTS_KEPT`` boots are
  stored;
* a boot stamped in the future (the clock was set back since) is taken as
  happening now and is rewritten so on the next record, so it is counted once
  and leaves the window like any other boot instead of lingering.

Failure: fail OPEN. A file that cannot be parsed is quarantined
(``restart_loop.json.corrupt-<ts>``) with one warning, and the breaker reads as
not tripped — a broken breaker must never wedge a healthy gateway. Records are
read-modify-write under the file's lock, so concurrent boots are all kept.
"""
from __future__ import annotations

import logging
import math
import os

from leash.core.base.clock import now_seconds
from leash.core.base.home import is_plain_name, is_reserved_name, private_dir, resolve_home
from leash.core.base.statefile import StateCorrupt, locked, quarantine, read_json, write_json

logger = logging.getLogger("leash.loopguard")

DEFAULT_NAME = "gateway"
DEFAULT_MAX_RESTARTS = 3
DEFAULT_WINDOW_SECONDS = 60
DEFAULT_MAX_GAP_SECONDS = 0
MAX_BOOTS_KEPT = 50
STATE_NAME = "restart_loop.json"
LIMITS_NAME = "restart_loop.limits.json"
LIMIT_KEYS = ("max_restarts", "window_seconds", "max_gap_seconds")


def check_name(name: object) -> str:
    """``name`` when it may name a breaker; ``ValueError`` (one line) otherwise."""
    if not isinstance(name, str) or not is_plain_name(name):
        raise ValueError(f"breaker name {name!r} must be a plain name: letters, digits, '.', '_', '-', "
                         "not starting with '.', at most 128 characters")
    if is_reserved_name(name):
        raise ValueError(f"breaker name {name!r} is reserved for leash's own state in the home")
    return name


def state_path(name: str = DEFAULT_NAME, home=None) -> str:
    return os.path.join(resolve_home(home), check_name(name), STATE_NAME)


def limits_path(name: str = DEFAULT_NAME, home=None) -> str:
    return os.path.join(resolve_home(home), check_name(name), LIMITS_NAME)


def valid_limits(data: object) -> dict[str, float]:
    """The limits in ``data`` that are numbers (every backend's reading of what it stored)."""
    if not isinstance(data, dict):
        return {}
    return {key: data[key] for key in LIMIT_KEYS
            if isinstance(data.get(key), (int, float)) and not isinstance(data[key], bool)
            and math.isfinite(data[key])}


def passed_limits(window_seconds: float, max_gap_seconds: float, max_restarts: int | None) -> dict[str, float]:
    """What a boot's supervisor passed, to keep beside the boots (``max_restarts``
    only when it asked for a verdict)."""
    limits: dict[str, float] = {"window_seconds": window_seconds, "max_gap_seconds": max_gap_seconds}
    if max_restarts is not None:
        limits["max_restarts"] = max_restarts
    return limits


def _stored_limits(path: str) -> dict[str, float]:
    """The limits a supervisor passed with its newest boot: the valid ones, {} when none can be read."""
    try:
        return valid_limits(read_json(path, {}))
    except (StateCorrupt, OSError):
        return {}


def stored_limits(name: str, *, home=None) -> dict[str, float]:
    """Breaker ``name``'s limits as its supervisor last passed them ({} when none)."""
    return _stored_limits(limits_path(name, home))


def parse_boots(data: object) -> list[float]:
    boots = data.get("boots", []) if isinstance(data, dict) else None
    if not isinstance(boots, list):
        raise StateCorrupt(STATE_NAME, '"boots" is not a list')
    return [float(t) for t in boots if isinstance(t, (int, float)) and not isinstance(t, bool)]


def _load_boots(path: str, *, now: float | None = None) -> list[float]:
    """Stored boots; on corruption: quarantine, warn once, fail open with []."""
    try:
        return parse_boots(read_json(path, {"boots": []}))
    except StateCorrupt as exc:
        with locked(path):
            try:
                return parse_boots(read_json(path, {"boots": []}))
            except StateCorrupt:
                moved = quarantine(path, now=now)
        logger.warning("restart-loop state %s unreadable (%s); moved to %s; breaker reads as not tripped",
                       path, exc.detail, moved)
        return []
    except OSError as exc:
        logger.warning("restart-loop state %s unreadable (%s); breaker reads as not tripped", path, exc)
        return []


def boots_counted(boots: list[float], moment: float) -> list[float]:
    """Boots as the rules see them: future stamps clamped to now, oldest first."""
    return sorted(min(t, moment) for t in boots)


def in_window(boots: list[float], window_seconds: float, moment: float) -> int:
    cutoff = moment - max(1, window_seconds)
    return sum(1 for t in boots_counted(boots, moment) if t >= cutoff)


def chain_length(boots: list[float], max_gap_seconds: float, moment: float) -> int:
    """Boots in the newest chain whose gaps (the first from now) are under max_gap."""
    if max_gap_seconds <= 0:
        return 0
    length, later = 0, moment
    for t in reversed(boots_counted(boots, moment)):
        if later - t >= max_gap_seconds:
            break
        length, later = length + 1, t
    return length


def loop_size(boots: list[float], window_seconds: float, max_gap_seconds: float, moment: float) -> int:
    return max(in_window(boots, window_seconds, moment), chain_length(boots, max_gap_seconds, moment))


def kept_boots(boots: list[float], window_seconds: float, max_gap_seconds: float, moment: float) -> list[float]:
    """What a record stores: boots still in the window or the chain, newest 50."""
    counted = boots_counted(boots, moment)
    cutoff = moment - max(1, window_seconds)
    chained = chain_length(counted, max_gap_seconds, moment)
    keep = [t for i, t in enumerate(counted) if t >= cutoff or i >= len(counted) - chained]
    return keep[-MAX_BOOTS_KEPT:]


def record_restart_interrupted_boot(
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    *,
    now: float | None = None,
    name: str = DEFAULT_NAME,
    home=None,
    max_gap_seconds: float = DEFAULT_MAX_GAP_SECONDS,
    max_restarts: int | None = None,
) -> list[float]:
    """Record a restart-interrupted boot; returns the stored boots, newest last.
    The limits it was recorded with (``max_restarts`` when given) are kept
    beside them, for ``describe``.

    Prunes boots that can no longer count. Best effort: a persistence failure
    returns the in-memory list without raising."""
    moment = now_seconds(now)
    path = state_path(name, home)
    limits = passed_limits(window_seconds, max_gap_seconds, max_restarts)
    try:
        private_dir(os.path.dirname(path))
        with locked(path):
            boots = kept_boots(_load_boots(path, now=moment) + [moment], window_seconds, max_gap_seconds, moment)
            write_json(limits_path(name, home), {**_stored_limits(limits_path(name, home)), **limits})
            write_json(path, {"boots": boots})
        return boots
    except OSError as exc:
        logger.warning("could not record restart-interrupted boot in %s: %s", path, exc)
        return [moment]


def is_restart_loop_tripped(
    max_restarts: int = DEFAULT_MAX_RESTARTS,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    *,
    now: float | None = None,
    name: str = DEFAULT_NAME,
    home=None,
    max_gap_seconds: float = DEFAULT_MAX_GAP_SECONDS,
) -> bool:
    """True when at least ``max_restarts`` boots form a loop (window or chain).
    Fails open: any error reads as not tripped."""
    if max_restarts <= 0:
        return False
    moment = now_seconds(now)
    try:
        boots = _load_boots(state_path(name, home), now=moment)
    except Exception:  # the breaker must never wedge a healthy gateway
        return False
    return loop_size(boots, window_seconds, max_gap_seconds, moment) >= max_restarts


def loop_tripped(name: str, boots: list[float], *, max_restarts: int, window_seconds: float,
                 max_gap_seconds: float, moment: float) -> bool:
    """Whether ``boots`` trip breaker ``name`` (said as a warning when they do): every backend's verdict."""
    size = loop_size(boots, window_seconds, max_gap_seconds, moment)
    tripped = max_restarts > 0 and size >= max_restarts
    if tripped:
        logger.warning("restart-loop breaker %r TRIPPED: %d restart-interrupted boots (threshold %d, window %gs%s); "
                       "skip auto-resume. If this is a false positive: leash loop reset %s",
                       name, size, max_restarts, window_seconds,
                       f", max gap {max_gap_seconds:g}s" if max_gap_seconds > 0 else "", name)
    return tripped


def check_and_record(
    max_restarts: int = DEFAULT_MAX_RESTARTS,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    *,
    now: float | None = None,
    name: str = DEFAULT_NAME,
    home=None,
    max_gap_seconds: float = DEFAULT_MAX_GAP_SECONDS,
    source: str = "leash",
) -> bool:
    """Record this boot, then say whether auto-resume must be SKIPPED.

    A trip is written to the ack log (``loop_tripped``)."""
    moment = now_seconds(now)
    boots = record_restart_interrupted_boot(window_seconds, now=moment, name=name, home=home,
                                            max_gap_seconds=max_gap_seconds, max_restarts=max_restarts)
    tripped = loop_tripped(name, boots, max_restarts=max_restarts, window_seconds=window_seconds,
                           max_gap_seconds=max_gap_seconds, moment=moment)
    if tripped:
        size = loop_size(boots, window_seconds, max_gap_seconds, moment)
        try:
            from leash.core.state.acklog import AckLog

            AckLog(resolve_home(home)).append(
                "loop_tripped", source=source, session_id="", now=moment, name=name, boots=size,
                reason=f"{size} restart-interrupted boots, threshold {max_restarts}: auto-resume skipped",
            )
        except OSError as exc:
            logger.warning("could not log the trip: %s", exc)
    return tripped


def clear(*, name: str = DEFAULT_NAME, home=None) -> bool:
    """Forget the stored boots (clean shutdown, operator reset); True when there were any."""
    path = state_path(name, home)
    try:
        with locked(path):
            os.unlink(path)
            try:
                os.unlink(limits_path(name, home))
            except FileNotFoundError:
                pass
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        logger.warning("could not clear %s: %s", path, exc)
        return False


def reset(*, name: str = DEFAULT_NAME, home=None, source: str = "leash", reason: str = "",
          now: float | None = None) -> bool:
    """An operator's reset: clear the breaker and log ``loop_reset``."""
    had = clear(name=name, home=home)
    if had:
        from leash.core.state.acklog import AckLog

        AckLog(resolve_home(home)).append("loop_reset", source=source, session_id="", reason=reason, now=now,
                                          name=name)
    return had


def breaker_names(home=None) -> list[str]:
    """Every breaker that has state in the home (under a name a breaker may have)."""
    root = resolve_home(home)
    try:
        entries = sorted(os.listdir(root))
    except FileNotFoundError:
        return []
    return [e for e in entries if is_plain_name(e) and not is_reserved_name(e)
            and os.path.isfile(os.path.join(root, e, STATE_NAME))]


def thresholds(config: dict, name: str) -> dict[str, float]:
    """``max_restarts``, ``window_seconds``, ``max_gap_seconds`` for ``name``:
    ``[loop.NAME]`` in config.toml over the defaults."""
    found: dict[str, float] = {"max_restarts": DEFAULT_MAX_RESTARTS, "window_seconds": DEFAULT_WINDOW_SECONDS,
                               "max_gap_seconds": DEFAULT_MAX_GAP_SECONDS}
    found.update(config.get("loop", {}).get(name, {}))
    return found


def limits_for(name: str, config: dict, *, kept: dict, given: dict) -> dict[str, float]:
    """The limits a boot of breaker ``name`` is checked and recorded with:
    those ``given`` with it, else config.toml's ``[loop.NAME]``, else those
    ``kept`` from its newest boot, else the defaults. A supervisor that passed
    ``--window 600`` once keeps that window on a later call without it."""
    written = config.get("loop", {}).get(name, {})
    return {**thresholds({}, name), **valid_limits(kept),
            **{key: written[key] for key in LIMIT_KEYS if key in written}, **given}


def describe(name: str, *, home=None, config: dict | None = None, now: float | None = None) -> dict:
    """A breaker's state for status displays: its boots plus the verdict, by
    the limits its supervisor passed with its newest boot (over ``thresholds``)."""
    moment = now_seconds(now)
    limits = {**thresholds(config or {}, name), **_stored_limits(limits_path(name, home))}
    boots = _load_boots(state_path(name, home), now=moment)
    size = loop_size(boots, limits["window_seconds"], limits["max_gap_seconds"], moment)
    return {
        "name": name, "boots": boots, "in_loop": size, **limits,
        "tripped": limits["max_restarts"] > 0 and size >= limits["max_restarts"],
    }
