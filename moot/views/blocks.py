"""Neutral view blocks: what a protocol's events show, as data the views map to a terminal line,
Markdown or HTML. A protocol's view (moot.views.unit) builds them; every string in them is
recorded text to the renderers, escaped there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Union


@dataclass(frozen=True)
class Badge:
    """A closed answer: `Verdict: AGREEMENT — why` (a coloured badge in HTML)."""

    caption: str
    label: str
    detail: str
    kind: str = ""  # what it is (HTML: class `badge KIND v-LABEL`)
    tags: tuple[str, ...] = ()  # small notes beside it, e.g. how it was measured
    raw: Optional[str] = None  # the reply it was read from, folded away (HTML)


@dataclass(frozen=True)
class Remark:
    """A short remark under a turn: `topic 1 closed by agreement after 2 round(s)`."""

    text: str


@dataclass(frozen=True)
class Bar:
    """One score of a chart; `distribution`: the model's probability of each score, when measured."""

    name: str
    value: float
    shown: str
    distribution: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Chart:
    """Scores on a scale of 1 to `scale` as bars, with their overall score; `method`: how scores
    with a distribution were read from the model's probabilities (their expectations)."""

    caption: str
    by: str
    overall: str
    bars: tuple[Bar, ...]
    scale: int = 10
    method: str = ""
    rationale: str = ""


@dataclass(frozen=True)
class Unreadable:
    """A figure whose answer could not be read: `Scores by X: UNPARSED — why`, the reply folded away."""

    caption: str
    by: str
    error: str
    kind: str = ""  # what it is (HTML: class `badge KIND v-UNPARSED`)
    raw: Optional[str] = None


@dataclass(frozen=True)
class Grade:
    """One score on a scale with why: `Grade of this judge decision by X: 7/10 — ...`."""

    caption: str
    by: str
    value: str
    scale: int = 10
    spread: str = ""  # the model's most likely scores, when measured
    how: str = ""  # how it was read, said with the spread (HTML)
    rationale: str = ""


@dataclass(frozen=True)
class Checklist:
    """A line, then a table: `reference coverage of topic 1: 6/7 items`, one row per item."""

    title: str
    head: tuple[str, ...]  # lower case; a Markdown table capitalises them
    rows: tuple[tuple[str, ...], ...]
    kind: str = ""  # what it is (HTML: class `companion KIND`)
    raw: Optional[str] = None


Figure = Union[Badge, Remark, Chart, Grade, Checklist, Unreadable]


@dataclass(frozen=True)
class Companion:
    """What an event recorded with a turn shows: one line on a terminal, a figure in a document."""

    turn: Optional[int]  # the turn it goes with (None: the latest)
    line: str
    figure: Figure
    strong: bool = True  # the terminal line in bold
    section_note: str = ""  # what it says of its whole section (how a topic closed), if anything
