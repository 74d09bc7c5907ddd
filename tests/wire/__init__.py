"""Tests of the wire layer: the thin hook client, the hook protocol, bounded input."""
