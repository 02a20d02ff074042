"""Experiments: grids of runs (arms x datasets x models x repeats), declared in one file."""
