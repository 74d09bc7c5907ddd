"""Tests of the policy layer: the shell and tool-call readers, halt conditions, tampering,
path locks, approval rules."""
