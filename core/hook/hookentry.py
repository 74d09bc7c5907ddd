"""What Claude Code runs for each leash hook: ``leash install`` writes
``PYTHON -P <this file> hook EVENT`` (``-P``: the file's folder is not put on
``sys.path``).

It is ``leash hook EVENT`` without the console script's wrapper, which imports
``re`` on every call: as much time again as the whole thin hook client. The
hook itself is ``core.hookmain``'s. Its first line takes the time the hook's
own code began, the first stamp of a traced call (``LEASH_HOOK_TRACE``).
"""
from time import perf_counter_ns

ENTERED_NS = perf_counter_ns()

import sys  # noqa: E402  (after the first stamp)

from leash.core.hook.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], entered_ns=ENTERED_NS))
