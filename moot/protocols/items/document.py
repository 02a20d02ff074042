"""The document form of an item protocol: what a base model is asked instead of chat messages.

On a base model (the same base/instruct decision as the conference's: ModelEngine.model_kind)
every free-text turn of an item continues a document (moot.agents.document): a header with the
item (its text, target, claim ...), then what the role may see as labelled paragraphs, a stage
direction in brackets saying what comes next, and the speaker's label. Each protocol renders its
documents from its prompts file's `document_*` templates (overridable under `prompts:` like the
chat ones); instruction models keep the chat prompts. A closed answer is a choice branching off
the document (moot.protocols.items.choices).

Roles that may not see each other (COLA's analysts, a round's debaters) continue separate
branches of the same document, so the model's cache keeps the shared beginning and each branch
evaluates only its own tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

from autogen_core.models import LLMMessage, UserMessage

from moot.agents.document import choice_request, turn_request
from moot.kit import Choose, Continue, OnText, Reply, UnitContext, Watcher


@dataclass(frozen=True)
class ItemDocument:
    """An item's document so far: its paragraphs, and every label a turn in it stops at."""

    paragraphs: tuple[str, ...]
    called: tuple[str, ...] = ()

    def then(self, *paragraphs: str) -> "ItemDocument":
        """The document with `paragraphs` after it (empty ones left out)."""
        return ItemDocument((*self.paragraphs, *(p for p in paragraphs if p.strip())), self.called)

    def text(self) -> str:
        return "\n\n".join(p.strip() for p in self.paragraphs if p.strip())

    def messages(self) -> list[LLMMessage]:
        return [UserMessage(content=self.text(), source="document")]

    def turn(self, label: str, opening: str = "", max_tokens: Optional[int] = None) -> Continue:
        """The request for the turn of the speaker labelled `label`, continuing the document
        (after `opening`, the words the turn begins with; at most `max_tokens`)."""
        return replace(turn_request(self.text(), label, self.called, opening), max_tokens=max_tokens or 0)

    def choice(self, prefix: str, options: Sequence[str]) -> Choose:
        """A closed answer after the document: `prefix` on its own line, then one of `options`."""
        return choice_request(prefix, options)


def labelled(label: str, text: str) -> str:
    """A turn as the document shows it: `Label: text`."""
    return f"{label}: {' '.join(text.split())}"


def in_document(ctx: UnitContext, role: str) -> bool:
    """A base model continues a document; an instruction model is asked in chat."""
    return ctx.engine.model_kind(ctx.model(role), role) == "base"


async def speak(ctx: UnitContext, role: str, chat: Sequence[LLMMessage], document: Optional[ItemDocument],
                label: str, *, opening: str = "", stage: str, round: int = 1,
                decide: Optional[Callable[[str], Optional[str]]] = None,
                speaker: Optional[str] = None) -> Reply:
    """A free-text turn of `role`, recorded as its message: on a base model `document` continued
    under `label` (the turn begins with `opening`, which the model continues, for at most the
    scenario's `turn_tokens`; its text streams to a live display as it is generated), else the
    chat messages."""
    if document is None or not in_document(ctx, role):
        return await ctx.call(role, chat, stage=stage, round=round, decide=decide, speaker=speaker)
    opening = " ".join(opening.split())
    shown = getattr(ctx.listener, "speaking", None) is not None  # stream only when someone may show it
    on_text = shown_live(ctx, speaker or role, label, stage, round, opening) if shown else None
    bound = getattr(ctx.unit.scenario, "turn_tokens", None)
    reply = await ctx.call(role, document.messages(), request=document.turn(label, opening, bound), stage=stage,
                           round=round, speaker=speaker, record=False, on_text=on_text)
    said = replace(reply, text=f"{opening} {reply.text.strip()}".strip())
    if not reply.replayed:  # a continued unit's turn is in its log already
        ctx.record_replies([reply], ctx.message(said, stage=stage, round=round, speaker=speaker,
                                                decision=decide(said.text) if decide else None))
    return said


def shown_live(ctx: UnitContext, speaker: str, label: str, stage: str, round: int, opening: str = "") -> OnText:
    """Where a turn's text goes as it is generated: the live display is told the turn starts (and
    shown its `opening`) at its first text, not when it is asked (the turns of a stage are asked
    together and the model writes them one after another)."""
    target: list[Optional[OnText]] = []

    def on_text(text: str) -> None:
        if not target:
            target.append(ctx.speaking(speaker, label, stage, f"{stage} R{round}", None, round))
            text = f"{opening} {text.lstrip()}" if opening else text
        if target[0] is not None:
            target[0](text)

    return Watcher(on_text) if getattr(ctx.listener, "watch_only", False) else on_text
