"""Text written by a model, a server or a dataset, made safe for where it is shown.

Terminals: escape sequences (colours, cursor moves, title changes, hyperlinks) and other control
characters are removed, so what a model writes cannot rewrite the screen; newlines and tabs stay.
"""

from __future__ import annotations

import re

# CSI / OSC / DCS ... sequences, then any C0/C1 control except \t and \n.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b.?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """`text` without escape sequences or control characters (\\r becomes a newline)."""
    text = _ESCAPES.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _CONTROLS.sub("", text)
