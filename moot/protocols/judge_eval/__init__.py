"""The conference judge alone as a zero-shot classifier (Heller et al. 2025; see .protocol)."""
