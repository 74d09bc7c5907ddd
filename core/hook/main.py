"""The hook's entry: ``leash [--home DIR] hook EVENT`` recognised and run
without argparse or any of the console, so a hook call costs the standard
library and the core modules it needs.

With a leash daemon to ask (``core.thinhook``) the hook is a thin client of
its agent socket; without one, the in-process hook (``core.hooks``) judges.
``leash [--home DIR] statusline ...`` takes the same short way
(``core.wire.thinstatus``).

The hook entry (``core/hook/hookentry.py``) asks leashd without this module
and comes here only for the rest: no leashd to ask (``without_daemon``), or
anything that is not a hook call.

Failure: an argument list that is not exactly a hook call is not this
module's to judge: ``run_hook_command`` returns None and the full command line
parses it (and reports what is wrong). The hook itself fails as ``core.hooks``
describes.
"""
from __future__ import annotations

from leash.core.wire.hookio import armed, hook_call, leading_home  # the hook entry's grammar, read before argparse

__all__ = ["hook_call", "leading_home", "main", "run_hook_command", "shared_store_named", "status_line_command",
           "without_daemon"]


def run_hook_command(argv: list[str], *, entered_ns: int | None = None) -> int | None:
    """The hook's exit code, or None when ``argv`` is not a hook call.
    ``entered_ns``: when the hook entry began (a traced call's first stamp).
    A leading ``--deadline SECONDS`` (``core.wire.hookio.armed``) is the
    installed command's own deadline; one that is not a number refuses (2)."""
    deadlined = armed(argv)
    if deadlined is None:
        import sys

        sys.stderr.write("leash: error: --deadline takes a number of seconds above 0\n")
        return 2
    argv = deadlined
    call = hook_call(argv)
    if call is None:
        return status_line_command(argv)
    home, event = call
    from leash.core.wire import thinhook

    try:
        return thinhook.run(event, home=home, entered_ns=entered_ns)
    except thinhook.NoDaemon as none:
        return without_daemon(event, home, none)


def without_daemon(event: str, home: str | None, none) -> int:
    """The hook's exit code when no leashd answers here (``none``: the
    ``NoDaemon`` raised, with stdin if it was read): the in-process hook
    judges, but for a home whose stores are in the shared database."""
    if shared_store_named(home):
        import sys

        from leash.core.base.config import config_problem
        from leash.core.base.home import resolve_home
        from leash.core.wire.hookio import emit, failed_closed

        problem = config_problem(resolve_home(home))  # parsed already: kept for this process
        said = (f"leash: config_broken: {problem}: config.toml cannot be used and may name the shared store, "
                "so no hook can judge here: every call is denied until the operator mends it (`leash doctor` "
                "shows it)" if problem else
                "leash: this home uses the shared store and no `leash daemon` answers here: hooks judge only "
                "through it; start it")
        out, err, code = failed_closed(event, said)
        return emit(out, err, code, stdout=sys.stdout, stderr=sys.stderr)
    from leash.core.hook.hooks import run

    return run(event, home=home, raw=none.raw, input_error=none.input_error)


def status_line_command(argv: list[str]) -> int | None:
    """``[--home DIR] statusline [OPTIONS]``: Claude Code's status line
    (``core.wire.thinstatus``), as cheap as a hook; None for anything else."""
    found = leading_home(argv)
    if found is None or found[1][:1] != ["statusline"]:
        return None
    from leash.core.wire import thinstatus

    return thinstatus.main(found[1][1:], home=found[0])


def shared_store_named(home: str | None) -> bool:
    """Whether the home's stores are in the shared database (hooks never talk
    to it: without leashd they cannot judge). A config that cannot be read but
    has a ``[store]`` table counts as naming it (fail closed)."""
    import os

    if os.environ.get("LEASH_STORE_URL"):
        return True
    from leash.core.base.home import resolve_home

    path = os.path.join(resolve_home(home), "config.toml")
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError:
        return False
    if b"[store]" not in text:
        return False
    from leash.core.base.config import ConfigError
    from leash.core.store.select import store_url

    try:
        return bool(store_url(resolve_home(home), {}))
    except ConfigError:
        return True


def main(argv: list[str]) -> int:
    """``hookentry``'s: the hook's exit code, or 2 with one line for anything
    that is not ``[--home DIR] hook EVENT``."""
    code = run_hook_command(argv)
    if code is None:
        import sys

        sys.stderr.write("leash: error: expected `hook EVENT` or `statusline` (this is leash's hook entry)\n")
        return 2
    return code
