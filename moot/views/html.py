"""A run as one self-contained HTML page (blocks from moot.views.document): no scripts, no network,
no external fonts.

Every string passes through `esc` (moot.views.neutral.html_safe: control and bidirectional-override
characters dropped, then html.escape) before it reaches the page, and a Content-Security-Policy
forbids scripts as a second line of defence.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from moot.log.transcript import Transcript
from moot.views.blocks import Badge, Chart, Checklist, Figure, Grade, Remark, Unreadable
from moot.views.document import (
    Block, Contents, Entry, Explanation, Facts, Heading, Note, Quote, Round, Table, run_document,
)
from moot.views.neutral import html_safe
from moot.views.timeline import CUT, initials

COLORS = ("#0e7490", "#b45309", "#15803d", "#a21caf", "#1d4ed8", "#b91c1c", "#0891b2", "#a16207")
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
CSS = """
:root{--ink:#1f2937;--mute:#6b7280;--line:#e5e7eb;--bg:#f8fafc}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:980px;margin:0 auto;padding:24px}
h1{font-size:1.6em;margin:0 0 12px}h2{margin:32px 0 8px;font-size:1.25em}
table{border-collapse:collapse;width:100%;margin:8px 0;background:#fff}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f5f9;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.facts th{width:11em}.facts td{word-break:break-all}
nav ol{margin:4px 0;padding-left:1.4em}
.topic{border-top:2px solid var(--line);margin-top:28px}
.closed{color:var(--mute);font-style:italic;margin:0}
.round{font-size:.85em;text-transform:uppercase;letter-spacing:.08em;color:var(--mute);margin:18px 0 6px}
.entry{display:flex;gap:12px;margin:10px 0}
.avatar{flex:none;width:40px;height:40px;border-radius:50%;color:#fff;font-weight:700;display:flex;
 align-items:center;justify-content:center;font-size:14px}
.avatar.sm{display:inline-flex;width:26px;height:26px;font-size:11px;vertical-align:middle;margin-right:6px}
.scroll{overflow-x:auto}.agents td:first-child{white-space:nowrap}.agents td:nth-child(3){word-break:break-all}
.bubble{flex:1;min-width:0;background:#fff;border:1px solid var(--line);border-radius:10px;padding:8px 12px}
.speaker{font-weight:700}.meta{color:var(--mute);font-size:.85em}
.content{white-space:pre-wrap;overflow-wrap:anywhere;margin-top:4px}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;font-size:.8em;font-weight:700;color:#fff;margin-right:6px}
.v-AGREEMENT{background:#16a34a}.v-MORE_DEBATE{background:#d97706}.v-UNPARSED{background:#6b7280}
.v-NEXT_TOPIC{background:#2563eb}.measured{background:#475569;font-weight:400}
.cut{display:inline-block;border:1px dashed var(--mute);border-radius:6px;padding:0 6px;font-size:.8em;color:var(--mute)}
.score-chart .dist{fill:#94a3b8}
.companion{margin-top:8px;padding-top:6px;border-top:1px dashed var(--line)}
.note{margin:10px 0 10px 52px;padding:6px 10px;border-radius:8px;background:#eef2ff}
.note.error{background:#fee2e2;color:#991b1b}.note.outcome{background:#dcfce7;font-weight:700;margin-left:0}
.note.stop{background:none;margin:32px 0;padding:0;color:var(--mute)}
.quote{white-space:pre-wrap;overflow-wrap:anywhere;background:#fff;border-left:4px solid var(--line);padding:6px 12px;margin:4px 0}
.explanation{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0 10px;color:var(--ink)}
.unit{border-top:3px solid var(--ink);margin-top:40px}
.score-chart text{font-size:12px;fill:var(--ink)}.score-chart .track{fill:#f1f5f9}
.score-chart .bar{fill:#0e7490}
details{margin-top:4px}summary{cursor:pointer;color:var(--mute)}
footer{margin:32px 0;color:var(--mute)}
"""


esc = html_safe


def render_html(transcripts: Sequence[Transcript], title: str = "moot run",
                facts: Sequence[tuple[str, str]] = ()) -> str:
    blocks = run_document(transcripts, title, facts)
    page_title = esc(next((b.text for b in blocks if isinstance(b, Heading)), title))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{page_title} — moot transcript</title>\n<style>{CSS}</style></head>\n"
            "<body><main>\n" + "\n".join(html_of(b) for b in blocks) + "\n</main></body></html>\n")


def html_of(block: Block) -> str:
    if isinstance(block, Heading):
        level = min(block.level, 6)
        anchor = f" id=\"{esc(block.anchor)}\"" if block.anchor else ""
        kind = " class=\"unit\"" if block.unit else ""
        under = f"<p class=\"closed\">{esc(block.note)}</p>" if block.note else ""
        return f"<h{level}{anchor}{kind}>{esc(block.text)}</h{level}>{under}"
    if isinstance(block, Facts):
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>\n" for k, v in block.rows)
        return f"<table class=\"facts\">\n{rows}</table>"
    if isinstance(block, Table):
        return table(block)
    if isinstance(block, Contents):
        items = "".join(f"<li><a href=\"#{esc(a)}\">{esc(t)}</a>" + (f" — {esc(n)}" if n else "") + "</li>"
                        for a, t, n in block.entries)
        return f"<nav><ol>{items}</ol></nav>"
    if isinstance(block, Quote):
        return f"<div class=\"meta\">{esc(block.label)}</div><blockquote class=\"quote\">{esc(block.text)}</blockquote>"
    if isinstance(block, Round):
        return f"<h{min(block.level, 6)} class=\"round\">Round {block.number}</h{min(block.level, 6)}>"
    if isinstance(block, Entry):
        return entry(block)
    if isinstance(block, Explanation):
        return f"<div class=\"explanation\">{esc(block.text)}</div>"
    return note(block)


def table(block: Table) -> str:
    """A table; the agents table starts each row with the agent's avatar (rows are in colour order)."""
    head = "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in block.head) + "</tr>\n"
    rows = []
    for rank, row in enumerate(block.rows):
        first = avatar(row[0], rank) if block.kind == "agents" else ""
        cells = "".join(f"<td>{first if i == 0 else ''}{esc(c)}</td>" if i < block.text_columns
                        else f"<td class=\"num\">{esc(c)}</td>" for i, c in enumerate(row))
        rows.append(f"<tr>{cells}</tr>\n")
    return f"<div class=\"scroll\"><table class=\"{esc(block.kind)}\">\n{head}{''.join(rows)}</table></div>"


def color(rank: int) -> str:
    return COLORS[rank % len(COLORS)]


def avatar(name: str, rank: int) -> str:
    return (f"<span class=\"avatar sm\" style=\"background:{color(rank)}\" title=\"{esc(name)}\">"
            f"{esc(initials(name))}</span>")


def entry(block: Entry) -> str:
    m = block.message
    c = color(block.rank)
    companions = "".join(companion(c.figure) for c in block.companions)
    decision = f" data-decision=\"{esc(m.decision)}\"" if m.decision else ""
    cut = f" <span class=\"cut\" title=\"{esc(CUT)}\">cut</span>" if m.cut else ""
    return (f"<article class=\"entry\" id=\"turn-{m.turn}\" data-speaker=\"{esc(m.speaker)}\" "
            f"data-stage=\"{esc(m.action)}\" data-round=\"{m.round}\"{decision}>"
            f"<div class=\"avatar\" style=\"background:{c}\" aria-hidden=\"true\">{esc(initials(block.speaker))}</div>"
            f"<div class=\"bubble\"><div><span class=\"speaker\" style=\"color:{c}\">{esc(block.speaker)}</span> "
            f"<span class=\"meta\">{esc(block.meta)}</span></div>"
            f"<div class=\"content\">{esc(m.content.strip()) or '<em>(empty)</em>'}{cut}</div>{companions}</div>"
            "</article>")


def badge(label: str, kind: str) -> str:
    return f"<span class=\"badge {kind} v-{esc(label)}\">{esc(label)}</span>"


def raw_reply(text: str) -> str:
    return f"<details><summary>raw reply</summary><pre>{esc(text)}</pre></details>"


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
    """Scores as an inline SVG bar chart (one rect.bar per score; a measured one also draws the
    model's distribution over the scale as small rect.dist)."""
    height, label_w, unit = 22 * len(shown.bars) + 4, 170, 24
    dist_w = 60 if any(bar.distribution for bar in shown.bars) else 0
    caption = esc(shown.caption.lower())
    svg = [f"<svg class=\"score-chart\" width=\"{label_w + unit * shown.scale + 40 + dist_w}\" height=\"{height}\" "
           f"role=\"img\" aria-label=\"{caption}\">"]
    for i, bar in enumerate(shown.bars):
        y, width = 2 + 22 * i, round(unit * max(0.0, min(bar.value, float(shown.scale))))
        name, value = esc(bar.name), esc(bar.shown)
        svg.append(f"<text x=\"{label_w - 8}\" y=\"{y + 14}\" text-anchor=\"end\">{name}</text>"
                   f"<rect class=\"track\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{unit * shown.scale}\" height=\"16\"/>"
                   f"<rect class=\"bar\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{width}\" height=\"16\">"
                   f"<title>{name}: {value}</title></rect>"
                   f"<text x=\"{label_w + width + 6}\" y=\"{y + 14}\">{value}</text>")
        svg += distribution_bars(bar.distribution, label_w + unit * shown.scale + 40, y, bar.name, shown.scale)
    svg.append("</svg>")
    note = (f"<div class=\"meta\">Each score is the expectation of the 1-{shown.scale} score under the model's "
            f"probabilities ({esc(shown.method)}); beside it, the model's distribution over 1-{shown.scale}.</div>"
            if dist_w else "")
    rationale = f"<div class=\"meta\">{esc(shown.rationale)}</div>" if shown.rationale else ""
    return (f"<figure class=\"scores\" style=\"margin:0\"><figcaption><strong>{esc(shown.caption)}</strong> by "
            f"{esc(shown.by)} · overall <strong>{esc(shown.overall)}</strong>/{shown.scale}</figcaption>"
            + "".join(svg) + note + rationale + "</figure>")


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
    marks = {"error": "✗ ", "info": "↻ " if block.resumed else ""}
    ident = " id=\"stop\"" if block.kind == "stop" else ""
    return f"<div class=\"note {esc(block.kind)}\"{ident}>{marks.get(block.kind, '')}{esc(block.text)}</div>"
