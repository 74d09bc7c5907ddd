"""``python -m leash.console.cli``: the command line, as the ``leash`` script runs it."""
import sys

from leash.console.cli import main

sys.exit(main())
