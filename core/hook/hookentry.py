"""What Claude Code runs for each leash hook: ``leash install`` writes
``PYTHON -P <this file> hook EVENT`` (``-P``: the file's folder is not put on
``sys.path``).

It is ``leash hook EVENT`` without the console script's wrapper, which imports
``re`` on every call: as much time again as the whole thin hook client. A
hook call goes straight to leashd's thin client (``core.wire.thinhook``),
which is all most calls import; with no leashd to ask, and for anything that
is not ``[--home DIR] hook EVENT``, ``core.hook.main`` takes over. A hook
call's process ends once its answer is out (``thinhook.exit_now``). Its first line
takes the time the hook's own code began, the first stamp of a traced call
(``LEASH_HOOK_TRACE``).
"""
from time import perf_counter_ns

ENTERED_NS = perf_counter_ns()

import sys  # noqa: E402  (after the first stamp)

from leash.core.wire.thinhook import NoDaemon, exit_now, hook_call, run  # noqa: E402


def main(argv: list[str]) -> int:
    call = hook_call(argv)
    if call is None:
        from leash.core.hook.main import main as full_entry

        return full_entry(argv)
    home, event = call
    try:
        code = run(event, home=home, entered_ns=ENTERED_NS)
    except NoDaemon as none:
        from leash.core.hook.main import without_daemon

        code = without_daemon(event, home, none)
    exit_now(code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
