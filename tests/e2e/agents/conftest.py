"""The agent CLIs' rigs as fixtures for every test module here (``codex``,
``wired``; ``gemini``, ``rig``): defined in ``codex_rig`` and ``gemini_rig``,
so no test module imports another."""
from .codex_rig import codex, wired  # noqa: F401 - fixtures
from .gemini_rig import gemini, rig  # noqa: F401 - fixtures
