"""Speaker-selection policies, one module per protocol: pure functions from the conversation so
far to the next speaker, tested by tables (tests/test_speaker_selection.py)."""
