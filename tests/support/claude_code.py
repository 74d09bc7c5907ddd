"""Claude Code's hook payloads as captured from the real client
(tests/fixtures/claude_code/, one file per event), and a hook run on one of
them in this process, as Claude Code's command would run it."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SESSION = "00000000-0000-4000-8000-000000000001"  # the session id every captured payload carries


def payload(event: str, **changes) -> dict:
    """The captured payload of ``event`` (``PreToolUse``, ``SessionStart``...) with ``changes``."""
    data = json.loads((FIXTURES / f"{event}.json").read_text())
    data.update(changes)
    return data


def hook(home, verb: str, data: dict, env: dict | None = None) -> tuple[int, str, str]:
    """``leash hook VERB`` on ``data`` through the hook's entry: (exit code, stdout, stderr)."""
    from leash.core.hook.hooks import run

    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        code = run(verb, home=str(home), stdin=io.BytesIO(json.dumps(data).encode()), stdout=out, stderr=err)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, out.getvalue(), err.getvalue()
