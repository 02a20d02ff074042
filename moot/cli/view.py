"""`moot view [DIR]`: a local web viewer of every run and experiment under DIR (default
transcripts/), live while runs are being written, with run-to-run comparison.

It serves on 127.0.0.1 (a free port unless --port), prints the address and opens nothing unless
--open; Ctrl-C stops it. Any other --host needs the token it prints. It only reads: nothing under
DIR is written. `--bundle OUT` writes the same pages as a static site instead (no server).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import webbrowser
from typing import Sequence

from moot.cli.options import Parser, summary
from moot.errors import EXIT_OK, EXIT_USAGE
from moot.viewer.api import Viewer, viewer, write_bundle
from moot.safety.neutral import terminal_safe


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot view", description=summary(__doc__),
               epilog="examples:\n  moot view\n  moot view transcripts --port 8765 --open\n"
                      "  moot view transcripts --bundle supplement/",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", default="transcripts", metavar="DIR",
                   help="the folder of runs and experiments (default: transcripts)")
    p.add_argument("--port", type=int, default=0, help="port to serve on (default: a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to serve on (default 127.0.0.1; any other needs the printed token)")
    p.add_argument("--open", action="store_true", help="open the viewer in the web browser")
    p.add_argument("--bundle", metavar="OUT", help="write the pages as a static site in OUT and exit")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.bundle:
        bundled = write_bundle(args.dir, args.bundle)
        print(terminal_safe(f"wrote {args.bundle}: {bundled.pages} pages (open {bundled.out / 'index.html'})"))
        for line in bundled.damaged:  # bundled as a page saying so; the command still fails
            print(terminal_safe(f"error: damaged: {line}"), file=sys.stderr)
        return EXIT_USAGE if bundled.damaged else EXIT_OK
    return serve(viewer(args.dir, args.host, args.port), args.open)


def serve(served: Viewer, open_browser: bool) -> int:
    folder, host, port = served.folder, served.host, served.port

    def ready(url: str) -> None:
        print(f"moot view: {folder} at {url}", flush=True)
        if served.token:
            print("moot view: this address is reachable from other machines; the token in the URL is needed",
                  flush=True)
        print("moot view: Ctrl-C stops it", flush=True)
        if open_browser:
            webbrowser.open(url)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        await served.serve(ready, stop)

    try:
        asyncio.run(main())
    except OSError as exc:
        print(f"error: moot view: cannot serve on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 3
    print("moot view: stopped", flush=True)
    sys.stderr.flush()
    # The viewer has written nothing and holds nothing to close; the interpreter's own teardown of the
    # statistics libraries (numpy, scipy) would take a second or more on a busy machine.
    os._exit(EXIT_OK)
