"""Tests of the console: keys, layout, snapshots, live updates, serve."""
