"""`schema [--out PATH]`: the JSON Schema (draft 2020-12) of the whole scenario format.

One schema for every protocol (a oneOf on `protocol`: conference, cola, s2mad, negotiation), so
one `$schema` line serves every scenario file. Editors use it for completion and checking as
you type (the shipped scenarios point yaml-language-server at docs/scenario.schema.json, which
is this output, committed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from moot.protocols import PROTOCOLS, protocol_module
from moot.scenario import Scenario

DRAFT = "https://json-schema.org/draft/2020-12/schema"
DESCRIPTION = ("A moot scenario. `protocol` picks the format: conference (the default; Heller et al. "
               "2025: task, topics, moderator, participants, judge, evaluator, limits, routing), cola "
               "(stance detection), s2mad (rumor detection from comments) or negotiation (sentiment "
               "by two negotiating LLMs). Every key is described in docs/scenarios.md; check a file "
               "with `run_conference.py validate FILE`.")


def protocol_models() -> dict[str, type[BaseModel]]:
    """protocol name -> its scenario model, conference first."""
    return {"conference": Scenario, **{name: protocol_module(name).SCHEMA for name in PROTOCOLS}}


def scenario_schema() -> dict[str, Any]:
    """The whole format: exactly one branch of `oneOf` matches a valid scenario."""
    models = list(protocol_models().values())
    refs, defs = models_json_schema([(m, "validation") for m in models], ref_template="#/$defs/{model}")
    return {"$schema": DRAFT, "title": "moot scenario", "description": DESCRIPTION,
            "oneOf": [refs[(m, "validation")] for m in models], **defs}


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=2, ensure_ascii=False) + "\n"


def run(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="moot schema", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="write to this file instead of standard output")
    args = p.parse_args(argv)
    if args.out:
        args.out.write_text(schema_text(), encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(schema_text())
    return 0
