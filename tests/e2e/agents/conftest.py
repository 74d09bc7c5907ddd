"""The agent CLIs' rig as fixtures for every test module here (``codex``,
``wired``; ``gemini``, ``rig``): defined in ``tests/support/e2e/rig.py``, so
no test module imports another."""
from ...support.e2e.rig import codex, gemini, rig, wired  # noqa: F401 - fixtures
