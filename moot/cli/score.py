"""`score TRANSCRIPT --role evaluator=SPEC [--role grader=SPEC]`: re-score without re-running.

Appends new score events to a copy of the transcript (default: NAME.rescored.jsonl next to
it) and prints the new evaluator scores per topic and, for a grader, a table like Table 5 of
Heller et al. (each judge decision's 1-10 grade and the mean).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Sequence

from moot.models.calls import RetryPolicy
from moot.models.factory import BackendOptions, build_client
from moot.models.spec import parse_spec
from moot.rescore import Rescorer, append_scores, grade_table, judge_decisions
from moot.summary import score_line
from moot.transcript import load

ROLES = ("evaluator", "grader")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moot score", description=__doc__.splitlines()[0])
    p.add_argument("transcript", type=Path)
    p.add_argument("--role", action="append", required=True, metavar="ROLE=SPEC",
                   help="evaluator=SPEC re-evaluates each topic; grader=SPEC meta-evaluates each judge decision")
    p.add_argument("--out", type=Path, help="where to write the re-scored copy")
    p.add_argument("--concurrency", type=int, default=1, help="model calls in flight at once")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never recorded")
    p.add_argument("--ollama-host", help="Ollama server (default: $OLLAMA_HOST)")
    return p


def roles_of(items: Sequence[str]) -> dict[str, str]:
    roles: dict[str, str] = {}
    for item in items:
        role, sep, spec = item.partition("=")
        if not sep or role not in ROLES:
            raise ValueError(f"--role {item}: expected ROLE=SPEC with ROLE one of {', '.join(ROLES)}")
        parse_spec(spec)
        roles[role] = spec
    return roles


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    roles = roles_of(args.role)
    if args.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    transcript = load(args.transcript)
    out = args.out or args.transcript.with_suffix(".rescored.jsonl")
    if out.exists():
        raise ValueError(f"--out {out}: file exists; choose another path")
    options = BackendOptions(args.base_url, args.api_key, args.ollama_host)
    scenario = transcript.started.scenario
    retry = RetryPolicy(**{k: v for k, v in scenario.get("retry", {}).items()
                           if k in ("attempts", "backoff_s", "timeout_s")})
    rescorer = Rescorer(transcript, retry, args.concurrency)
    clients = {role: build_client(spec, rescorer.settings, options) for role, spec in roles.items()}
    scores = asyncio.run(_score(rescorer, clients, roles))
    append_scores(transcript, out, scores)
    for score in scores:
        if score.kind == "debate":
            print(f"Topic {score.topic + 1}: {score_line(score)}")
    graded = [s for s in scores if s.kind == "judge_decision"]
    if "grader" in roles:
        print(f"Judge decisions graded by {roles['grader']} (cf. Heller et al. Table 5):")
        print("\n".join(grade_table(graded, judge_decisions(transcript), rescorer.topics)))
    print(f"transcript: {out}")
    return 0


async def _score(rescorer: Rescorer, clients: dict, roles: dict[str, str]) -> list:
    scores = []
    if "evaluator" in clients:
        scores += await rescorer.evaluate(clients["evaluator"], roles["evaluator"])
    if "grader" in clients:
        scores += await rescorer.grade(clients["grader"], roles["grader"])
    return scores
