"""tmux sessions made and renamed with the ``tmux`` command itself, on a
private server's socket (as an agent or an operator would, not through
leash's own tmux module)."""
from __future__ import annotations

import subprocess


def start_session(tmux_socket, name: str) -> str:
    """A new session ``name`` running ``sleep 600``; its pane's id (``%N``)."""
    subprocess.run(["tmux", "-S", str(tmux_socket), "new-session", "-d", "-s", name, "sleep 600"], check=True)
    out = subprocess.run(["tmux", "-S", str(tmux_socket), "display-message", "-p", "-t", f"={name}:",
                          "#{pane_id}"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def rename_session(tmux_socket, old: str, new: str) -> None:
    subprocess.run(["tmux", "-S", str(tmux_socket), "rename-session", "-t", f"={old}", new], check=True)
