"""A reasoning turn of S2MAD (a debater's, the judge's or the one agent's) and the label it came to.

Closed answers are read by the scenario's `choice` (moot.protocols.items.choices). With `text` (the
paper's way) a debater's, the judge's or the agent's label is parsed from its reply. Otherwise a
reasoning reply is followed by the question its prompt ended with, asked on its own (template
`answer`: "Please choose the answer from the following options: Fake, Real.", closed by
"Answer:"): the label comes from that call, by likelihood on the embedded model; the reasoning
stays the paper's. On a base model a role continues its document (moot.protocols.s2mad.document)
and its verdict is read from a short document of its own.

A person may take a debater's seat (`moot run --human debater_p`, or `debaters`), the judge's or
the one agent's: shown the prompt the role's model would be sent, they write the turn and choose
its label, which the debate reads as it reads a model's (consensus, the judge's verdict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from moot.agents.prompts import render
from moot.kit import Asking, Message, Question, Reply, Seat, UNPARSED, UnitContext, shown_of
from moot.protocols.items.choices import Answered, ask_choice, calibrates, document_method, how_read, method_for
from moot.protocols.items.document import in_document, speak
from moot.protocols.items.labels import LabelSet
from moot.protocols.s2mad.document import Build, ClaimDocuments, Content
from moot.protocols.s2mad.schema import S2madScenario


def labels_of(s: S2madScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), tuple(s.labels), {lab: lab.capitalize() for lab in s.labels},
                    s.all_aliases())


def options_of(s: S2madScenario) -> str:
    labels = labels_of(s)
    return ", ".join(labels.option_words[lab] for lab in s.labels)


@dataclass(frozen=True)
class Answer:
    """The label a role's reply came to (None: undecided), how it was read, and the deciding call."""

    label: Optional[str]
    note: str
    reply: Union[Reply, Answered, None]  # the deciding call, or the closed answer asked after it; None: a person's

    def by(self, role: str) -> str:
        if self.reply is None:
            return f"{role} (human)"
        return f"{role} ({self.reply.method})" if self.reply.measured else role

    @property
    def raw(self) -> str:
        return self.reply.text if self.reply is not None else ""


async def turn_of(s: S2madScenario, ctx: UnitContext, role: str, messages: Sequence[LLMMessage], stage: str,
                  round: int, document: Optional[tuple[Build, Content]] = None, **record: Any) -> tuple[str, Answer]:
    """A reasoning turn and the label it came to: a person's at the role's seat (shown the
    role's prompt, they write the turn and choose its label), else its model's (`reason`)."""
    def asking(seat: Seat) -> Asking:
        return Asking(seat.spec.name, role, role, f"{stage} R{round}", stage,
                      (Question("text", "Your turn, with your reasons"), Question("label", "Your answer", tuple(s.labels))),
                      shown=shown_of(messages))

    async def by_model() -> tuple[str, Answer]:
        reply, said = await reason(s, ctx, role, messages, stage, round, document, **record)
        return reply.text, said

    def by_person(said: Message) -> tuple[str, Answer]:
        label = said.decision if said.decision in s.labels else None
        return said.content, Answer(label, "" if label else " (the person's turn was skipped)", None)

    return await ctx.person_or_model(ctx.seat(role), asking, by_model, by_person, role=role, stage=stage, round=round,
                                     content=lambda given: (given.get("text", ""), given.get("label", UNPARSED)))


async def reason(s: S2madScenario, ctx: UnitContext, role: str, messages: Sequence[LLMMessage], stage: str, round: int,
                 document: Optional[tuple[Build, Content]] = None, **record: Any) -> tuple[Reply, Answer]:
    """A reasoning call as the paper prompts it, and the label it came to (`answer`); on a base
    model the role's turn in its `document` (built from the item's content) and its verdict."""
    if document is not None and in_document(ctx, role):
        return await reason_in_document(s, ctx, role, *document, stage, round, **record)
    reply = await ctx.call(role, messages, stage=stage, round=round, decide=labels_of(s).decide, **record)
    return reply, await answer(s, ctx, role, messages, reply, stage, round)


async def reason_in_document(s: S2madScenario, ctx: UnitContext, role: str, build: Build, content: Content,
                             stage: str, round: int, speaker: Optional[str] = None) -> tuple[Reply, Answer]:
    """A base model's turn (it continues `build(content)`) and its verdict: the label most likely
    after `document_verdict`, read from a short document of its own (the post and the turn), so
    its content-free twins (calibration) are the same for every item and kept in the cache."""
    labels = labels_of(s)
    docs = ClaimDocuments(s.templates())
    name, opening = docs.names[role], docs.opening(role)
    reply = await speak(ctx, role, [], build(content), name, opening=opening, stage=stage,
                        round=round, speaker=speaker)

    def content_free_turn(text: str) -> str:
        """A content-free turn: its opening words (the template's), then the content-free text."""
        return f"{' '.join(opening.split())} {text}".strip()

    answered = await ask_choice(ctx, role, docs.verdict_document(role, content.claim, reply.text).messages(),
                                list(s.labels), document_method(s.choice), prefix=docs.verdict(role), document=True,
                                content_free=lambda text: docs.verdict_document(role, text, content_free_turn(text)).messages(),
                                calibrated=calibrates(ctx, role, s.calibration),
                                stage=f"{stage}_answer", round=round, speaker=speaker,
                                decide=lambda text: labels.map(text)[0])
    found = labels.map(answered.text)[0]
    return reply, Answer(None if found == UNPARSED else found, how_read(answered), answered.reply)


async def answer(s: S2madScenario, ctx: UnitContext, role: str, messages: Sequence[LLMMessage], reply: Reply, stage: str,
                 round: int) -> Answer:
    """The label of a reasoning reply: parsed from it (`text`), or asked for after it as a closed
    choice (see the module docstring)."""
    labels = labels_of(s)
    method = method_for(ctx, role, s.choice, "text")
    if method == "text":
        return Answer(_label(labels, reply.text), cut_note(reply), reply)
    ask = render(s.templates()["answer"], {"options": options_of(s)})
    follow = [*messages, AssistantMessage(content=reply.text, source=role), UserMessage(content=ask, source="user")]
    words = [labels.option_words[lab] for lab in s.labels]
    chosen = await ask_choice(ctx, role, follow, words, method, stage=f"{stage}_answer", round=round,
                              decide=lambda text: labels.map(text)[0])
    found = labels.map(chosen.text)[0]
    return Answer(None if found == UNPARSED else found, how_read(chosen), chosen)


def cut_note(reply: Reply) -> str:
    """Says so when a reply stopped at max_tokens (its answer "at the end" may be missing)."""
    return " (the reply was cut off at max_tokens)" if reply.call.finish_reason == "length" else ""


def _label(labels: LabelSet, text: str) -> Optional[str]:
    """A debater's label by the shared rule (moot.protocols.items.labels); None if undecided."""
    found = labels.decide(text)
    return None if found == UNPARSED else found
