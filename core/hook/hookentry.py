"""What Claude Code runs for each leash hook: ``leash install`` writes
``PYTHON -P <this file> hook EVENT`` (``-P``: the file's folder is not put on
``sys.path``).

It is ``leash hook EVENT`` without the console script's wrapper, which imports
``re`` on every call: as much time again as the whole thin hook client. The
hook itself is ``core.hookmain``'s.
"""
import sys

from leash.core.hook.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
