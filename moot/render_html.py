"""A transcript as one self-contained HTML page: no scripts, no network, no external fonts.

Everything a model wrote and every scenario string passes through `esc` (html.escape) before
it reaches the page, and a Content-Security-Policy forbids scripts as a second line of defence.
"""

from __future__ import annotations

import html

from moot.timeline import (
    Section, Turn, agent_table, closed_text, initials, run_facts, section_title, sections_of,
    speaker_index, turns_of, usage_table,
)
from moot.events import Error, Message, RunResumed, Score, TopicClosed, Verdict
from moot.transcript import Transcript

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
.v-NEXT_TOPIC{background:#2563eb}
.companion{margin-top:8px;padding-top:6px;border-top:1px dashed var(--line)}
.note{margin:10px 0 10px 52px;padding:6px 10px;border-radius:8px;background:#eef2ff}
.note.error{background:#fee2e2;color:#991b1b}
.score-chart text{font-size:12px;fill:var(--ink)}.score-chart .track{fill:#f1f5f9}
.score-chart .bar{fill:#0e7490}
details{margin-top:4px}summary{cursor:pointer;color:var(--mute)}
footer{margin:32px 0;color:var(--mute)}
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def render_html(transcript: Transcript) -> str:
    s = transcript.started
    title = esc(s.scenario.get("title", "moot run"))
    colors = {name: COLORS[i % len(COLORS)] for name, i in speaker_index(transcript).items()}
    sections = sections_of(turns_of(transcript.events))
    body = [f"<h1>{title}</h1>", _facts(transcript), _agents(transcript, colors), _nav(sections, transcript)]
    body += [_section(n, sec, transcript, colors) for n, sec in enumerate(sections)]
    body += [_usage(transcript), _footer(transcript)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{title} — moot transcript</title>\n<style>{CSS}</style></head>\n"
            "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n")


def _cells(row: list[str], text: int = 1) -> str:
    """Table cells: the first `text` columns are words, the rest numbers (right-aligned)."""
    return "".join(f"<td>{esc(c)}</td>" if i < text else f"<td class=\"num\">{esc(c)}</td>"
                   for i, c in enumerate(row))


def _head(labels: list[str]) -> str:
    return "<tr>" + "".join(f"<th>{esc(label)}</th>" for label in labels) + "</tr>\n"


def _facts(transcript: Transcript) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>\n" for k, v in run_facts(transcript))
    return f"<table class=\"facts\">\n{rows}</table>"


def _agents(transcript: Transcript, colors: dict[str, str]) -> str:
    head, rows = agent_table(transcript)
    body = "".join(f"<tr><td>{_avatar(row[0], colors)}{esc(row[0])}</td>{_cells(row[1:], text=2)}</tr>\n"
                   for row in rows)
    return f"<h2>Agents</h2>\n<div class=\"scroll\"><table class=\"agents\">\n{_head(head)}{body}</table></div>"


def _avatar(name: str, colors: dict[str, str]) -> str:
    color = colors.get(name, "#6b7280")
    return f"<span class=\"avatar sm\" style=\"background:{color}\" title=\"{esc(name)}\">" \
           f"{esc(initials(name))}</span>"


def _nav(sections: list[Section], transcript: Transcript) -> str:
    items = "".join(f"<li><a href=\"#section-{n + 1}\">{esc(section_title(sec, transcript.topics))}</a>"
                    + (f" — {esc(closed_text(sec.closed))}" if sec.closed else "") + "</li>"
                    for n, sec in enumerate(sections))
    return f"<nav><h2>Timeline</h2><ol>{items}</ol></nav>"


def _section(number: int, section: Section, transcript: Transcript, colors: dict[str, str]) -> str:
    parts = [f"<section class=\"topic\" id=\"section-{number + 1}\">",
             f"<h2>{esc(section_title(section, transcript.topics))}</h2>"]
    if section.closed:
        parts.append(f"<p class=\"closed\">{esc(closed_text(section.closed))}</p>")
    round_ = None
    for turn in section.turns:
        message = turn.message
        if message and message.topic is not None and message.round != round_:
            round_ = message.round
            parts.append(f"<h3 class=\"round\">Round {round_}</h3>")
        parts.append(_entry(turn, message, colors) if message else _note(turn))
    return "\n".join(parts) + "\n</section>"


def _entry(turn: Turn, m: Message, colors: dict[str, str]) -> str:
    color = colors.get(m.speaker, "#6b7280")
    meta = (f"{m.role} · {m.action} · turn {m.turn} · {m.latency_s:.1f}s · "
            f"{m.usage.prompt_tokens}+{m.usage.completion_tokens} tok · {m.model}")
    companions = "".join(_companion(e) for e in turn.events[1:])
    return (f"<article class=\"entry\" id=\"turn-{m.turn}\" data-speaker=\"{esc(m.speaker)}\">"
            f"<div class=\"avatar\" style=\"background:{color}\" aria-hidden=\"true\">{esc(initials(m.speaker))}</div>"
            f"<div class=\"bubble\"><div><span class=\"speaker\" style=\"color:{color}\">{esc(m.speaker)}</span> "
            f"<span class=\"meta\">{esc(meta)}</span></div>"
            f"<div class=\"content\">{esc(m.content.strip()) or '<em>(empty)</em>'}</div>{companions}</div></article>")


def _badge(label: str, kind: str = "verdict") -> str:
    return f"<span class=\"badge {kind} v-{esc(label)}\">{esc(label)}</span>"


def _companion(event: object) -> str:
    if isinstance(event, Verdict):
        if event.verdict == "UNPARSED":
            detail = (f"could not parse: {esc(event.error or '')}"
                      f"<details><summary>raw reply</summary><pre>{esc(event.raw or '')}</pre></details>")
        else:
            detail = esc(event.reason)
        return f"<div class=\"companion\">{_badge(event.verdict)}{detail}</div>"
    if isinstance(event, Score):
        return f"<div class=\"companion\">{score_figure(event)}</div>"
    if isinstance(event, TopicClosed):
        return f"<div class=\"companion closed\">topic {event.topic + 1} {esc(closed_text(event))}</div>"
    return ""


def score_figure(score: Score) -> str:
    """The evaluator's scores as an inline SVG bar chart (one rect.bar per criterion)."""
    if not score.parsed:
        return (f"{_badge('UNPARSED', 'score')}scores could not be parsed: {esc(score.error or '')}"
                f"<details><summary>raw reply</summary><pre>{esc(score.raw or '')}</pre></details>")
    rows = list(score.scores.items())
    height, label_w, unit = 22 * len(rows) + 4, 170, 24
    svg = [f"<svg class=\"score-chart\" width=\"{label_w + unit * 10 + 40}\" height=\"{height}\" "
           f"role=\"img\" aria-label=\"evaluator scores\">"]
    for i, (name, value) in enumerate(rows):
        y, width = 2 + 22 * i, unit * max(0, min(int(value), 10))
        svg.append(f"<text x=\"{label_w - 8}\" y=\"{y + 14}\" text-anchor=\"end\">{esc(name)}</text>"
                   f"<rect class=\"track\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{unit * 10}\" height=\"16\"/>"
                   f"<rect class=\"bar\" x=\"{label_w}\" y=\"{y + 2}\" width=\"{width}\" height=\"16\">"
                   f"<title>{esc(name)}: {int(value)}</title></rect>"
                   f"<text x=\"{label_w + width + 6}\" y=\"{y + 14}\">{int(value)}</text>")
    svg.append("</svg>")
    rationale = f"<div class=\"meta\">{esc(score.rationale)}</div>" if score.rationale else ""
    return (f"<figure class=\"scores\" style=\"margin:0\"><figcaption><strong>Scores</strong> by "
            f"{esc(score.speaker)} · overall <strong>{esc(score.overall)}</strong>/10</figcaption>"
            + "".join(svg) + rationale + "</figure>")


def _note(turn: Turn) -> str:
    event = turn.events[0]
    if isinstance(event, Error):
        return (f"<div class=\"note error\">✗ error ({esc(event.speaker or 'run')}, {esc(event.stage)}, "
                f"{event.attempts} attempt(s)): {esc(event.cause)}</div>")
    if isinstance(event, RunResumed):
        return f"<div class=\"note\">↻ run resumed; {event.turns_kept} earlier turn(s) kept</div>"
    return f"<div class=\"note\">{esc(getattr(event, 'type', 'event'))}</div>"


def _usage(transcript: Transcript) -> str:
    head, rows = usage_table(transcript)
    body = "".join(f"<tr>{_cells(row)}</tr>\n" for row in rows)
    return f"<section class=\"usage\"><h2>Tokens and latency per role</h2>\n<table>\n{_head(head)}{body}</table></section>"


def _footer(transcript: Transcript) -> str:
    done = transcript.finished
    stop = f"{done.status} — {done.stop_reason}" if done else "the run did not finish (no run_finished event)"
    return f"<footer id=\"stop\"><strong>Stop:</strong> {esc(stop)}</footer>"
