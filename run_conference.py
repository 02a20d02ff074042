#!/usr/bin/env python3
"""Run a moot scenario: `python run_conference.py scenarios/drug_policy.yaml` (see README)."""

from moot.cli import main_exit

if __name__ == "__main__":
    main_exit()
