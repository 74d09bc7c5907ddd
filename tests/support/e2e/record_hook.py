"""A Claude Code hook that records what it was given: one JSON line per call
(its argv, its stdin parsed as JSON, the few environment values a hook reads)
appended to the file named by ``LEASH_E2E_RECORD``. It prints nothing and
exits 0, so it never changes what Claude Code does."""
from __future__ import annotations

import json
import os
import sys

ENV_KEYS = ("CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "CLAUDE_CODE_ENTRYPOINT", "TMUX_PANE")


def main() -> int:
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = {"unparsed": raw.decode("utf-8", "replace")}
    line = {"argv": sys.argv[1:], "stdin": payload,
            "env": {key: os.environ[key] for key in ENV_KEYS if key in os.environ}}
    with open(os.environ["LEASH_E2E_RECORD"], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
