"""A transcript as Markdown, for pasting into issues, notes and papers.

Markdown viewers render inline HTML, so every recorded string is HTML-escaped too: a model
that writes `<script>` shows up as text, never as markup.
"""

from __future__ import annotations

import html

from moot.timeline import (
    Turn, agent_table, closed_text, run_facts, section_title, sections_of, turns_of, usage_table,
)
from moot.events import Error, Message, RunResumed, Score, TopicClosed, Verdict
from moot.transcript import Transcript

BLOCKS = "█" * 10


def esc(text: object) -> str:
    return html.escape(str(text), quote=False)


def cell(text: object) -> str:
    """A table cell: escaped, on one line, with pipes that do not end the cell."""
    return " ".join(esc(text).split()).replace("|", "\\|")


def table(head: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def render_markdown(transcript: Transcript) -> str:
    s = transcript.started
    out = [f"# {cell(s.scenario.get('title', 'moot run'))}", ""]
    out += table(["", ""], [[k, v] for k, v in run_facts(transcript)]) + [""]
    out += ["## Agents", ""] + table(*agent_table(transcript))
    for section in sections_of(turns_of(transcript.events)):
        out += ["", f"## {cell(section_title(section, transcript.topics))}"]
        if section.closed:
            out += ["", f"_{closed_text(section.closed)}_"]
        round_ = None
        for turn in section.turns:
            message = turn.message
            if message and message.topic is not None and message.round != round_:
                round_ = message.round
                out += ["", f"### Round {round_}"]
            out += _turn(turn)
    out += ["", "## Tokens and latency per role", ""] + table(*usage_table(transcript))
    return "\n".join(out) + "\n"


def _turn(turn: Turn) -> list[str]:
    lines: list[str] = []
    for event in turn.events:
        if isinstance(event, Message):
            tokens = f"{event.usage.prompt_tokens}+{event.usage.completion_tokens} tok"
            lines += ["", f"**{cell(event.speaker)}** · {cell(event.role)} · {cell(event.action)} · "
                          f"turn {event.turn} · {event.latency_s:.1f}s · {tokens}", ""]
            lines += ["> " + esc(line) for line in (event.content.strip() or "(empty)").splitlines()]
        elif isinstance(event, Verdict):
            detail = event.reason if event.verdict != "UNPARSED" else f"could not parse: {event.error}"
            lines += ["", f"**Verdict: `{event.verdict}`** — {cell(detail)}"]
        elif isinstance(event, Score):
            lines += ["", *_scores(event)]
        elif isinstance(event, TopicClosed):
            lines += ["", f"_Topic {event.topic + 1} {closed_text(event)}._"]
        elif isinstance(event, Error):
            lines += ["", f"**Error** ({cell(event.speaker or 'run')}, {cell(event.stage)}): {cell(event.cause)}"]
        elif isinstance(event, RunResumed):
            lines += ["", f"_Run resumed; {event.turns_kept} earlier turn(s) kept._"]
    return lines


def _scores(score: Score) -> list[str]:
    if not score.parsed:
        return [f"**Scores: `UNPARSED`** — {cell(score.error or '')}"]
    rows = [[k, f"`{BLOCKS[:max(0, min(v, 10))]:<10}` {v}"] for k, v in score.scores.items()]
    lines = [f"**Scores** by {cell(score.speaker)}: overall **{score.overall}**/10", ""]
    lines += ["| Criterion | Score |", "|---|---|"] + [f"| {cell(k)} | {bar} |" for k, bar in rows]
    return lines + ([""] + [f"_{cell(score.rationale)}_"] if score.rationale else [])

