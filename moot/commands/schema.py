"""`schema [--out PATH]`: the JSON Schema (draft 2020-12) of the conference scenario format.

Editors use it for completion and checking as you type (the shipped scenarios point
yaml-language-server at docs/scenario.schema.json, which is this output, committed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from moot.scenario import Scenario

DRAFT = "https://json-schema.org/draft/2020-12/schema"
DESCRIPTION = ("A moot decision-conference scenario (Heller et al. 2025): the task, the topics in "
               "order, the moderator, participants, judge and evaluator, the models that play them, "
               "generation settings, limits, retries and turn routing. Every key is described in "
               "docs/scenarios.md; check a file with `run_conference.py validate FILE`.")


def scenario_schema() -> dict[str, Any]:
    body = Scenario.model_json_schema()
    body.pop("title", None)
    body.pop("description", None)
    return {"$schema": DRAFT, "title": "moot scenario (protocol: conference)", "description": DESCRIPTION, **body}


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=2, ensure_ascii=False) + "\n"


def run(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="run_conference.py schema", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="write to this file instead of standard output")
    args = p.parse_args(argv)
    if args.out:
        args.out.write_text(schema_text(), encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(schema_text())
    return 0
