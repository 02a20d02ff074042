"""Drawing a plot a report writes (matplotlib, Agg backend: no display needed): a protocol's own
plots and moot report's use `title` and `save`.

Every plot is written by `save`, which first neutralises every text of the figure (titles, axis
and tick labels, legends, annotations: moot.safety.neutral.plot_safe) and draws each character
with a font that has it or replaces it (moot.kit._fonts), so what a dataset or a model wrote
is drawn as written, or replaced, and nothing is printed. Text is never mathtext or LaTeX here:
a `$` is a dollar sign. A public module of the kit apart from its `__init__`, so that only what
draws a plot imports matplotlib.
"""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path
from typing import Optional, Sequence

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams.update({"text.parse_math": False, "text.usetex": False})
import matplotlib.pyplot as plt  # noqa: E402

from matplotlib.axes import Axes  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.font_manager import findfont  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import Formatter  # noqa: E402

from moot.kit._fonts import fit  # noqa: E402
from moot.safety.neutral import plot_safe  # noqa: E402

__all__ = ["title", "save", "neutralise"]


def title(ax: Axes, text: str, fontsize: float = 9) -> None:
    """A title wrapped to the axes' width, so it is never clipped at the figure's edges."""
    figure = ax.figure if isinstance(ax.figure, Figure) else ax.figure.figure  # a subfigure's: its root's
    inches = figure.get_figwidth() * ax.get_position().width
    chars = max(20, int(inches * 72 / (0.6 * fontsize)))  # average glyph ~0.6 em
    ax.set_title("\n".join(textwrap.wrap(text, chars)), fontsize=fontsize)


def save(fig: Figure, path: Path) -> Path:
    """Write the figure as a PNG, its texts neutralised first (module docstring)."""
    neutralise(fig)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def neutralise(fig: Figure) -> None:
    """Every text of `fig` neutralised and given the fonts it needs, then laid out (module
    docstring): what any writer of a plot does before saving it."""
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            _neutral_ticks(axis)
    for text in fig.findobj(Text):
        shown, fonts = fit(plot_safe(text.get_text()), findfont(text.get_fontproperties()))
        text.set_text(shown)
        _add_fonts(text, fonts)
    with warnings.catch_warnings():  # labels too long to fit: the picture grows to hold them instead
        warnings.filterwarnings("ignore", "Tight layout not applied", UserWarning)
        fig.tight_layout()


class NeutralLabels(Formatter):
    """An axis's formatter whose labels (set at each draw) are neutralised like any text."""

    def __init__(self, inner: Formatter, primary: str):
        self.inner, self.primary = inner, primary

    def fit(self, label: str) -> str:
        return fit(plot_safe(label), self.primary)[0]

    def __call__(self, x: float, pos: Optional[int] = None) -> str:
        return self.fit(self.inner(x, pos))

    def format_ticks(self, values: Sequence[float]) -> list[str]:
        return [self.fit(label) for label in self.inner.format_ticks(list(values))]

    def set_locs(self, locs: Sequence[float]) -> None:
        self.inner.set_locs(list(locs))

    def get_offset(self) -> str:
        return self.fit(self.inner.get_offset())


def _neutral_ticks(axis: Axis) -> None:
    """Neutralise an axis's tick labels where they are made, and give its ticks the fonts they need."""
    for ticks, formatter, locs, put in (
            (axis.get_major_ticks(), axis.get_major_formatter(), axis.get_majorticklocs(), axis.set_major_formatter),
            (axis.get_minor_ticks(), axis.get_minor_formatter(), axis.get_minorticklocs(), axis.set_minor_formatter)):
        if isinstance(formatter, NeutralLabels) or not ticks:
            continue
        primary = findfont(ticks[0].label1.get_fontproperties())
        fonts = [f for label in formatter.format_ticks(list(locs)) for f in fit(plot_safe(label), primary)[1]]
        put(NeutralLabels(formatter, primary))
        for tick in ticks:
            _add_fonts(tick.label1, fonts)
            _add_fonts(tick.label2, fonts)


def _add_fonts(text: Text, fonts: list[str]) -> None:
    """Fonts `text` falls back to, after its own, for the characters its own lacks."""
    if fonts:
        text.set_fontfamily(list(dict.fromkeys([*text.get_fontfamily(), *fonts])))
