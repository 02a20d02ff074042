"""A run as one self-contained HTML page (blocks from moot.views.document): no scripts, no network,
no external fonts.

Every string passes through `esc` (control characters dropped, then html.escape) before it
reaches the page, and a Content-Security-Policy forbids scripts as a second line of defence.
"""

from __future__ import annotations

import html

from moot.views.document import (
    Block, Contents, Entry, Explanation, Facts, Heading, Note, Quote, Round, Table, run_document,
)
from moot.log.events import Coverage, Score, TopicClosed, Verdict
from moot.views.neutral import terminal_safe
from moot.views.timeline import (
    CUT, closed_text, coverage_rows, coverage_text, grade_spread, initials, measured_text, score_caption, verdict_detail,
)
from moot.views.summary import shown_score

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


def esc(text: object) -> str:
    return html.escape(terminal_safe(str(text)), quote=True)


def render_html(transcripts, title: str = "moot run", result_name: str = "prediction", facts=()) -> str:
    blocks = run_document(transcripts, title, result_name, facts)
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
    companions = "".join(companion(e) for e in block.companions)
    decision = f" data-decision=\"{esc(m.decision)}\"" if m.decision else ""
    cut = f" <span class=\"cut\" title=\"{esc(CUT)}\">cut</span>" if m.cut else ""
    return (f"<article class=\"entry\" id=\"turn-{m.turn}\" data-speaker=\"{esc(m.speaker)}\" "
            f"data-stage=\"{esc(m.action)}\" data-round=\"{m.round}\"{decision}>"
            f"<div class=\"avatar\" style=\"background:{c}\" aria-hidden=\"true\">{esc(initials(block.speaker))}</div>"
            f"<div class=\"bubble\"><div><span class=\"speaker\" style=\"color:{c}\">{esc(block.speaker)}</span> "
            f"<span class=\"meta\">{esc(block.meta)}</span></div>"
            f"<div class=\"content\">{esc(m.content.strip()) or '<em>(empty)</em>'}{cut}</div>{companions}</div>"
            "</article>")


def badge(label: str, kind: str = "verdict") -> str:
    return f"<span class=\"badge {kind} v-{esc(label)}\">{esc(label)}</span>"


def raw_reply(text: str) -> str:
    return f"<details><summary>raw reply</summary><pre>{esc(text)}</pre></details>"


def companion(event: object) -> str:
    if isinstance(event, Verdict):
        detail = esc(verdict_detail(event)) + (raw_reply(event.raw or "") if event.verdict == "UNPARSED" else "")
        measured = measured_text(event)
        how = f"<span class=\"badge measured\">{esc(measured)}</span>" if measured else ""
        return f"<div class=\"companion\">{badge(event.verdict)}{how}{detail}</div>"
    if isinstance(event, Score):
        return f"<div class=\"companion\">{score_figure(event)}</div>"
    if isinstance(event, TopicClosed):
        return f"<div class=\"companion closed\">topic {event.topic + 1} {esc(closed_text(event))}</div>"
    if isinstance(event, Coverage):
        rows = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in coverage_rows(event))
        raw = raw_reply(event.raw) if event.raw else ""
        return (f"<div class=\"companion coverage\"><strong>{esc(coverage_text(event))}</strong>"
                f"<table><tr><th>reference item</th><th>status</th><th>evidence</th></tr>{rows}</table>{raw}</div>")
    return ""


def score_figure(score: Score) -> str:
    """The evaluator's scores as an inline SVG bar chart (one rect.bar per criterion; a measured
    score also draws the model's distribution over 1-10 as ten small rect.dist); a grade of a
    judge decision as one line."""
    caption = score_caption(score)
    if not score.parsed:
        return (f"{badge('UNPARSED', 'score')}{esc(caption.lower())} by {esc(score.speaker)} could not be parsed: "
                f"{esc(score.error or '')}{raw_reply(score.raw or '')}")
    overall = esc(shown_score(score, score.overall))
    if score.kind == "judge_decision":
        spread = grade_spread(score)
        how = f" ({esc(caption.lower())}; the model's most likely: {esc(spread)})" if spread else ""
        return (f"<div class=\"grade\"><strong>Grade of this judge decision</strong> by {esc(score.speaker)}: "
                f"<strong>{overall}</strong>/10{how} — {esc(score.rationale)}</div>")
    rows = list(score.scores.items())
    height, label_w, unit, dist_w = 22 * len(rows) + 4, 170, 24, 60 if score.distributions else 0
    svg = [f"<svg class=\"score-chart\" width=\"{label_w + unit * 10 + 40 + dist_w}\" height=\"{height}\" "
           f"role=\"img\" aria-label=\"{esc(caption.lower())}\">"]
    for i, (name, value) in enumerate(rows):
        y, width = 2 + 22 * i, round(unit * max(0.0, min(float(value), 10.0)))
        shown = esc(shown_score(score, value))
        svg.append(f"<text x=\"{label_w - 8}\" y=\"{y + 14}\" text-anchor=\"end\">{esc(name)}</text>"
                   f"<rect class=\"track\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{unit * 10}\" height=\"16\"/>"
                   f"<rect class=\"bar\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{width}\" height=\"16\">"
                   f"<title>{esc(name)}: {shown}</title></rect>"
                   f"<text x=\"{label_w + width + 6}\" y=\"{y + 14}\">{shown}</text>")
        svg += distribution_bars(score.distributions.get(name), label_w + unit * 10 + 40, y, name)
    svg.append("</svg>")
    note = (f"<div class=\"meta\">Each score is the expectation of the 1-10 score under the model's "
            f"probabilities ({esc(score.method)}); beside it, the model's distribution over 1-10.</div>"
            if score.distributions else "")
    rationale = f"<div class=\"meta\">{esc(score.rationale)}</div>" if score.rationale else ""
    return (f"<figure class=\"scores\" style=\"margin:0\"><figcaption><strong>{esc(caption)}</strong> by "
            f"{esc(score.speaker)} · overall <strong>{overall}</strong>/10</figcaption>"
            + "".join(svg) + note + rationale + "</figure>")


def distribution_bars(distribution, x: int, y: int, name: str) -> list[str]:
    """Ten small bars, the model's probability of each score 1..10 (their heights), at (x, y)."""
    if not distribution:
        return []
    bars = []
    for n in range(1, 11):
        p = float(distribution.get(str(n), 0.0))
        h = max(1, round(16 * p))
        bars.append(f"<rect class=\"dist\" x=\"{x + 6 * (n - 1)}\" y=\"{y + 18 - h}\" width=\"5\" height=\"{h}\">"
                    f"<title>{esc(name)}: p({n})={p:.2f}</title></rect>")
    return bars


def note(block: Note) -> str:
    marks = {"error": "✗ ", "info": "↻ " if block.resumed else ""}
    ident = " id=\"stop\"" if block.kind == "stop" else ""
    return f"<div class=\"note {esc(block.kind)}\"{ident}>{marks.get(block.kind, '')}{esc(block.text)}</div>"
