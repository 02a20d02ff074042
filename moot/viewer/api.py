"""The viewer from Python (`moot view`): every run and experiment under a folder as web pages,
served live on loopback or written once as a static bundle. It only reads the folder.

It stands above the rest of the API (the viewer reads runs, reports and experiments), which is why
these functions live here; `import moot` names them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from moot.api.options import PathLike
from moot.errors import UsageError


def _runs_folder(folder: PathLike) -> Path:
    path = Path(folder)
    if not path.is_dir():
        raise UsageError(f"{path}: no such folder (moot view DIR: the folder holding the runs)")
    return path


@dataclass(frozen=True)
class Bundled:
    """A static bundle written: its folder, how many pages, and a line for each run or unit that
    could not be read (its page says so)."""

    out: Path
    pages: int
    damaged: Sequence[str]


def write_bundle(folder: PathLike, out: PathLike) -> Bundled:
    """The viewer's pages of every run under `folder` as a static site in `out` (open out/index.html)."""
    from moot.viewer.bundle import write_bundle as write

    written, damaged = write(_runs_folder(folder), Path(out))
    return Bundled(Path(out), written, damaged)


@dataclass(frozen=True)
class Viewer:
    """The live viewer of `folder`, to serve on `host`:`port` (0: a free port). Any host but
    loopback needs `token`, which is in the URL `serve` hands to `ready`."""

    folder: Path
    host: str
    port: int
    token: Optional[str]

    async def serve(self, ready: Callable[[str], None], stop: asyncio.Event) -> None:
        """Serve until `stop` is set; `ready(url)` once it listens (OSError: it cannot)."""
        from moot.viewer.pages import Pages
        from moot.viewer.paths import Root
        from moot.viewer.server import serve

        await serve(Pages(Root(self.folder)), self.host, self.port, self.token, ready, stop)


def viewer(folder: PathLike, host: str = "127.0.0.1", port: int = 0) -> Viewer:
    """The viewer of every run and experiment under `folder`, checked (the folder, the port), not yet serving."""
    from moot.viewer.server import LOOPBACK, new_token

    path = _runs_folder(folder)
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: must be 0-65535")
    return Viewer(path, host, port, None if host in LOOPBACK else new_token())


def rate_in_browser(run: PathLike, rater: Optional[str] = None, limit: Optional[int] = None, host: str = "127.0.0.1",
                    port: int = 0, open_link: Optional[Callable[[str], object]] = None) -> int:
    """A rater's blind session over the run folder (moot.api.annotating) on a page of a server of its
    own, its link (with the token every request needs) printed and handed to `open_link`; serves
    until everything left is rated or a stop signal. The command line's exit code."""
    from moot.api.annotating import rated_run
    from moot.viewer.rating import serve

    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: must be 0-65535")
    return serve(rated_run(run), rater, limit, host, port, open_link)
