"""Metrics computed from saved results: classification scores (and their definitions)."""
