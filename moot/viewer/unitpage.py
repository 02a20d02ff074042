"""A unit as the viewer shows it: the same document blocks as the exports (moot.views.document, as
its protocol's view describes the unit), each turn followed by the model calls that made it and,
where a speaker changed its decision, what it changed from; the turn being generated (the run's
live side file, moot.engine.live) after the last one while the run holds its folder.

Every string here is recorded text, escaped by `esc` (moot.views.html) before it reaches a page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Optional, Sequence

from moot.contract.registry import view_of
from moot.engine.folder import live_file
from moot.safety.diskio import read_regular
from moot.log.events import Call
from moot.log.transcript import Transcript
from moot.views.document import Block, Entry, body_blocks, unit_blocks
from moot.views.html import HtmlBlocks, color, esc
from moot.views.timeline import initials
from moot.views.unit import UnitView
from moot.viewer.links import Links
from moot.viewer.units import decisions_changed


def call_summary(calls: Sequence[Call]) -> str:
    """`2 model calls · 812+96 tokens · 3.4 s · 1 cached`."""
    prompt = sum(c.usage.prompt_tokens for c in calls)
    completion = sum(c.usage.completion_tokens for c in calls)
    cached = sum(1 for c in calls if c.cached)
    seconds = sum(c.latency_s for c in calls)
    noun = "model call" if len(calls) == 1 else "model calls"
    return (f"{len(calls)} {noun} · {prompt}+{completion} tokens · {seconds:.1f} s"
            + (f" · {cached} cached" if cached else ""))


def call_facts(call: Call) -> str:
    """One call's line: role, model, kind, attempts, finish, latency, cache hit, how it was read."""
    parts = [f"{call.role} · {call.model}", f"kind {call.kind}", f"{call.attempts} attempt(s)",
             f"{call.usage.prompt_tokens}+{call.usage.completion_tokens} tokens", f"{call.latency_s:.2f} s",
             "cached" if call.cached else "not cached"]
    if call.finish_reason:
        parts.append(f"finish {call.finish_reason}")
    if call.output:
        parts.append(f"structured output {call.output}")
    if call.detail is not None and call.detail.method:
        parts.append(f"read by {call.detail.method}")
    return " · ".join(parts)


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, indent=1)


def call_html(call: Call) -> str:
    """A call's exact messages and reply."""
    messages = "".join(
        f"<div class=\"sent\"><div class=\"meta\">{esc(m.get('type') or m.get('role') or 'message')}"
        + (f" · {esc(m['source'])}" if isinstance(m.get("source"), str) else "")
        + f"</div><pre dir=\"auto\">{esc(message_text(m))}</pre></div>" for m in call.messages)
    detail = ""
    if call.detail is not None:
        shown = call.detail.model_dump(exclude_defaults=True)
        detail = f"<div class=\"meta\">measured</div><pre>{esc(json.dumps(shown, ensure_ascii=False, indent=1))}</pre>"
    return (f"<section class=\"call\" id=\"call-{call.seq}\" aria-label=\"model call {call.seq}\">"
            f"<div class=\"meta\">{esc(call_facts(call))}</div>"
            f"<h4>Sent ({len(call.messages)} message(s))</h4>{messages}"
            f"<h4>Reply</h4><pre dir=\"auto\">{esc(call.reply)}</pre>{detail}</section>")


class ViewerBlocks(HtmlBlocks):
    """The exports' HTML, each turn followed by its calls (folded) and any change of decision."""

    def __init__(self, links: Links, rel: PurePosixPath, key: str, changed: dict[int, str]):
        self.links, self.rel, self.key, self.changed = links, rel, key, changed

    def entry_tail(self, block: Entry) -> str:
        m = block.message
        before = self.changed.get(m.turn)
        note = (f"<div class=\"changed\" role=\"note\">changed its decision: {esc(before)} → "
                f"<strong>{esc(m.decision or '')}</strong></div>" if before is not None else "")
        if not block.calls:
            return note
        return note + calls_toggle(self.links, self.rel, self.key, block.calls, f"calls-{m.turn}")


def calls_toggle(links: Links, rel: PurePosixPath, key: str, calls: Sequence[Call], ident: str) -> str:
    """A folded list of calls: each one's facts, its messages and reply one click further (fetched
    when the toggle opens, on a server; the unit's calls page in a bundle)."""
    items = []
    for call in calls:
        fragment = links.call(rel, key, call.seq)
        data = f" data-fragment=\"{esc(fragment)}\"" if fragment else ""
        items.append(f"<li class=\"call-item\"{data}><span class=\"meta\">{esc(call_facts(call))}</span> "
                     f"<a href=\"{esc(links.calls(rel, key))}#call-{call.seq}\">exact messages and reply</a></li>")
    return (f"<details class=\"calls\" id=\"{esc(ident)}\"><summary>{esc(call_summary(calls))}</summary>"
            f"<ul>{''.join(items)}</ul></details>")


@dataclass(frozen=True)
class UnitContent:
    """A loaded unit's page parts."""

    transcript: Transcript
    view: UnitView
    title: str
    header: str  # the blocks before the conversation (HTML)
    timeline: str  # the conversation and its end (HTML)
    stray: tuple[Call, ...]  # calls no turn took (a rescoring's, a failed turn's)


def content(transcript: Transcript, links: Links, rel: PurePosixPath, key: str, running: bool = False) -> UnitContent:
    """The unit's page parts; `running`: its run holds its folder now (a unit with no end is running)."""
    view = view_of(transcript.started)
    title = str(transcript.started.scenario.get("title") or "") or f"Unit {transcript.started.unit or key}"
    blocks = unit_blocks(transcript, view, 1, title, running=running)
    body = body_blocks(transcript, view, 1)
    split = first_body_index(blocks, body)
    renderer = ViewerBlocks(links, rel, key, decisions_changed(transcript.messages))
    taken = {c.seq for b in blocks if isinstance(b, Entry) for c in b.calls}
    stray = tuple(c for c in transcript.calls if c.seq not in taken)
    return UnitContent(transcript, view, title, renderer.render(blocks[1:split]), renderer.render(blocks[split:]),
                       stray)


def first_body_index(blocks: Sequence[Block], body: Sequence[Block]) -> int:
    """Where the conversation starts among a unit's blocks (after its heading, setup and input)."""
    if body:
        for n, block in enumerate(blocks):
            if block == body[0]:
                return n
    return len(blocks) - 2  # no conversation: the usage and the stop note


def live_turn(transcript_path: Path, view: UnitView, speakers: dict[str, int]) -> Optional[str]:
    """The turn being generated, from the run's live side file (None when there is none)."""
    try:
        data = json.loads(read_regular(live_file(transcript_path)))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != 1:
        return None
    speaker = str(data.get("speaker", ""))
    label = str(data.get("label") or speaker)
    c = color(speakers.get(speaker, len(speakers)))
    where = " · ".join(str(data.get(k)) for k in ("where", "action") if data.get(k))
    text = str(data.get("text") or "")
    return (f"<article class=\"entry generating\" aria-live=\"polite\" aria-busy=\"true\">"
            f"<div class=\"avatar {c}\" aria-hidden=\"true\">{esc(initials(label))}</div>"
            f"<div class=\"bubble\"><div><span class=\"speaker {c}\" dir=\"auto\">{esc(label)}</span> "
            f"<span class=\"meta\">{esc(where)} · generating…</span></div>"
            f"<div class=\"content\" dir=\"auto\">{esc(text)}"
            "<span class=\"cursor\" aria-hidden=\"true\">▍</span></div>"
            "</div></article>")
