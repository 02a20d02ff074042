"""Output streams whose reader went away (`moot run ... | head`): the console's printers
(moot.api.console) and the command line's dispatcher stop writing to them."""

from __future__ import annotations

import os
from typing import TextIO


def silence(stream: TextIO) -> None:
    """After the reader of our output went away: point `stream` at /dev/null so later writes and
    the interpreter's final flush do not fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass
