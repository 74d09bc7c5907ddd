"""Tests of the hook layer: Claude Code, Gemini CLI and Codex CLI hooks, install and wiring,
the reply guard, profiles."""
