"""Ascend target family: pipeline descriptions, hard constraints, pipe model, emulation, CANN path."""
