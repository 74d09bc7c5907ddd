"""Tests of the project itself: packaging, layering, import cycles, docs links, one rule per place."""
