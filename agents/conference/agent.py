"""Decision-conference roles built into AutoGen agents.

Each agent keeps the group chat thread it has seen, asks the speaker-selection policy what
its turn is for (open a topic, speak, judge, evaluate, assess, ...), asks its model through the
unit's context (the run's model-call engine: cache, retries, concurrency) and returns a
TextMessage whose metadata carries the turn's place (topic, round, action), its decision
(conference_reading), whether it was cut, how a closed answer was measured, usage and latency.
The policy only ever reads that metadata, never the text. The turn's calls wait in `last_calls`
for the turn to be written.

How a turn is asked depends on the model. An instruction model is asked in chat form: a system
prompt and what it is shown of the conversation (`shown`: its context window,
conference_context; the assessor's debate, conference_coverage) with the turn's instruction, all
rendered from templates (`turn_prompt`). A base model continues the conference's transcript
document instead (conference_document). With `choice: likelihood` (the default on the embedded
model) the judge's verdict, the deciding moderator's decision and the evaluator's scores are read
from the model's probabilities (conference_measures); otherwise they are written under
structured output, as the judge's form says (conference_reading).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Awaitable, Callable, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage, RequestUsage, SystemMessage, UserMessage

from moot.agents.conference.context import Left, Said, Shown, context_window, line_of
from moot.agents.conference.coverage import debate_of, reference_text
from moot.agents.conference.document import TranscriptDocument
from moot.agents.conference.measures import (Answer, ChatPrompt, assess, by_likelihood, closing_choice, evaluate,
                                             in_document, spoken)
from moot.agents.conference.reading import Reading
from moot.agents.conference.setup import ConferenceSetup
from moot.agents.prompts import inset, render
from moot.kit import Choose, Measured, OnText, Reply, ThreadAgent, UnitContext
from moot.speaker_selection.conference import (
    AGREEMENT, MORE_DEBATE, NEXT_TOPIC, UNPARSED, Step, Turn, walk,
)
from moot.protocols.conference.texts import where_text
from moot.protocols.conference.verdicts import CRITERIA, CRITERIA_TEXT

USER = "user"
CONVERSATION, DEBATE = "Conversation so far:", "The participants' debate:"  # the headings of what is shown
CLOSED = ("judge", "decide", "evaluate", "assess")  # turns with a closed answer


def to_turns(thread: Sequence[object]) -> list[Turn]:
    """The policy's view of an AutoGen thread: chat messages after the task, speaker + decision."""
    chat = [m for m in thread if isinstance(m, BaseChatMessage) and m.source != USER]
    return [Turn(m.source, m.metadata.get("decision")) for m in chat]


class ConferenceAgent(ThreadAgent):
    """One conference role (moderator, participant, judge, evaluator or assessor) played by one model."""

    def __init__(self, name: str, role: str, persona: str, ctx: UnitContext, setup: ConferenceSetup,
                 system_template: Optional[str] = None):
        super().__init__(name, f"{role} of the conference")
        self.role, self.persona, self.ctx, self.setup = role, persona, ctx, setup
        self.system_template = system_template or setup.templates[f"{role}_system"]
        self.document = TranscriptDocument(setup)
        self.failure: Optional[Exception] = None  # kept so the runner sees the real cause (not AutoGen's text)
        self.last_calls: list[Reply] = []  # the Replies of this agent's latest turn, until the turn is recorded

    async def reply(self, cancellation_token: CancellationToken) -> TextMessage:
        steps = walk(self.setup.plan, to_turns(self._thread))
        step = steps[-1]
        if step.speaker != self.name:
            raise RuntimeError(f"{self.name} was asked to speak but the policy expects {step.speaker}")
        on_text = self.ctx.speaking(self.name, self.setup.label(self.name), step.action,
                                   where_text(step.topic, step.round), step.topic, step.round)
        try:
            answer = await self.answer(step, self.shown(step, steps), on_text)
        except Exception as exc:  # noqa: BLE001 - a failed call, or a disk refusing its cache write
            self.failure = exc
            raise
        self.last_calls = answer.replies
        calls = [r.call for r in answer.replies]
        return TextMessage(
            content=answer.content, source=self.name,
            models_usage=RequestUsage(prompt_tokens=sum(c.usage.prompt_tokens for c in calls),
                                      completion_tokens=sum(c.usage.completion_tokens for c in calls)),
            metadata=turn_metadata(step, self.role, answer.decision, calls[-1].model,
                                   latency_s=sum(c.latency_s for c in calls),
                                   calls=sum(max(c.attempts, 1) for c in calls), cut=answer.cut,
                                   measured=answer.measured),
        )

    # ------------------------------------------------------------------ how the model is asked
    @property
    def in_document(self) -> bool:
        """A base model continues the transcript document; an instruction model is asked in chat."""
        return in_document(self.ctx, self.name)

    @property
    def by_likelihood(self) -> bool:
        return by_likelihood(self.setup.choice, self.ctx.model(self.name).spec, self.in_document)

    async def answer(self, step: Step, shown: Sequence[Shown], on_text: Optional[OnText]) -> Answer:
        """The turn's reply, asked the way this model and the scenario's `choice` call for."""
        if step.action not in CLOSED:
            return await self.speak(step, shown, on_text)
        if not self.by_likelihood:
            return await self.written(step, shown)
        measure: Callable[[Step, Sequence[Shown], Optional[OnText]], Awaitable[Answer]] = getattr(self, step.action)
        return await measure(step, shown, on_text)

    async def call(self, messages: Sequence[LLMMessage], step: Step, on_text: Optional[OnText] = None,
                   **asked: Any) -> Reply:
        return await self.ctx.call(self.name, messages, stage=step.action, record=False, on_text=on_text, **asked)

    async def written(self, step: Step, shown: Sequence[Shown]) -> Answer:
        """A closed answer the model writes (structured output, or the judge's plain text)."""
        reply = await self.call(self.prompt_for(step, shown), step, output=self.setup.output(step))
        return Answer(reply.text, [reply], decision=self.setup.reading.decision(step.action, reply.text))

    async def speak(self, step: Step, shown: Sequence[Shown], on_text: Optional[OnText], lead: Sequence[str] = (),
                    instruction: Optional[str] = None) -> Answer:
        """A free-text turn: the next line of the transcript document (a base model; after the stage
        directions `lead`, else those of the step), or a chat reply to the turn's instruction."""
        if self.in_document:
            lead = lead or self.document.lead_in(step.action, step.topic, step.round)
            text = self.document.text(shown, *lead)
            reply = await self.call([UserMessage(content=text, source="document")], step, on_text,
                                    request=self.document.continuation(text, self.name))
        else:
            reply = await self.call(self.prompt_for(step, shown, instruction), step, on_text)
        content, cut = spoken(reply)
        return Answer(content, [reply], cut=cut)

    async def judge(self, step: Step, shown: Sequence[Shown], on_text: Optional[OnText]) -> Answer:
        """The verdict read from the model's probabilities: AGREEMENT when p(agree) reaches the
        threshold. The turn says its verdict as a label."""
        text_form = self.setup.reading.judge_form == "text"
        decision, measured, reply = await self.closing(
            step, shown, AGREEMENT, lambda: self.document.judge_choice(self.name),
            Choose(options=(AGREEMENT, "MORE DEBATE" if text_form else MORE_DEBATE), prefix="Verdict:",
                   reply_prefix="" if text_form else '{"verdict": "'))
        return Answer(reply.text if decision == UNPARSED else decision, [reply], decision=decision, measured=measured)

    async def decide(self, step: Step, shown: Sequence[Shown], on_text: Optional[OnText]) -> Answer:
        """The deciding moderator (without a judge): NEXT_TOPIC when p(move on) reaches the threshold;
        then it says so to the participants (sums up, or asks them to go on)."""
        decision, measured, reply = await self.closing(
            step, shown, NEXT_TOPIC, lambda: self.document.decide_choice(self.name, step.topic, step.round),
            Choose(options=(NEXT_TOPIC, MORE_DEBATE), prefix="Decision:", reply_prefix='{"decision": "'))
        lead = self.document.lead_in(step.action, step.topic, step.round, decision)
        closes = decision == NEXT_TOPIC or step.round >= self.setup.plan.max_rounds
        said = await self.speak(step, shown, on_text, lead,
                                self.setup.templates["moderator_sum_up" if closes else "moderator_more_debate"])
        content = json.dumps({"decision": decision, "message": said.content})
        return Answer(content, [reply, *said.replies], decision=decision, cut=said.cut, measured=measured)

    async def closing(self, step: Step, shown: Sequence[Shown], closes: str, document: Callable[[], Choose],
                      chat: Choose) -> tuple[str, Measured, Reply]:
        """A closed choice read from the model's probabilities, asked after the transcript document
        (a base model: the question `document()`) or the turn's chat prompt (`chat`): `closes` when
        the closing option reaches the threshold, else MORE_DEBATE; UNPARSED when no answer reads."""
        messages: list[LLMMessage]
        if self.in_document:
            messages, request = [UserMessage(content=self.document.text(shown), source="document")], document()
        else:
            messages, request = self.prompt_for(step, shown), chat
        closing, measured, reply = await closing_choice(self.ctx, self.name, messages, request, self.setup.threshold,
                                                        step.action)
        return UNPARSED if closing is None else (closes if closing else MORE_DEBATE), measured, reply

    async def evaluate(self, step: Step, shown: Sequence[Shown], on_text: Optional[OnText]) -> Answer:
        """Expected scores per criterion and overall, then a free-text rationale."""
        return await evaluate(self.ctx, self.name, self.name, self.document, shown, step.topic, self.in_document,
                              self.chat(step, shown), step.action, on_text)

    async def assess(self, step: Step, shown: Sequence[Shown], on_text: Optional[OnText]) -> Answer:
        """Per reference item: addressed or not, read from the model's probabilities; a quote for a yes."""
        debate = [s for s in shown if isinstance(s, Said)]  # the assessor is shown the debate alone
        return await assess(self.ctx, self.name, self.document, debate, self.setup.references[step.in_topic],
                            step.in_topic, self.in_document, self.chat(step, shown), step.action)

    # ------------------------------------------------------------------ chat prompts
    def chat(self, step: Step, shown: Sequence[Shown]) -> ChatPrompt:
        """This turn's chat prompt for a named template (and extra fields): the evaluator's and
        the assessor's several questions. The turn's fields and what it is shown are rendered once,
        when a first question is asked in chat form."""
        @cache
        def turn() -> tuple[dict[str, object], str]:
            return self.fields(step), render_shown(shown, self.setup.labels)

        def prompt(key: str, extra: Mapping[str, object]) -> list[LLMMessage]:
            return self.prompt_with(step, *turn(), self.setup.templates[key], extra)

        return prompt

    def prompt_for(self, step: Step, shown: Sequence[Shown], instruction: Optional[str] = None,
                   extra: Mapping[str, object] = {}) -> list[LLMMessage]:
        """System prompt (who I am) + one user message (what I am shown of the conversation + my
        task now: the step's template, or `instruction`)."""
        return self.prompt_with(step, self.fields(step), render_shown(shown, self.setup.labels), instruction, extra)

    def prompt_with(self, step: Step, fields: Mapping[str, object], history: str, instruction: Optional[str],
                    extra: Mapping[str, object]) -> list[LLMMessage]:
        """`prompt_for` from the turn's `fields` and its rendered `history`."""
        fields = {**fields, **extra}
        template = instruction or self.setup.templates[self.setup.reading.template(self.role, step.action)]
        heading = DEBATE if step.action == "assess" else CONVERSATION
        return chat_messages(render(self.system_template, fields), heading, history, render(template, fields))

    def shown(self, step: Step, steps: Sequence[Step]) -> list[Shown]:
        """What this agent is shown of the conversation so far: the scenario's context window; the
        assessor, the participants' turns on the topic it assesses."""
        history = self.history(steps)
        if step.action == "assess":
            return list(debate_of(history, step.in_topic))
        return context_window(history, step.topic, self.setup.window)

    def history(self, steps: Sequence[Step]) -> list[Said]:
        """The task message, then every turn so far as the others read it."""
        task = next((m.to_text() for m in self._thread if m.source == USER), "")
        chat = [m for m in self._thread if m.source != USER]
        return [Said("Task", task)] + [said_of(m, s, n, self.setup.reading)
                                      for n, (m, s) in enumerate(zip(chat, steps), 1)]

    def fields(self, step: Step) -> dict[str, object]:
        s = self.setup
        return {
            **self.document.fields(step.topic, step.round), "title": s.title,  # the document drops its final "."
            "name": s.label(self.name), "persona": self.persona,
            "topics": "\n".join(f"{i}. {t}" for i, t in enumerate(s.topics, 1)),
            "judge_reason": self.last_judge_reason(),
            "criteria": "\n".join(f"- {c}: {CRITERIA_TEXT[c]}" for c in CRITERIA),
            "reference": reference_text(s.references.get(step.topic, ()) if step.topic is not None else ()),
            "cast": self.document.cast(), "agenda": self.document.agenda(),
        }

    def last_judge_reason(self) -> str:
        """The judge's latest turn as the others read it; empty when its reason is not forwarded."""
        judge, reading = self.setup.plan.judge, self.setup.reading
        last = next((m for m in reversed(self._thread) if m.source == judge), None)
        return inset(reading.display("judge", last.to_text())) if last and reading.forward_reason else ""


def said_of(message: BaseChatMessage, step: Step, turn: int, reading: Reading) -> Said:
    """A turn as the other agents read it."""
    return Said(message.source, reading.display(step.action, message.to_text(), measured_of(message)), step.action,
                step.topic, step.round, turn, message.metadata.get("decision"))


def turn_prompt(system: str, heading: str, shown: Sequence[Shown], instruction: str,
                labels: Optional[Mapping[str, str]] = None) -> list[LLMMessage]:
    """A turn's messages: the system prompt, then one user message with what the agent is shown
    (under `heading`, each speaker as `labels` calls it) and its instruction."""
    return chat_messages(system, heading, render_shown(shown, labels), instruction)


def chat_messages(system: str, heading: str, history: str, instruction: str) -> list[LLMMessage]:
    """`turn_prompt` with what the agent is shown rendered already (`history`)."""
    body = f"{heading}\n{history}\n\n{instruction}" if history else instruction
    return [SystemMessage(content=system), UserMessage(content=body, source=USER)]


def render_shown(shown: Sequence[Shown], labels: Optional[Mapping[str, str]] = None) -> str:
    """The entries of a context window as prompt text, one paragraph each."""
    return "\n\n".join(f"({e.count} earlier turn(s) not shown)" if isinstance(e, Left) else line_of(e, labels)
                       for e in shown)


def turn_metadata(step: Step, role: str, decision: Optional[str], model: str, *, latency_s: float = 0.0,
                  calls: int = 1, cut: bool = False, measured: Optional[Measured] = None) -> dict[str, str]:
    """AutoGen message metadata (string values) describing a turn; transcripts store the same."""
    meta = {"role": role, "action": step.action, "round": str(step.round), "model": model,
            "latency_s": f"{latency_s:.3f}", "calls": str(calls)}
    if step.topic is not None:
        meta["topic"] = str(step.topic)
    if decision:
        meta["decision"] = decision
    if cut:
        meta["cut"] = "true"
    if measured is not None:
        meta["measured"] = measured.model_dump_json()
    return meta


def measured_of(message: BaseChatMessage) -> Optional[Measured]:
    """How a turn's closed answer was measured, from its metadata (None: written)."""
    found = message.metadata.get("measured")
    return Measured.model_validate_json(found) if found else None
