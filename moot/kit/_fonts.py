"""Every character of a plot's text drawn by a font that has it, else replaced, quietly.

matplotlib's own font (DejaVu Sans) has no CJK, no emoji and no glyph for many scripts, and
drawing a character it lacks prints a warning per glyph. A text's characters the font lacks are
looked up in the fonts installed on the machine (not those shipped for mathtext), in a fixed
order (family name, then file), and drawn with the first that has them (matplotlib falls back
from font to font per glyph); a character no font has becomes U+FFFD (an invisible one, such as
a zero-width joiner or a combining mark, is dropped). So the same text on the same machine is
always drawn the same way, and nothing is printed.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Optional

import matplotlib
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

REPLACEMENT = "\ufffd"
INVISIBLE = ("Cf", "Mn", "Me")  # format characters and combining marks: dropped when no font has them


@lru_cache(maxsize=None)
def charmap(path: str) -> frozenset[int]:
    """The code points the font file at `path` has glyphs for (none if it cannot be read)."""
    try:
        return frozenset(FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):
        return frozenset()


@lru_cache(maxsize=1)
def installed() -> tuple[tuple[str, str], ...]:
    """(family, file) of each font family installed on the machine, upright and closest to
    regular weight, in the order they are tried."""
    shipped = Path(matplotlib.get_data_path())
    best: dict[str, tuple[int, str]] = {}
    for entry in font_manager.fontManager.ttflist:
        if entry.style != "normal" or Path(entry.fname).is_relative_to(shipped):
            continue
        rank = (abs(int(entry.weight) - 400) if str(entry.weight).isdigit() else 500, entry.fname)
        if entry.name not in best or rank < best[entry.name]:
            best[entry.name] = rank
    return tuple((name, best[name][1]) for name in sorted(best))


@lru_cache(maxsize=None)
def family_for(code: int, primary: str) -> Optional[str]:
    """The first installed family other than `primary` with a glyph for `code`."""
    return next((name for name, path in installed() if name != primary and code in charmap(path)), None)


@lru_cache(maxsize=None)
def family_name(path: str) -> str:
    return str(FT2Font(path).family_name)


def fit(text: str, primary_file: str) -> tuple[str, list[str]]:
    """`text` as it can be drawn with the font at `primary_file` and the installed fonts, and the
    families (after the primary) it needs, in the order first needed."""
    primary, have = family_name(primary_file), charmap(primary_file)
    replacement = REPLACEMENT if ord(REPLACEMENT) in have else "?"
    out, extra = [], list[str]()
    for char in text:
        code = ord(char)
        if char == "\n" or code in have:
            out.append(char)
        elif (family := family_for(code, primary)) is not None:
            out.append(char)
            extra += [] if family in extra else [family]
        elif unicodedata.category(char) not in INVISIBLE:
            out.append(replacement)
    return "".join(out), extra
