"""``leash serve``: the console in a browser and the approvals page for a phone,
on 127.0.0.1 behind a token (``server``), one ``leash console`` process per
browser (``child``, ``driver``), the token (``token``) and ``/approvals``
(``approvals``). It imports nothing of the Textual console: a served console
is a ``leash console`` process."""
from __future__ import annotations

import os


def run_serve(home: str | os.PathLike, *, port: int, read_only: bool, no_kennel: bool,
              token_file: str | None, max_clients: int) -> int:
    """``leash serve`` until SIGINT or SIGTERM (``server.serve``: a bad setting
    is a ``ServeError`` or ``TokenError`` naming it)."""
    from leash.console.serve.server import serve

    return serve(home, port=port, read_only=read_only, no_kennel=no_kennel, token_file=token_file,
                 max_clients=max_clients)
