"""`moot annotate RUN [--rater NAME]`: rate a run's units blind at the terminal.

Each finished unit's rateable things (its protocol says which: a conference's judge verdict after
each round and its evaluator's ten criteria 1-10; a labelled item's label) are shown one by one
with the material the model decided on, never its answer. Once the rater has answered, the
model's answer is shown beside theirs. Answers go to RUN/annotations.jsonl (never into a
transcript) with the rater's name and the time; things this rater rated already are skipped, so
the same command goes on where a rater stopped. `moot report RUN` then puts human and model
ratings side by side (agreement per question: Cohen's kappa, Krippendorff's alpha, Spearman rho).
Answers are read as at a seat (moot.cli.seat): a closed one from the allowed answers, a score
as a whole number 1-10; piped answers work as typed ones.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Optional, Sequence

from moot.cli.options import Parser
from moot.cli.seat import TerminalPerson
from moot.contract.rating import Rateable
from moot.engine.seats import Asking, Question, Seat, SeatSpec
from moot.engine.source import RunSource, UnitRef, open_run
from moot.errors import EXIT_OK, UsageError
from moot.log.annotations import Rating, annotations_path, append_ratings, read_ratings
from moot.log.transcript import now
from moot.protocols.registry import REGISTRY
from moot.views.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot annotate", description=__doc__.splitlines()[0],
               epilog="examples:\n  moot annotate transcripts/drug_policy --rater ann\n"
                      "  printf '2\\n1\\n' | moot annotate transcripts/cola-vast --rater bob --limit 2",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="a run folder (the annotations are kept beside its transcripts)")
    p.add_argument("--rater", help="your name as the annotations record it (asked when not given)")
    p.add_argument("--limit", type=int, metavar="N", help="rate at most N things this time")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    source = open_run(args.run)
    if not source.is_folder:
        raise UsageError(f"{args.run}: annotate a run folder (its annotations are kept beside its transcripts)")
    asyncio.run(_session(source, args.rater, args.limit))
    print(f"annotations: {annotations_path(source.path)}")
    return EXIT_OK


async def _session(source: RunSource, rater: Optional[str], limit: Optional[int]) -> None:
    """One rater's session: their name (asked when not given), then each thing they have not rated."""
    protocol = REGISTRY.get(str(source.meta.get("protocol")))
    person = TerminalPerson()
    rater = rater if rater is not None else await _ask_name(person)
    if not rater.strip():
        raise UsageError("--rater: give a name (the annotations record who rated)")
    done = {(r.unit, r.item) for r in read_ratings(source.path) if r.rater == rater}
    todo = [(unit, thing) for unit in _finished(source) for thing in protocol.rateables(unit.load())
            if (unit.id, thing.id) not in done][:limit]
    print(f"{len(todo)} thing(s) to rate in {source.path} as {terminal_safe(rater)} "
          f"({len(done)} rated before); the model's answers are shown after yours")
    for number, (unit, thing) in enumerate(todo, 1):
        await _rate(person, source, rater, unit, thing, f"{number}/{len(todo)}")


def _finished(source: RunSource) -> list[UnitRef]:
    return [u for u in source.units if u.row is not None and u.row.get("status", "completed") == "completed"]


async def _ask_name(person: TerminalPerson) -> str:
    asking = Asking("rater", "rater", "rater", "start", "annotate", (Question("name", "Your name", lines=False),))
    answered = await Seat(SeatSpec("rater"), person).take(asking)
    return answered.values["name"].strip()


async def _rate(person: TerminalPerson, source: RunSource, rater: str, unit: UnitRef, thing: Rateable,
                counter: str) -> None:
    asking = Asking("rater", rater, rater, f"{counter} · unit {unit.id}", thing.id, thing.questions, thing.shown)
    answered = await Seat(SeatSpec("rater"), person).take(asking)
    stamp = now()
    append_ratings(source.path, [Rating(rater=rater, unit=unit.id, item=thing.id, kind=thing.kind, key=q.key,
                                        value=answered.values[q.key], ts=stamp, seconds=answered.seconds)
                                 for q in thing.questions])
    print(terminal_safe(_revealed(thing, answered.values)))


def _revealed(thing: Rateable, yours: dict[str, str]) -> str:
    """The model's answers beside the rater's, once they have answered."""
    rows = [f"  {q.key}: you {yours[q.key]} · model {_shown(thing.model.get(q.key))}" for q in thing.questions]
    return f"model ({thing.by}):\n" + "\n".join(rows)


def _shown(value: Optional[str]) -> str:
    return "unparsed" if value is None else value
