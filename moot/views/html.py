"""A run as one self-contained HTML page (blocks from moot.views.document): no scripts, no network,
no external fonts.

Every string passes through `esc` (moot.safety.neutral.html_safe: control and bidirectional-override
characters dropped, then html.escape) before it reaches the page, and a Content-Security-Policy
forbids scripts as a second line of defence.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Mapping, Sequence

from moot.log.transcript import Transcript
from moot.views.blocks import Badge, Chart, Checklist, Figure, Grade, Remark, Unreadable
from moot.views.document import (
    Block, Contents, Entry, Explanation, Facts, Fold, Heading, Note, Quote, Round, Table, run_document,
)
from moot.safety.neutral import html_safe
from moot.views.timeline import CUT, initials
from moot.views.unit import UnitView

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
PALETTE = 8  # speaker colours: classes c0..c7 (document.css)


@lru_cache(maxsize=1)
def document_css() -> str:
    """The documents' style sheet (package data), shared with `moot view` (moot.viewer)."""
    return resources.files("moot.views").joinpath("document.css").read_text(encoding="utf-8")


esc = html_safe


def render_html(transcripts: Sequence[Transcript], views: Sequence[UnitView], title: str = "moot run",
                facts: Sequence[tuple[str, str]] = ()) -> str:
    blocks = run_document(transcripts, views, title, facts)
    page_title = esc(next((b.text for b in blocks if isinstance(b, Heading)), title))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{page_title} — moot transcript</title>\n<style>{document_css()}</style></head>\n"
            "<body><main>\n" + HtmlBlocks().render(blocks) + "\n</main></body></html>\n")


class HtmlBlocks:
    """Document blocks as HTML. `moot view` subclasses it to add to each turn (its model calls)."""

    def render(self, blocks: Sequence[Block]) -> str:
        return "\n".join(self.block(b) for b in blocks)

    def block(self, block: Block) -> str:
        if isinstance(block, Heading):
            level = min(block.level, 6)
            anchor = f" id=\"{esc(block.anchor)}\"" if block.anchor else ""
            kind = " class=\"unit\"" if block.unit else ""
            under = f"<p class=\"closed\">{esc(block.note)}</p>" if block.note else ""
            return f"<h{level}{anchor}{kind} dir=\"auto\">{esc(block.text)}</h{level}>{under}"
        if isinstance(block, Facts):
            rows = "".join(f"<tr><th>{esc(k)}</th><td dir=\"auto\">{esc(v)}</td></tr>\n" for k, v in block.rows)
            return f"<div class=\"scroll\"><table class=\"facts\">\n{rows}</table></div>"
        if isinstance(block, Table):
            return table(block)
        if isinstance(block, Contents):
            items = "".join(f"<li dir=\"auto\"><a href=\"#{esc(a)}\">{esc(t)}</a>" + (f" — {esc(n)}" if n else "")
                            + "</li>" for a, t, n in block.entries)
            return f"<nav aria-label=\"Contents\"><ol>{items}</ol></nav>"
        if isinstance(block, Quote):
            return (f"<div class=\"meta\">{esc(block.label)}</div>"
                    f"<blockquote class=\"quote\" dir=\"auto\">{esc(block.text)}</blockquote>")
        if isinstance(block, Round):
            return f"<h{min(block.level, 6)} class=\"round\">Round {block.number}</h{min(block.level, 6)}>"
        if isinstance(block, Entry):
            return self.entry(block)
        if isinstance(block, Explanation):
            return f"<div class=\"explanation\" dir=\"auto\">{esc(block.text)}</div>"
        if isinstance(block, Fold):
            return (f"<details class=\"fold\"><summary>{esc(block.summary)}</summary>\n"
                    + self.render(block.blocks) + "\n</details>")
        return note(block)

    def entry(self, block: Entry) -> str:
        m = block.message
        companions = "".join(companion(c.figure) for c in block.companions)
        decision = f" data-decision=\"{esc(m.decision)}\"" if m.decision else ""
        decision += " data-source=\"human\"" if m.source == "human" else ""
        cut = f" <span class=\"cut\" title=\"{esc(CUT)}\">cut</span>" if m.cut else ""
        c = color(block.rank)
        return (f"<article class=\"entry\" id=\"turn-{m.turn}\" data-speaker=\"{esc(m.speaker)}\" "
                f"data-stage=\"{esc(m.action)}\" data-round=\"{m.round}\"{decision} tabindex=\"-1\">"
                f"<div class=\"avatar {c}\" aria-hidden=\"true\">{esc(initials(block.speaker))}</div>"
                f"<div class=\"bubble\"><div><span class=\"speaker {c}\" dir=\"auto\">{esc(block.speaker)}</span> "
                f"<span class=\"meta\">{esc(block.meta)}</span></div>"
                f"<div class=\"content\" dir=\"auto\">{esc(block.shown) or '<em>(empty)</em>'}{cut}</div>"
                f"{companions}{raw_reply(m.content, 'reply as written') if block.rewritten else ''}"
                f"{self.entry_tail(block)}</div></article>")

    def entry_tail(self, block: Entry) -> str:
        """What follows a turn's companions (nothing in an export)."""
        return ""


def table(block: Table) -> str:
    """A table; the agents table starts each row with the agent's avatar (rows are in colour order)."""
    head = "<tr>" + "".join(f"<th scope=\"col\">{esc(h)}</th>" for h in block.head) + "</tr>\n"
    rows = []
    for rank, row in enumerate(block.rows):
        first = avatar(row[0], rank) if block.kind == "agents" else ""
        labels = [f" data-label=\"{esc(h)}\"" for h in block.head]  # a narrow page shows each row as a card
        cells = "".join(f"<td dir=\"auto\"{labels[i]}>{first if i == 0 else ''}{esc(c)}</td>" if i < block.text_columns
                        else f"<td class=\"num\"{labels[i]}>{esc(c)}</td>" for i, c in enumerate(row))
        rows.append(f"<tr>{cells}</tr>\n")
    return f"<div class=\"scroll\"><table class=\"{esc(block.kind)}\">\n{head}{''.join(rows)}</table></div>"


def color(rank: int) -> str:
    """A speaker's colour class (c0..c7)."""
    return f"c{rank % PALETTE}"


def avatar(name: str, rank: int) -> str:
    return f"<span class=\"avatar sm {color(rank)}\" title=\"{esc(name)}\">{esc(initials(name))}</span>"


def badge(label: str, kind: str) -> str:
    return f"<span class=\"badge {kind} v-{esc(label)}\">{esc(label)}</span>"


def raw_reply(text: str, summary: str = "raw reply") -> str:
    return f"<details class=\"raw\"><summary>{esc(summary)}</summary><pre dir=\"auto\">{esc(text)}</pre></details>"


def companion(shown: Figure) -> str:
    """A companion's figure: a badge and why, a remark, a score chart, a grade, or a checklist."""
    if isinstance(shown, Badge):
        tags = "".join(f"<span class=\"badge measured\">{esc(tag)}</span>" for tag in shown.tags)
        raw = raw_reply(shown.raw) if shown.raw is not None else ""
        return f"<div class=\"companion\">{badge(shown.label, shown.kind)}{tags}{esc(shown.detail)}{raw}</div>"
    if isinstance(shown, Remark):
        return f"<div class=\"companion closed\">{esc(shown.text)}</div>"
    if isinstance(shown, Grade):
        how = f" ({esc(shown.how)}; the model's most likely: {esc(shown.spread)})" if shown.spread else ""
        return (f"<div class=\"companion\"><div class=\"grade\"><strong>{esc(shown.caption)}</strong> by "
                f"{esc(shown.by)}: <strong>{esc(shown.value)}</strong>/{shown.scale}{how} — {esc(shown.rationale)}"
                "</div></div>")
    if isinstance(shown, Checklist):
        head = "".join(f"<th>{esc(h)}</th>" for h in shown.head)
        rows = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in shown.rows)
        raw = raw_reply(shown.raw) if shown.raw else ""
        return (f"<div class=\"companion {esc(shown.kind)}\"><strong>{esc(shown.title)}</strong>"
                f"<table><tr>{head}</tr>{rows}</table>{raw}</div>")
    if isinstance(shown, Unreadable):
        return (f"<div class=\"companion\">{badge('UNPARSED', shown.kind)}{esc(shown.caption.lower())} by "
                f"{esc(shown.by)} could not be parsed: {esc(shown.error)}{raw_reply(shown.raw or '')}</div>")
    return f"<div class=\"companion\">{chart(shown)}</div>"


def chart(shown: Chart) -> str:
    """Scores as an inline SVG bar chart on a labelled 1-to-scale axis (one rect.bar per score; a
    measured one also draws the model's distribution over the scale as small rect.dist)."""
    rows, label_w, unit = len(shown.bars), 170, 24
    axis_y = 22 * rows + 4
    dist_w = 60 if any(bar.distribution for bar in shown.bars) else 0
    width = label_w + unit * shown.scale + 40 + dist_w
    caption = esc(shown.caption.lower())
    svg = [f"<svg class=\"score-chart\" width=\"{width}\" height=\"{axis_y + 34}\" viewBox=\"0 0 {width} {axis_y + 34}\" "
           f"role=\"img\" aria-label=\"{caption}, scale 1 to {shown.scale}\">"]
    for i, bar in enumerate(shown.bars):
        y, length = 2 + 22 * i, round(unit * max(0.0, min(bar.value, float(shown.scale))))
        name, value = esc(bar.name), esc(bar.shown)
        svg.append(f"<text x=\"{label_w - 8}\" y=\"{y + 14}\" text-anchor=\"end\">{name}</text>"
                   f"<rect class=\"track\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{unit * shown.scale}\" height=\"16\"/>"
                   f"<rect class=\"bar\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{length}\" height=\"16\">"
                   f"<title>{name}: {value}</title></rect>"
                   f"<text x=\"{label_w + length + 6}\" y=\"{y + 14}\">{value}</text>")
        svg += distribution_bars(bar.distribution, label_w + unit * shown.scale + 40, y, bar.name, shown.scale)
    svg += axis(label_w, unit, axis_y, shown.scale)
    svg.append("</svg>")
    note = (f"<div class=\"meta\">Each score is the expectation of the 1-{shown.scale} score under the model's "
            f"probabilities ({esc(shown.method)}); beside it, the model's distribution over 1-{shown.scale}.</div>"
            if dist_w else "")
    return (f"<figure class=\"scores\"><figcaption><strong>{esc(shown.caption)}</strong> by "
            f"{esc(shown.by)} · overall <strong>{esc(shown.overall)}</strong>/{shown.scale}</figcaption>"
            + "".join(svg) + note + "</figure>")


def axis(x: int, unit: int, y: int, scale: int) -> list[str]:
    """The score axis under the bars: a line, a tick and a number at each score, and its title."""
    parts = [f"<line class=\"axis\" x1=\"{x}\" y1=\"{y}\" x2=\"{x + unit * scale}\" y2=\"{y}\"/>"]
    for n in range(0, scale + 1):
        parts.append(f"<line class=\"axis\" x1=\"{x + unit * n}\" y1=\"{y}\" x2=\"{x + unit * n}\" y2=\"{y + 4}\"/>"
                     f"<text class=\"tick\" x=\"{x + unit * n}\" y=\"{y + 15}\" text-anchor=\"middle\">{n}</text>")
    parts.append(f"<text class=\"tick\" x=\"{x + unit * scale}\" y=\"{y + 30}\" text-anchor=\"end\">"
                 f"score (1–{scale})</text>")
    return parts


def distribution_bars(distribution: Mapping[str, float], x: int, y: int, name: str, scale: int) -> list[str]:
    """Small bars, the model's probability of each score 1..scale (their heights), at (x, y)."""
    if not distribution:
        return []
    bars = []
    for n in range(1, scale + 1):
        p = float(distribution.get(str(n), 0.0))
        h = max(1, round(16 * p))
        bars.append(f"<rect class=\"dist\" x=\"{x + 6 * (n - 1)}\" y=\"{y + 18 - h}\" width=\"5\" height=\"{h}\">"
                    f"<title>{esc(name)}: p({n})={p:.2f}</title></rect>")
    return bars


def note(block: Note) -> str:
    marks = {"error": "✗ ", "info": "↻ " if block.resumed else "", "correct": "✓ ", "incorrect": "✗ ", "unparsed": "? "}
    ident = " id=\"stop\"" if block.kind == "stop" else ""
    kind = f"{block.kind} {block.mark}" if block.mark else block.kind
    return f"<div class=\"note {esc(kind)}\"{ident}>{marks.get(block.mark or block.kind, '')}{esc(block.text)}</div>"
