"""Tests of the base layer: config, globs, state files, secret shapes, tmux, the home."""
