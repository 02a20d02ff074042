"""A run as Markdown, for pasting into issues, notes and papers (blocks from moot.views.document).

No recorded string is live markup, and the raw file stays readable: a character is escaped only
where Markdown (CommonMark, GitHub, markdown-it with linkify) would give it a meaning there —
brackets (links, images, footnotes, references), `*`, backticks, `|` (tables), `~` and `$`
(strikethrough, math) everywhere; `_` at a word's edge (emphasis), not inside `snake_case`;
what opens a line (`#`, `-`, `+`, `=`, `1.`); and whatever an autolinker would take: the `:` of
`scheme://`, a `//` start, the dot of `name.tld`, the `@` of an address or a mention. `& < >`
become HTML entities, so raw HTML is text too. Numbers and sentences read as written (`0.75`,
`p(agree)=0.70`). Escape sequences and other control characters are dropped (moot.views.neutral),
so `cat`ing the file cannot drive a terminal. A model's text keeps its line breaks inside a block
quote.
"""

from __future__ import annotations

import re

from typing import Sequence

from moot.log.transcript import Transcript
from moot.views.blocks import Badge, Chart, Checklist, Figure, Grade, Remark, Unreadable
from moot.views.document import (
    Block, Contents, Entry, Explanation, Facts, Fold, Heading, Note, Quote, Round, Table, run_document,
)
from moot.views.neutral import terminal_safe
from moot.views.timeline import spread_text

BLOCKS = "█" * 10
_ALWAYS = r"[\\`*\[\]|~$]"  # meaningful wherever they are
_EDGE_UNDERSCORE = r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # emphasis; inside a word it is a letter
_LINKED = r":(?=//)|(?<![^\s(])/(?=/)|(?<=[A-Za-z0-9])\.(?=[A-Za-z])|@(?=\w)"  # scheme://, //host, name.tld, @x
_SPECIAL = re.compile(f"({_ALWAYS}|{_EDGE_UNDERSCORE}|{_LINKED})")
# what a line may open with: a heading, a bullet, an ordered item's number, a setext underline
_LINE_START = re.compile(r"^(?:(#{1,6}|[-+])(?=\s|$)|(\d{1,9})([.)])(?=\s|$)|(=)(?==*\s*$))")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_NUMBER = re.compile(r"-?\d+(\.\d+)?|—")


def inline(text: object) -> str:
    """One line of recorded text as inert Markdown (see the module docstring)."""
    escaped = _SPECIAL.sub(r"\\\1", " ".join(terminal_safe(str(text)).split()))
    escaped = _LINE_START.sub(lambda m: f"{m[2]}\\{m[3]}" if m[2] else "\\" + m.group(), escaped)
    return re.sub(r"[&<>]", lambda m: _ENTITIES[m.group()], escaped)


def quote(text: str) -> list[str]:
    """Multi-line recorded text as a block quote, each line escaped and kept on its own line."""
    lines = (terminal_safe(text).strip() or "(empty)").splitlines()
    return [f"> {inline(line)}  " if line.strip() else ">" for line in lines]


def number(text: str) -> str:
    """A figure's number as written (`7.0`, `—`); anything else escaped like text."""
    return text if _NUMBER.fullmatch(text) else inline(text)


def code(text: str) -> str:
    """A label in a code span (no backtick or line break can end it early)."""
    return "`" + " ".join(terminal_safe(text).replace("`", "'").split()) + "`"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(inline(h) for h in head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(inline(c) for c in row) + " |" for row in rows]


def render_markdown(transcripts: Sequence[Transcript], title: str = "moot run",
                    facts: Sequence[tuple[str, str]] = ()) -> str:
    out: list[str] = []
    for block in run_document(transcripts, title, facts):
        out += [*markdown_of(block), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def markdown_of(block: Block) -> list[str]:
    if isinstance(block, Heading):
        heading = [f"{'#' * min(block.level, 6)} {inline(block.text)}"]
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
        return [f"**{inline(shown.caption)}** by {inline(shown.by)}: **{number(shown.value)}**/{shown.scale}{spread} "
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
        spread = f" {inline(spread_text(dict(bar.distribution)))} |" if bar.distribution else (" |" if spreads else "")
        lines.append(f"| {inline(bar.name)} | `{blocks:<10}` {number(bar.shown)} |{spread}")
    return lines
