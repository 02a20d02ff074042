"""`new --protocol conference NAME [--dir DIR]`: write a commented scenario to start from.

The file is valid as written (`validate` passes, `--model scripted` runs it), so a new user
edits a working conference instead of assembling one from the docs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

PROTOCOLS = ("conference", "cola", "s2mad", "negotiation")
AVAILABLE = ("conference",)
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "scenario.schema.json"

CONFERENCE = """\
# A decision conference (Heller et al. 2025): a moderator opens each topic, the participants
# debate it in rounds, a judge decides after each round whether they agree, and an evaluator
# scores each finished topic. Every key is described in docs/scenarios.md.
#   check:  python run_conference.py validate {file}
#   try:    python run_conference.py {file} --model scripted
#   run:    python run_conference.py {file}            (the local model, see `models:`)
protocol: conference
title: {title}
task: >-
  Decide together on the questions below, one topic at a time, and agree on each before
  moving on.
topics:                      # discussed in this order; at least one
  - which options are on the table
  - which criteria matter most
moderator:
  name: Moderator            # a letter, then letters, digits or _ (AutoGen agent names)
  persona: A neutral facilitator who keeps the discussion on the current topic.
participants:                # at least two
  - name: Participant_1
    persona: Argues from cost and feasibility.
  - name: Participant_2
    persona: Argues from fairness and long-term effects.
    # model: ollama:llama3    # this agent only; beats `models:` below
    # generation: {{temperature: 0.9}}
judge:                       # decides AGREEMENT / MORE_DEBATE after each round
  name: Judge
evaluator:                   # scores each topic on ten criteria (optional: delete to skip)
  name: Evaluator
models:                      # default, then per role (moderator, participants, judge, evaluator) or agent name
  default: local             # local | local:PATH.gguf | openai:MODEL | ollama:MODEL | scripted
generation:
  temperature: 0.7
  max_tokens: 256
  seed: 0
limits:
  max_rounds_per_topic: 3    # a topic closes after this many rounds even without agreement
  max_messages: 200          # the run stops after this many messages
  context_messages: 12       # how many recent messages each agent sees
routing:
  agreement: judge           # judge, or moderator (the without-judge variant; delete `judge:`)
  on_more_debate: moderator  # moderator (Algorithm 1) or participants
# prompts:                   # override any template of agents/prompts/conference.yaml
#   participant_turn: It is your turn, $name. Give your view on "$topic" in two sentences.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_conference.py new", description=__doc__.splitlines()[0])
    p.add_argument("--protocol", choices=PROTOCOLS, default="conference", help="protocol (default conference)")
    p.add_argument("name", help="scenario name: writes NAME.yaml")
    p.add_argument("--dir", type=Path, default=Path("."), help="directory to write to (default: current)")
    return p


def scenario_text(name: str, path: Path) -> str:
    """The template filled in for `name`; it points editors at the schema when that can be found."""
    title = json.dumps(name.replace("_", " ").replace("-", " ").strip().capitalize() or name)
    text = CONFERENCE.format(file=path.as_posix(), title=title)
    schema = _schema_ref(path.parent)
    return f"# yaml-language-server: $schema={schema}\n{text}" if schema else text


def _schema_ref(directory: Path) -> Optional[str]:
    """Relative inside the moot checkout (portable with it), else a file URI; None if not shipped."""
    if not SCHEMA_FILE.is_file():
        return None
    directory = directory.resolve()
    if directory.is_relative_to(SCHEMA_FILE.parents[1]):
        return Path(os.path.relpath(SCHEMA_FILE, directory)).as_posix()
    return SCHEMA_FILE.as_uri()


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.protocol not in AVAILABLE:
        print(f"error: protocol {args.protocol} is not available yet", file=sys.stderr)
        return 2
    stem = args.name.removesuffix(".yaml")
    if not stem or Path(stem).name != stem or stem.startswith("."):
        print(f"error: NAME must be a plain file name, got {args.name!r}", file=sys.stderr)
        return 2
    path = args.dir / f"{stem}.yaml"
    if path.exists():
        print(f"error: {path} exists; choose another NAME or --dir", file=sys.stderr)
        return 2
    args.dir.mkdir(parents=True, exist_ok=True)
    path.write_text(scenario_text(stem, path), encoding="utf-8")
    print(f"wrote {path}\n  check: python run_conference.py validate {path}\n"
          f"  try:   python run_conference.py {path} --model scripted")
    return 0
