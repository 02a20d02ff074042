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
release's layout is one line naming it (and its line), a missing one where the release is
published, exit 2; `--out` is written whole and never
replaces a file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from moot.api.datasets import RELEASES, convert_release
from moot.cli.options import Parser, summary
from moot.errors import EXIT_OK
from moot.safety.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot convert", description=summary(__doc__),
               epilog="examples:\n  moot convert aclr4rumor data/Twitter/COVID-19/Twitter_data_all.txt "
                      "data/Twitter/COVID-19/Twitter_label_all.txt --out data/twitter_covid19.jsonl\n"
                      "  moot convert rumoureval2019 rumoureval-2019-test-data final-eval-key.json "
                      "--out data/rumoureval2019_test.jsonl",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=sorted(RELEASES), help="the release's layout")
    p.add_argument("sources", nargs="+", type=Path, metavar="SOURCE", help="the release's files (see above)")
    p.add_argument("--out", type=Path, required=True, help="the JSON-lines file to write (must not exist)")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    converted = convert_release(args.format, args.sources)
    for line in converted.left_out:
        print(terminal_safe(line))
    converted.write(args.out)
    print(terminal_safe(f"wrote {len(converted.threads)} threads ({converted.comments} comments) to {args.out}"))
    return EXIT_OK
