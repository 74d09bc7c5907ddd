"""Which tmux session a hook's pane is in: asked of the server ``$TMUX``
names, never of the default server when ``$TMUX`` is missing (a pane of that
number there may be another agent's, and asking makes tmux's socket directory
in /tmp)."""
from __future__ import annotations

import os

from leash.core.state.sessions import tmux_identity_of_pane


def test_the_pane_is_asked_of_the_server_tmux_names(tmux, tmux_socket):
    tmux.new_session("agent-7", "cat")
    (session,) = tmux.list_sessions()
    pane = session["panes"][0]["id"]
    env = {"PATH": os.environ["PATH"], "TMUX": f"{tmux_socket},123,0", "TMUX_PANE": pane}
    assert tmux_identity_of_pane(pane, env=env) == (session["id"], "agent-7")


def test_a_pane_without_its_server_is_not_asked(tmux, tmp_path):
    tmux.new_session("agent-7", "cat")  # a server runs, but nothing names it to the hook
    pane = tmux.list_sessions()[0]["panes"][0]["id"]
    default_dir = tmp_path / "tmux-tmpdir"
    default_dir.mkdir()
    env = {"PATH": os.environ["PATH"], "TMUX_PANE": pane, "TMUX_TMPDIR": str(default_dir)}
    assert tmux_identity_of_pane(pane, env=env) == ("", "")
    assert list(default_dir.iterdir()) == []  # the default server's socket directory was never made
