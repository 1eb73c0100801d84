"""Placement mode: resource providers in memory, allocation candidates
computed as Placement computes them (docs/placement.rst)."""
