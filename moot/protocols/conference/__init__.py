"""The decision conference (Heller et al. 2025) as a protocol: an AutoGen SelectorGroupChat."""
