"""A run as Markdown, for pasting into issues, notes and papers (blocks from moot.views.document).

No recorded string is live markup: each goes through moot.safety.neutral.markdown_safe, which
escapes only what would change the rendering (links and images, raw HTML, emphasis, code,
headings, lists, tables, autolinks, mentions, math) and drops escape sequences, control and
bidirectional-override characters, so the file reads as plain text and `cat`ing it cannot drive
a terminal. A model's text keeps its line breaks inside a block quote.
"""

from __future__ import annotations

import re
from typing import Sequence

from moot.log.transcript import Transcript
from moot.views.blocks import Badge, Chart, Checklist, Figure, Grade, Remark, Unreadable
from moot.views.document import (
    Block, Contents, Entry, Explanation, Facts, Fold, Heading, Note, Quote, Round, Table, run_document,
)
from moot.safety.neutral import markdown_safe, terminal_safe
from moot.views.timeline import spread_text
from moot.views.unit import UnitView

BLOCKS = "█" * 10
_NUMBER = re.compile(r"-?\d+(\.\d+)?|—")


def inline(text: object) -> str:
    """One line of recorded text as inert Markdown, where it may start a line."""
    return markdown_safe(text)


def cell(text: object) -> str:
    """One line of recorded text as inert Markdown inside a table cell or a heading."""
    return markdown_safe(text, cell=True)


def number(text: str) -> str:
    """A figure's number as written (`7.0`, `—`); anything else escaped like text in a cell."""
    return text if _NUMBER.fullmatch(text) else cell(text)


def quote(text: str) -> list[str]:
    """Multi-line recorded text as a block quote, each line escaped and kept on its own line."""
    lines = (terminal_safe(text).strip() or "(empty)").splitlines()
    return [f"> {inline(line)}  " if line.strip() else ">" for line in lines]


def code(text: str) -> str:
    """A label in a code span (no backtick or line break can end it early)."""
    return "`" + " ".join(terminal_safe(text).replace("`", "'").split()) + "`"


def table(head: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table; every cell is text (escaped), a `|` in it stays in its cell."""
    lines = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def render_markdown(transcripts: Sequence[Transcript], views: Sequence[UnitView], title: str = "moot run",
                    facts: Sequence[tuple[str, str]] = ()) -> str:
    out: list[str] = []
    for block in run_document(transcripts, views, title, facts):
        out += [*markdown_of(block), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def markdown_of(block: Block) -> list[str]:
    if isinstance(block, Heading):
        heading = [f"{'#' * min(block.level, 6)} {cell(block.text)}"]
        return heading + (["", f"_{inline(block.note)}_"] if block.note else [])
    if isinstance(block, Facts):
        return table(["", ""], [[k, v] for k, v in block.rows])
    if isinstance(block, Table):
        return table(block.head, block.rows)
    if isinstance(block, Contents):
        return [f"{n}. {inline(title)}" + (f" — {inline(note)}" if note else "")
                for n, (_, title, note) in enumerate(block.entries, 1)]
    if isinstance(block, Quote):
        return [f"**{inline(block.label)}**", ""] + quote(block.text)
    if isinstance(block, Round):
        return [f"{'#' * min(block.level, 6)} Round {block.number}"]
    if isinstance(block, Entry):
        return entry(block)
    if isinstance(block, Explanation):
        return quote(block.text)
    if isinstance(block, Fold):
        lines = [f"{'#' * min(block.level, 6)} {inline(block.summary)}"]
        for inner in block.blocks:
            lines += ["", *markdown_of(inner)]
        return lines
    return note(block)


def entry(block: Entry) -> list[str]:
    lines = [f"**{inline(block.speaker)}** · {inline(block.meta)}", ""] + quote(block.shown)
    for companion in block.companions:
        lines += ["", *figure(companion.figure)]
    return lines


def note(block: Note) -> list[str]:
    if block.kind == "error":
        return [f"**Error:** {inline(block.text)}"]
    if block.kind in ("outcome", "stop"):
        return [f"**{inline(block.text)}**"]
    return [f"_{inline(block.text)}_"]


def figure(shown: Figure) -> list[str]:
    """A companion's figure: a labelled answer, a remark, a score chart, a grade or a checklist."""
    if isinstance(shown, Badge):
        return [f"**{inline(shown.caption)}: {code(shown.label)}** — {inline(shown.detail)}"]
    if isinstance(shown, Remark):
        return [f"_{inline(shown.text[:1].upper() + shown.text[1:])}\\._"]
    if isinstance(shown, Grade):
        spread = f" (model's scores: {inline(shown.spread)})" if shown.spread else ""
        return [f"**{inline(shown.caption)}** by {inline(shown.by)}: **{inline(shown.value)}**/{shown.scale}{spread} "
                f"— {inline(shown.rationale)}"]
    if isinstance(shown, Checklist):
        return [f"**{inline(shown.title)}**", "", *table([h[:1].upper() + h[1:] for h in shown.head], shown.rows)]
    if isinstance(shown, Unreadable):
        return [f"**{inline(shown.caption)} by {inline(shown.by)}: `UNPARSED`** — {inline(shown.error)}"]
    return chart(shown)


def chart(shown: Chart) -> list[str]:
    """Scores as bars of ten blocks; measured ones with the model's most likely scores."""
    spreads = any(bar.distribution for bar in shown.bars)
    head = [f"| Criterion | Score (1–{shown.scale}) | Model's most likely scores |", "|---|---|---|"] if spreads \
        else [f"| Criterion | Score (1–{shown.scale}) |", "|---|---|"]
    lines = [f"**{inline(shown.caption)}** by {inline(shown.by)}: overall **{number(shown.overall)}**/{shown.scale}",
             "", *head]
    for bar in shown.bars:
        blocks = BLOCKS[:max(0, min(round(bar.value * (10 / shown.scale)), 10))]
        spread = f" {cell(spread_text(dict(bar.distribution)))} |" if bar.distribution else (" |" if spreads else "")
        lines.append(f"| {cell(bar.name)} | `{blocks:<10}` {number(bar.shown)} |{spread}")
    return lines
