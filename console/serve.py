"""``leash serve``: the console in a browser, through textual-serve, on 127.0.0.1 only."""
from __future__ import annotations

import shlex
import sys

HOST = "127.0.0.1"


def serve(home, *, port: int, no_kennel: bool = False) -> int:
    try:
        from textual_serve.server import Server
    except ImportError:
        sys.stderr.write("leash: error: leash serve needs textual-serve (pip install 'leash[serve]')\n")
        return 1
    command = [sys.executable, "-m", "console.cli", "--home", str(home), "console"]
    if no_kennel:
        command.append("--no-kennel")
    server = Server(" ".join(shlex.quote(part) for part in command), host=HOST, port=port, title="leash")
    print(f"leash console on http://{HOST}:{port}/ (local only)")
    server.serve()
    return 0
