#!/usr/bin/env python3
"""Run a moot scenario: `python run_conference.py scenarios/drug_policy.yaml` (see README)."""

import sys

from moot.cli import main

if __name__ == "__main__":
    sys.exit(main())
