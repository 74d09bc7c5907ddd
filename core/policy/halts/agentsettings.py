"""What makes leash's hooks run in Gemini CLI and Codex CLI: their settings
files, and the command-line switches that turn hooks off.

``supervisor_tampering`` reads this module. Files:

* Gemini CLI: ``.gemini/settings.json`` anywhere, ``/etc/gemini-cli/settings.json``
  and ``~/.gemini/trustedFolders.json`` (an untrusted folder runs no hooks);
* Codex CLI: ``.codex/config.toml`` anywhere (``[features] hooks = false`` in a
  trusted project switches the user's hooks off; the user's holds the hashes
  that trust leash's hooks), ``$CODEX_HOME/config.toml``, ``hooks.json`` beside
  either, and ``/etc/codex/requirements.toml``.

A shell command or an unknown tool that writes one of these files is
tampering (leash cannot see what it writes). An Edit, Write or patch is judged
by its own text, an honest and deterministic rule rather than a parse of the
file after: it is tampering when the text it removes or adds mentions
``hooks`` (``hooks``, ``hooksConfig``, ``[features] hooks``, a hook's trust in
``hooks.state``) or ``leash``, or is a trust file's change at all. It cannot
see a change that reaches hooks without naming them (a TOML dotted key split
across lines by an edit that removes only its value is one); such an edit is
refused only if its text names them.

Commands: running ``codex`` with ``--disable hooks``, ``-c features.hooks=…``,
``--enable``/``--disable`` of hooks or ``--dangerously-bypass-hook-trust``
starts an agent leash cannot hold.
"""
from __future__ import annotations

import os

GEMINI_SYSTEM_SETTINGS = "/etc/gemini-cli/settings.json"
CODEX_REQUIREMENTS = "/etc/codex/requirements.toml"
HOOK_WORDS = ("hooks", "leash")
CODEX_HOOK_SWITCHES = ("--dangerously-bypass-hook-trust",)


def agent_settings_file(path: str) -> str | None:
    """Which CLI's hook settings ``path`` is ("Gemini CLI settings" ...), or None."""
    name, folder = os.path.basename(path), os.path.basename(os.path.dirname(path))
    if path == GEMINI_SYSTEM_SETTINGS or (folder == ".gemini" and name == "settings.json"):
        return "Gemini CLI settings"
    if folder == ".gemini" and name == "trustedFolders.json":
        return "Gemini CLI's trusted folders"
    codex_home = os.environ.get("CODEX_HOME")
    if path == CODEX_REQUIREMENTS or (folder == ".codex" and name in ("config.toml", "hooks.json")) \
            or (codex_home and os.path.dirname(path) == os.path.normpath(codex_home)
                and name in ("config.toml", "hooks.json")):
        return "Codex CLI config"
    return None


def edit_findings(path: str, edits: list[dict]) -> list[str]:
    """Why the edits of the agent settings file ``path`` are tampering (see the module)."""
    what = agent_settings_file(path)
    if what is None:
        return []
    if "trusted folders" in what:
        return [f"changes {what} ({path})"] if edits else []
    for edit in edits:
        text = f"{edit.get('old', '')}\n{edit.get('new', '')}".lower()
        if any(word in text for word in HOOK_WORDS):
            return [f"changes the hooks of {what} ({path})"]
    return []


def codex_switch(argv: list[str]) -> str | None:
    """The switch of a ``codex`` command line that turns hooks off, or None."""
    for index, word in enumerate(argv[1:], start=1):
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if word in CODEX_HOOK_SWITCHES:
            return word
        if word in ("--disable", "--enable") and following == "hooks":
            return f"{word} hooks"
        if word in ("-c", "--config") and "hooks" in following:
            return f"{word} {following}"
        if word.startswith(("-c", "--config=")) and "hooks" in word:
            return word
    return None
