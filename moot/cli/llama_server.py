"""`moot llama-server`: llama.cpp's own server, built once from a registry package, serving a GGUF
(default: the embedded Gemma 3 270M) on 127.0.0.1 until Ctrl-C.

`--build` builds it (or finds it built) and prints the binary's path. Serving prints the base URL
to give moot: `moot run SCENARIO --model openai:NAME --base-url URL` (a base model also needs
`backends: {openai: {kind: base}}` in the scenario). moot.models.backends.local.llama_server says how it is built.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Sequence

from moot.api.servers import ServerOptions, llama_server, llama_server_binary
from moot.cli.options import Parser, summary
from moot.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot llama-server", description=summary(__doc__),
               epilog="examples:\n  moot llama-server --build\n  moot llama-server --port 8080 --parallel 4\n"
                      "  moot run drug_policy --model openai:gemma --base-url http://127.0.0.1:8080/v1",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", action="store_true", help="build it (once) and print the binary's path")
    p.add_argument("--model", metavar="GGUF", help="the model file (default: the embedded Gemma 3 270M)")
    p.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default 8080; 0: a free one)")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="slots decoding together (continuous batching; default 1)")
    p.add_argument("--ctx", type=int, default=8192, metavar="N", help="context tokens per slot (default 8192)")
    p.add_argument("--threads", type=int, metavar="N", help="CPU threads (default: the usable cores)")
    p.add_argument("--log", metavar="FILE", help="write the server's own output to FILE")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    options = ServerOptions(args.port, args.parallel, args.ctx, args.threads, Path(args.log) if args.log else None)
    if args.build:
        print(llama_server_binary())
        return EXIT_OK
    server = llama_server(args.model, options)
    with server:
        print(f"llama-server serving {server.model} at {server.url} ({args.parallel} slot(s)); Ctrl-C stops it\n"
              f"use it: moot run SCENARIO --model openai:NAME --base-url {server.url}", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            while not stop.wait(0.5) and server.running():
                pass
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
        if not stop.is_set():
            print("llama-server exited" + (f"; its output is in {args.log}" if args.log else ""), file=sys.stderr)
            return EXIT_FAILED
    return EXIT_OK
