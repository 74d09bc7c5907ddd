"""What Claude Code runs for each leash hook: ``leash install`` writes
``PYTHON -S -P <this file> [--deadline SECONDS] hook EVENT`` (``-P``: the
file's folder is not put on ``sys.path``; ``--deadline``, a gating hook's own
end, in ``core.wire.hookio.armed``).

It is ``leash hook EVENT`` without the console script's wrapper, which imports
``re`` on every call: as much time again as the whole thin hook client. A
hook call goes straight to leashd's thin client (``core.wire.thinhook``),
which is all most calls import; with no leashd to ask, and for anything that
is not ``[--home DIR] hook EVENT`` (``core.wire.hookio.hook_call``),
``core.hook.main`` takes over. A hook call's
process ends once its answer is out (``exit_now``). Its first line
takes the time the hook's own code began, the first stamp of a traced call
(``LEASH_HOOK_TRACE``).

``-S``: the command runs the interpreter without ``site``, which costs a
bare interpreter's start about a sixth of its time (every ``.pth`` file of
every site-packages, the user's included), and which the thin client, all
standard library and leash, does not need: installed as a package
(``site-packages/leash``), the folder that holds it is put on ``sys.path``
after the standard library; a source checkout (an editable install, whose
finder is a ``.pth``) gets ``site`` after all. Everything else, the
in-process hook included, runs with ``site`` as usual (``with_site``):
its store may need a package from any site-packages. So while leashd
answers, no ``.pth`` file (one an agent could write into the user's
site-packages) runs in the hook.
"""
from time import perf_counter_ns

ENTERED_NS = perf_counter_ns()

import posix  # noqa: E402  (after the first stamp; not ``os``: core.base.bareos says why)
import sys  # noqa: E402


def with_site() -> None:
    """``site`` as the interpreter would have run it without ``-S`` (once)."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


def _leash_on_path() -> None:
    """Under ``-S``: leash's own folder on ``sys.path``, or ``site`` for a checkout."""
    if not sys.flags.no_site:
        return
    entry = __file__ if __file__.startswith("/") else f"{posix.getcwd()}/{__file__}"
    folder, _, name = entry.rsplit("/", 3)[0].rpartition("/")
    # An installed package (site-packages/leash), not a checkout that happens to
    # be in a folder named leash (as core.policy.halts.settingsguard tells them).
    if name == "leash" and folder and not _exists(f"{folder}/leash/pyproject.toml"):
        sys.path.append(folder)  # after the standard library, as site would put it
    else:
        with_site()


def _exists(path: str) -> bool:
    try:
        posix.stat(path)
    except OSError:
        return False
    return True


_leash_on_path()

from leash.core.wire.hookio import armed, hook_call  # noqa: E402
from leash.core.wire.thinhook import NoDaemon, run  # noqa: E402


def exit_now(code: int) -> None:
    """End the process with ``code`` once stdout and stderr are flushed: the
    hook entry, once the hook answered. Leash's state is written through
    descriptors and committed databases, so nothing is left to flush, and the
    interpreter's teardown (its modules, a database's closing checkpoint)
    would cost every tool call a few milliseconds more; the in-process hook's
    over ten. Returns instead, and the interpreter exits as usual, when
    either stream cannot be flushed, an ``atexit`` handler is registered or a
    thread that is not a daemon still runs: theirs to finish."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        return
    atexit = sys.modules.get("atexit")  # never imported: no handler was registered through it
    if atexit is not None and getattr(atexit, "_ncallbacks", lambda: 1)():
        return
    threading = sys.modules.get("threading")
    if threading is not None and any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    posix._exit(code)


def main(argv: list[str]) -> int:
    deadlined = armed(argv)
    if deadlined is None:
        sys.stderr.write("leash: error: --deadline takes a number of seconds above 0 (this is leash's hook entry)\n")
        return 2
    argv = deadlined
    call = hook_call(argv)
    if call is None:
        with_site()
        from leash.core.hook.main import main as full_entry

        return full_entry(argv)
    home, event = call
    try:
        code = run(event, home=home, entered_ns=ENTERED_NS)
    except NoDaemon as none:
        with_site()
        from leash.core.hook.main import without_daemon

        code = without_daemon(event, home, none)
    exit_now(code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
