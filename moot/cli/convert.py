"""`moot convert FORMAT SOURCE... --out FILE`: a thread dataset's public release to one thread per line.

The rumour datasets' releases keep their reply threads as trees of files; moot's thread datasets
(datasets/twitter_covid19.yaml, weibo_covid19.yaml, rumoureval2019_test.yaml) read one thread per
line of JSON (moot.data.threads). Formats:

  aclr4rumor POSTS LABELS       Twitter-COVID19 / Weibo-COVID19 (Lin et al. 2022; S2MAD's data):
                                the release's posts file and label file (moot.data.aclr)
  rumoureval2019 FOLDER KEY...  RumourEval 2019 (task B): the extracted release folder and its key
                                file(s) (final-eval-key.json; train-key.json, dev-key.json)
                                (moot.data.rumoureval)

Prints how many threads it wrote and what it left out, and why. A file that is not in the
release's layout is one line naming it (and its line), exit 2; `--out` is written whole and never
replaces a file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Sequence

from moot.cli.options import Parser, summary
from moot.data.threads import ConvertError, Tally, Thread, write_threads
from moot.errors import EXIT_OK
from moot.safety.neutral import terminal_safe

Converter = Callable[[Sequence[Path]], tuple[list[Thread], Tally]]


def _aclr(paths: Sequence[Path]) -> tuple[list[Thread], Tally]:
    from moot.data.aclr import convert

    if len(paths) != 2:
        raise ConvertError("aclr4rumor: give the posts file and the label file (e.g. Twitter_data_all.txt "
                           "Twitter_label_all.txt)")
    return convert(paths[0], paths[1])


def _rumoureval(paths: Sequence[Path]) -> tuple[list[Thread], Tally]:
    from moot.data.rumoureval import convert

    if len(paths) < 2:
        raise ConvertError("rumoureval2019: give the release's folder and its key file(s) "
                           "(e.g. rumoureval-2019-test-data final-eval-key.json)")
    return convert(paths[0], paths[1:])


FORMATS: dict[str, Converter] = {"aclr4rumor": _aclr, "rumoureval2019": _rumoureval}


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot convert", description=summary(__doc__),
               epilog="examples:\n  moot convert aclr4rumor data/Twitter/COVID-19/Twitter_data_all.txt "
                      "data/Twitter/COVID-19/Twitter_label_all.txt --out data/twitter_covid19.jsonl\n"
                      "  moot convert rumoureval2019 rumoureval-2019-test-data final-eval-key.json "
                      "--out data/rumoureval2019_test.jsonl",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=sorted(FORMATS), help="the release's layout")
    p.add_argument("sources", nargs="+", type=Path, metavar="SOURCE", help="the release's files (see above)")
    p.add_argument("--out", type=Path, required=True, help="the JSON-lines file to write (must not exist)")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    threads, tally = FORMATS[args.format](args.sources)
    for line in tally.lines():
        print(terminal_safe(line))
    write_threads(threads, args.out)
    comments = sum(len(t.comments) for t in threads)
    print(terminal_safe(f"wrote {len(threads)} threads ({comments} comments) to {args.out}"))
    return EXIT_OK
