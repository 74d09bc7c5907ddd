"""Tests of the warrants layer: the kennel, dogs, speech, interrupts, renamed and multi-host targets."""
