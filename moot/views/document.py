"""A run as a document: the blocks an export shows, in order, built once for Markdown and HTML.

One unit (a conference, or one item) is: its facts, its input, its agents, a table of contents
(when its protocol's view lists them: a conference's topics), its sections (moot.views.timeline)
with round headers, its outcomes, the usage table and how it stopped. A run folder of several
units is a contents list and then each unit, one heading level down. Each unit reads as its
protocol's view says (moot.views.unit, given by the caller); the renderers (moot.views.markdown, moot.views.html) only
map these blocks and the view's figures (moot.views.blocks) to markup, and escape every string
they are given: nothing here is trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

from moot.metrics.classification import UNPARSED, summarize
from moot.log.events import Call, Error, EventBase, Human, Message, Outcome, RunResumed
from moot.log.transcript import Transcript
from moot.views.blocks import Companion
from moot.views.summary import ending_text
from moot.views.timeline import (
    Section, agent_table, grouped, input_texts, message_meta, outcome_text, pairs_text, run_facts, seat_text,
    speaker_index, usage_table,
)
from moot.views.unit import UnitView


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str = ""
    note: str = ""  # a line under it (how a topic closed)
    unit: bool = False  # the heading of one unit in a document of several


@dataclass(frozen=True)
class Facts:
    rows: list[tuple[str, str]]


@dataclass(frozen=True)
class Table:
    head: list[str]
    rows: list[list[str]]
    text_columns: int = 1  # the first columns are words, the rest numbers
    kind: str = ""  # agents | usage


@dataclass(frozen=True)
class Contents:
    entries: list[tuple[str, str, str]]  # (anchor, title, note)


@dataclass(frozen=True)
class Quote:
    """Text from a dataset (an item's input), shown as text."""

    label: str
    text: str


@dataclass(frozen=True)
class Round:
    number: int
    level: int


@dataclass(frozen=True)
class Entry:
    """A message and what its companion events show (a verdict, scores); `rank` picks its colour."""

    message: Message
    companions: tuple[Companion, ...]
    rank: int
    meta: str
    name: str = ""  # what the speaker is called in the conversation (its label), default its name
    calls: tuple[Call, ...] = ()  # the model calls that made it
    text: Optional[str] = None  # the turn as its view reads it (None: the message as written)

    @property
    def shown(self) -> str:
        return self.message.content.strip() if self.text is None else self.text

    @property
    def rewritten(self) -> bool:
        """Whether the view shows the turn otherwise than written (the reply is then folded)."""
        return self.text is not None and self.text != self.message.content.strip()

    @property
    def speaker(self) -> str:
        return self.name or self.message.speaker


@dataclass(frozen=True)
class Note:
    text: str
    kind: str = "info"  # info | error | outcome | stop
    resumed: bool = False  # says that the run was resumed here
    mark: str = ""  # an outcome's correctness: correct | incorrect | unparsed ("": no gold label to judge by)


@dataclass(frozen=True)
class Explanation:
    """A model's explanation of an outcome (model text)."""

    text: str


@dataclass(frozen=True)
class Fold:
    """Blocks folded away under one line (HTML: a <details>; Markdown: a heading and the blocks):
    a unit's setup, so the conversation comes first on a small screen."""

    summary: str
    blocks: list["Block"]
    level: int = 2


Block = Union[Heading, Facts, Table, Contents, Quote, Round, Entry, Note, Explanation, Fold]


def run_document(transcripts: Sequence[Transcript], views: Sequence[UnitView], title: str,
                 facts: Sequence[tuple[str, str]] = ()) -> list[Block]:
    """One unit as a document, or several (a run folder) one heading level down each; `views[i]`:
    how transcript i reads, its protocol's view, which the caller looks up (the views know no registry)."""
    if len(transcripts) == 1:
        return unit_blocks(transcripts[0], views[0], 1, title)
    blocks: list[Block] = [Heading(1, title), Facts(list(facts)), *metric_blocks(transcripts, 2)]
    anchors = [f"unit-{n}" for n in range(1, len(transcripts) + 1)]
    blocks.append(Contents([(a, unit_title(t), unit_status(t, v.result_name))
                            for a, t, v in zip(anchors, transcripts, views)]))
    for anchor, transcript, view in zip(anchors, transcripts, views):
        blocks += unit_blocks(transcript, view, 2, unit_title(transcript), anchor)
    return blocks


def metric_blocks(transcripts: Sequence[Transcript], level: int) -> list[Block]:
    """A labelled run's metrics over its scored units (their outcomes): accuracy, macro-F1 (and F_avg
    where defined), each class's F1 and the confusion matrix; nothing for a run without gold labels."""
    outcomes = [o for o in (t.outcome for t in transcripts) if o is not None and o.gold is not None]
    if not outcomes:
        return []
    recorded = transcripts[0].started.scenario.get("labels")
    labels = [str(x) for x in recorded] if isinstance(recorded, list) else []
    labels += sorted({str(o.gold) for o in outcomes} - set(labels))
    report = summarize([str(o.gold) for o in outcomes], [o.prediction for o in outcomes], labels)
    rows = [["scored units", str(report.n)], ["unparsed", str(report.n_unparsed)],
            ["accuracy", f"{report.accuracy:.3f}"], ["macro-F1", f"{report.macro_f1:.3f}"]]
    if report.f_avg is not None:
        rows.append(["F_avg (favor, against)", f"{report.f_avg:.3f}"])
    rows += [[f"F1 of {label}", f"{value:.3f}"] for label, value in report.per_class_f1.items()]
    columns = list(next(iter(report.confusion.values())))
    confusion = [[gold, *(str(row[c]) for c in columns)] for gold, row in report.confusion.items()]
    return [Heading(level, "Metrics"), Table(["Metric", "Value"], rows, kind="metrics"),
            Table(["gold \\ prediction", *columns], confusion, kind="confusion")]


def unit_title(transcript: Transcript) -> str:
    return f"Unit {transcript.started.unit or transcript.path.stem}"


def unit_status(transcript: Transcript, result_name: str, running: bool = False) -> str:
    outcome = transcript.outcome
    if outcome is not None:
        return outcome_text(outcome, result_name)
    return ending_text(transcript.finished, running)


def unit_blocks(transcript: Transcript, view: UnitView, level: int, title: str, anchor: str = "",
                running: bool = False) -> list[Block]:
    """A unit: its heading, what it was asked (the task, the item's input), its setup folded (facts,
    agents with their personas), its sections, its usage (folded) and how it stopped. `running`:
    its run holds its folder now, so a unit with no end yet is running, not unfinished."""
    s = transcript.started
    heading = (s.scenario.get("title") or title) if level == 1 else title
    blocks: list[Block] = [Heading(level, heading, anchor, unit=bool(anchor)),
                           *setup_blocks(transcript, view, level, running)]
    for label, text in view.brief():
        blocks.append(Quote(label, text))
    inputs = input_texts(transcript, view)
    if inputs:
        blocks += [Heading(level + 1, "Input")] + [Quote(label, text) for label, text in inputs]
    blocks += body_blocks(transcript, view, level, anchor)
    blocks += [Fold("Tokens and latency per role", [Table(*usage_table(transcript), kind="usage")], level + 1),
               Note(stop_text(transcript, running), "stop")]
    return blocks


def setup_blocks(transcript: Transcript, view: UnitView, level: int, running: bool = False) -> list[Block]:
    """The unit's facts and agents, folded under one line that says what ran."""
    head, rows = agent_table(transcript, view)
    s = transcript.started
    summary = f"Setup: {s.protocol} · {len(rows)} agents · {unit_status(transcript, view.result_name, running)}"
    return [Fold(summary, [Facts(run_facts(transcript, running)), Heading(level + 1, "Agents"),
                           Table(head, rows, text_columns=head.index("Persona" if "Persona" in head else "Model") + 1,
                                 kind="agents")], level + 1)]


def body_blocks(transcript: Transcript, view: UnitView, level: int, anchor: str = "") -> list[Block]:
    """The conversation: a table of contents where the view lists one, then each section."""
    blocks: list[Block] = []
    sections = grouped(transcript, view)
    prefix = anchor or "section"
    if view.contents:
        blocks.append(Contents([(f"{prefix}-{n}", sec.place.title, sec.note(view))
                                for n, sec in enumerate(sections, 1)]))
    for n, section in enumerate(sections, 1):
        blocks += section_blocks(section, transcript, view, level + 1, f"{prefix}-{n}")
    return blocks


def section_blocks(section: Section, transcript: Transcript, view: UnitView, level: int, anchor: str) -> list[Block]:
    blocks: list[Block] = [Heading(level, section.place.title, anchor, section.note(view))]
    ranks, labels = speaker_index(transcript, view), view.labels()
    rounds_shown = section.rounds_shown
    round_: Optional[int] = None
    for turn in section.turns:
        m = turn.message
        if m is None:
            blocks += note_blocks(turn.events[0], view.result_name)
            continue
        if rounds_shown and m.round != round_:
            round_ = m.round
            blocks.append(Round(m.round, level + 1))
        label = labels.get(m.speaker, "")
        meta = message_meta(m, view)
        companions = tuple(c for c in map(view.companion, turn.events[1:]) if c is not None)
        blocks.append(Entry(m, companions, ranks.get(m.speaker, 0), f"{m.speaker} · {meta}" if label else meta, label,
                            tuple(turn.calls), view.turn(m).text))
    return blocks


def note_blocks(event: EventBase, result_name: str) -> list[Block]:
    if isinstance(event, Outcome):
        explained: list[Block] = [Explanation(event.explanation)] if event.explanation else []
        return [Note(outcome_text(event, result_name), "outcome", mark=outcome_mark(event)), *explained]
    if isinstance(event, Error):
        return [Note(f"error ({event.speaker or 'run'}, {event.stage}, {event.attempts} attempt(s)): {event.cause}",
                     "error")]
    if isinstance(event, Human):
        return [Note(seat_text(event), "seat")]
    if isinstance(event, RunResumed):
        return [Note(f"run resumed; {event.turns_kept} earlier turn(s) kept"
                     + (f"; models now {pairs_text(event.models)}"
                        if event.models_changed else ""), resumed=True)]
    return [Note(getattr(event, "type", "event"))]


def outcome_mark(outcome: Outcome) -> str:
    """How the recorded outcome scores: unparsed (no label read), correct or incorrect against its
    gold label, or "" when it has none."""
    if outcome.prediction == UNPARSED:
        return "unparsed"
    if outcome.gold is None:
        return ""
    return "correct" if outcome.prediction == outcome.gold else "incorrect"


def stop_text(transcript: Transcript, running: bool = False) -> str:
    if transcript.finished is None:
        return "Running: no end recorded yet" if running else "Stop: the run did not finish (no run_finished event)"
    return f"Stop: {ending_text(transcript.finished)}"
