"""A run as Markdown, for pasting into issues, notes and papers (blocks from moot.views.document).

No recorded string is live markup: every character Markdown (CommonMark, GitHub) gives a meaning
to is backslash-escaped — links and images (`[x](javascript:...)`, `![i](...)`), emphasis, code,
headings, lists, tables, autolinks (`http:` loses its colon's meaning), mentions, math — and
`& < >` become HTML entities, so raw HTML is text too; escape sequences and other control
characters are dropped (moot.views.neutral), so `cat`ing the file cannot drive a terminal. A model's
text keeps its line breaks inside a block quote.
"""

from __future__ import annotations

import re

from moot.views.document import (
    Block, Contents, Entry, Explanation, Facts, Heading, Note, Quote, Round, Table, run_document,
)
from moot.log.events import Coverage, Score, TopicClosed, Verdict
from moot.views.neutral import terminal_safe
from moot.views.timeline import (
    closed_text, coverage_rows, coverage_text, grade_spread, score_caption, spread_text, verdict_detail,
)
from moot.views.summary import shown_score

BLOCKS = "█" * 10
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:$@=^])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def inline(text: object) -> str:
    """One line of recorded text as inert Markdown (see the module docstring)."""
    escaped = _SPECIAL.sub(r"\\\1", " ".join(terminal_safe(str(text)).split()))
    return re.sub(r"[&<>]", lambda m: _ENTITIES[m.group()], escaped)


def quote(text: str) -> list[str]:
    """Multi-line recorded text as a block quote, each line escaped and kept on its own line."""
    lines = (terminal_safe(text).strip() or "(empty)").splitlines()
    return [f"> {inline(line)}  " if line.strip() else ">" for line in lines]


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(inline(h) for h in head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(inline(c) for c in row) + " |" for row in rows]


def render_markdown(transcripts, title: str = "moot run", result_name: str = "prediction", facts=()) -> str:
    out: list[str] = []
    for block in run_document(transcripts, title, result_name, facts):
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
    return note(block)


def entry(block: Entry) -> list[str]:
    m = block.message
    lines = [f"**{inline(block.speaker)}** · {inline(block.meta)}", ""] + quote(m.content)
    for event in block.companions:
        if isinstance(event, Verdict):
            lines += ["", f"**Verdict: `{event.verdict}`** — {inline(verdict_detail(event))}"]
        elif isinstance(event, Score):
            lines += ["", *scores(event)]
        elif isinstance(event, TopicClosed):
            lines += ["", f"_Topic {event.topic + 1} {inline(closed_text(event))}\\._"]
        elif isinstance(event, Coverage):
            lines += ["", f"**{inline(coverage_text(event))}**", "",
                      *table(["Reference item", "Status", "Evidence"], coverage_rows(event))]
    return lines


def note(block: Note) -> list[str]:
    if block.kind == "error":
        return [f"**Error:** {inline(block.text)}"]
    if block.kind in ("outcome", "stop"):
        return [f"**{inline(block.text)}**"]
    return [f"_{inline(block.text)}_"]


def scores(score: Score) -> list[str]:
    """A score set: each criterion's score as a bar; a measured one with its most likely scores."""
    who = f"{inline(score.speaker)}"
    caption = inline(score_caption(score))
    if not score.parsed:
        return [f"**{caption} by {who}: `UNPARSED`** — {inline(score.error or '')}"]
    overall = shown_score(score, score.overall)
    spreads = score.distributions
    if score.kind == "judge_decision":
        grades = grade_spread(score)
        spread = f" (model's scores: {inline(grades)})" if grades else ""
        return [f"**Grade of this judge decision** by {who}: **{overall}**/10{spread} — {inline(score.rationale)}"]
    head = ["| Criterion | Score |", "|---|---|"]
    if spreads:
        head = ["| Criterion | Score | Model's most likely scores |", "|---|---|---|"]
    lines = [f"**{caption}** by {who}: overall **{overall}**/10", "", *head]
    for k, v in score.scores.items():
        spread = f" {inline(spread_text(spreads[k]))} |" if k in spreads else (" |" if spreads else "")
        lines.append(f"| {inline(k)} | `{BLOCKS[:max(0, min(round(v), 10))]:<10}` {shown_score(score, v)} |{spread}")
    return lines + (["", f"_{inline(score.rationale)}_"] if score.rationale else [])
