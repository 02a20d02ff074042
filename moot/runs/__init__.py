"""Run folders and the runner: every protocol's units (a conference, or one item each) run here."""
