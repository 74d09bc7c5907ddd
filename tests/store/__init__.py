"""Tests of the store layer: the protocol contract, the file, PostgreSQL and remote backends."""
