"""Scenario files: strict YAML, the building blocks every protocol's schema shares, errors, docs."""
