"""`moot annotate RUN [--rater NAME] [--browser]`: rate a run's units blind, at the terminal or in the browser.

Each finished unit's rateable things (its protocol says which: a conference's judge verdict after
each round and its evaluator's ten criteria 1-10; a labelled item's label) are shown one by one
with the material the model decided on, never its answer. Once the rater has answered, the
model's answer is shown beside theirs. Answers go to RUN/annotations.jsonl (never into a
transcript) with the rater's name and the time; things this rater rated already are skipped, so
the same command goes on where a rater stopped (moot.api.annotating). `moot report RUN` then puts
human and model ratings side by side (agreement per question: Cohen's kappa, Krippendorff's
alpha, Spearman rho).

At the terminal, answers are read as at a seat (moot.cli.seat): a closed one from the allowed
answers, a score as a whole number 1-10; piped answers work as typed ones. With --browser, the
same questions are asked on a page of a server of its own (moot.viewer.api.rate_in_browser): on 127.0.0.1
unless --host, its link printed with a token that every request needs.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path
from typing import Optional, Sequence, TextIO

from moot.api.annotating import Revealed, Todo, annotate, annotations_file
from moot.api.seats import PersonLeft
from moot.cli.options import Parser, summary
from moot.cli.seat import TerminalPerson
from moot.errors import EXIT_FAILED, EXIT_OK, UsageError
from moot.safety.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot annotate", description=summary(__doc__),
               epilog="examples:\n  moot annotate transcripts/drug_policy --rater ann\n"
                      "  moot annotate transcripts/drug_policy --browser --rater ann\n"
                      "  printf '2\\n1\\n' | moot annotate transcripts/cola-demo-stance --rater bob --limit 2",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="a run folder (the annotations are kept beside its transcripts)")
    p.add_argument("--rater", help="your name as the annotations record it (asked when not given)")
    p.add_argument("--limit", type=int, metavar="N", help="rate at most N things this time")
    p.add_argument("--browser", action="store_true",
                   help="rate in the browser: serve a page of its own and print its link (with a token)")
    p.add_argument("--host", default="127.0.0.1", help="--browser: address to serve on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="--browser: port to serve on (default: a free one)")
    p.add_argument("--open", action="store_true", help="--browser: open the link in the web browser")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.rater is not None and not args.rater.strip():
        raise UsageError("--rater: give a name (the annotations record who rated)")
    if args.limit is not None and args.limit < 0:
        raise UsageError(f"--limit {args.limit}: must be 0 or more")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: must be 0-65535")
    if args.browser:
        from moot.viewer.api import rate_in_browser

        return rate_in_browser(args.run, args.rater, args.limit, args.host, args.port,
                               webbrowser.open if args.open else None)
    person = TerminalRater(Path(args.run))
    try:
        annotate(args.run, person, rater=args.rater, limit=args.limit)
    except PersonLeft:
        print(terminal_safe(f"error: the input ended before everything was rated; the {person.rated} rated now "
                            f"are kept in {annotations_file(args.run)}: the same command goes on from there"),
              file=sys.stderr)
        return EXIT_FAILED
    print(f"annotations: {annotations_file(args.run)}")
    return EXIT_OK


class TerminalRater(TerminalPerson):
    """A rater at the terminal: told what is left, shown the model's answers after each of theirs."""

    def __init__(self, run: Path, stdin: Optional[TextIO] = None, out: Optional[TextIO] = None):
        super().__init__(stdin, out)
        self.run = run
        self.rated = 0

    def begin(self, todo: Todo) -> None:
        self._say(f"{len(todo.things)} thing(s) to rate in {self.run} as {todo.rater} ({todo.before} rated before); "
                  "the model's answers are shown after yours")

    def revealed(self, done: Revealed, number: int, count: int) -> None:
        self.rated += 1
        rows = [f"  {q.key}: you {yours} · model {model}" for q, yours, model in done.rows()]
        self._say(f"model ({done.thing.by}):\n" + "\n".join(rows))
