"""Another agent CLI's hook payload read into Claude Code's shape, so one gate
judges every CLI the same way.

``claude_shaped(spec, payload)`` takes the parsed payload of one of
``core.wire.hookevents``'s Gemini CLI or Codex CLI events and returns the
payload the Claude Code verb ``spec.judged_as`` reads: the same
``session_id``, ``cwd`` and ``transcript_path``, ``hook_event_name`` set to
Claude Code's event, the tool's name and input in Claude Code's terms, and
``leash_cli`` naming the CLI (shown in ``leash status`` and the console).

Tools (Gemini CLI 0.61): ``run_shell_command`` is Bash (its ``dir_path`` moves
the command's working directory), ``write_file`` is Write, ``replace`` is Edit,
``read_file`` is Read, ``list_directory`` LS, ``glob`` Glob,
``search_file_content``/``grep_search`` Grep, ``web_fetch`` WebFetch,
``google_web_search`` WebSearch. Codex CLI already says Bash; its file writes
are ``apply_patch`` (read by ``core.policy.patchread``). Any other name (an
MCP tool, ``read_many_files``, a tool a newer CLI adds) stays as it is and is
judged as a tool leash does not know: every path its input names is a write.

Gemini CLI's ``BeforeModel`` and ``AfterModel`` keep their names and lose
``llm_request`` / ``llm_response``: the verbs that judge them read the session
only (leashd's meter reads the usage from the payload as the CLI sent it).

Never raises on a payload that is a JSON object: what it does not know it
keeps. Everything in a payload is the agent's data; nothing here decides.
"""
from __future__ import annotations

import os

from leash.core.wire.hookevents import AGENTS, CLAUDE

# Gemini CLI's tool -> (Claude Code's tool, {Claude key: Gemini keys, first present wins}).
GEMINI_TOOLS: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "run_shell_command": ("Bash", {"command": ("command",), "description": ("description",)}),
    "write_file": ("Write", {"file_path": ("file_path", "absolute_path", "path"), "content": ("content",)}),
    "replace": ("Edit", {"file_path": ("file_path", "absolute_path", "path"), "old_string": ("old_string",),
                         "new_string": ("new_string",)}),
    "read_file": ("Read", {"file_path": ("file_path", "absolute_path", "path")}),
    "list_directory": ("LS", {"path": ("dir_path", "path")}),
    "glob": ("Glob", {"pattern": ("pattern",), "path": ("dir_path", "path")}),
    "search_file_content": ("Grep", {"pattern": ("pattern",), "path": ("dir_path", "path")}),
    "grep_search": ("Grep", {"pattern": ("pattern",), "path": ("dir_path", "path")}),
    "web_fetch": ("WebFetch", {"prompt": ("prompt",), "url": ("url",)}),
    "google_web_search": ("WebSearch", {"query": ("query",)}),
}
# What a translated call must carry, else it stays as the CLI sent it.
REQUIRED = {"Bash": ("command",), "Write": ("file_path",), "Edit": ("file_path",), "Read": ("file_path",)}
GEMINI_EVENTS = {"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse", "BeforeAgent": "UserPromptSubmit",
                 "SessionStart": "SessionStart", "SessionEnd": "SessionEnd",
                 "BeforeModel": "BeforeModel", "AfterModel": "AfterModel"}  # (the model hooks: leash's own verbs)
# What a model hook carries that no verb judging it reads: the whole
# conversation (``llm_request``) and the response chunk, dropped so that a
# request is not copied and written out again on every model call.
MODEL_PAYLOAD_KEYS = ("llm_request", "llm_response")


def claude_shaped(spec, payload: dict) -> dict:
    """``payload`` of ``spec``'s event as Claude Code's ``spec.judged_as`` payload."""
    shaped = dict(payload)
    shaped["leash_cli"] = spec.agent
    if spec.agent == CLAUDE:
        return shaped
    if spec.agent == "gemini":
        shaped["hook_event_name"] = GEMINI_EVENTS.get(spec.event, spec.event)
        if spec.event in ("BeforeModel", "AfterModel"):
            for key in MODEL_PAYLOAD_KEYS:
                shaped.pop(key, None)
        _gemini_tool(shaped)
    return shaped


def cli_of(payload: dict) -> str:
    """Which agent CLI's hook this is (``leash_cli``, set when another CLI's
    payload is read into Claude Code's shape; Claude Code's own say nothing).
    The payload is the agent's: a session can only mislabel itself."""
    value = payload.get("leash_cli")
    return value if isinstance(value, str) and value in AGENTS else CLAUDE


def _gemini_tool(shaped: dict) -> None:
    tool, tool_input = shaped.get("tool_name"), shaped.get("tool_input")
    if not isinstance(tool, str) or tool not in GEMINI_TOOLS or not isinstance(tool_input, dict):
        return
    name, keys = GEMINI_TOOLS[tool]
    translated = {}
    for claude_key, gemini_keys in keys.items():
        for key in gemini_keys:
            if key in tool_input:
                translated[claude_key] = tool_input[key]
                break
    if any(key not in translated for key in REQUIRED.get(name, ())):
        return  # not the input this tool has: judged as a tool leash does not know (every path a write)
    shaped["tool_name"], shaped["tool_input"] = name, translated
    shaped["leash_tool"] = tool  # the CLI's own name, for the log and the console
    directory = tool_input.get("dir_path") if name == "Bash" else None
    cwd = shaped.get("cwd")
    if isinstance(directory, str) and directory and isinstance(cwd, str):
        # The command runs there: its relative paths are read from there.
        shaped["cwd"] = os.path.normpath(os.path.join(cwd, directory))
    if "tool_response" in shaped and not isinstance(shaped["tool_response"], (dict, str)):
        shaped["tool_response"] = str(shaped["tool_response"])
