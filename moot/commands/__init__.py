"""Subcommands of run_conference.py: each module exposes `run(argv) -> exit code`."""
