"""Tests of the views layer: why, the Stop Protocol facade, the fleet view."""
