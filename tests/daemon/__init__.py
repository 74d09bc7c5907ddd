"""Tests of the daemon layer: leashd, approvals through it, notifications."""
