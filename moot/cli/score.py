"""`moot score RUN --role ROLE=SPEC [--out PATH]`: re-run a protocol's deciding role with another model.

Nobody else is asked again: the protocol re-runs only its deciding roles on what the run recorded
(a conference: `evaluator` re-evaluates each topic, `grader` grades each judge decision as in
Heller et al. Table 5, `assessor` re-measures each topic's reference coverage; COLA: the `judger` on its recorded prompt; S2MAD: the `judge`; negotiation:
the `third` LLM's vote on conflicting items; judge-eval: the `judge`). The original is untouched:

- a run folder is copied to a new run folder (default RUN-rescored-ROLE-SPEC) with the new calls,
  messages and outcomes appended to each transcript's copy and the new predictions in its
  results.jsonl, beside the original ones (`moot report RUN RUN-rescored-...` shows both);
  running the same command again redoes it from the new folder's reply cache;
- a transcript file is copied to one new file (default NAME.rescored.jsonl).

Its calls are priced like a run's (`--price`, `--prices`; each call's `cost_usd`, the new folder's
run.json `spend_usd`), and `--max-cost` stops it before its spend could exceed the limit (one line;
the same command with a higher limit continues it).

`--every` also re-decides units the protocol decided without that role (S2MAD items settled by the
debaters' consensus, negotiation items without a conflict); by default they keep their result, as
the protocol would have given it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from moot.api.outputs import Rescoring, rescore
from moot.errors import EXIT_FAILED, EXIT_OK
from moot.cli.options import Parser, add_backends, add_engine, add_model, add_out, run_options, summary
from moot.safety.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot score", description=summary(__doc__),
               epilog="examples:\n  moot score transcripts/drug_policy --role grader=openai:gpt-4o\n"
                      "  moot score transcripts/cola-demo-stance --role judger=ollama:llama3.1",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run folder or transcript file")
    p.add_argument("--role", action="append", default=[], metavar="ROLE=SPEC",
                   help="a deciding role of the run's protocol and the model that re-runs it (repeatable)")
    add_model(p, help="the same as --role ROLE=SPEC; a bare SPEC re-runs every deciding role with it")
    add_out(p, "new run folder (default RUN-rescored-ROLE-SPEC), or new transcript file for a transcript "
               "(default NAME.rescored.jsonl)")
    p.add_argument("--every", action="store_true",
                   help="also re-decide units the protocol decided without the role (e.g. S2MAD consensus)")
    add_engine(p)
    add_backends(p)
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    done = rescore(args.run, args.role + args.model, out=args.out, every=args.every, options=run_options(args))
    if done.is_folder:
        show(done, many=len(done.units) > 1)
        rescored = sum(1 for r in done.units if not r.failed and not r.kept)
        print(terminal_safe(f"run: {done.out} units={len(done.units)} rescored={rescored} "
                            f"kept={sum(r.kept for r in done.units)} changed={sum(r.changed for r in done.units)} "
                            f"backend_calls={done.stats.backend_calls} cache_hits={done.stats.cache_hits}"))
    else:
        show(done, many=False)
        print(terminal_safe(f"transcript: {done.out}"))
    if done.stopped:
        print(terminal_safe(done.stopped), file=sys.stderr)
    return EXIT_FAILED if done.failed else EXIT_OK


def show(done: Rescoring, many: bool) -> None:
    for result in done.units:
        failed = result.failed and not (done.stopped and result.halted)  # those share the stop's one line
        if many and (result.lines or failed):
            print(f"== {terminal_safe(result.unit)}")
        for line in result.lines:
            print(terminal_safe(line))
        if not many and result.kept:
            print(terminal_safe(f"{result.unit}: kept its result (decided without {', '.join(done.roles)}; "
                                "--every re-decides it)"))
        if not many and result.row and "original_prediction" in result.row:
            row = result.row
            print(terminal_safe(f"{result.unit}: {row['original_prediction']} -> {row['prediction']} "
                                f"({row['decided_by']})"))
        if failed:
            print(terminal_safe(f"{result.unit}: {result.failed}"), file=sys.stderr)
    for name, report in done.scores():
        print(terminal_safe(f"{name}: {report.metric}={report.score:.4f} accuracy={report.accuracy:.4f} "
                            f"(the {len(done.labelled)} rescored items)"))
