"""Tests of the command line: every command, usage errors, --json, completion."""
