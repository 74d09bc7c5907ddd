"""Tests of the state layer: the ack log as truth, breakers, stops, lineage, session states, faults and concurrency."""
