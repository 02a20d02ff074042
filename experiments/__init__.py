"""Experiment files moot ships: one per paper table it reproduces in shape (docs/experiments.md)."""
