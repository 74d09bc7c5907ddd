"""Base, tier 0 of the layers (docs/architecture.md): what every other layer stands on,
and nothing of leash's own state.

The clock, text helpers, the home folder and its well-known names, ``config.toml``,
state-file primitives (locked, atomic, fsynced JSON), secret masking, globs,
project paths, the ack log's MAC key and verifier, tmux and process lookups,
and where each agent CLI keeps its settings. Modules here import only the
standard library and each other.
"""
